// The in-memory model of one msprobe dump.json (see docs/format.md).
//
// A dump is a tree of JSON values stored flat in preorder, so that hundreds of MB of dump.json fit
// in a fraction of their text size: every container records the size of its subtree (`span`) and
// children follow it directly. Tensor leaves ({"type": ..., "dtype": ..., "shape": [...], "Max":
// ...}) are collapsed into one TensorLeaf record; any field numprobe does not model is kept
// verbatim in `extra_nodes` so that writing the model back reproduces the file (key order
// included).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numprobe/dtype.h"
#include "numprobe/string_pool.h"

namespace numprobe {

inline constexpr uint32_t kNoNode = 0xFFFFFFFFu;

// kTypedValue is msprobe's scalar leaf {"type": T, "value": V} (V null/bool/int/float/string)
// collapsed into one node: `type` holds T, `value_kind` and the payload hold V.
enum class NodeKind : uint8_t {
  kNull,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kDict,
  kTensor,
  kTypedValue
};

struct Node {
  uint32_t key = kNoString;   // member name when the parent is a dict
  uint32_t span = 1;          // nodes in this subtree, itself included
  uint32_t type = kNoString;  // kTypedValue: the "type" string
  NodeKind kind = NodeKind::kNull;
  NodeKind value_kind = NodeKind::kNull;  // kTypedValue: kind of "value"
  bool b = false;
  union {
    int64_t i;
    double f;
    uint32_t str;     // kString
    uint32_t tensor;  // kTensor: index into DumpFile::tensors
    uint32_t count;   // kList / kDict: number of direct children
  };
  Node() : i(0) {}
};

// A statistic field as written: absent, null, a float, an int or a bool (bool tensors get
// Max=any, Min=all from msprobe).
enum class StatKind : uint8_t { kAbsent, kNull, kFloat, kInt, kBool };
struct StatValue {
  StatKind kind = StatKind::kAbsent;
  double v = 0;
  int64_t i = 0;  // kInt: the exact value (v is its nearest double)
  bool has_number() const { return kind == StatKind::kFloat || kind == StatKind::kInt; }
};

// Field ids used in TensorLeaf::order. Ids >= kFieldExtra refer to extra member (id - kFieldExtra).
enum TensorField : uint8_t {
  kFieldType,
  kFieldDtype,
  kFieldShape,
  kFieldMax,
  kFieldMin,
  kFieldMean,
  kFieldNorm,
  kFieldRequiresGrad,
  kFieldMd5,
  kFieldDataName,
  kFieldExtra = 32,
};

struct TensorLeaf {
  uint32_t type = kNoString;        // "torch.Tensor", "mindspore.Tensor", ...
  uint32_t dtype_name = kNoString;  // as written: "torch.float32", "Float32"
  DType dtype = DType::kUnknown;
  uint32_t shape_begin = 0;  // into DumpFile::shapes
  uint32_t ndim = 0;
  StatValue max, min, mean, norm;
  int8_t requires_grad = -1;  // -1 absent, 0 false, 1 true
  uint32_t md5 = kNoString;   // CRC-32 hex as written
  uint32_t data_name = kNoString;
  uint32_t extras = kNoNode;  // kDict node in DumpFile::extra_nodes holding unmodelled members
  uint8_t order_len = 0;
  uint8_t order[24] = {};

  int64_t element_count(const std::vector<int64_t>& shapes) const;
};

enum class Framework : uint8_t { kUnknown, kPyTorch, kMindSpore };

struct DumpEntry {
  uint32_t name = kNoString;  // "Functional.relu.0.forward"
  uint32_t node = kNoNode;    // kDict node in DumpFile::nodes
};

class DumpFile {
 public:
  std::string path;  // where it was read from (for messages)

  StringPool strings;
  std::vector<Node> nodes;        // entry bodies and the top-level header, preorder
  std::vector<Node> extra_nodes;  // unmodelled tensor members, preorder
  std::vector<TensorLeaf> tensors;
  std::vector<int64_t> shapes;
  std::vector<DumpEntry> entries;  // in file order, which is execution order

  uint32_t header = kNoNode;   // kDict of top-level members other than "data"
  uint32_t data_position = 0;  // index of "data" among the top-level members, for writing back

  // Header accessors ("" when absent or not a string).
  std::string_view task() const { return header_string("task"); }
  std::string_view level() const { return header_string("level"); }
  std::string_view framework_name() const { return header_string("framework"); }
  // The framework field, or inferred from tensor types when the field is absent.
  Framework framework() const;
  std::optional<std::string_view> dump_data_dir() const;

  std::string_view str(uint32_t id) const { return strings.get(id); }
  std::string_view entry_name(size_t i) const { return strings.get(entries[i].name); }
  // Member `key` of dict node `dict` (in `nodes`), or kNoNode.
  uint32_t member(uint32_t dict, std::string_view key) const;

  // Approximate resident bytes held by the model (written elements, not reserved capacity).
  size_t memory_bytes() const;
  // Frees the entry bodies (nodes, extra_nodes, tensors, shapes), keeping the header, the entry
  // list and the strings, so entry_name() still works: what a compare needs once its rows are
  // flattened. entries[i].node no longer refers to anything afterwards.
  void release_values();

 private:
  std::string_view header_string(std::string_view key) const;
};

// Iterates the direct children of a list/dict node: for (uint32_t c : children(nodes, i)).
class ChildRange {
 public:
  class It {
   public:
    It(const std::vector<Node>* n, uint32_t i) : n_(n), i_(i) {}
    uint32_t operator*() const { return i_; }
    It& operator++() {
      i_ += (*n_)[i_].span;
      return *this;
    }
    bool operator!=(const It& o) const { return i_ != o.i_; }

   private:
    const std::vector<Node>* n_;
    uint32_t i_;
  };
  ChildRange(const std::vector<Node>& n, uint32_t parent) : n_(&n), p_(parent) {}
  It begin() const { return It(n_, p_ + 1); }
  It end() const { return It(n_, p_ + (*n_)[p_].span); }

 private:
  const std::vector<Node>* n_;
  uint32_t p_;
};
inline ChildRange children(const std::vector<Node>& n, uint32_t parent) {
  return {n, parent};
}

struct ReadOptions {
  // Release the mapped input pages behind the parser every this many bytes, so reading a file of
  // hundreds of MB keeps resident memory bounded by the model, not the text.
  size_t release_every = size_t{64} << 20;
  // Called between entries, at most every ~4 MiB, with (bytes parsed, file size).
  std::function<void(size_t, size_t)> progress;
};

// Reads a dump.json. Throws InputError naming the file and byte offset for malformed JSON, and
// naming the entry for structurally wrong content (no "data" object, an entry that is not an
// object, a tensor whose shape is not a list of non-negative integers).
DumpFile read_dump_json(const std::string& path, const ReadOptions& opt = {});
// Same from memory; `name` is used in messages.
DumpFile parse_dump_json(std::string_view text, const std::string& name);

}  // namespace numprobe
