// acc-check's Python surface shared by numprobe._C (the torch replay) and numprobe._engine (the
// MindSpore replay): the per-output columns, statuses and msprobe's result files. Each binding
// adds its own acc_compare over its framework's tensors. Header-only: the two extensions share no
// library.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "numprobe/acc_check.h"

namespace numprobe::python_common {

inline AccStatus acc_status_from(const std::string& s) {
  if (s == "pass") return AccStatus::kPass;
  if (s == "warning") return AccStatus::kWarning;
  if (s == "error") return AccStatus::kError;
  if (s == "SKIP") return AccStatus::kSkip;
  if (s.empty() || s == " ") return AccStatus::kNone;
  throw pybind11::value_error("unknown acc-check status '" + s + "'");
}

inline pybind11::dict acc_columns_dict(const AccColumns& c) {
  pybind11::dict d;
  auto put = [&](const char* k, const std::optional<double>& v) {
    d[k] = v ? pybind11::cast(*v) : pybind11::none();
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

// AccColumns, acc_unusable, acc_worse and AccResultFiles on module m. The classes are module-local:
// numprobe._C and numprobe._engine both register them, and both may be loaded in one process
// (pybind11 keeps one global registry of C++ types otherwise, and refuses the second).
inline void register_acc_common(pybind11::module_& m) {
  namespace py = pybind11;
  py::class_<AccColumns>(m, "AccColumns", py::module_local())
      .def_property_readonly("status",
                             [](const AccColumns& c) { return acc_status_name(c.status); })
      .def_readonly("message", &AccColumns::message)
      .def_readonly("bench_dtype", &AccColumns::bench_dtype)
      .def_readonly("device_dtype", &AccColumns::device_dtype)
      .def_readonly("shape", &AccColumns::shape)
      .def("metrics", &acc_columns_dict);
  m.def("acc_unusable", [](const std::string& status, const std::string& message) {
    return acc_unusable_output(acc_status_from(status), message);
  });
  m.def("acc_worse", [](const std::string& a, const std::string& b) {
    return acc_status_name(acc_worse(acc_status_from(a), acc_status_from(b)));
  });
  py::class_<AccResultFiles>(m, "AccResultFiles", py::module_local())
      .def_static("create", &AccResultFiles::create)
      .def_static("resume", &AccResultFiles::resume, py::arg("result_csv"),
                  py::arg("drop_unfinished") = true)
      .def_property_readonly("result_path", &AccResultFiles::result_path)
      .def_property_readonly("details_path", &AccResultFiles::details_path)
      .def("done", [](const AccResultFiles& f, const std::string& api) { return f.done(api); })
      .def("write", [](AccResultFiles& f, const std::string& api, const std::string& fwd,
                       const std::string& bwd, const std::vector<AccColumns>& forward,
                       const std::vector<AccColumns>& backward, const std::string& skip_message) {
        f.write(api, acc_status_from(fwd), acc_status_from(bwd), forward, backward, skip_message);
      });
}

}  // namespace numprobe::python_common
