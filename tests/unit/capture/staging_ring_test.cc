#include "capture/staging_ring.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace numprobe::capture {
namespace {

TEST(StagingRing, TakesInOrderAndRefusesWhenFull) {
  StagingRing r(4 * StagingRing::kAlign);
  size_t off = 0, taken = 0;
  ASSERT_TRUE(r.take(1, off, taken));
  EXPECT_EQ(off, 0u);
  EXPECT_EQ(taken, StagingRing::kAlign);  // rounded up
  ASSERT_TRUE(r.take(2 * StagingRing::kAlign, off, taken));
  EXPECT_EQ(off, StagingRing::kAlign);
  EXPECT_FALSE(r.take(2 * StagingRing::kAlign, off, taken));  // one block left
  ASSERT_TRUE(r.take(StagingRing::kAlign, off, taken));
  EXPECT_EQ(off, 3 * StagingRing::kAlign);
  EXPECT_EQ(r.used(), r.capacity());
  EXPECT_FALSE(r.take(1, off, taken));
  EXPECT_FALSE(StagingRing(StagingRing::kAlign).take(StagingRing::kAlign + 1, off, taken));
}

TEST(StagingRing, SpaceComesBackOnlyFromTheFront) {
  const size_t a = StagingRing::kAlign;
  StagingRing r(4 * a);
  size_t o0, o1, o2, t;
  ASSERT_TRUE(r.take(a, o0, t));
  ASSERT_TRUE(r.take(a, o1, t));
  ASSERT_TRUE(r.take(2 * a, o2, t));
  r.give_back(o1);  // out of order: the head stays behind block 0
  size_t off;
  EXPECT_FALSE(r.take(a, off, t));
  r.give_back(o0);  // now both front blocks are free
  ASSERT_TRUE(r.take(2 * a, off, t));
  EXPECT_EQ(off, 0u);
  r.give_back(o2);
  r.give_back(off);
  EXPECT_EQ(r.used(), 0u);
}

TEST(StagingRing, ABlockThatDoesNotFitBeforeTheEndStartsAtZero) {
  const size_t a = StagingRing::kAlign;
  StagingRing r(4 * a);
  size_t o0, o1, o2, t;
  ASSERT_TRUE(r.take(a, o0, t));
  ASSERT_TRUE(r.take(2 * a, o1, t));
  r.give_back(o0);                     // free: [0, a) and [3a, 4a)
  EXPECT_FALSE(r.take(2 * a, o2, t));  // neither piece holds two blocks
  ASSERT_TRUE(r.take(a / 2, o2, t));   // fits at the end
  EXPECT_EQ(o2, 3 * a);
  size_t o3;
  ASSERT_TRUE(r.take(a, o3, t));  // wraps: the free front
  EXPECT_EQ(o3, 0u);
  r.give_back(o1);
  r.give_back(o2);
  ASSERT_TRUE(r.take(3 * a, o1, t));  // all but block o3 at 0 is free again
  EXPECT_EQ(o1, a);
  EXPECT_EQ(r.used(), r.capacity());
}

// Random takes and out-of-order returns never hand out overlapping live blocks, and space is
// never lost: once everything is returned, the whole ring is free again.
TEST(StagingRing, LiveBlocksNeverOverlap) {
  const size_t cap = 64 * StagingRing::kAlign;
  StagingRing r(cap);
  std::mt19937 rng(7);
  struct Live {
    size_t off, len;
  };
  std::vector<Live> live;
  for (int i = 0; i < 20000; ++i) {
    if (!live.empty() && (rng() % 3 == 0 || live.size() > 40)) {
      const size_t k = rng() % live.size();
      r.give_back(live[k].off);
      live.erase(live.begin() + static_cast<long>(k));
      continue;
    }
    const size_t bytes = 1 + rng() % (9 * StagingRing::kAlign);
    size_t off, taken;
    if (!r.take(bytes, off, taken)) continue;
    ASSERT_LE(off + bytes, cap);
    for (const Live& l : live) ASSERT_TRUE(off + bytes <= l.off || l.off + l.len <= off) << i;
    live.push_back({off, bytes});
  }
  for (const Live& l : live) r.give_back(l.off);
  EXPECT_EQ(r.used(), 0u);
  size_t off, taken;
  EXPECT_TRUE(r.take(cap, off, taken));
}

}  // namespace
}  // namespace numprobe::capture
