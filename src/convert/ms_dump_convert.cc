#include "convert/ms_dump_convert.h"

#include <filesystem>
#include <map>
#include <memory>
#include <system_error>
#include <utility>

#include "base/file_util.h"
#include "base/json_writer.h"
#include "capture/capture_config.h"
#include "capture/capture_record.h"
#include "capture/capture_session.h"
#include "convert/ms_graph_ir.h"
#include "core/npy.h"
#include "core/stats.h"
#include "numprobe/error.h"

namespace fs = std::filesystem;

namespace numprobe::convert {
namespace {

// A step directory already in `out` would be appended to by the writer: refuse instead.
void check_out_dir(const std::string& in, const std::string& out) {
  std::error_code ec;
  if (out.empty()) throw InputError(in, "no output directory given");
  const fs::path in_abs = fs::weakly_canonical(in, ec);
  const fs::path out_abs = fs::weakly_canonical(out, ec);
  auto rel = out_abs.lexically_relative(in_abs);
  if (!rel.empty() && rel.native().rfind("..", 0) != 0)
    throw InputError(out, "the output directory lies inside the MindSpore dump " + in +
                              "; choose one outside it (the input is never written to)");
  if (!fs::exists(out, ec)) return;
  if (!fs::is_directory(out, ec)) throw InputError(out, "exists and is not a directory");
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("step", 0) == 0)
      throw InputError(it->path().string(),
                       "already exists: numprobe convert never writes over a dump; choose an "
                       "empty output directory");
  }
}

struct Leaves {
  capture::EntryRecord& rec;
  bool save;
  std::vector<MsDumpProblem>& problems;
  size_t& files;
};

// One tensor file as a leaf: shape and data from the .npy, dtype as MindSpore spelled it.
void add_leaf(const MsTensorFile& f, const IrShape* ir, const std::string& data_name, Leaves& l) {
  capture::TensorLeaf& leaf = l.rec.tensor();
  leaf.type = "mindspore.Tensor";
  leaf.dtype = f.name.dtype;
  leaf.write_requires_grad = false;  // msprobe's MindSpore leaves have no requires_grad
  std::shared_ptr<NpyFile> npy;
  try {
    npy = std::make_shared<NpyFile>(NpyFile::open(f.path));
  } catch (const Error& e) {
    l.problems.push_back(
        {f.path, std::string("unreadable, written without statistics: ") + e.what()});
    return;
  }
  const NpyHeader& h = npy->header();
  leaf.shape = h.shape;
  if (ir && *ir) {
    size_t n = 1;
    for (int64_t d : **ir) n *= static_cast<size_t>(d);
    if (n == h.element_count) leaf.shape = **ir;  // the graph's shape of the same elements
  }
  if (h.dtype == DType::kUnknown || h.fortran_order) {
    l.problems.push_back({f.path, "element type " + h.descr +
                                      (h.fortran_order ? " in Fortran order" : "") +
                                      ": written without statistics"});
    return;
  }
  if (h.element_count > 0) {
    leaf.stats = compute_stats(npy->data(), h.element_count, h.dtype);
    leaf.has_stats = true;
    leaf.bool_stats = h.dtype == DType::kBool;
  }
  if (l.save) {
    leaf.pending.data = npy->data();
    leaf.pending.dtype = h.dtype;
    leaf.pending.owner = std::shared_ptr<const void>(npy, npy->data());
    leaf.data_name = data_name;
    ++l.files;
  }
}

// The slots 0..max of one side, null where a file is missing (a cut-off dump).
void add_side(const MsKernelCall& c, const IrKernelShapes* ir, bool output, const std::string& stem,
              Leaves& l) {
  int64_t max_index = -1;
  for (const MsTensorFile& f : c.files)
    if (f.name.output == output) max_index = std::max(max_index, f.name.index);
  l.rec.begin_list();
  for (int64_t i = 0; i <= max_index; ++i) {
    const MsTensorFile* found = nullptr;
    for (const MsTensorFile& f : c.files)
      if (f.name.output == output && f.name.index == i) found = &f;
    const std::vector<IrShape>* shapes = ir ? (output ? &ir->outputs : &ir->inputs) : nullptr;
    const IrShape* shape = shapes && static_cast<size_t>(i) < shapes->size()
                               ? &(*shapes)[static_cast<size_t>(i)]
                               : nullptr;
    if (found)
      add_leaf(*found, shape, stem + (output ? ".output." : ".input.") + std::to_string(i) + ".npy",
               l);
    else
      l.rec.null();
  }
  l.rec.end();
}

std::string entry_name(const MsKernelCall& c, std::map<std::string, int64_t>& counters) {
  if (c.op_type == "Parameter") {
    const int64_t n = counters["P." + c.scope]++;
    return "Parameter." + c.scope + "." + std::to_string(n) + ".forward";
  }
  const bool grad = is_gradient_scope(c.scope);
  const int64_t n = counters[(grad ? "B." : "F.") + c.op_type]++;
  return "Kernel." + c.op_type + "." + std::to_string(n) + (grad ? ".backward" : ".forward");
}

const IrKernelShapes* ir_shapes(const MsRankDump& rd, const MsKernelCall& c) {
  auto g = rd.graphs.find(c.graph);
  if (g == rd.graphs.end()) return nullptr;
  auto k = g->second.shapes.find(c.full_name);
  return k == g->second.shapes.end() ? nullptr : &k->second;
}

void write_kernels_json(const std::string& dir,
                        const std::vector<std::pair<std::string, const MsKernelCall*>>& names) {
  std::string text;
  base::JsonWriter w(text, base::JsonDialect::python(1));
  w.begin_object();
  for (const auto& [name, c] : names) {
    w.key(name);
    w.begin_object();
    w.key("kernel");
    w.string_value(c->full_name);
    w.key("graph");
    w.int_value(c->graph);
    w.end_object();
  }
  w.end_object();
  base::write_file_atomic(dir + "/kernels.json", text);
}

}  // namespace

ConvertReport convert_mindspore_dump(const std::string& in, const ConvertOptions& opt) {
  check_out_dir(in, opt.out);
  MsDumpScan scan = scan_mindspore_dump(in);
  ConvertReport rep;
  rep.problems = std::move(scan.problems);
  capture::CaptureConfig cfg;
  cfg.dump_path = opt.out;
  cfg.level = capture::Level::kL2;
  cfg.task = opt.tensors ? capture::Task::kTensor : capture::Task::kStatistics;
  for (const MsRankDump& rd : scan.ranks) {
    ++rep.ranks;
    capture::CaptureSession session(cfg);
    session.set_framework("mindspore");
    session.set_rank(rd.rank);
    for (const auto& [iteration, it] : rd.iterations) {
      session.set_step(iteration);
      session.start();
      std::map<std::string, int64_t> counters;
      std::vector<std::pair<std::string, const MsKernelCall*>> names;
      for (const MsKernelCall& c : it.calls) {
        if (c.op_type == "Parameter" && !opt.parameters) continue;
        capture::EntryRecord rec = session.new_record();
        rec.name = entry_name(c, counters);
        const bool backward =
            rec.name.size() > 9 && rec.name.rfind(".backward") == rec.name.size() - 9;
        Leaves l{rec, opt.tensors, rep.problems, rep.tensor_files};
        const IrKernelShapes* ir = c.op_type == "Parameter" ? nullptr : ir_shapes(rd, c);
        rec.begin_dict();
        rec.key(backward ? "input" : "input_args");
        add_side(c, ir, false, rec.name, l);
        if (!backward) {
          rec.key("input_kwargs");
          rec.begin_dict();
          rec.end();
        }
        rec.key("output");
        add_side(c, ir, true, rec.name, l);
        rec.end();
        names.emplace_back(rec.name, &c);
        session.submit(std::move(rec));
        ++rep.entries;
      }
      session.stop();
      const std::string err = session.writer_error();
      if (!err.empty()) throw Error(opt.out + ": writing the converted dump failed: " + err);
      write_kernels_json(session.rank_dir(), names);
      rep.rank_dirs.push_back(session.rank_dir());
      ++rep.steps;
    }
  }
  return rep;
}

}  // namespace numprobe::convert
