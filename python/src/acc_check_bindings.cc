// numprobe._C's acc-check part: the aten dispatcher call, the output comparison and the result
// files, for python/numprobe/acc_check (which rebuilds arguments and runs L1 APIs).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include "../common/acc_check_py.h"
#include "acc_check_bindings.h"
#include "numprobe/acc_check.h"
#include "numprobe/compare/mapping.h"
#include "torch/replay/aten_replay.h"

namespace py = pybind11;

namespace numprobe::python {
void register_acc_check(py::module_& m) {
  python_common::register_acc_common(m);

  m.def("builtin_pt_api", [](const std::string& ms_api) { return builtin_pt_api(ms_api); });
  m.def("acc_standard",
        [](const std::string& op) { return acc_standard_name(acc_standard_for(op)); });
  m.def("acc_compare",
        [](const std::string& op, const at::Tensor& bench, const at::Tensor& device) {
          return replay::compare_tensors(op, bench, device);
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
}

}  // namespace numprobe::python
