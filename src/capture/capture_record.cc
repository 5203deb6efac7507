#include "capture/capture_record.h"

#include <string>
#include <vector>

#include "base/json_writer.h"
#include "core/hash.h"
#include "format/dump_render.h"
#include "numprobe/error.h"

namespace numprobe::capture {
namespace {

using base::JsonWriter;
using Op = EntryRecord::Op;

// The leaf's text is format's (render_leaf); capture says what the leaf holds.
void render_tensor(const TensorLeaf& t, base::JsonWriter& w) {
  format::LeafValues v;
  v.type = t.type;
  v.dtype = t.dtype;
  v.shape = t.shape.data();
  v.ndim = t.shape.size();
  v.requires_grad = t.requires_grad;
  v.write_requires_grad = t.write_requires_grad;
  if (t.has_stats) {
    v.stats = t.bool_stats ? format::LeafValues::Stats::kBool : format::LeafValues::Stats::kFloat;
    v.max = t.stats.max;
    v.min = t.stats.min;
    if (!t.bool_stats) {
      v.mean = t.stats.mean();
      v.norm = t.stats.norm();
    }
    // numprobe addition (format v1): non-finite counts, only when there are any, so dumps of
    // healthy runs stay identical to msprobe's.
    if (t.write_counts) {
      v.nan_count = t.stats.nan_count;
      v.pos_inf_count = t.stats.pos_inf_count;
      v.neg_inf_count = t.stats.neg_inf_count;
    }
  }
  std::string md5;
  if (t.crc32) {
    md5 = crc32_hex(*t.crc32);
    v.md5 = md5;
  }
  v.data_name = t.data_name;
  format::render_leaf(v, w);
}

}  // namespace

std::string render_entry_record(const EntryRecord& r) {
  std::string out;
  render_entry_record(r, out);
  return out;
}

void render_entry_record(const EntryRecord& r, std::string& out) {
  out.clear();
  base::JsonWriter w(out, base::JsonDialect::python(1), 2);
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
