#include "numprobe/string_pool.h"

#include <gtest/gtest.h>

#include <string>

using numprobe::kNoString;
using numprobe::StringPool;

// Regression (found by stack_construct_fuzz): interning "" into a fresh pool read past an empty
// chunk list.
TEST(StringPool, EmptyStringFirst) {
  StringPool p;
  uint32_t e = p.intern("");
  EXPECT_EQ(p.get(e), "");
  EXPECT_EQ(p.intern(""), e);
  EXPECT_EQ(p.find(""), e);
}

TEST(StringPool, InternsAndKeepsViewsStable) {
  StringPool p;
  std::vector<std::string_view> views;
  for (int i = 0; i < 100000; ++i) views.push_back(p.get(p.intern("s" + std::to_string(i))));
  std::string big(200000, 'x');
  uint32_t b = p.intern(big);
  EXPECT_EQ(p.get(b), big);
  for (int i = 0; i < 100000; ++i) EXPECT_EQ(views[i], "s" + std::to_string(i));
  EXPECT_EQ(p.intern("s42"), p.find("s42"));
  EXPECT_EQ(p.find("nope"), kNoString);
  EXPECT_EQ(p.get(kNoString), "");
}
