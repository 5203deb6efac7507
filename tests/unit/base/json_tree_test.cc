#include "base/json_tree.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "numprobe/error.h"

using numprobe::InputError;
using numprobe::base::Json;
using numprobe::base::JsonReadOptions;
using numprobe::base::parse_json;

namespace {

JsonReadOptions strict() {
  JsonReadOptions o;
  o.strict = true;
  return o;
}

std::string error_of(const std::string& text, const JsonReadOptions& options) {
  try {
    parse_json(text, "t.json", options);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "t.json");
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return {};
}

TEST(JsonTree, KeepsKeyOrderTokensAndOffsets) {
  const Json j = parse_json(R"({"b": 1.50, "a": [true, null, "x"], "c": {}})", "t.json");
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j.fields.size(), 3u);
  EXPECT_EQ(j.fields[0].first, "b");
  EXPECT_EQ(j.fields[0].second.text, "1.50");
  EXPECT_EQ(j.fields[0].second.number, 1.5);
  EXPECT_EQ(j.fields[0].second.offset, 6u);
  EXPECT_EQ(j.fields[1].first, "a");
  const Json& a = j.fields[1].second;
  ASSERT_EQ(a.items.size(), 3u);
  EXPECT_TRUE(a.items[0].is_bool());
  EXPECT_TRUE(a.items[1].is_null());
  EXPECT_EQ(a.items[2].text, "x");
  EXPECT_EQ(a.items[2].offset, 30u);
  EXPECT_STREQ(a.type_name(), "array");
  EXPECT_STREQ(j.find("c")->type_name(), "object");
  EXPECT_EQ(j.find("d"), nullptr);
  EXPECT_EQ(j.python_repr(), "{'b': 1.50, 'a': [True, None, 'x'], 'c': {}}");
}

TEST(JsonTree, IntegersAsPythonReadsThem) {
  const Json j = parse_json(
      "[0, -0, -7, 9223372036854775807, 18446744073709551615, "
      "-99999999999999999999, 1.0, 1e2]",
      "t.json");
  const auto& v = j.items;
  EXPECT_TRUE(v[0].is_int() && v[0].fits_int64 && v[0].integer == 0);
  EXPECT_TRUE(v[1].is_int() && v[1].fits_int64 && v[1].integer == 0);
  EXPECT_EQ(v[2].integer, -7);
  EXPECT_TRUE(v[3].fits_int64);
  EXPECT_EQ(v[3].integer, INT64_MAX);
  // Python's int has no bound: integral, but beyond int64 (a reader's range check says so).
  EXPECT_TRUE(v[4].is_int());
  EXPECT_FALSE(v[4].fits_int64);
  EXPECT_TRUE(v[5].is_int());
  EXPECT_FALSE(v[5].fits_int64);
  EXPECT_FALSE(v[6].is_int());  // 1.0 is a float in Python
  EXPECT_FALSE(v[7].is_int());
  EXPECT_EQ(v[7].number, 100);
}

TEST(JsonTree, DuplicateKeysKeepTheFirstPositionAndTheLastValue) {
  const Json j = parse_json(R"({"a": 1, "b": 2, "a": 3})", "t.json");
  ASSERT_EQ(j.fields.size(), 2u);
  EXPECT_EQ(j.fields[0].first, "a");
  EXPECT_EQ(j.fields[0].second.integer, 3);
  EXPECT_EQ(j.fields[1].first, "b");
  // Past the scanned size the lookup is hashed: the same rule.
  std::string big = "{";
  for (int i = 0; i < 40; ++i) big += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  big += "\"k3\": 300, \"k39\": 3900}";
  const Json b = parse_json(big, "t.json");
  ASSERT_EQ(b.fields.size(), 40u);
  EXPECT_EQ(b.fields[3].second.integer, 300);
  EXPECT_EQ(b.fields[39].second.integer, 3900);
  EXPECT_EQ(b.find("k39")->integer, 3900);
}

TEST(JsonTree, UniqueKeysNameThePath) {
  JsonReadOptions o;
  o.unique_keys = true;
  EXPECT_NE(error_of(R"({"a": 1, "a": 2})", o).find("field \"a\" appears twice"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"x": [{}, {"b": 1, "b": 2}]})", o).find("field \"x[1].b\" appears twice"),
            std::string::npos);
  std::string big = "{\"s\": {";
  for (int i = 0; i < 20; ++i) big += "\"k" + std::to_string(i) + "\": 0, ";
  big += "\"k0\": 1}}";
  EXPECT_NE(error_of(big, o).find("field \"s.k0\" appears twice"), std::string::npos);
  // The same key in sibling objects is fine.
  EXPECT_NO_THROW(parse_json(R"({"a": {"k": 1}, "b": {"k": 1}})", "t.json", o));
}

TEST(JsonTree, PythonDialectAcceptsWhatJsonLoadsDoes) {
  const Json j = parse_json(R"([NaN, -Infinity, 1e999, "\ud800"])", "t.json");
  EXPECT_TRUE(std::isnan(j.items[0].number));
  EXPECT_FALSE(j.items[0].is_int());
  EXPECT_EQ(j.items[1].number, -INFINITY);
  EXPECT_EQ(j.items[2].number, INFINITY);
  EXPECT_EQ(j.items[3].text, "\xED\xA0\x80");  // a lone surrogate, kept as Python keeps it
}

TEST(JsonTree, StrictDialectRefusesThem) {
  EXPECT_NE(error_of("[NaN]", strict()).find("NaN is not a JSON number"), std::string::npos);
  EXPECT_NE(error_of("[-Infinity]", strict()).find("not a JSON number"), std::string::npos);
  // Regression (capture_config_fuzz): a number too large for a double is an error, not +inf.
  const std::string overflow = error_of("{\"a\": 1e999}", strict());
  EXPECT_NE(overflow.find("t.json (byte 6)"), std::string::npos) << overflow;
  EXPECT_NE(overflow.find("number overflow"), std::string::npos) << overflow;
  EXPECT_EQ(parse_json("[1e-999]", "t.json", strict()).items[0].number, 0);  // underflow is 0
  EXPECT_NE(error_of(R"(["\ud800"])", strict()).find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(error_of("[\"a\xff\"]", strict()).find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(error_of("{\"\xc0\x80\": 1}", strict()).find("not valid UTF-8"), std::string::npos);
  EXPECT_EQ(parse_json("[\"\xe4\xb8\xad\"]", "t.json", strict()).items[0].text, "\xe4\xb8\xad");
}

TEST(JsonTree, SyntaxErrorsCarryTheLabelAndOffset) {
  JsonReadOptions o;
  o.syntax_label = "malformed JSON";
  const std::string msg = error_of("{\"a\": 1,, }", o);
  EXPECT_EQ(msg.rfind("t.json (byte 8): malformed JSON: ", 0), 0u) << msg;
  EXPECT_NE(error_of("", o).find("malformed JSON"), std::string::npos);
  EXPECT_NE(error_of("{} {}", o).find("trailing data"), std::string::npos);
  o.max_depth = 3;
  EXPECT_NE(error_of("[[[[1]]]]", o).find("nesting deeper than 3"), std::string::npos);
}

}  // namespace
