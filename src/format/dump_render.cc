#include "format/dump_render.h"

#include <charconv>
#include <cstring>

#include "format/tensor_fields.h"

namespace numprobe::format {
namespace {

void render_stat(const StatValue& s, base::JsonWriter& w) {
  switch (s.kind) {
    case StatKind::kAbsent:
    case StatKind::kNull:
      w.null_value();
      break;
    case StatKind::kFloat:
      w.float_value(s.v);
      break;
    case StatKind::kInt:
      w.int_value(s.i);
      break;
    case StatKind::kBool:
      w.bool_value(s.v != 0);
      break;
  }
}

void render_tensor(const DumpFile& d, const TensorLeaf& t, base::JsonWriter& w) {
  std::vector<uint32_t> extras;
  if (t.extras != kNoNode) {
    for (uint32_t c : children(d.extra_nodes, t.extras)) extras.push_back(c);
  }
  w.begin_object();
  for (uint8_t i = 0; i < t.order_len; ++i) {
    uint8_t f = t.order[i];
    if (f <= kFieldDataName) w.key(tensor_field_key(static_cast<TensorField>(f)));
    switch (f) {
      case kFieldType:
        w.string_value(d.str(t.type));
        break;
      case kFieldDtype:
        w.string_value(d.str(t.dtype_name));
        break;
      case kFieldShape:
        w.begin_array();
        for (uint32_t k = 0; k < t.ndim; ++k) w.int_value(d.shapes[t.shape_begin + k]);
        w.end_array();
        break;
      case kFieldMax:
        render_stat(t.max, w);
        break;
      case kFieldMin:
        render_stat(t.min, w);
        break;
      case kFieldMean:
        render_stat(t.mean, w);
        break;
      case kFieldNorm:
        render_stat(t.norm, w);
        break;
      case kFieldRequiresGrad:
        w.bool_value(t.requires_grad == 1);
        break;
      case kFieldMd5:
        w.string_value(d.str(t.md5));
        break;
      case kFieldDataName:
        w.string_value(d.str(t.data_name));
        break;
      default: {
        uint32_t c = extras.at(f - kFieldExtra);
        w.key(d.str(d.extra_nodes[c].key));
        render_node(d, d.extra_nodes, c, w);
      }
    }
  }
  w.end_object();
}

// Writes the scalar payload of n as if it had kind k.
void render_scalar(const DumpFile& d, const Node& n, NodeKind k, base::JsonWriter& w) {
  switch (k) {
    case NodeKind::kBool:
      w.bool_value(n.b);
      break;
    case NodeKind::kInt:
      w.int_value(n.i);
      break;
    case NodeKind::kFloat:
      w.float_value(n.f);
      break;
    case NodeKind::kString:
      w.string_value(d.str(n.str));
      break;
    default:
      w.null_value();
      break;
  }
}

// A captured leaf, written straight into the output through a raw pointer (room for the longest
// text the leaf can have is made first): a per-op step renders thousands of leaves, and the typed
// writer's per-token bookkeeping and string appends were most of the writer thread's rendering
// time. The text is exactly the typed writer's (tests compare the two). `depth` is the writer's
// depth where the leaf's '{' goes.
class LeafText {
 public:
  LeafText(std::string& out, int depth, int indent)
      : out_(out),
        inner_(static_cast<size_t>((depth + 1) * indent)),
        step_(static_cast<size_t>(indent)) {}

  void render(const LeafValues& t) {
    const size_t old = out_.size();
    out_.resize(old + bound(t));
    p_ = &out_[old];
    key(kFieldType);
    string(t.type);
    key(kFieldDtype);
    string(t.dtype);
    key(kFieldShape);
    if (t.ndim == 0) {
      put("[]");
    } else {
      *p_++ = '[';
      for (size_t i = 0; i < t.ndim; ++i) {
        if (i) *p_++ = ',';
        newline(inner_ + step_);
        integer(t.shape[i]);
      }
      newline(inner_);
      *p_++ = ']';
    }
    if (t.stats == LeafValues::Stats::kBool) {
      // msprobe: Max = any(), Min = all() as Python bools; Mean/Norm null.
      key(kFieldMax);
      put(t.max != 0 ? "true" : "false");
      key(kFieldMin);
      put(t.min != 0 ? "true" : "false");
      key(kFieldMean);
      put("null");
      key(kFieldNorm);
      put("null");
    } else {
      const bool present = t.stats == LeafValues::Stats::kFloat;
      stat(kFieldMax, present, t.max);
      stat(kFieldMin, present, t.min);
      stat(kFieldMean, present, t.mean);
      stat(kFieldNorm, present, t.norm);
    }
    if (t.write_requires_grad) {
      key(kFieldRequiresGrad);
      put(t.requires_grad ? "true" : "false");
    }
    if (!t.md5.empty()) {
      key(kFieldMd5);
      string(t.md5);
    }
    if (!t.data_name.empty()) {
      key(kFieldDataName);
      string(t.data_name);
    }
    if (t.nan_count || t.pos_inf_count || t.neg_inf_count) {
      const uint64_t counts[3] = {t.nan_count, t.pos_inf_count, t.neg_inf_count};
      for (size_t i = 0; i < 3; ++i) {
        key(kCountKeys[i]);
        integer(static_cast<int64_t>(counts[i]));
      }
    }
    newline(inner_ - step_);
    *p_++ = '}';
    out_.resize(static_cast<size_t>(p_ - out_.data()));
  }

 private:
  // The longest text `t` can give: 13 keys of at most 20 characters on their own lines, four
  // floats, four integers, and the strings with every byte escaped as \u00XX.
  size_t bound(const LeafValues& t) const {
    const size_t line = inner_ + step_ + 2;
    return 13 * (line + 20) + 4 * base::kMaxPyFloatChars + 4 * 24 + t.ndim * (line + 24) +
           6 * (t.type.size() + t.dtype.size() + t.data_name.size() + t.md5.size()) + 64;
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
  // The key (plain ASCII: no escaping) and ": ".
  void key(std::string_view name) {
    *p_++ = first_ ? '{' : ',';
    first_ = false;
    newline(inner_);
    *p_++ = '"';
    put(name);
    put("\": ");
  }
  void key(TensorField f) { key(tensor_field_key(f)); }
  void stat(TensorField f, bool present, double v) {
    key(f);
    if (present)
      p_ += base::format_py_float(p_, v);
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
    base::append_py_string(escaped, s);
    put(escaped);
  }

  std::string& out_;
  size_t inner_;  // indentation of the leaf's keys
  size_t step_;   // one level of indentation
  char* p_ = nullptr;
  bool first_ = true;
};

}  // namespace

void render_leaf(const LeafValues& v, base::JsonWriter& w) {
  const int depth = w.depth(), indent = w.indent();
  LeafText(w.raw_begin(), depth, indent).render(v);
}

void render_node(const DumpFile& d, const std::vector<Node>& nodes, uint32_t idx,
                 base::JsonWriter& w) {
  const Node& n = nodes[idx];
  switch (n.kind) {
    case NodeKind::kNull:
    case NodeKind::kBool:
    case NodeKind::kInt:
    case NodeKind::kFloat:
    case NodeKind::kString:
      render_scalar(d, n, n.kind, w);
      break;
    case NodeKind::kList:
      w.begin_array();
      for (uint32_t c : children(nodes, idx)) render_node(d, nodes, c, w);
      w.end_array();
      break;
    case NodeKind::kDict:
      w.begin_object();
      for (uint32_t c : children(nodes, idx)) {
        w.key(d.str(nodes[c].key));
        render_node(d, nodes, c, w);
      }
      w.end_object();
      break;
    case NodeKind::kTensor:
      render_tensor(d, d.tensors[n.tensor], w);
      break;
    case NodeKind::kTypedValue: {
      w.begin_object();
      w.key("type");
      w.string_value(d.str(n.type));
      w.key("value");
      render_scalar(d, n, n.value_kind, w);
      w.end_object();
      break;
    }
  }
}

std::string render_entry_body(const DumpFile& d, size_t i) {
  std::string out;
  base::JsonWriter w(out, base::JsonDialect::python(1), 2);
  render_node(d, d.nodes, d.entries[i].node, w);
  return out;
}

std::vector<std::pair<std::string, std::string>> render_header_members(const DumpFile& d) {
  std::vector<std::pair<std::string, std::string>> members;
  if (d.header == kNoNode) return members;
  for (uint32_t c : children(d.nodes, d.header)) {
    std::string text;
    base::JsonWriter w(text, base::JsonDialect::python(1), 1);
    render_node(d, d.nodes, c, w);
    members.emplace_back(std::string(d.str(d.nodes[c].key)), std::move(text));
  }
  return members;
}

std::string render_dump_json(const DumpFile& d) {
  std::string out;
  out.reserve(d.entries.size() * 2048);
  base::JsonWriter w(out, base::JsonDialect::python(1), 0);
  w.begin_object();
  auto header = render_header_members(d);
  auto write_data = [&] {
    w.key("data");
    w.begin_object();
    for (size_t i = 0; i < d.entries.size(); ++i) {
      w.key(d.entry_name(i));
      render_node(d, d.nodes, d.entries[i].node, w);
    }
    w.end_object();
  };
  for (size_t i = 0; i < header.size(); ++i) {
    if (i == d.data_position) write_data();
    w.key(header[i].first);
    w.raw_value(header[i].second);
  }
  if (d.data_position >= header.size()) write_data();
  w.end_object();
  return out;
}

}  // namespace numprobe::format
