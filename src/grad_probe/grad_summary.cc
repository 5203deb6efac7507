#include "grad_probe/grad_summary.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "base/csv.h"
#include "core/hash.h"
#include "core/stats.h"
#include "monitor/py_text.h"
#include "numprobe/error.h"

namespace numprobe::grad_probe {
namespace {

using monitor::py_float_str;

// Element loaders: every supported gradient type read as double (exact for all of them).
double load(const float* p, size_t i) {
  return p[i];
}
double load(const double* p, size_t i) {
  return p[i];
}
struct Half {
  const uint16_t* p;
};
struct Bf16 {
  const uint16_t* p;
};
double load(Half h, size_t i) {
  return half_to_float(h.p[i]);
}
double load(Bf16 b, size_t i) {
  return bf16_to_float(b.p[i]);
}

template <typename Src>
void directions(Src src, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = load(src, i) > 0 ? 1 : 0;
}

// torch.bucketize(right=False): the first i with x <= b[i]; NaN compares false everywhere.
template <typename Src>
void intervals(Src src, size_t n, const std::vector<double>& b, std::vector<uint64_t>& counts) {
  const size_t k = b.size();
  counts.assign(k + 2, 0);
  for (size_t i = 0; i < n; ++i) {
    const double x = load(src, i);
    size_t j = 0;
    while (j < k && !(x <= b[j])) ++j;
    ++counts[j];
    if (x == 0) ++counts[k + 1];
  }
}

template <typename Fn>
void dispatch(const void* data, DType dtype, const std::string& name, Fn&& fn) {
  switch (dtype) {
    case DType::kF32:
      return fn(static_cast<const float*>(data));
    case DType::kF64:
      return fn(static_cast<const double*>(data));
    case DType::kF16:
      return fn(Half{static_cast<const uint16_t*>(data)});
    case DType::kBF16:
      return fn(Bf16{static_cast<const uint16_t*>(data)});
    default:
      throw Error("grad_probe: gradient of " + name + " has dtype " +
                  std::string(dtype_name(dtype)) +
                  "; float64, float32, float16 or bfloat16 expected");
  }
}

void append_shape(std::string& out, const std::vector<int64_t>& shape) {
  out += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  out += ']';
}

}  // namespace

GradStat compute_grad_stat(const std::string& name, const void* data, size_t count, DType dtype,
                           const std::vector<int64_t>& shape, const capture::GradProbeOptions& opt,
                           uint8_t* direction) {
  GradStat s;
  s.name = name;
  s.shape = shape;
  s.numel = count;
  dispatch(data, dtype, name, [](auto) {});  // the dtype check, before any work
  const bool crc_in_pass = opt.level == capture::GradLevel::kL0 && dtype == DType::kF32;
  StatsOptions so;
  so.threads = 1;  // the training thread: no threads of its own for a gradient
  so.crc32 = crc_in_pass ? &s.crc32 : nullptr;
  const TensorStats t = compute_stats(data, count, dtype, so);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // torch.max/min propagate NaN; the engine's statistics skip it and count it instead.
  const bool any_nan = t.nan_count > 0 || count == 0;
  s.max = any_nan ? nan : static_cast<double>(static_cast<float>(t.max));
  s.min = any_nan ? nan : static_cast<double>(static_cast<float>(t.min));
  s.norm = static_cast<double>(static_cast<float>(t.norm()));
  if (opt.level == capture::GradLevel::kL0 && !crc_in_pass) {
    std::vector<float> f(count);
    dispatch(data, dtype, name, [&](auto src) {
      for (size_t i = 0; i < count; ++i) f[i] = static_cast<float>(load(src, i));
    });
    s.crc32 = crc32(f.data(), f.size() * sizeof(float));
  }
  if (opt.level == capture::GradLevel::kL2) {
    std::vector<double> b32;  // torch.Tensor(bounds) is float32
    for (double b : opt.bounds) b32.push_back(static_cast<double>(static_cast<float>(b)));
    dispatch(data, dtype, name, [&](auto src) { intervals(src, count, b32, s.interval_counts); });
  }
  if (direction != nullptr)
    dispatch(data, dtype, name, [&](auto src) { directions(src, count, direction); });
  return s;
}

std::string summary_header(const capture::GradProbeOptions& opt) {
  std::string line;
  csv_append_cell(line, "param_name");
  if (opt.level == capture::GradLevel::kL0) csv_append_cell(line, "MD5");
  if (opt.level == capture::GradLevel::kL2) {
    const auto& b = opt.bounds_text;
    csv_append_cell(line, "(-inf, " + b[0] + "]");
    for (size_t i = 1; i < b.size(); ++i) csv_append_cell(line, "(" + b[i - 1] + ", " + b[i] + "]");
    csv_append_cell(line, "(" + b.back() + ", inf)");
    csv_append_cell(line, "=0");
  }
  for (const char* c : {"max", "min", "norm", "shape"}) csv_append_cell(line, c);
  return line + "\r\n";
}

std::string summary_line(const GradStat& s, const capture::GradProbeOptions& opt) {
  std::string line;
  csv_append_cell(line, s.name);
  if (opt.level == capture::GradLevel::kL0) csv_append_cell(line, crc32_hex(s.crc32));
  if (opt.level == capture::GradLevel::kL2) {
    for (uint64_t c : s.interval_counts) {
      // msprobe: count / numel as a Python float, or the int 0 for an empty gradient.
      csv_append_cell(
          line, s.numel == 0 ? std::string("0")
                             : py_float_str(static_cast<double>(c) / static_cast<double>(s.numel)));
    }
  }
  csv_append_cell(line, py_float_str(s.max));
  csv_append_cell(line, py_float_str(s.min));
  csv_append_cell(line, py_float_str(s.norm));
  std::string shape;
  append_shape(shape, s.shape);
  csv_append_cell(line, shape);
  return line + "\r\n";
}

}  // namespace numprobe::grad_probe
