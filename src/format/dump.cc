// dump.json -> DumpFile. See include/numprobe/dump.h for the model and docs/format.md for the
// schema.
#include <cmath>
#include <cstring>

#include "base/json_cursor.h"
#include "base/mapped_file.h"
#include "format/entry_name.h"
#include "format/tensor_fields.h"
#include "numprobe/dump.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

using base::JsonCursor;
using base::JsonType;

// Keys and dtype/type strings repeat thousands of times; a small direct-mapped cache in front of
// the string pool turns most interning into one compare instead of a hash-table probe.
class InternCache {
 public:
  explicit InternCache(StringPool& pool) : pool_(pool) {}
  uint32_t intern(std::string_view s) {
    if (s.size() > 40) return pool_.intern(s);
    size_t h = s.size();
    if (!s.empty())
      h = h * 131 + static_cast<unsigned char>(s[0]) * 31 +
          static_cast<unsigned char>(s[s.size() - 1]) * 7 +
          static_cast<unsigned char>(s[s.size() / 2]);
    Slot& slot = slots_[h & (kSlots - 1)];
    if (slot.id != kNoString && slot.text.size() == s.size() &&
        memcmp(slot.text.data(), s.data(), s.size()) == 0) {
      return slot.id;
    }
    slot.id = pool_.intern(s);
    slot.text = pool_.get(slot.id);
    return slot.id;
  }

 private:
  static constexpr size_t kSlots = 256;
  struct Slot {
    std::string_view text;
    uint32_t id = kNoString;
  };
  StringPool& pool_;
  Slot slots_[kSlots];
};

class DumpParser {
 public:
  DumpParser(DumpFile& out, base::JsonCursor& cur) : d_(out), cur_(cur), cache_(out.strings) {
    k_type_ = key_id(format::tensor_field_key(kFieldType));
    k_value_ = key_id("value");
    k_dtype_ = key_id(format::tensor_field_key(kFieldDtype));
    k_shape_ = key_id(format::tensor_field_key(kFieldShape));
    k_max_ = key_id(format::tensor_field_key(kFieldMax));
    k_min_ = key_id(format::tensor_field_key(kFieldMin));
    k_mean_ = key_id(format::tensor_field_key(kFieldMean));
    k_norm_ = key_id(format::tensor_field_key(kFieldNorm));
    k_rg_ = key_id(format::tensor_field_key(kFieldRequiresGrad));
    k_md5_ = key_id(format::tensor_field_key(kFieldMd5));
    k_data_ = key_id(format::tensor_field_key(kFieldDataName));
  }

  // release(offset) is called between entries so callers can drop consumed input.
  template <typename Release>
  void parse(Release&& release) {
    std::vector<Node> header;
    header.emplace_back();
    header[0].kind = NodeKind::kDict;
    bool seen_data = false, seen_bare = false;
    if (cur_.peek() != base::JsonType::kObject)
      cur_.fail_schema("a dump.json must be a JSON object");
    cur_.begin_object();
    std::string_view key;
    uint32_t position = 0;
    while (cur_.next_key(key)) {
      if (key == "data") {
        if (seen_data) cur_.fail_schema("duplicate \"data\" member");
        seen_data = true;
        d_.data_position = position;
        parse_data(release);
      } else if (cur_.peek() == base::JsonType::kObject && looks_like_entry(key)) {
        // msprobe's older api_info files (acc_check's forward.json) hold entries at top level.
        if (!seen_bare) d_.data_position = position;
        seen_bare = true;
        parse_entry(key);
        release(cur_.offset());
        continue;
      } else {
        uint32_t k = d_.strings.intern(key);
        parse_value(header, k, /*collapse_tensors=*/false);
        header[0].count++;
      }
      ++position;
    }
    cur_.expect_end();
    if (seen_data && seen_bare) {
      throw InputError(cur_.name(), "entries both inside and outside \"data\"");
    }
    if (!seen_data && !seen_bare) {
      throw InputError(cur_.name(),
                       "no \"data\" object: not an msprobe dump.json (top-level keys "
                       "must include task, level, framework, data)");
    }
    header[0].span = static_cast<uint32_t>(header.size());
    d_.header = static_cast<uint32_t>(d_.nodes.size());
    d_.nodes.insert(d_.nodes.end(), header.begin(), header.end());
  }

 private:
  template <typename Release>
  void parse_data(Release&& release) {
    if (cur_.peek() != base::JsonType::kObject)
      cur_.fail_schema("\"data\" must be an object of entries");
    cur_.begin_object();
    std::string_view key;
    while (cur_.next_key(key)) {
      parse_entry(key);
      release(cur_.offset());
    }
  }

  void parse_entry(std::string_view key) {
    DumpEntry e;
    e.name = d_.strings.intern(key);
    if (cur_.peek() != base::JsonType::kObject) {
      cur_.fail_schema("entry \"" + std::string(d_.strings.get(e.name)) +
                       "\" is not an object (expected input_args/output/... members)");
    }
    e.node = static_cast<uint32_t>(d_.nodes.size());
    parse_value(d_.nodes, kNoString, /*collapse_tensors=*/true);
    d_.entries.push_back(e);
  }

  static bool looks_like_entry(std::string_view key) {
    Direction dir = parse_entry_name(key).direction;
    return dir == Direction::kForward || dir == Direction::kBackward ||
           dir == Direction::kParametersGrad;
  }

  void parse_value(std::vector<Node>& v, uint32_t key, bool collapse_tensors) {
    Node n;
    n.key = key;
    switch (cur_.peek()) {
      case base::JsonType::kNull:
        cur_.read_null();
        n.kind = NodeKind::kNull;
        v.push_back(n);
        return;
      case base::JsonType::kBool:
        n.kind = NodeKind::kBool;
        n.b = cur_.read_bool();
        v.push_back(n);
        return;
      case base::JsonType::kNumber: {
        base::JsonNumber num = cur_.read_number();
        if (num.is_int) {
          n.kind = NodeKind::kInt;
          n.i = num.int_value;
        } else {
          n.kind = NodeKind::kFloat;
          n.f = num.value;
        }
        v.push_back(n);
        return;
      }
      case base::JsonType::kString:
        n.kind = NodeKind::kString;
        n.str = cache_.intern(cur_.read_string());
        v.push_back(n);
        return;
      case base::JsonType::kArray: {
        size_t at = v.size();
        n.kind = NodeKind::kList;
        n.count = 0;
        v.push_back(n);
        cur_.begin_array();
        uint32_t count = 0;
        while (cur_.next_item()) {
          parse_value(v, kNoString, collapse_tensors);
          ++count;
        }
        v[at].count = count;
        v[at].span = static_cast<uint32_t>(v.size() - at);
        return;
      }
      case base::JsonType::kObject: {
        size_t at = v.size();
        size_t obj_start = cur_.offset();
        n.kind = NodeKind::kDict;
        n.count = 0;
        v.push_back(n);
        cur_.begin_object();
        std::string_view k;
        uint32_t count = 0;
        while (cur_.next_key(k)) {
          uint32_t kid = cache_.intern(k);
          parse_value(v, kid, collapse_tensors);
          ++count;
        }
        v[at].count = count;
        v[at].span = static_cast<uint32_t>(v.size() - at);
        if (collapse_tensors) {
          maybe_collapse_tensor(v, at, obj_start);
          maybe_collapse_typed_value(v, at);
        }
        return;
      }
    }
  }

  uint32_t key_id(std::string_view k) { return d_.strings.intern(k); }

  static bool stat_from(const Node& c, StatValue& s) {
    switch (c.kind) {
      case NodeKind::kNull:
        s.kind = StatKind::kNull;
        return true;
      case NodeKind::kFloat:
        s.kind = StatKind::kFloat;
        s.v = c.f;
        return true;
      case NodeKind::kInt:
        s.kind = StatKind::kInt;
        s.v = static_cast<double>(c.i);
        s.i = c.i;
        return true;
      case NodeKind::kBool:
        s.kind = StatKind::kBool;
        s.v = c.b ? 1 : 0;
        return true;
      default:
        return false;
    }
  }

  // {"type": "<string>", "value": <scalar>} -> one kTypedValue node.
  void maybe_collapse_typed_value(std::vector<Node>& v, size_t at) {
    if (at >= v.size() || v[at].kind != NodeKind::kDict || v[at].count != 2 || v[at].span != 3) {
      return;
    }
    const Node& t = v[at + 1];
    const Node& val = v[at + 2];
    if (t.key != k_type_ || t.kind != NodeKind::kString || val.key != k_value_) return;
    if (val.kind == NodeKind::kList || val.kind == NodeKind::kDict ||
        val.kind == NodeKind::kTensor || val.kind == NodeKind::kTypedValue) {
      return;
    }
    Node n = val;
    n.key = v[at].key;
    n.span = 1;
    n.type = t.str;
    n.value_kind = val.kind;
    n.kind = NodeKind::kTypedValue;
    v.resize(at);
    v.push_back(n);
  }

  // A dict with a string "dtype" and a list "shape" is a tensor leaf.
  void maybe_collapse_tensor(std::vector<Node>& v, size_t at, size_t obj_start) {
    uint32_t dtype_node = kNoNode, shape_node = kNoNode;
    for (uint32_t c : children(v, static_cast<uint32_t>(at))) {
      if (v[c].key == k_dtype_) dtype_node = c;
      if (v[c].key == k_shape_) shape_node = c;
    }
    if (dtype_node == kNoNode || shape_node == kNoNode) return;
    if (v[dtype_node].kind != NodeKind::kString) return;
    if (v[shape_node].kind != NodeKind::kList) {
      cur_.fail_schema_at(obj_start, "tensor \"shape\" must be a list of non-negative integers");
    }
    for (uint32_t s : children(v, shape_node)) {
      if (v[s].kind != NodeKind::kInt || v[s].i < 0) {
        cur_.fail_schema_at(obj_start, "tensor \"shape\" must be a list of non-negative integers");
      }
    }
    if (v[at].count > sizeof(TensorLeaf::order)) return;

    TensorLeaf t;
    std::vector<uint32_t> extras;
    for (uint32_t c : children(v, static_cast<uint32_t>(at))) {
      const Node& n = v[c];
      uint8_t field = 0xFF;
      if (n.key == k_type_ && n.kind == NodeKind::kString) {
        t.type = n.str;
        field = kFieldType;
      } else if (c == dtype_node) {
        t.dtype_name = n.str;
        t.dtype = dtype_from_name(d_.strings.get(n.str));
        field = kFieldDtype;
      } else if (c == shape_node) {
        t.shape_begin = static_cast<uint32_t>(d_.shapes.size());
        t.ndim = n.count;
        for (uint32_t s : children(v, c)) d_.shapes.push_back(v[s].i);
        field = kFieldShape;
      } else if (n.key == k_max_ && stat_from(n, t.max)) {
        field = kFieldMax;
      } else if (n.key == k_min_ && stat_from(n, t.min)) {
        field = kFieldMin;
      } else if (n.key == k_mean_ && stat_from(n, t.mean)) {
        field = kFieldMean;
      } else if (n.key == k_norm_ && stat_from(n, t.norm)) {
        field = kFieldNorm;
      } else if (n.key == k_rg_ && n.kind == NodeKind::kBool) {
        t.requires_grad = n.b ? 1 : 0;
        field = kFieldRequiresGrad;
      } else if (n.key == k_md5_ && n.kind == NodeKind::kString) {
        t.md5 = n.str;
        field = kFieldMd5;
      } else if (n.key == k_data_ && n.kind == NodeKind::kString) {
        t.data_name = n.str;
        field = kFieldDataName;
      } else {
        field = static_cast<uint8_t>(kFieldExtra + extras.size());
        extras.push_back(c);
      }
      t.order[t.order_len++] = field;
    }
    if (!extras.empty()) {
      auto& x = d_.extra_nodes;
      t.extras = static_cast<uint32_t>(x.size());
      Node dict;
      dict.kind = NodeKind::kDict;
      dict.count = static_cast<uint32_t>(extras.size());
      x.push_back(dict);
      for (uint32_t c : extras) x.insert(x.end(), v.begin() + c, v.begin() + c + v[c].span);
      x[t.extras].span = static_cast<uint32_t>(x.size() - t.extras);
    }
    Node leaf;
    leaf.key = v[at].key;
    leaf.kind = NodeKind::kTensor;
    leaf.tensor = static_cast<uint32_t>(d_.tensors.size());
    d_.tensors.push_back(t);
    v.resize(at);
    v.push_back(leaf);
  }

  DumpFile& d_;
  base::JsonCursor& cur_;
  InternCache cache_;
  uint32_t k_type_, k_value_, k_dtype_, k_shape_, k_max_, k_min_, k_mean_, k_norm_, k_rg_, k_md5_,
      k_data_;
};

}  // namespace

int64_t TensorLeaf::element_count(const std::vector<int64_t>& shapes) const {
  int64_t n = 1;
  for (uint32_t i = 0; i < ndim; ++i) {
    int64_t d = shapes[shape_begin + i];
    if (d != 0 && n > INT64_MAX / d) return -1;
    n *= d;
  }
  return n;
}

Framework DumpFile::framework() const {
  std::string_view f = framework_name();
  if (f == "pytorch") return Framework::kPyTorch;
  if (f == "mindspore") return Framework::kMindSpore;
  for (const TensorLeaf& t : tensors) {
    std::string_view type = strings.get(t.type), dt = strings.get(t.dtype_name);
    if (type.rfind("torch.", 0) == 0 || dt.rfind("torch.", 0) == 0) return Framework::kPyTorch;
    if (type.rfind("mindspore.", 0) == 0) return Framework::kMindSpore;
  }
  return Framework::kUnknown;
}

uint32_t DumpFile::member(uint32_t dict, std::string_view key) const {
  if (dict == kNoNode || nodes[dict].kind != NodeKind::kDict) return kNoNode;
  uint32_t k = strings.find(key);
  if (k == kNoString) return kNoNode;
  for (uint32_t c : children(nodes, dict)) {
    if (nodes[c].key == k) return c;
  }
  return kNoNode;
}

std::string_view DumpFile::header_string(std::string_view key) const {
  uint32_t m = member(header, key);
  if (m == kNoNode || nodes[m].kind != NodeKind::kString) return {};
  return strings.get(nodes[m].str);
}

std::optional<std::string_view> DumpFile::dump_data_dir() const {
  uint32_t m = member(header, "dump_data_dir");
  if (m == kNoNode || nodes[m].kind != NodeKind::kString) return std::nullopt;
  return strings.get(nodes[m].str);
}

void DumpFile::release_values() {
  // The header node is the last top-level dict: keep task/level/framework readable by moving it
  // to the front of an otherwise empty node list.
  std::vector<Node> kept;
  if (header != kNoNode) {
    kept.assign(nodes.begin() + header, nodes.begin() + header + nodes[header].span);
    header = 0;
  }
  nodes.swap(kept);
  std::vector<Node>().swap(extra_nodes);
  std::vector<TensorLeaf>().swap(tensors);
  std::vector<int64_t>().swap(shapes);
}

size_t DumpFile::memory_bytes() const {
  // Sizes, not capacities: reserved capacity that was never written is not resident.
  return nodes.size() * sizeof(Node) + extra_nodes.size() * sizeof(Node) +
         tensors.size() * sizeof(TensorLeaf) + shapes.size() * sizeof(int64_t) +
         entries.size() * sizeof(DumpEntry) + strings.bytes() +
         strings.size() * (sizeof(std::string_view) * 2 + 16);
}

DumpFile parse_dump_json(std::string_view text, const std::string& name) {
  DumpFile d;
  d.path = name;
  base::JsonCursor cur(text.data(), text.size(), name);
  DumpParser(d, cur).parse([](size_t) {});
  // Growth by doubling leaves up to half of each array unused; a dump is read once and kept.
  d.nodes.shrink_to_fit();
  d.extra_nodes.shrink_to_fit();
  d.tensors.shrink_to_fit();
  d.shapes.shrink_to_fit();
  d.entries.shrink_to_fit();
  return d;
}

DumpFile read_dump_json(const std::string& path, const ReadOptions& opt) {
  base::MappedFile file(path);
  DumpFile d;
  d.path = path;
  base::JsonCursor cur(file.data(), file.size(), path);
  // Reserve about twice what msprobe-style text needs (one node per ~110 bytes, one tensor per
  // ~330): untouched reserved pages cost no memory, and the arrays never get copied while growing.
  const size_t n = file.size();
  d.nodes.reserve(n / 48 + 64);
  d.tensors.reserve(n / 160 + 16);
  d.shapes.reserve(n / 40 + 64);
  d.entries.reserve(n / 800 + 16);
  size_t next_release = opt.release_every;
  size_t next_progress = size_t{4} << 20;
  DumpParser(d, cur).parse([&](size_t offset) {
    if (opt.release_every != 0 && offset >= next_release) {
      file.release_before(offset);
      next_release = offset + opt.release_every;
    }
    if (opt.progress && offset >= next_progress) {
      opt.progress(offset, file.size());
      next_progress = offset + (size_t{4} << 20);
    }
  });
  return d;
}

}  // namespace numprobe
