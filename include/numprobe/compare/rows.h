// msprobe's compare rows: every leaf of every dump entry becomes one row named
// "<entry>.<input|output|parameters>.<index or kwarg>[.<nested index>...]" (msprobe
// core/compare/utils.py read_op/gen_op_item; docs/compare.md). Rows of an entry are ordered inputs,
// parameters, outputs, parameter grads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "numprobe/dump.h"

namespace numprobe {

enum class RowState : uint8_t { kInput, kParameters, kOutput, kParametersGrad, kOther };
enum class RowKind : uint8_t { kTensor, kScalar, kNone, kOther };

// A read-only view of a shape's dims (std::span<const int64_t> is C++20).
class Dims {
 public:
  Dims() = default;
  Dims(const int64_t* p, size_t n) : p_(p), n_(n) {}
  const int64_t* begin() const { return p_; }
  const int64_t* end() const { return p_ + n_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](size_t i) const { return p_[i]; }
  friend bool operator==(Dims a, Dims b) {
    return a.n_ == b.n_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(Dims a, Dims b) { return !(a == b); }

 private:
  const int64_t* p_ = nullptr;
  size_t n_ = 0;
};

// Stable storage for the text and dims that rows point to: chunks that never move, so views stay
// valid when the owner is moved. Not copyable (copies would point into the original).
class RowText {
 public:
  RowText() = default;
  RowText(RowText&&) = default;
  RowText& operator=(RowText&&) = default;
  RowText(const RowText&) = delete;
  RowText& operator=(const RowText&) = delete;

  std::string_view add(std::string_view s);
  // One stored copy per distinct string (for the few dtype spellings of scalar rows).
  std::string_view intern(std::string_view s);
  Dims add(const int64_t* dims, size_t n);
  size_t bytes() const { return bytes_; }

 private:
  char* reserve(size_t n, size_t align);
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t used_ = 0, cap_ = 0, bytes_ = 0;
  std::map<std::string, std::string_view, std::less<>> interned_;
};

// One row. A 1M-row compare holds two million of these, so rows own no strings: text points into
// the dump's string pool (which outlives the rows in a PairResult) or into the RowSet's RowText.
struct CompareRow {
  std::string_view name;
  uint32_t entry = 0;      // index into DumpFile::entries
  uint32_t suffix_at = 0;  // name.substr(suffix_at) is the part after the entry name
  RowState state = RowState::kOther;
  RowKind kind = RowKind::kNone;
  DType element_type = DType::kUnknown;
  bool has_shape = false;     // false for null and unknown leaves
  int8_t requires_grad = -1;  // -1: not applicable
  std::string_view dtype;     // as written ("torch.float32", "Float32"), "<class 'int'>" or "None"
  Dims shape;                 // [] for scalars
  // Tensors: the dump's statistics. Scalars: the value in all four (msprobe's convention).
  StatValue max, min, mean, norm;
  std::string_view md5;  // tensors: as dumped; scalars: crc32 of Python's str(value)
  std::string_view data_name;
};

// The rows of one dump with the text they point to. Used like the vector it is; keep it (and the
// DumpFile it was flattened from) alive while the rows are used, and never copy it into a plain
// std::vector<CompareRow> whose RowText would be gone.
class RowSet : public std::vector<CompareRow> {
 public:
  RowText text;
};

// One flat row list per dump, in entry order. Rows point into d.strings and the result's text.
RowSet flatten_rows(const DumpFile& d);

}  // namespace numprobe
