#include "base/json_cursor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "numprobe/error.h"

using numprobe::InputError;
using numprobe::base::JsonCursor;
using numprobe::base::JsonType;

namespace {

std::string error_of(const std::string& text) {
  try {
    JsonCursor c(text.data(), text.size(), "t.json", 8);
    c.skip_value();
    c.expect_end();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonCursor, ReadsPythonNonStrictNumbers) {
  std::string text = "[NaN, Infinity, -Infinity, -0.0, 12, 1e-5, 9223372036854775807]";
  JsonCursor c(text.data(), text.size(), "t");
  c.begin_array();
  std::vector<numprobe::base::JsonNumber> v;
  while (c.next_item()) v.push_back(c.read_number());
  ASSERT_EQ(v.size(), 7u);
  EXPECT_TRUE(std::isnan(v[0].value));
  EXPECT_EQ(v[1].value, INFINITY);
  EXPECT_EQ(v[2].value, -INFINITY);
  EXPECT_TRUE(std::signbit(v[3].value));
  EXPECT_FALSE(v[3].is_int);
  EXPECT_TRUE(v[4].is_int);
  EXPECT_EQ(v[4].int_value, 12);
  EXPECT_DOUBLE_EQ(v[5].value, 1e-5);
  EXPECT_EQ(v[6].int_value, INT64_MAX);
}

TEST(JsonCursor, HugeIntegerFallsBackToDouble) {
  std::string text = "123456789012345678901234567890";
  JsonCursor c(text.data(), text.size(), "t");
  auto n = c.read_number();
  EXPECT_FALSE(n.is_int);
  EXPECT_DOUBLE_EQ(n.value, 1.2345678901234568e29);
}

TEST(JsonCursor, OutOfRangeFollowsPython) {
  std::string text = "[1e400, -1e400, 1e-400]";
  JsonCursor c(text.data(), text.size(), "t");
  c.begin_array();
  ASSERT_TRUE(c.next_item());
  EXPECT_EQ(c.read_number().value, INFINITY);
  ASSERT_TRUE(c.next_item());
  EXPECT_EQ(c.read_number().value, -INFINITY);
  ASSERT_TRUE(c.next_item());
  EXPECT_EQ(c.read_number().value, 0.0);
}

TEST(JsonCursor, DecodesEscapes) {
  std::string text = R"(["a\"b\\c\n\t\u0001\u00e9\u4e2d\ud83d\ude00", "plain"])";
  JsonCursor c(text.data(), text.size(), "t");
  c.begin_array();
  ASSERT_TRUE(c.next_item());
  EXPECT_EQ(std::string(c.read_string()), "a\"b\\c\n\t\x01\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
  ASSERT_TRUE(c.next_item());
  EXPECT_EQ(std::string(c.read_string()), "plain");
  EXPECT_FALSE(c.next_item());
}

TEST(JsonCursor, ObjectsAndRawValues) {
  std::string text = R"({"a": {"x": [1, 2]}, "b": null})";
  JsonCursor c(text.data(), text.size(), "t");
  c.begin_object();
  std::string_view k;
  ASSERT_TRUE(c.next_key(k));
  EXPECT_EQ(k, "a");
  EXPECT_EQ(c.raw_value(), R"({"x": [1, 2]})");
  ASSERT_TRUE(c.next_key(k));
  EXPECT_EQ(k, "b");
  EXPECT_EQ(c.peek(), JsonType::kNull);
  c.read_null();
  EXPECT_FALSE(c.next_key(k));
  c.expect_end();
}

TEST(JsonCursor, ErrorsNameFileAndOffset) {
  EXPECT_NE(error_of("[1, 2").find("t.json"), std::string::npos);
  EXPECT_NE(error_of("[1, 2").find("truncated"), std::string::npos);
  EXPECT_NE(error_of("{\"a\" 1}").find("expected ':'"), std::string::npos);
  EXPECT_NE(error_of("[1,]").find("trailing comma"), std::string::npos);
  EXPECT_NE(error_of("[01]").find("byte"), std::string::npos);
  EXPECT_NE(error_of("\"abc").find("unterminated"), std::string::npos);
  EXPECT_NE(error_of("nul").find("expected null"), std::string::npos);
  EXPECT_NE(error_of("[1] x").find("trailing data"), std::string::npos);
  EXPECT_NE(error_of("\"\\x\"").find("bad escape"), std::string::npos);
  EXPECT_NE(error_of("\"\\u12g4\"").find("hex"), std::string::npos);
  EXPECT_NE(error_of("-").find("malformed number"), std::string::npos);
  EXPECT_NE(error_of("1.e5").find("fraction"), std::string::npos);
  EXPECT_NE(error_of("").find("end of input"), std::string::npos);
  EXPECT_NE(error_of(std::string("\"a\nb\"")).find("control character"), std::string::npos);
}

TEST(JsonCursor, DeepNestingIsAnErrorNotACrash) {
  std::string deep(100000, '[');
  std::string msg = error_of(deep);
  EXPECT_NE(msg.find("nesting deeper than 8"), std::string::npos) << msg;
  EXPECT_EQ(error_of("[[[[[[[[]]]]]]]]"), "");
}

}  // namespace
