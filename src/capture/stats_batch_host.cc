#include "capture/stats_batch_host.h"

#include <cmath>
#include <cstring>

#include "numprobe/dtype.h"

namespace numprobe::capture::stats_batch {
namespace {

// Element loads as the kernel's as_double: the bytes of the element, converted exactly.
template <typename T>
double load(const void* p, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return static_cast<double>(v);
}
double load_f16(const void* p, int64_t i) {
  return half_to_float(static_cast<uint16_t>(load<uint16_t>(p, i)));
}
double load_bf16(const void* p, int64_t i) {
  return bf16_to_float(static_cast<uint16_t>(load<uint16_t>(p, i)));
}
double load_bool(const void* p, int64_t i) {  // any nonzero byte is true
  return static_cast<const uint8_t*>(p)[i] != 0 ? 1.0 : 0.0;
}

template <double (*Load)(const void*, int64_t)>
void item_on_host(const Table& t, int k, double (&out)[kFields]) {
  const Item& it = t.items[k];
  const int64_t stride = element_stride(t, k);
  identity(out);
  for (int b = it.first_block; b < it.first_block + item_blocks(t, k); ++b) {
    double block[kFields];
    identity(block);
    for (int lane = 0; lane < kThreads; ++lane) {
      double acc[kFields];
      identity(acc);
      for (int64_t i = first_element(t, k, b, lane); i < it.n; i += stride)
        accumulate(acc, Load(it.data, i));
      combine(block, acc);
    }
    combine(out, block);
  }
}

}  // namespace

void run_on_host(const Table& table, double* out) {
  for (int k = 0; k < table.count; ++k) {
    double r[kFields];
    switch (static_cast<DType>(table.items[k].dtype)) {
      case DType::kF64:
        item_on_host<load<double>>(table, k, r);
        break;
      case DType::kF32:
        item_on_host<load<float>>(table, k, r);
        break;
      case DType::kF16:
        item_on_host<load_f16>(table, k, r);
        break;
      case DType::kBF16:
        item_on_host<load_bf16>(table, k, r);
        break;
      case DType::kI8:
        item_on_host<load<int8_t>>(table, k, r);
        break;
      case DType::kI16:
        item_on_host<load<int16_t>>(table, k, r);
        break;
      case DType::kI32:
        item_on_host<load<int32_t>>(table, k, r);
        break;
      case DType::kI64:
        item_on_host<load<int64_t>>(table, k, r);
        break;
      case DType::kU8:
        item_on_host<load<uint8_t>>(table, k, r);
        break;
      case DType::kBool:
        item_on_host<load_bool>(table, k, r);
        break;
      default:  // add_item's callers check batchable(); a stray item reads as all NaN
        identity(r);
        r[2] = r[3] = std::nan("");
        r[4] = static_cast<double>(table.items[k].n);
        break;
    }
    std::memcpy(out + static_cast<int64_t>(k) * kFields, r, sizeof r);
  }
}

TensorStats stats_of_fields(const double* v, uint64_t count) {
  TensorStats s;
  s.count = count;
  s.nan_count = static_cast<uint64_t>(v[4]);
  const bool all_nan = s.nan_count == s.count;  // compute_stats: NaN extrema then
  s.max = all_nan ? std::nan("") : v[0];
  s.min = all_nan ? std::nan("") : v[1];
  s.sum = v[2];
  s.sumsq = v[3];
  s.pos_inf_count = static_cast<uint64_t>(v[5]);
  s.neg_inf_count = static_cast<uint64_t>(v[6]);
  s.zero_count = static_cast<uint64_t>(v[7]);
  return s;
}

}  // namespace numprobe::capture::stats_batch
