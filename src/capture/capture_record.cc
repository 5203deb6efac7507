#include "numprobe/capture_record.h"

#include <cmath>
#include <cstdio>

#include "format/py_json_writer.h"
#include "numprobe/error.h"

namespace numprobe::capture {
namespace {

using format::PyJsonWriter;
using Op = EntryRecord::Op;

void write_stat(PyJsonWriter& w, const char* key, bool present, double v) {
  w.key(key);
  if (present)
    w.float_value(v);
  else
    w.null_value();
}

// Key order is msprobe's (_analyze_tensor + json_writer placeholders): type, dtype, shape, Max,
// Min, Mean, Norm, requires_grad, then md5 / data_name.
void render_tensor(const TensorLeaf& t, PyJsonWriter& w) {
  w.begin_object();
  w.key("type");
  w.string_value(t.type);
  w.key("dtype");
  w.string_value(t.dtype);
  w.key("shape");
  w.begin_array();
  for (int64_t d : t.shape) w.int_value(d);
  w.end_array();
  if (t.bool_stats) {
    // msprobe: Max = any(), Min = all() as Python bools; Mean/Norm null.
    bool any = t.has_stats && t.stats.max != 0;
    bool all = t.has_stats && t.stats.min != 0;
    w.key("Max");
    if (t.has_stats)
      w.bool_value(any);
    else
      w.null_value();
    w.key("Min");
    if (t.has_stats)
      w.bool_value(all);
    else
      w.null_value();
    w.key("Mean");
    w.null_value();
    w.key("Norm");
    w.null_value();
  } else {
    write_stat(w, "Max", t.has_stats, t.stats.max);
    write_stat(w, "Min", t.has_stats, t.stats.min);
    write_stat(w, "Mean", t.has_stats, t.stats.mean());
    write_stat(w, "Norm", t.has_stats, t.stats.norm());
  }
  w.key("requires_grad");
  w.bool_value(t.requires_grad);
  if (t.crc32) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", *t.crc32);
    w.key("md5");
    w.string_value(buf);
  }
  if (!t.data_name.empty()) {
    w.key("data_name");
    w.string_value(t.data_name);
  }
  // numprobe addition (format v1): non-finite counts, only when there are any, so dumps of
  // healthy runs stay identical to msprobe's.
  if (t.has_stats && t.write_counts &&
      (t.stats.nan_count || t.stats.pos_inf_count || t.stats.neg_inf_count)) {
    w.key("nan_count");
    w.int_value(static_cast<int64_t>(t.stats.nan_count));
    w.key("pos_inf_count");
    w.int_value(static_cast<int64_t>(t.stats.pos_inf_count));
    w.key("neg_inf_count");
    w.int_value(static_cast<int64_t>(t.stats.neg_inf_count));
  }
  w.end_object();
}

}  // namespace

std::string render_entry_record(const EntryRecord& r) {
  std::string out;
  PyJsonWriter w(out, 1, 2);
  const auto& toks = r.tokens();
  // Open containers; a kTyped wrapper is an object closed right after its one value.
  std::vector<char> open;
  auto after_value = [&] {
    while (!open.empty() && open.back() == 't') {
      w.end_object();
      open.pop_back();
    }
  };
  for (const auto& t : toks) {
    switch (t.op) {
      case Op::kBeginDict:
        w.begin_object();
        open.push_back('{');
        continue;
      case Op::kBeginList:
        w.begin_array();
        open.push_back('[');
        continue;
      case Op::kEnd:
        if (open.empty() || open.back() == 't')
          throw Error("capture record " + r.name + ": unbalanced end");
        if (open.back() == '{')
          w.end_object();
        else
          w.end_array();
        open.pop_back();
        break;
      case Op::kKey:
        w.key(r.str(t));
        continue;
      case Op::kNull:
        w.null_value();
        break;
      case Op::kBool:
        w.bool_value(t.b);
        break;
      case Op::kInt:
        w.int_value(t.i);
        break;
      case Op::kFloat:
        w.float_value(t.d);
        break;
      case Op::kString:
        w.string_value(r.str(t));
        break;
      case Op::kTyped:
        w.begin_object();
        w.key("type");
        w.string_value(r.str(t));
        w.key("value");
        open.push_back('t');
        continue;
      case Op::kTensor:
        render_tensor(r.tensors()[static_cast<size_t>(t.i)], w);
        break;
    }
    after_value();
  }
  if (!open.empty()) throw Error("capture record " + r.name + ": unclosed container");
  return out;
}

}  // namespace numprobe::capture
