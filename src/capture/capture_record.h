// One dump entry as capture builds it on the framework thread, rendered to msprobe's JSON later on
// the writer thread (so the training thread pays for statistics, not for float formatting).
//
// An EntryRecord is a token stream for one entry body: containers, keys, scalars and tensor leaves
// in the order msprobe writes them. Tensor leaves carry their statistics (or CRC-32) already
// computed; a leaf may also carry pending tensor bytes that the writer saves as .npy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/stats.h"
#include "numprobe/dtype.h"

namespace numprobe::capture {

// Bytes still on their way from a device (async_dump): the copy was only enqueued on the
// training thread; the writer thread waits for it.
class ArrivingBytes {
 public:
  virtual ~ArrivingBytes() = default;
  virtual const void* wait() = 0;  // the host bytes, once they are all there
};

// Bytes of a tensor to save, kept alive by `owner` until the writer has written them.
struct PendingTensorData {
  std::shared_ptr<const void> owner;
  const void* data = nullptr;  // null while `arriving` is set
  DType dtype = DType::kUnknown;
  std::shared_ptr<ArrivingBytes> arriving;

  const void* bytes() {
    if (arriving) {
      data = arriving->wait();
      arriving.reset();
    }
    return data;
  }
};

// Statistics still being computed on a device (CUDA): the training thread only enqueued the work,
// the writer thread waits for it and fills TensorLeaf::stats before rendering. Keeps the
// training thread from waiting on the device once per dumped tensor.
class DeferredStats {
 public:
  virtual ~DeferredStats() = default;
  virtual TensorStats resolve() = 0;
};

struct TensorLeaf {
  std::string type = "torch.Tensor";
  std::string dtype;  // as the framework spells it: "torch.float32"
  std::vector<int64_t> shape;
  bool has_stats = false;   // false: Max/Min/Mean/Norm written as null (empty/meta tensors)
  bool bool_stats = false;  // bool tensors: Max = any, Min = all, Mean/Norm null (msprobe)
  TensorStats stats;
  bool requires_grad = false;
  // false: no requires_grad member (msprobe's MindSpore leaves have none).
  bool write_requires_grad = true;
  bool write_counts = true;                 // numprobe's nan/inf/zero counts (format addition v1)
  std::optional<uint32_t> crc32;            // summary_mode md5
  std::string data_name;                    // task tensor: file name under dump_tensor_data/
  PendingTensorData pending;                // task tensor: bytes to write as data_name
  std::shared_ptr<DeferredStats> deferred;  // set: `stats` is filled in by resolve_stats()

  void resolve_stats() {
    if (!deferred) return;
    stats = deferred->resolve();
    deferred.reset();
  }
};

class EntryRecord {
 public:
  enum class Op : uint8_t {
    kBeginDict,
    kBeginList,
    kEnd,
    kKey,
    kNull,
    kBool,
    kInt,
    kFloat,
    kString,
    kTyped,  // {"type": s, "value": <next token>}
    kTensor,
  };
  // 16 bytes: every byte a recording thread writes is a byte whose cache line later travels to
  // the writer thread.
  struct Token {
    explicit Token(Op o) : op(o) {}
    Op op;
    bool b = false;
    uint32_t len = 0;  // string length
    union {
      int64_t i = 0;  // int value, string offset, or tensor index
      double d;       // kFloat
    };
  };
  static_assert(sizeof(Token) == 16, "Token is meant to stay small");

  std::string name;       // dump.json key
  bool overflow = false;  // an output holds NaN/Inf (task overflow_check keeps only these)

  void begin_dict() { push(Op::kBeginDict); }
  void begin_list() { push(Op::kBeginList); }
  void end() { push(Op::kEnd); }
  void key(std::string_view k) { push_str(Op::kKey, k); }
  void null() { push(Op::kNull); }
  void boolean(bool v) {
    Token t{Op::kBool};
    t.b = v;
    tokens_.push_back(t);
  }
  void integer(int64_t v) {
    Token t{Op::kInt};
    t.i = v;
    tokens_.push_back(t);
  }
  void floating(double v) {
    Token t{Op::kFloat};
    t.d = v;
    tokens_.push_back(t);
  }
  void string(std::string_view s) { push_str(Op::kString, s); }
  // {"type": type, "value": ...}: call, then emit exactly one value token (or container).
  void typed(std::string_view type) { push_str(Op::kTyped, type); }
  // A fresh leaf (default values). Leaves of a cleared record are reused, keeping their buffers.
  TensorLeaf& tensor() {
    Token t{Op::kTensor};
    t.i = static_cast<int64_t>(n_tensors_);
    tokens_.push_back(t);
    if (n_tensors_ < tensors_.size()) {
      TensorLeaf& leaf = tensors_[n_tensors_++];
      reset_leaf(leaf);
      return leaf;
    }
    ++n_tensors_;
    return tensors_.emplace_back();
  }

  // The leaves of this record, in token order.
  template <typename T>
  struct Leaves {
    T* b;
    T* e;
    T* begin() const { return b; }
    T* end() const { return e; }
    size_t size() const { return static_cast<size_t>(e - b); }
    T& operator[](size_t i) const { return b[i]; }
  };

  const std::vector<Token>& tokens() const { return tokens_; }
  Leaves<TensorLeaf> tensors() { return {tensors_.data(), tensors_.data() + n_tensors_}; }
  Leaves<const TensorLeaf> tensors() const {
    return {tensors_.data(), tensors_.data() + n_tensors_};
  }

  void reserve(size_t tokens, size_t tensors, size_t chars) {
    tokens_.reserve(tokens);
    tensors_.reserve(tensors);
    strings_.reserve(chars);
  }

  // Empties the record but keeps its buffers (records are recycled between entries so that
  // recording allocates nothing in steady state). Releases pending tensor bytes and unresolved
  // device statistics at once; leaves holding neither are only read, not written (the recording
  // thread writes them next, and a line another core wrote costs it more).
  void clear() {
    name.clear();
    overflow = false;
    tokens_.clear();
    strings_.clear();
    for (size_t i = 0; i < n_tensors_; ++i) {
      TensorLeaf& t = tensors_[i];
      if (t.pending.owner || t.pending.arriving || t.pending.data) t.pending = {};
      if (t.deferred) t.deferred.reset();
    }
    n_tensors_ = 0;
  }
  std::string_view str(const Token& t) const {
    return std::string_view(strings_).substr(t.i, t.len);
  }
  bool empty() const { return tokens_.empty(); }

 private:
  void push(Op op) { tokens_.push_back(Token{op}); }
  void push_str(Op op, std::string_view s) {
    Token t{op};
    t.i = static_cast<int64_t>(strings_.size());
    t.len = static_cast<uint32_t>(s.size());
    strings_.append(s);
    tokens_.push_back(t);
  }
  static void reset_leaf(TensorLeaf& leaf) {
    leaf.type.assign("torch.Tensor");
    leaf.dtype.clear();
    leaf.shape.clear();
    leaf.has_stats = false;
    leaf.bool_stats = false;
    leaf.stats = TensorStats();
    leaf.requires_grad = false;
    leaf.write_requires_grad = true;
    leaf.write_counts = true;
    leaf.crc32.reset();
    leaf.data_name.clear();
    leaf.pending = {};
    leaf.deferred.reset();
  }

  std::vector<Token> tokens_;
  std::vector<TensorLeaf> tensors_;  // the first n_tensors_ are this record's
  size_t n_tensors_ = 0;
  std::string strings_;
};

// The entry body as msprobe writes it inside "data" (indent 1, depth 2). Throws numprobe::Error on
// an unbalanced token stream (a capture bug, never user input).
std::string render_entry_record(const EntryRecord& r);
// The same into `out` (its content replaced, its capacity reused: the writer renders every entry
// into one buffer).
void render_entry_record(const EntryRecord& r, std::string& out);

}  // namespace numprobe::capture
