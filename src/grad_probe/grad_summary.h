// One parameter's gradient as msprobe's grad_probe records it at an optimizer step: the values of
// a grad_summary_{step}.csv line (docs/formats/grad_probe.md) and its direction bits (grad > 0).
//
// Invariants:
//  - max, min and norm are float32 values (msprobe reads them through .float()): max/min are the
//    gradient's own extremes (NaN if any element is NaN, as torch.max), norm is sqrt of a float64
//    sum of squares rounded to float32 (torch accumulates in float32: the last bit may differ).
//  - interval shares follow torch.bucketize(grad, float32(bounds)) with right=False: element x
//    falls in the first interval i with x <= bounds[i], else in the last; NaN falls in the last.
//  - crc32 is zlib's CRC-32 of the gradient converted to float32 (msprobe's "MD5" column since
//    mstt's 2025 bug fix: 8 lowercase hex digits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "capture/capture_config.h"
#include "numprobe/dtype.h"

namespace numprobe::grad_probe {

struct GradStat {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t numel = 0;
  double max = 0, min = 0, norm = 0;
  uint32_t crc32 = 0;
  std::vector<uint64_t> interval_counts;  // bounds.size() + 1 intervals, then the "=0" count
};

// Computes the line of a gradient of `count` contiguous elements of a floating dtype (F64, F32,
// F16, BF16; anything else is an Error naming the parameter). When direction is not null it
// receives count bytes, 1 where the element is > 0 (numpy bool). interval_counts are filled for
// level L2 only, crc32 for L0 only.
GradStat compute_grad_stat(const std::string& name, const void* data, size_t count, DType dtype,
                           const std::vector<int64_t>& shape, const capture::GradProbeOptions& opt,
                           uint8_t* direction);

// The header line msprobe writes for a level and bounds, e.g.
// param_name,(-inf, -1],(-1, 0],(0, 1],(1, inf),=0,max,min,norm,shape (cells quoted as Python's
// csv module quotes them, CRLF-terminated, no BOM: the file starts with one).
std::string summary_header(const capture::GradProbeOptions& opt);
// One data line (CRLF-terminated) in the same layout.
std::string summary_line(const GradStat& s, const capture::GradProbeOptions& opt);
// The byte-order mark msprobe's csv writer (encoding utf-8-sig) puts at the start of the file.
inline constexpr const char* kUtf8Bom = "\xEF\xBB\xBF";

}  // namespace numprobe::grad_probe
