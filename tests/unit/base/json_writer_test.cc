#include "base/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

using numprobe::base::append_json_float;
using numprobe::base::append_json_string;
using numprobe::base::JsonWriter;

namespace {

std::string str(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

std::string flt(double v) {
  std::string out;
  append_json_float(out, v);
  return out;
}

TEST(JsonWriter, Strings) {
  EXPECT_EQ(str("a\"b\\c/"), "\"a\\\"b\\\\c/\"");
  EXPECT_EQ(str("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
  EXPECT_EQ(str(std::string("\x00\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\x7f\"");
  EXPECT_EQ(str("\xe4\xb8\xad\xf0\x9f\x98\x80"), "\"\xe4\xb8\xad\xf0\x9f\x98\x80\"");  // kept
}

TEST(JsonWriter, IllFormedUtf8BecomesOneReplacementPerMaximalSubpart) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(str("a\xff"), "\"a" + r + "\"");
  EXPECT_EQ(str("\xe4\xb8"), "\"" + r + "\"");              // truncated sequence: one
  EXPECT_EQ(str("\xe4\xb8x"), "\"" + r + "x\"");            // the breaking byte is read again
  EXPECT_EQ(str("\xe0\x80"), "\"" + r + r + "\"");          // overlong: E0 then 80, each alone
  EXPECT_EQ(str("\xed\xa0\x80"), "\"" + r + r + r + "\"");  // a surrogate
  EXPECT_EQ(str("\xf4\x90\x80\x80"), "\"" + r + r + r + r + "\"");  // above U+10FFFF
  EXPECT_EQ(str("\xc0\xaf"), "\"" + r + r + "\"");
}

TEST(JsonWriter, Floats) {
  EXPECT_EQ(flt(0.0), "0.0");
  EXPECT_EQ(flt(-0.0), "-0.0");
  EXPECT_EQ(flt(1.0), "1.0");
  EXPECT_EQ(flt(0.1), "0.1");
  EXPECT_EQ(flt(1e-4), "0.0001");
  EXPECT_EQ(flt(1e-8), "1e-08");
  EXPECT_EQ(flt(123456789012345.0), "123456789012345.0");
  // Unlike Python's repr (decimals below 1e16), exponent form from 1e15 on.
  EXPECT_EQ(flt(1e15), "1e+15");
  EXPECT_EQ(flt(1234567890123456.0), "1.234567890123456e+15");
  EXPECT_EQ(flt(1e16), "1e+16");
  EXPECT_EQ(flt(1e300), "1e+300");
  EXPECT_EQ(flt(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(flt(-std::numeric_limits<double>::infinity()), "null");
}

TEST(JsonWriter, Containers) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("a");
  w.int_array({1, -2});
  w.key("b");
  w.begin_object();
  w.end_object();
  w.key("c");
  w.begin_array();
  w.null_value();
  w.bool_value(false);
  w.float_value(2.5);
  w.string_array({"x", "y"});
  w.end_array();
  w.end_object();
  EXPECT_EQ(out, R"({"a":[1,-2],"b":{},"c":[null,false,2.5,["x","y"]]})");
}

// The viewer's dialect: compact layout, but Python's escaping and repr() digits, non-finite as
// null.
TEST(JsonWriter, CompactAsciiDialect) {
  std::string out;
  JsonWriter w(out, numprobe::base::JsonDialect::compact_ascii());
  w.begin_object();
  w.key("\xc3\xa9");
  w.begin_array();
  w.float_value(1e15);
  w.float_value(std::nan(""));
  w.string_value("\xff");
  w.end_array();
  w.end_object();
  EXPECT_EQ(out, R"({"\u00e9":[1000000000000000.0,null,"\u00ff"]})");
}

// One writer, three dialects: the same calls give each file's layout.
TEST(JsonWriter, PythonIndentNestsFragmentsAtTheirDepth) {
  std::string out;
  JsonWriter w(out, numprobe::base::JsonDialect::python(2), 1);
  w.begin_object();
  w.key("k");
  w.float_value(INFINITY);
  w.end_object();
  EXPECT_EQ(out, "{\n    \"k\": Infinity\n  }");
}

}  // namespace
