// numprobe._engine: the torch-free engine for Python capture fronts other than torch (MindSpore).
// It links only the engine libraries (capture core, format, core, base): a MindSpore user imports
// numprobe without torch. The front hooks its framework in Python and hands each entry here as
// Python values; statistics, CRC-32, .npy files and the crash-safe dump writer are the engine's,
// the same code the torch capture uses. It also lends every Python front the engine's dump readers
// (dump_readers.h): it is the binding each lane has, torch or not.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "acc_check_module.h"
#include "capture/capture_config.h"
#include "capture/capture_session.h"
#include "convert_binding.h"
#include "dump_readers.h"
#include "numprobe/error.h"
#include "py_entry.h"

namespace py = pybind11;
using numprobe::capture::CaptureConfig;
using numprobe::capture::CaptureSession;
using numprobe::capture::EntryFilter;
using numprobe::capture::EntryRecord;
using numprobe::capture::SummaryMode;
using numprobe::capture::Task;

namespace numprobe::pyengine {
namespace {

// One capture: the session (writer thread, counters, steps), the list/scope filter, and how the
// front's tensors are read. Entries arrive as (key, value, stem) parts.
class Session {
 public:
  Session(const std::string& config_json, const std::string& source, const std::string& framework)
      : session_(capture::parse_capture_config(config_json, source)),
        filter_(session_.config()),
        overflow_left_(session_.config().overflow_nums) {
    session_.set_framework(framework);
  }

  void set_adapter(py::tuple tensor_types, py::function to_numpy, py::object describe,
                   const std::string& tensor_type_name) {
    tensor_types_ = std::move(tensor_types);
    to_numpy_ = std::move(to_numpy);
    describe_ = std::move(describe);
    adapter_.tensor_types = tensor_types_.ptr();
    adapter_.to_numpy = to_numpy_.ptr();
    adapter_.describe = describe_.is_none() ? nullptr : describe_.ptr();
    adapter_.tensor_type_name = tensor_type_name;
  }

  const CaptureConfig& config() const { return session_.config(); }
  CaptureSession& session() { return session_; }
  EntryFilter& filter() { return filter_; }

  void advance_step() {
    session_.advance_step();
    filter_.reset();
    overflow_left_ = config().overflow_nums;
  }

  // parts: [(key, value, stem, is_output)]. Returns false when the entry was dropped (capture
  // stopped, overflow_check without NaN/Inf, or past overflow_nums).
  bool submit(const std::string& name, const py::list& parts, const py::object& frames,
              const py::object& parent) {
    if (!adapter_.to_numpy) throw Error("_engine.Session: set_adapter() was not called");
    // A gradient hook may fire after stop() (a backward run outside start/stop): nothing is
    // written then, as no step directory is open.
    if (!session_.active()) return false;
    EntryRecord rec = session_.new_record();
    rec.name = name;
    const CaptureConfig& cfg = config();
    LeafPlan plan;
    plan.stats = cfg.task != Task::kStructure;
    plan.md5 = cfg.summary_mode == SummaryMode::kMd5 && cfg.task == Task::kStatistics;
    plan.save = cfg.task == Task::kTensor ||
                (cfg.task == Task::kStatistics && filter_.tensor_list_matches(name));
    plan.names_files = plan.save;
    rec.begin_dict();
    for (py::handle part : parts) {
      py::tuple p = part.cast<py::tuple>();
      rec.key(p[0].cast<std::string>());
      add_value(adapter_, plan, rec, p[1].ptr(), p[2].cast<std::string>(), p[3].cast<bool>());
    }
    rec.end();
    if (cfg.task == Task::kOverflowCheck) {
      if (!rec.overflow || overflow_left_ == 0) return false;
      if (overflow_left_ > 0) --overflow_left_;
    }
    CaptureSession::Frames stack;
    if (!frames.is_none() && cfg.extra_info) {
      auto v = std::make_shared<std::vector<capture::StackFrame>>();
      for (py::handle f : frames) {
        py::tuple t = f.cast<py::tuple>();
        v->push_back({t[0].cast<std::string>(), t[1].cast<int>(), t[2].cast<std::string>()});
      }
      stack = std::move(v);
    }
    std::optional<std::string> par;
    if (!parent.is_none()) par = parent.cast<std::string>();
    // construct.json only where msprobe writes it: levels with cells (L0, mix), extra_info on.
    const bool has_parent = cfg.extra_info && cfg.level != capture::Level::kL1;
    session_.submit(std::move(rec), std::move(stack), has_parent, std::move(par));
    return true;
  }

  void add_construct(const std::string& name, const py::object& parent) {
    const CaptureConfig& cfg = config();
    if (!cfg.extra_info || cfg.level == capture::Level::kL1) return;
    std::optional<std::string> par;
    if (!parent.is_none()) par = parent.cast<std::string>();
    session_.add_construct(name, std::move(par));
  }

 private:
  CaptureSession session_;
  EntryFilter filter_;
  int64_t overflow_left_;
  py::tuple tensor_types_;
  py::function to_numpy_;
  py::object describe_ = py::none();
  TensorAdapter adapter_;
};

py::dict stats_dict(const capture::TensorLeaf& leaf) {
  py::dict d;
  d["count"] = leaf.stats.count;
  d["max"] = leaf.stats.max;
  d["min"] = leaf.stats.min;
  d["mean"] = leaf.stats.mean();
  d["norm"] = leaf.stats.norm();
  d["nan"] = leaf.stats.nan_count;
  d["pos_inf"] = leaf.stats.pos_inf_count;
  d["neg_inf"] = leaf.stats.neg_inf_count;
  d["zeros"] = leaf.stats.zero_count;
  d["has_stats"] = leaf.has_stats;
  return d;
}

}  // namespace
}  // namespace numprobe::pyengine

PYBIND11_MODULE(_engine, m) {
  using numprobe::pyengine::Session;
  m.doc() = "numprobe's torch-free engine: Python capture fronts (MindSpore), dump readers";
  // As numprobe._C's: a ValueError, so scripts catch either binding's errors alike. Local: a global
  // translator for numprobe::Error is shared by every pybind11 module in the process, so with _C
  // loaded too, the one registered last would raise its own class for both modules' errors.
  py::register_local_exception<numprobe::Error>(m, "NumprobeError", PyExc_ValueError);
  numprobe::pyengine::register_dump_readers(m);
  numprobe::pyengine::register_acc_check(m);
  numprobe::pyengine::add_convert_binding(m);

  m.def(
      "check_config",
      [](const std::string& text, const std::string& source) {
        numprobe::capture::parse_capture_config(text, source);
      },
      "Raises NumprobeError naming the field when config.json text is invalid.");
  m.def(
      "tensor_stats",
      [](py::object array, bool md5) {
        numprobe::pyengine::LeafPlan plan;
        plan.md5 = md5;
        numprobe::capture::TensorLeaf leaf;
        numprobe::pyengine::fill_leaf_from_buffer(array.ptr(), plan, leaf, std::string());
        py::dict d = numprobe::pyengine::stats_dict(leaf);
        if (leaf.crc32) d["crc32"] = *leaf.crc32;
        return d;
      },
      py::arg("array"), py::arg("md5") = false,
      "The engine's statistics of a buffer (float64 sums; NaN/Inf/zero counts), as capture "
      "computes them.");

  py::class_<Session>(m, "Session")
      .def(py::init<const std::string&, const std::string&, const std::string&>(),
           py::arg("config_json"), py::arg("source"), py::arg("framework") = "mindspore")
      .def("set_adapter", &Session::set_adapter, py::arg("tensor_types"), py::arg("to_numpy"),
           py::arg("describe") = py::none(), py::arg("tensor_type_name") = "mindspore.Tensor")
      .def("task", [](Session& s) { return std::string(task_name(s.config().task)); })
      .def("level", [](Session& s) { return std::string(level_name(s.config().level)); })
      .def("summary_mode",
           [](Session& s) { return std::string(summary_mode_name(s.config().summary_mode)); })
      .def("dump_path", [](Session& s) { return s.config().dump_path; })
      .def("data_mode",
           [](Session& s) {
             const auto& d = s.config().data_mode;
             py::dict r;
             r["forward"] = d.forward;
             r["backward"] = d.backward;
             r["input"] = d.input;
             r["output"] = d.output;
             return r;
           })
      .def("set_rank", [](Session& s, int64_t r) { s.session().set_rank(r); })
      .def("set_step", [](Session& s, int64_t st) { s.session().set_step(st); })
      .def("step", [](Session& s) { return s.session().step(); })
      .def("start", [](Session& s) { s.session().start(); })
      .def("stop", [](Session& s) { s.session().stop(); })
      .def("advance_step", &Session::advance_step)
      .def("active", [](Session& s) { return s.session().active(); })
      .def("finished_for_good", [](Session& s) { return s.session().finished_for_good(); })
      .def("next_count", [](Session& s, const std::string& k) { return s.session().next_count(k); })
      .def("selects_everything", [](Session& s) { return s.filter().selects_everything(); })
      .def("wants_forward",
           [](Session& s, const std::string& name, const std::string& enclosing) {
             return s.filter().wants_forward(name, enclosing);
           })
      .def("list_matches",
           [](Session& s, const std::string& name) { return s.filter().list_matches(name); })
      .def("submit", &Session::submit, py::arg("name"), py::arg("parts"),
           py::arg("frames") = py::none(), py::arg("parent") = py::none())
      .def("add_construct", &Session::add_construct)
      .def("rank_dir", [](Session& s) { return s.session().rank_dir(); })
      .def("flush",
           [](Session& s) {
             py::gil_scoped_release unlocked;
             s.session().flush();
           })
      .def("writer_error", [](Session& s) { return s.session().writer_error(); })
      .def("stats", [](Session& s) {
        auto st = s.session().stats();
        py::dict d;
        d["entries"] = st.entries;
        d["tensor_files"] = st.tensor_files;
        d["tensor_bytes"] = st.tensor_bytes;
        return d;
      });
}
