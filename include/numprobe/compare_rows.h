// msprobe's compare rows: every leaf of every dump entry becomes one row named
// "<entry>.<input|output|parameters>.<index or kwarg>[.<nested index>...]" (msprobe
// core/compare/utils.py read_op/gen_op_item; docs/compare.md). Rows of an entry are ordered inputs,
// parameters, outputs, parameter grads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "numprobe/dump.h"

namespace numprobe {

enum class RowState : uint8_t { kInput, kParameters, kOutput, kParametersGrad, kOther };
enum class RowKind : uint8_t { kTensor, kScalar, kNone, kOther };

struct CompareRow {
  std::string name;
  uint32_t entry = 0;      // index into DumpFile::entries
  uint32_t suffix_at = 0;  // name.substr(suffix_at) is the part after the entry name
  RowState state = RowState::kOther;
  RowKind kind = RowKind::kNone;
  std::string dtype;  // as written ("torch.float32", "Float32"), "<class 'int'>" or "None"
  DType element_type = DType::kUnknown;
  std::vector<int64_t> shape;  // [] for scalars
  bool has_shape = false;      // false for null and unknown leaves
  // Tensors: the dump's statistics. Scalars: the value in all four (msprobe's convention).
  StatValue max, min, mean, norm;
  int8_t requires_grad = -1;  // -1: not applicable
  std::string md5;            // tensors: as dumped; scalars: crc32 of Python's str(value)
  std::string data_name;
};

// One flat row list per dump, in entry order.
std::vector<CompareRow> flatten_rows(const DumpFile& d);

}  // namespace numprobe
