#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/json_text.h"
#include "core/hash.h"
#include "format/entry_name.h"
#include "numprobe/compare/rows.h"

namespace numprobe {
namespace {

// Python's str() of a scalar leaf value, which msprobe hashes for non-tensor rows.
std::string py_str(const DumpFile& d, const Node& n, NodeKind k) {
  std::string s;
  switch (k) {
    case NodeKind::kBool:
      return n.b ? "True" : "False";
    case NodeKind::kInt:
      return std::to_string(n.i);
    case NodeKind::kFloat:
      base::append_py_float(s, n.f);
      if (s == "NaN") return "nan";
      if (s == "Infinity") return "inf";
      if (s == "-Infinity") return "-inf";
      return s;
    case NodeKind::kString:
      return std::string(d.str(n.str));
    default:
      return "None";
  }
}

class Flattener {
 public:
  Flattener(const DumpFile& d, RowSet& out) : d_(d), out_(out) {}

  void entry(uint32_t e) {
    const std::string name(d_.entry_name(e));
    const uint32_t body = d_.entries[e].node;
    if (parse_entry_name(name).direction == Direction::kParametersGrad) {
      // {"weight": [leaf], "bias": [leaf]} -> "<entry>.weight", "<entry>.bias"
      for (uint32_t c : children(d_.nodes, body)) {
        std::string row = name + "." + std::string(d_.str(d_.nodes[c].key));
        const Node& v = d_.nodes[c];
        uint32_t leaf = (v.kind == NodeKind::kList && v.count == 1) ? c + 1 : c;
        visit(e, name.size(), RowState::kParametersGrad, leaf, row);
      }
      return;
    }
    // msprobe order: inputs (args, kwargs / backward "input"), parameters, outputs.
    static const struct {
      const char* key;
      const char* label;
      RowState state;
    } kSections[] = {{"input_args", "input", RowState::kInput},
                     {"input_kwargs", "input", RowState::kInput},
                     {"input", "input", RowState::kInput},
                     {"parameters", "parameters", RowState::kParameters},
                     {"output", "output", RowState::kOutput}};
    for (const auto& s : kSections) {
      uint32_t m = d_.member(body, s.key);
      if (m == kNoNode) continue;
      std::string prefix = name + "." + s.label;
      const Node& sec = d_.nodes[m];
      if (sec.kind == NodeKind::kList || sec.kind == NodeKind::kDict) {
        uint32_t i = 0;
        for (uint32_t c : children(d_.nodes, m)) {
          std::string label = sec.kind == NodeKind::kDict ? std::string(d_.str(d_.nodes[c].key))
                                                          : std::to_string(i);
          visit(e, name.size(), s.state, c, prefix + "." + label);
          ++i;
        }
      } else {
        visit(e, name.size(), s.state, m, prefix);
      }
    }
  }

 private:
  void visit(uint32_t e, size_t entry_len, RowState state, uint32_t idx, const std::string& row) {
    const Node& n = d_.nodes[idx];
    if (n.kind == NodeKind::kList) {
      uint32_t j = 0;
      for (uint32_t c : children(d_.nodes, idx))
        visit(e, entry_len, state, c, row + "." + std::to_string(j++));
      return;
    }
    if (n.kind == NodeKind::kDict && d_.member(idx, "type") == kNoNode) {
      // A nested dict without a type (namedtuple-like): recurse by key.
      for (uint32_t c : children(d_.nodes, idx)) {
        visit(e, entry_len, state, c, row + "." + std::string(d_.str(d_.nodes[c].key)));
      }
      return;
    }
    CompareRow r;
    r.name = out_.text.add(row);
    r.entry = e;
    r.suffix_at = static_cast<uint32_t>(entry_len);
    r.state = state;
    switch (n.kind) {
      case NodeKind::kTensor: {
        const TensorLeaf& t = d_.tensors[n.tensor];
        r.kind = RowKind::kTensor;
        r.dtype = d_.str(t.dtype_name);
        r.element_type = t.dtype;
        r.shape = out_.text.add(d_.shapes.data() + t.shape_begin, t.ndim);
        r.has_shape = true;
        r.max = t.max;
        r.min = t.min;
        r.mean = t.mean;
        r.norm = t.norm;
        r.requires_grad = t.requires_grad;
        r.md5 = d_.str(t.md5);
        r.data_name = d_.str(t.data_name);
        break;
      }
      case NodeKind::kTypedValue: {
        r.kind = RowKind::kScalar;
        std::string_view type = d_.str(n.type);
        r.dtype = out_.text.intern("<class '" + std::string(type) + "'>");
        r.has_shape = true;
        StatValue v;
        if (n.value_kind == NodeKind::kInt) {
          v = {StatKind::kInt, static_cast<double>(n.i), n.i};
        } else if (n.value_kind == NodeKind::kFloat) {
          v = {StatKind::kFloat, n.f};
        } else if (n.value_kind == NodeKind::kBool) {
          v = {StatKind::kBool, n.b ? 1.0 : 0.0};
        } else {
          v = {StatKind::kNull, 0};
        }
        r.max = r.min = r.mean = r.norm = v;
        char buf[16];
        std::string text = py_str(d_, n, n.value_kind);
        snprintf(buf, sizeof buf, "%08x", crc32(text.data(), text.size()));
        r.md5 = out_.text.add(buf);
        break;
      }
      case NodeKind::kNull:
        r.kind = RowKind::kNone;
        r.dtype = "None";
        break;
      default:
        // Strings ("..." for Ellipsis), torch.Size, ProcessGroup and other dict leaves.
        r.kind = RowKind::kOther;
        if (n.kind == NodeKind::kDict) {
          uint32_t t = d_.member(idx, "type");
          r.dtype = d_.nodes[t].kind == NodeKind::kString ? d_.str(d_.nodes[t].str) : "None";
          uint32_t v = d_.member(idx, "value");
          if (r.dtype == "torch.Size" && v != kNoNode && d_.nodes[v].kind == NodeKind::kList) {
            std::vector<int64_t> dims;
            for (uint32_t c : children(d_.nodes, v)) {
              if (d_.nodes[c].kind == NodeKind::kInt) dims.push_back(d_.nodes[c].i);
            }
            r.shape = out_.text.add(dims.data(), dims.size());
            r.has_shape = true;
          }
        } else {
          r.dtype = "<class 'str'>";
          r.has_shape = true;
        }
        break;
    }
    out_.push_back(std::move(r));
  }

  const DumpFile& d_;
  RowSet& out_;
};

}  // namespace

std::string_view RowText::add(std::string_view s) {
  char* p = reserve(s.size(), 1);
  if (!s.empty()) memcpy(p, s.data(), s.size());
  return {p, s.size()};
}

std::string_view RowText::intern(std::string_view s) {
  auto it = interned_.find(s);
  if (it != interned_.end()) return it->second;
  const std::string_view v = add(s);
  interned_.emplace(std::string(s), v);
  return v;
}

Dims RowText::add(const int64_t* dims, size_t n) {
  char* p = reserve(n * sizeof(int64_t), alignof(int64_t));
  if (n > 0) memcpy(p, dims, n * sizeof(int64_t));
  return {reinterpret_cast<const int64_t*>(p), n};
}

char* RowText::reserve(size_t n, size_t align) {
  constexpr size_t kChunk = size_t{1} << 20;
  size_t at = (used_ + align - 1) / align * align;
  if (chunks_.empty() || at + n > cap_) {
    cap_ = std::max(kChunk, n);
    // Default-initialised (no memset: untouched pages cost nothing); new[] is max-aligned.
    chunks_.push_back(std::unique_ptr<char[]>(new char[cap_]));
    at = 0;
  }
  used_ = at + n;
  bytes_ += n;
  return chunks_.back().get() + at;
}

RowSet flatten_rows(const DumpFile& d) {
  RowSet rows;
  // An upper bound (every row is a leaf node or a tensor leaf): capacity that is never written
  // costs address space, not memory, and the vector is never copied while it grows.
  rows.reserve(d.nodes.size() + d.tensors.size());
  Flattener f(d, rows);
  for (uint32_t e = 0; e < d.entries.size(); ++e) f.entry(e);
  return rows;
}

}  // namespace numprobe
