#include "capture/capture_record.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>

#include "core/hash.h"
#include "format/py_json_writer.h"
#include "numprobe/error.h"

namespace numprobe::capture {
namespace {

using format::PyJsonWriter;
using Op = EntryRecord::Op;

// One leaf, written straight into the output through a raw pointer (room for the longest text the
// leaf can have is made first): a per-op step renders thousands of leaves, and the generic
// writer's per-token bookkeeping and string appends were most of the writer thread's rendering
// time. The text is exactly PyJsonWriter's (tests compare the two). Key order is msprobe's
// (_analyze_tensor + json_writer placeholders): type, dtype, shape, Max, Min, Mean, Norm,
// requires_grad, then md5 / data_name. `depth` is the writer's depth where the leaf's '{' goes.
class LeafText {
 public:
  LeafText(std::string& out, int depth, int indent)
      : out_(out),
        inner_(static_cast<size_t>((depth + 1) * indent)),
        step_(static_cast<size_t>(indent)) {}

  void render(const TensorLeaf& t) {
    const size_t old = out_.size();
    out_.resize(old + bound(t));
    p_ = &out_[old];
    key("\"type\": ");
    string(t.type);
    key("\"dtype\": ");
    string(t.dtype);
    key("\"shape\": ");
    if (t.shape.empty()) {
      put("[]");
    } else {
      *p_++ = '[';
      for (size_t i = 0; i < t.shape.size(); ++i) {
        if (i) *p_++ = ',';
        newline(inner_ + step_);
        integer(t.shape[i]);
      }
      newline(inner_);
      *p_++ = ']';
    }
    if (t.bool_stats) {
      // msprobe: Max = any(), Min = all() as Python bools; Mean/Norm null.
      key("\"Max\": ");
      put(!t.has_stats ? "null" : t.stats.max != 0 ? "true" : "false");
      key("\"Min\": ");
      put(!t.has_stats ? "null" : t.stats.min != 0 ? "true" : "false");
      key("\"Mean\": ");
      put("null");
      key("\"Norm\": ");
      put("null");
    } else {
      stat("\"Max\": ", t.has_stats, t.stats.max);
      stat("\"Min\": ", t.has_stats, t.stats.min);
      stat("\"Mean\": ", t.has_stats, t.has_stats ? t.stats.mean() : 0);
      stat("\"Norm\": ", t.has_stats, t.has_stats ? t.stats.norm() : 0);
    }
    key("\"requires_grad\": ");
    put(t.requires_grad ? "true" : "false");
    if (t.crc32) {
      key("\"md5\": ");
      string(crc32_hex(*t.crc32));
    }
    if (!t.data_name.empty()) {
      key("\"data_name\": ");
      string(t.data_name);
    }
    // numprobe addition (format v1): non-finite counts, only when there are any, so dumps of
    // healthy runs stay identical to msprobe's.
    if (t.has_stats && t.write_counts &&
        (t.stats.nan_count || t.stats.pos_inf_count || t.stats.neg_inf_count)) {
      key("\"nan_count\": ");
      integer(static_cast<int64_t>(t.stats.nan_count));
      key("\"pos_inf_count\": ");
      integer(static_cast<int64_t>(t.stats.pos_inf_count));
      key("\"neg_inf_count\": ");
      integer(static_cast<int64_t>(t.stats.neg_inf_count));
    }
    newline(inner_ - step_);
    *p_++ = '}';
    out_.resize(static_cast<size_t>(p_ - out_.data()));
  }

 private:
  // The longest text `t` can give: 13 keys of at most 20 characters on their own lines, four
  // floats, four integers, and the strings with every byte escaped as \u00XX.
  size_t bound(const TensorLeaf& t) const {
    const size_t line = inner_ + step_ + 2;
    return 13 * (line + 20) + 4 * format::kMaxPyFloatChars + 4 * 24 + t.shape.size() * (line + 24) +
           6 * (t.type.size() + t.dtype.size() + t.data_name.size()) + 64;
  }
  void put(std::string_view text) {
    std::memcpy(p_, text.data(), text.size());
    p_ += text.size();
  }
  void newline(size_t spaces) {
    *p_++ = '\n';
    std::memset(p_, ' ', spaces);
    p_ += spaces;
  }
  // `quoted_key` is the key's JSON text followed by ": ".
  void key(std::string_view quoted_key) {
    *p_++ = first_ ? '{' : ',';
    first_ = false;
    newline(inner_);
    put(quoted_key);
  }
  void stat(std::string_view quoted_key, bool present, double v) {
    key(quoted_key);
    if (present)
      p_ += format::format_py_float(p_, v);
    else
      put("null");
  }
  void integer(int64_t v) { p_ = std::to_chars(p_, p_ + 24, v).ptr; }
  // Plain printable ASCII needs no escaping (dtype and type names always are); anything else
  // goes through append_py_string.
  void string(std::string_view s) {
    bool plain = true;
    for (char c : s) {
      const auto u = static_cast<unsigned char>(c);
      plain &= u >= 0x20 && u < 0x7f && c != '"' && c != '\\';
    }
    if (plain) {
      *p_++ = '"';
      put(s);
      *p_++ = '"';
      return;
    }
    std::string escaped;
    format::append_py_string(escaped, s);
    put(escaped);
  }

  std::string& out_;
  size_t inner_;  // indentation of the leaf's keys
  size_t step_;   // one level of indentation
  char* p_ = nullptr;
  bool first_ = true;
};

void render_tensor(const TensorLeaf& t, PyJsonWriter& w) {
  const int depth = w.depth(), indent = w.indent();
  LeafText(w.raw_begin(), depth, indent).render(t);
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
