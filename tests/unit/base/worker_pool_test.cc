#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/worker_pool.h"
#include "core/stats.h"

namespace numprobe {
namespace {

TEST(WorkerPool, RunsEveryChunkOnceAndWaits) {
  WorkerPool pool(3);
  for (size_t n : {1u, 2u, 4u, 17u}) {
    std::vector<std::atomic<int>> hits(n);
    pool.run(n, [&](size_t i) { hits[i].fetch_add(1); });
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << n << " " << i;
  }
}

TEST(WorkerPool, ConcurrentJobsAreSerialisedAndNoWorkersMeansALoop) {
  WorkerPool pool(1);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int r = 0; r < 200; ++r) pool.run(3, [&](size_t) { total.fetch_add(1); });
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 200 * 3);
  WorkerPool none(0);
  int sum = 0;
  none.run(5, [&](size_t i) { sum += static_cast<int>(i); });
  EXPECT_EQ(sum, 10);
}

TEST(WorkerPool, StatisticsOnThePoolEqualSingleThreaded) {
  std::vector<float> v(3 * (1u << 20) + 123);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i) * 0.001f) * 3.0f;
  v[7] = NAN;
  v[v.size() - 1] = -INFINITY;
  StatsOptions one;
  one.threads = 1;
  TensorStats a = compute_stats(v.data(), v.size(), DType::kF32, one);
  WorkerPool pool(2);
  StatsOptions pooled;
  pooled.threads = 0;
  pooled.pool = &pool;
  pooled.parallel_threshold = 1u << 20;
  TensorStats b = compute_stats(v.data(), v.size(), DType::kF32, pooled);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.max, b.max);
  EXPECT_EQ(a.nan_count, b.nan_count);
  EXPECT_EQ(a.neg_inf_count, b.neg_inf_count);
  EXPECT_TRUE(std::isnan(b.sum));  // a NaN makes the sums NaN whatever the chunking
  v[7] = 0;
  v[v.size() - 1] = 0;
  a = compute_stats(v.data(), v.size(), DType::kF32, one);
  b = compute_stats(v.data(), v.size(), DType::kF32, pooled);
  EXPECT_NEAR(a.sum, b.sum, 1e-9 * std::fabs(a.sumsq));
  EXPECT_NEAR(a.sumsq, b.sumsq, 1e-12 * a.sumsq);
}

TEST(RunInBackground, ReturnsTheResultFromAnotherThreadAndRethrows) {
  const std::thread::id caller = std::this_thread::get_id();
  auto other = run_in_background([] { return std::this_thread::get_id(); });
  EXPECT_NE(other.get(), caller);
  auto value = run_in_background([] { return 42; });
  EXPECT_EQ(value.get(), 42);
  auto failing = run_in_background([]() -> int { throw std::runtime_error("boom"); });
  EXPECT_THROW(failing.get(), std::runtime_error);
}

TEST(ParallelFor, StatisticsWithoutAPoolMatchOneThread) {
  // compute_stats without a pool splits across threads through parallel_for: same counts and
  // extremes as one thread, sums equal up to their reduction order.
  std::vector<float> v(1u << 21);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 2654435761u) % 1000) - 500;
  StatsOptions one;
  one.threads = 1;
  StatsOptions two;
  two.threads = 2;
  two.parallel_threshold = 1u << 16;
  const TensorStats a = compute_stats(v.data(), v.size(), DType::kF32, one);
  const TensorStats b = compute_stats(v.data(), v.size(), DType::kF32, two);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.max, b.max);
  EXPECT_EQ(a.zero_count, b.zero_count);
  EXPECT_NEAR(a.sum, b.sum, 1e-9 * std::fabs(a.sumsq));
}

}  // namespace
}  // namespace numprobe
