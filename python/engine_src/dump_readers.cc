#include "dump_readers.h"

#include <string>
#include <string_view>

#include "numprobe/dump_tree.h"
#include "numprobe/stack_construct.h"

namespace py = pybind11;

namespace numprobe::pyengine {
namespace {

py::str text(std::string_view s) {
  return py::str(s.data(), s.size());
}

py::dict location_dict(const RankLocation& loc) {
  py::dict d;
  d["step"] = loc.step;
  d["rank"] = loc.rank;
  d["rank_label"] = loc.rank_label;
  d["dir"] = loc.dir;
  d["dump_json"] = loc.dump_json;
  d["has_dump_json"] = loc.has_dump_json;
  d["has_journal"] = loc.has_journal;
  return d;
}

py::list find_dumps(const std::string& path) {
  py::list out;
  for (const RankLocation& loc : find_rank_dumps(path)) out.append(location_dict(loc));
  return out;
}

// {entry: [frames]}: both msprobe layouts; the names of one de-duplicated group share one list.
py::dict stack_dict(const std::string& path) {
  const StackTable t = read_stack_json(path);
  py::dict out;
  for (size_t g = 0; g < t.group_frames.size(); ++g) {
    py::list frames;
    for (uint32_t f : t.group_frames[g]) frames.append(text(t.strings.get(f)));
    for (uint32_t n : t.group_names[g]) {
      // A name in two groups keeps the later one, as StackTable::frames_of does.
      out[text(t.strings.get(n))] = frames;
    }
  }
  return out;
}

// {entry: parent module or None}: the Megatron form [parent, micro_step] gives its parent.
py::dict construct_dict(const std::string& path) {
  const ConstructTable t = read_construct_json(path);
  py::dict out;
  for (const ConstructEdge& e : t.edges) {
    py::object parent = py::none();
    if (e.parent != kNoString) parent = text(t.strings.get(e.parent));
    out[text(t.strings.get(e.node))] = parent;
  }
  return out;
}

}  // namespace

void register_dump_readers(py::module_& m) {
  m.def("find_rank_dumps", &find_dumps, py::arg("path"),
        "The rank dumps under a dump.json, rank, step or dump root directory, sorted by (step, "
        "rank, directory), as compare and info find them: dicts of step and rank (-1 when the "
        "path names none), rank_label (\"rank0\", \"rank\", \"proc2016\"), dir, dump_json, "
        "has_dump_json and has_journal. NumprobeError names the path when it does not exist or "
        "holds no dump within four directory levels.");
  m.def("read_stack_json", &stack_dict, py::arg("path"),
        "stack.json (either msprobe layout) as {entry: [frames]}. NumprobeError names the file "
        "and byte of malformed content.");
  m.def("read_construct_json", &construct_dict, py::arg("path"),
        "construct.json as {entry: parent module or None}. NumprobeError names the file and "
        "byte of malformed content.");
}

}  // namespace numprobe::pyengine
