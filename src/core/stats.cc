#include "core/stats.h"

#include "base/worker_pool.h"
#include "core/hash.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/stats_accum.h"
#include "numprobe/error.h"

namespace numprobe {

double TensorStats::mean() const {
  return count ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
}

double TensorStats::norm() const {
  return std::sqrt(sumsq);
}

namespace {

using internal::StatsAccum;

using Fp8Table = std::array<float, 256>;

template <float (*kDecode)(uint8_t)>
const float* fp8_table() {
  static const Fp8Table table = [] {
    Fp8Table t{};
    for (int i = 0; i < 256; ++i) t[i] = kDecode(static_cast<uint8_t>(i));
    return t;
  }();
  return table.data();
}

// Integers convert exactly to double (int64 beyond 2^53 rounds). Narrow types sum exactly in
// int64 within a block; the block size keeps int16 squares (< 2^30 each) from overflowing.
template <typename T, bool kBool = false>
void integer_stats(const uint8_t* p, size_t n, StatsAccum* acc) {
  constexpr size_t kBlock = size_t{1} << 16;
  constexpr bool kExact = sizeof(T) <= 2;
  acc->count += n;
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t len = std::min(kBlock, n - start);
    const uint8_t* b = p + start * sizeof(T);
    T lo = std::numeric_limits<T>::max();
    T hi = std::numeric_limits<T>::lowest();
    uint64_t zeros = 0;
    int64_t isum = 0;
    int64_t isumsq = 0;
    double dsum = 0;
    double dsumsq = 0;
    for (size_t i = 0; i < len; ++i) {
      T v;
      std::memcpy(&v, b + i * sizeof(T), sizeof(T));
      if constexpr (kBool) v = v != 0;  // any non-zero byte is true
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      zeros += v == 0;
      if constexpr (kExact) {
        isum += v;
        isumsq += static_cast<int64_t>(v) * v;
      } else if constexpr (sizeof(T) == 4) {
        isum += v;
        dsumsq += static_cast<double>(v) * static_cast<double>(v);
      } else {
        const auto d = static_cast<double>(v);
        dsum += d;
        dsumsq += d * d;
      }
    }
    acc->zero += zeros;
    acc->add_min_max(static_cast<double>(lo), static_cast<double>(hi));
    acc->add_sum(sizeof(T) <= 4 ? static_cast<double>(isum) : dsum);
    acc->add_sumsq(kExact ? static_cast<double>(isumsq) : dsumsq);
  }
}

void stats_range(const uint8_t* p, size_t n, DType dtype, StatsAccum* acc) {
  switch (dtype) {
    case DType::kF64:
      return internal::stats_f64(p, n, acc);
    case DType::kF32:
      return internal::stats_f32(p, n, acc);
    case DType::kF16:
      return internal::stats_f16(p, n, acc);
    case DType::kBF16:
      return internal::stats_bf16(p, n, acc);
    case DType::kF8E4M3FN:
      return internal::stats_fp8(p, n, fp8_table<fp8_e4m3fn_to_float>(), acc);
    case DType::kF8E5M2:
      return internal::stats_fp8(p, n, fp8_table<fp8_e5m2_to_float>(), acc);
    case DType::kI8:
      return integer_stats<int8_t>(p, n, acc);
    case DType::kI16:
      return integer_stats<int16_t>(p, n, acc);
    case DType::kI32:
      return integer_stats<int32_t>(p, n, acc);
    case DType::kI64:
      return integer_stats<int64_t>(p, n, acc);
    case DType::kU8:
      return integer_stats<uint8_t>(p, n, acc);
    case DType::kBool:
      return integer_stats<uint8_t, true>(p, n, acc);
    case DType::kUnknown:
      break;
  }
  throw Error("compute_stats: unsupported dtype " + std::string(dtype_name(dtype)));
}

// Each thread gets at least a quarter of the threshold so that large machines do not start dozens
// of threads for a tensor just above it.
size_t thread_count(const StatsOptions& opt, size_t count) {
  if (count < opt.parallel_threshold || opt.threads == 1 || opt.threads < 0) return 1;
  size_t wanted = opt.threads > 0 ? static_cast<size_t>(opt.threads)
                                  : std::max(1u, std::thread::hardware_concurrency());
  if (opt.pool) wanted = std::min(wanted, opt.pool->workers() + 1);
  const size_t min_chunk = std::max(internal::kStatsGranule, opt.parallel_threshold / 4);
  return std::max<size_t>(1, std::min(wanted, count / min_chunk));
}

}  // namespace

TensorStats compute_stats(const void* data, size_t count, DType dtype, const StatsOptions& opt) {
  const size_t elem = dtype_size(dtype);
  if (elem == 0) {
    throw Error("compute_stats: unsupported dtype " + std::string(dtype_name(dtype)));
  }
  StatsAccum total;
  if (opt.crc32) *opt.crc32 = 0;
  if (count == 0) return total.finish();
  if (data == nullptr) throw Error("compute_stats: null data for a non-empty tensor");
  const auto* bytes = static_cast<const uint8_t*>(data);

  const size_t threads = thread_count(opt, count);
  // Elements [begin, end) into acc, and with opt.crc32 their bytes' CRC into *crc: block by block
  // of whole granules, so the sums are those of one stats_range call (same blocks, same order).
  auto range = [&](size_t begin, size_t end, StatsAccum* acc, uint32_t* crc) {
    if (!crc) return stats_range(bytes + begin * elem, end - begin, dtype, acc);
    constexpr size_t kFused = 16 * internal::kStatsGranule;  // ~1 MiB of float32: stays in L2
    for (size_t b = begin; b < end; b += kFused) {
      const size_t n = std::min(kFused, end - b);
      stats_range(bytes + b * elem, n, dtype, acc);
      *crc = crc32(bytes + b * elem, n * elem, *crc);
    }
  };
  if (threads <= 1) {
    range(0, count, &total, opt.crc32);
    return total.finish();
  }

  // Contiguous chunks of whole granules; chunk t covers granules [t*G/T, (t+1)*G/T).
  const size_t granules = (count + internal::kStatsGranule - 1) / internal::kStatsGranule;
  std::vector<StatsAccum> parts(threads);
  std::vector<uint32_t> crcs(threads, 0);
  auto bounds = [&](size_t t) {
    return std::make_pair(std::min(count, granules * t / threads * internal::kStatsGranule),
                          std::min(count, granules * (t + 1) / threads * internal::kStatsGranule));
  };
  auto chunk_run = [&](size_t t) {
    const auto [begin, end] = bounds(t);
    range(begin, end, &parts[t], opt.crc32 ? &crcs[t] : nullptr);
  };
  auto finish = [&] {
    for (const StatsAccum& part : parts) total.merge(part);
    if (opt.crc32) {
      uint32_t crc = crcs[0];
      for (size_t t = 1; t < threads; ++t) {
        const auto [begin, end] = bounds(t);
        crc = crc32_combine(crc, crcs[t], (end - begin) * elem);
      }
      *opt.crc32 = crc;
    }
    return total.finish();
  };
  if (opt.pool) {
    opt.pool->run(threads, chunk_run);
    return finish();
  }
  parallel_for(threads, static_cast<unsigned>(threads), chunk_run);
  return finish();
}

}  // namespace numprobe
