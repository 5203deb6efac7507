#include "convert_binding.h"

#include <string>

#include "convert/ms_dump_convert.h"

namespace py = pybind11;

namespace numprobe::pyengine {

void add_convert_binding(py::module_& m) {
  m.def(
      "convert_mindspore_dump",
      [](const std::string& in, const std::string& out, bool tensors, bool parameters) {
        convert::ConvertOptions opt;
        opt.out = out;
        opt.tensors = tensors;
        opt.parameters = parameters;
        convert::ConvertReport r;
        {
          py::gil_scoped_release release;
          r = convert::convert_mindspore_dump(in, opt);
        }
        py::dict d;
        d["ranks"] = r.ranks;
        d["steps"] = r.steps;
        d["entries"] = r.entries;
        d["tensor_files"] = r.tensor_files;
        py::list dirs, problems;
        for (const std::string& s : r.rank_dirs) dirs.append(s);
        for (const convert::MsDumpProblem& p : r.problems)
          problems.append(py::make_tuple(p.path, p.what));
        d["rank_dirs"] = dirs;
        d["problems"] = problems;
        return d;
      },
      py::arg("dump_dir"), py::arg("out"), py::arg("tensors") = true, py::arg("parameters") = true,
      "MindSpore's kernel dump (rank_<N>/...) written as msprobe's layout under out; returns "
      "{ranks, steps, entries, tensor_files, rank_dirs, problems: [(path, what)]}. Raises "
      "NumprobeError when dump_dir is no such dump or out already holds step directories.");
}

}  // namespace numprobe::pyengine
