#include "numprobe/capture_record.h"

#include <cmath>

#include "format/py_json_writer.h"
#include "numprobe/error.h"
#include "numprobe/hash.h"

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
    w.key("md5");
    w.string_value(crc32_hex(*t.crc32));
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
  render_entry_record(r, out);
  return out;
}

void render_entry_record(const EntryRecord& r, std::string& out) {
  out.clear();
  PyJsonWriter w(out, 1, 2);
  // Open containers: '{' dict, '[' list, 't' a {"type", "value"} wrapper awaiting its value.
  // `keyed` is true when a dict has just received its key. Any stream that would make invalid
  // JSON throws (a capture bug, never user input).
  thread_local std::vector<char> open;  // reused: no allocation per entry
  open.clear();
  bool keyed = false;
  auto fail = [&](const char* what) { throw Error("capture record " + r.name + ": " + what); };
  auto before_value = [&] {
    if (!open.empty() && open.back() == '{' && !keyed) fail("value without a key in a dict");
    if (open.empty() && !out.empty()) fail("second top-level value");
    keyed = false;
  };
  auto after_value = [&] {
    while (!open.empty() && open.back() == 't') {
      w.end_object();
      open.pop_back();
    }
  };
  for (const auto& t : r.tokens()) {
    switch (t.op) {
      case Op::kBeginDict:
        before_value();
        w.begin_object();
        open.push_back('{');
        continue;
      case Op::kBeginList:
        before_value();
        w.begin_array();
        open.push_back('[');
        continue;
      case Op::kEnd:
        if (open.empty() || open.back() == 't') fail("unbalanced end");
        if (keyed) fail("key without a value");
        if (open.back() == '{')
          w.end_object();
        else
          w.end_array();
        open.pop_back();
        break;
      case Op::kKey:
        if (open.empty() || open.back() != '{' || keyed) fail("key outside a dict");
        w.key(r.str(t));
        keyed = true;
        continue;
      case Op::kTyped:
        before_value();
        w.begin_object();
        w.key("type");
        w.string_value(r.str(t));
        w.key("value");
        open.push_back('t');
        continue;
      default:
        before_value();
        switch (t.op) {
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
          case Op::kTensor:
            render_tensor(r.tensors()[static_cast<size_t>(t.i)], w);
            break;
          default:
            break;
        }
        break;
    }
    after_value();
  }
  if (!open.empty()) fail("unclosed container");
}

}  // namespace numprobe::capture
