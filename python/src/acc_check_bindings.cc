// numprobe._C's acc-check part: the aten dispatcher call, the output comparison and the result
// files, for python/numprobe/acc_check (which rebuilds arguments and runs L1 APIs).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include "acc_check_bindings.h"
#include "numprobe/acc_check.h"
#include "numprobe/compare/mapping.h"
#include "torch/replay/aten_replay.h"

namespace py = pybind11;

namespace numprobe::python {
namespace {

AccStatus status_from(const std::string& s) {
  if (s == "pass") return AccStatus::kPass;
  if (s == "warning") return AccStatus::kWarning;
  if (s == "error") return AccStatus::kError;
  if (s == "SKIP") return AccStatus::kSkip;
  if (s.empty() || s == " ") return AccStatus::kNone;
  throw py::value_error("unknown acc-check status '" + s + "'");
}

py::dict columns_dict(const AccColumns& c) {
  py::dict d;
  auto put = [&](const char* k, const std::optional<double>& v) {
    d[k] = v ? py::cast(*v) : py::none();
  };
  put("cosine", c.cosine);
  put("max_abs_err", c.max_abs_err);
  put("rel_err_hundredth", c.rel_err_hundredth);
  put("rel_err_thousandth", c.rel_err_thousandth);
  put("rel_err_ten_thousandth", c.rel_err_ten_thousandth);
  put("error_rate", c.error_rate);
  put("eb", c.eb);
  put("rmse", c.rmse);
  put("small_value_err_ratio", c.small_value_err_ratio);
  put("max_rel_err", c.max_rel_err);
  put("mean_rel_err", c.mean_rel_err);
  put("inf_nan_error_ratio", c.inf_nan_error_ratio);
  put("rel_err_ratio", c.rel_err_ratio);
  put("abs_err_ratio", c.abs_err_ratio);
  put("max_ulp_error", c.max_ulp_error);
  put("mean_ulp_error", c.mean_ulp_error);
  put("ulp_error_proportion", c.ulp_error_proportion);
  put("rel_l2", c.rel_l2);
  return d;
}

}  // namespace

void register_acc_check(py::module_& m) {
  py::class_<AccColumns>(m, "AccColumns")
      .def_property_readonly("status",
                             [](const AccColumns& c) { return acc_status_name(c.status); })
      .def_readonly("message", &AccColumns::message)
      .def_readonly("bench_dtype", &AccColumns::bench_dtype)
      .def_readonly("device_dtype", &AccColumns::device_dtype)
      .def_readonly("shape", &AccColumns::shape)
      .def("metrics", &columns_dict);

  m.def("builtin_pt_api", [](const std::string& ms_api) { return builtin_pt_api(ms_api); });
  m.def("acc_standard",
        [](const std::string& op) { return acc_standard_name(acc_standard_for(op)); });
  m.def("acc_compare",
        [](const std::string& op, const at::Tensor& bench, const at::Tensor& device) {
          return replay::compare_tensors(op, bench, device);
        });
  m.def("acc_unusable", [](const std::string& status, const std::string& message) {
    return acc_unusable_output(status_from(status), message);
  });
  m.def("acc_worse", [](const std::string& a, const std::string& b) {
    return acc_status_name(acc_worse(status_from(a), status_from(b)));
  });
  m.def(
      "acc_call_aten",
      [](const std::string& op, const std::string& overload, py::tuple args, py::dict kwargs) {
        const c10::OperatorHandle h = replay::find_aten_op(op, overload);
        // An L2 dump records every schema argument in order; keyword-only ones go by name.
        const auto& schema_args = h.schema().arguments();
        py::list positional;
        for (size_t i = 0; i < args.size(); ++i) {
          if (i < schema_args.size() && schema_args[i].kwarg_only())
            kwargs[py::str(schema_args[i].name())] = args[i];
          else
            positional.append(args[i]);
        }
        torch::jit::Stack stack = torch::jit::createStackForSchema(
            h.schema(), torch::jit::tuple_slice(py::tuple(positional)),
            py::reinterpret_borrow<py::kwargs>(kwargs), c10::nullopt);
        {
          py::gil_scoped_release no_gil;
          h.callBoxed(stack);
        }
        return torch::jit::createPyObjectForStack(std::move(stack));
      },
      "Calls aten::<op>.<overload> through the dispatcher with Python arguments.");

  py::class_<AccResultFiles>(m, "AccResultFiles")
      .def_static("create", &AccResultFiles::create)
      .def_static("resume", &AccResultFiles::resume, py::arg("result_csv"),
                  py::arg("drop_unfinished") = true)
      .def_property_readonly("result_path", &AccResultFiles::result_path)
      .def_property_readonly("details_path", &AccResultFiles::details_path)
      .def("done", [](const AccResultFiles& f, const std::string& api) { return f.done(api); })
      .def("write", [](AccResultFiles& f, const std::string& api, const std::string& fwd,
                       const std::string& bwd, const std::vector<AccColumns>& forward,
                       const std::vector<AccColumns>& backward, const std::string& skip_message) {
        f.write(api, status_from(fwd), status_from(bwd), forward, backward, skip_message);
      });
}

}  // namespace numprobe::python
