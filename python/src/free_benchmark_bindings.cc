#include "free_benchmark_bindings.h"

#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>

#include <string>

#include "capture/capture_config.h"
#include "capture/free_benchmark_compare.h"
#include "capture/free_benchmark_rules.h"
#include "numprobe/error.h"

namespace py = pybind11;

namespace numprobe::python {
namespace {

// Contiguous CPU copies (or the tensors themselves when they already are) in one floating type,
// float32 unless either is float64 (fp16/bf16 widen exactly), without autograd: the comparison
// never touches the training's graph or its tensors.
std::pair<at::Tensor, at::Tensor> pair_of(py::handle a, py::handle b) {
  for (py::handle h : {a, b}) {
    if (!THPVariable_Check(h.ptr())) throw py::type_error("an output to compare is not a tensor");
  }
  at::NoGradGuard no_grad;
  const at::Tensor& x = THPVariable_Unpack(a.ptr());
  const at::Tensor& y = THPVariable_Unpack(b.ptr());
  if (x.numel() != y.numel()) {
    throw py::value_error("outputs of " + std::to_string(x.numel()) + " and " +
                          std::to_string(y.numel()) + " elements cannot be compared");
  }
  const auto type =
      x.scalar_type() == at::kDouble || y.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  return {x.detach().to(at::kCPU, type).contiguous(), y.detach().to(at::kCPU, type).contiguous()};
}

}  // namespace

void register_free_benchmark(py::module_& m) {
  using capture::CaptureConfig;
  m.def(
      "free_benchmark_config",
      [](const std::string& text, const std::string& source) {
        CaptureConfig c = capture::parse_capture_config(text, source);
        if (c.task != capture::Task::kFreeBenchmark)
          throw InputError(source, "field \"task\": expected \"free_benchmark\"");
        const auto& fb = c.free_benchmark;
        py::dict d;
        d["dump_path"] = c.dump_path;
        d["step"] = c.steps;
        d["rank"] = c.ranks;
        d["scope"] = c.scope;
        d["list"] = c.list;
        d["pert_mode"] = fb.pert_mode;
        d["handler_type"] = fb.handler_type;
        d["fuzz_level"] = fb.fuzz_level;
        d["fuzz_stage"] = fb.fuzz_stage;
        d["fuzz_device"] = fb.fuzz_device;
        d["if_preheat"] = fb.if_preheat;
        d["preheat_step"] = fb.preheat_step;
        d["max_sample"] = fb.max_sample;
        return d;
      },
      "The checked free_benchmark config of a config.json text (dict of msprobe's fields).");

  // Capture's own list/scope rules (capture_config.h, EntryFilter) over API entry names; at L1
  // there is no enclosing module.
  py::class_<capture::EntryFilter>(m, "FreeBenchmarkFilter")
      .def(py::init([](const std::string& text, const std::string& source) {
        return capture::EntryFilter(capture::parse_capture_config(text, source));
      }))
      .def("selects_everything", &capture::EntryFilter::selects_everything)
      .def("wants", [](capture::EntryFilter& f,
                       const std::string& entry) { return f.wants_forward(entry, ""); })
      .def("reset", &capture::EntryFilter::reset);

  m.def(
      "free_benchmark_rules",
      [] {
        py::dict per_dtype;
        for (DType t : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64}) {
          py::dict d;
          d["noise"] = capture::free_benchmark_noise(t);
          d["abs_tol"] = capture::free_benchmark_abs_tol(t);
          d["threshold"] = capture::free_benchmark_threshold(t, false);
          d["cpu_rtol"] = capture::free_benchmark_cpu_rtol(t);
          per_dtype[py::str(std::string(dtype_torch_name(t)))] = d;
        }
        py::dict r;
        r["dtypes"] = per_dtype;  // keyed "torch.float16", ...
        r["backward_abs_tol"] = capture::kFreeBenchmarkBackwardAbsTol;
        r["cpu_small_value"] = capture::kFreeBenchmarkCpuSmallValue;
        r["cpu_err_balance"] = capture::kFreeBenchmarkCpuErrBalance;
        return r;
      },
      "free_benchmark's per-dtype noise, tolerances and thresholds (free_benchmark_rules.h): one "
      "table for the Python and the C++ fronts.");
  m.def(
      "append_free_benchmark_row",
      [](const std::string& dir, int64_t rank, const std::string& pert_mode,
         const std::string& stage, int64_t step, const std::string& api_name, py::object max_rel,
         const std::string& dtype, const std::string& shape, std::optional<int64_t> index) {
        capture::FreeBenchmarkRow row;
        row.rank = rank;
        row.pert_mode = pert_mode;
        row.stage = stage;
        row.step = step;
        row.api_name = api_name;
        if (py::isinstance<py::str>(max_rel)) {
          if (max_rel.cast<std::string>() != "symbol_flipping")
            throw py::value_error("max_rel: a number, None or \"symbol_flipping\"");
          row.symbol_flipping = true;
        } else if (!max_rel.is_none()) {
          row.max_rel = max_rel.cast<double>();
        }
        row.dtype = dtype;
        row.shape = shape;
        row.output_index = index;
        py::gil_scoped_release unlocked;
        capture::append_free_benchmark_row(dir, row);
      },
      py::arg("dir"), py::arg("rank"), py::arg("pert_mode"), py::arg("stage"), py::arg("step"),
      py::arg("api_name"), py::arg("max_rel"), py::arg("dtype"), py::arg("shape"),
      py::arg("output_index"),
      "Appends a row to dir/free_benchmark.csv (header first in a new file), under a file lock.");
  m.def(
      "perturbation_ratio",
      [](py::handle original, py::handle perturbed, double abs_tol) {
        auto [o, p] = pair_of(original, perturbed);
        const auto n = static_cast<size_t>(o.numel());
        const capture::PerturbationRatio r =
            o.scalar_type() == at::kDouble
                ? capture::perturbation_ratio(o.data_ptr<double>(), p.data_ptr<double>(), n,
                                              abs_tol)
                : capture::perturbation_ratio(o.data_ptr<float>(), p.data_ptr<float>(), n, abs_tol);
        return py::make_tuple(r.ratio, r.sign_flipped);
      },
      "msprobe's endless-norm ratio of two outputs (1 = unchanged) and whether a sign flipped; "
      "see free_benchmark_compare.h");
  m.def(
      "benchmark_errors",
      [](py::handle actual, py::handle golden, double small_value) {
        auto [a, g] = pair_of(actual, golden);
        a = a.to(at::kDouble);
        g = g.to(at::kDouble);
        auto e = capture::benchmark_errors(a.data_ptr<double>(), g.data_ptr<double>(),
                                           static_cast<size_t>(a.numel()), small_value);
        py::dict d;
        d["max_abs_small"] = e.max_abs_small;
        d["max_rel"] = e.max_rel;
        d["err_balance"] = e.err_balance;
        d["golden_finite"] = e.golden_finite;
        return d;
      },
      "to_cpu's errors of a device output against its CPU re-run; see free_benchmark_compare.h");
}

}  // namespace numprobe::python
