#include "base/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using numprobe::base::append_py_float;
using numprobe::base::append_py_string;
using numprobe::base::JsonDialect;
using numprobe::base::JsonWriter;

namespace {

// Expected strings were produced by CPython 3.11 json.dumps(value).
struct Case {
  double v;
  const char* text;
};
const Case kCases[] = {
    {0.0, "0.0"},
    {-0.0, "-0.0"},
    {1.0, "1.0"},
    {-1.5, "-1.5"},
    {0.1, "0.1"},
    {0.0001, "0.0001"},
    {9.999e-05, "9.999e-05"},
    {1e-05, "1e-05"},
    {1.5e-05, "1.5e-05"},
    {123456789012345.0, "123456789012345.0"},
    {1000000000000000.0, "1000000000000000.0"},
    {1e+16, "1e+16"},
    {1.2345678901234568e+16, "1.2345678901234568e+16"},
    {9007199254740992.0, "9007199254740992.0"},
    {1e+100, "1e+100"},
    {-2.5e-300, "-2.5e-300"},
    {5e-324, "5e-324"},
    {1.7976931348623157e+308, "1.7976931348623157e+308"},
    {0.4993983507156372, "0.4993983507156372"},
    {7.441285561071709e-05, "7.441285561071709e-05"},
    {954.3693237304688, "954.3693237304688"},
    {3e+22, "3e+22"},
    {12345.678, "12345.678"},
};

TEST(JsonWriter, FloatsMatchPythonRepr) {
  for (const Case& c : kCases) {
    std::string s;
    append_py_float(s, c.v);
    EXPECT_EQ(s, c.text) << c.v;
  }
  std::string s;
  append_py_float(s, std::numeric_limits<double>::quiet_NaN());
  s += ' ';
  append_py_float(s, INFINITY);
  s += ' ';
  append_py_float(s, -INFINITY);
  EXPECT_EQ(s, "NaN Infinity -Infinity");
}

TEST(JsonWriter, StringsUseEnsureAsciiEscapes) {
  std::string s;
  append_py_string(s, "a\"b\\c\n\t\x01\x7f \xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80");
  EXPECT_EQ(s, R"("a\"b\\c\n\t\u0001\u007f \u00e9 \u4e2d \ud83d\ude00")");
  s.clear();
  append_py_string(s, "bad \xff byte");
  EXPECT_EQ(s, R"("bad \u00ff byte")");
  // Regression (found by dump_json_fuzz): an overlong 'A' (C1 81) was escaped as \u0041, which
  // reads back as a plain 'A' and renders differently the second time.
  s.clear();
  append_py_string(s, "\xc1\x81 \xe0\x80\x80 \xed\xa0\x80 \xf4\x90\x80\x80");
  EXPECT_EQ(s, R"("\u00c1\u0081 \u00e0\u0080\u0080 \u00ed\u00a0\u0080 \u00f4\u0090\u0080\u0080")");
}

TEST(JsonWriter, IndentOneLayout) {
  std::string out;
  JsonWriter w(out, JsonDialect::python(1));
  w.begin_object();
  w.key("a");
  w.begin_array();
  w.int_value(1);
  w.begin_object();
  w.end_object();
  w.begin_array();
  w.end_array();
  w.end_array();
  w.key("b");
  w.null_value();
  w.end_object();
  EXPECT_EQ(out, "{\n \"a\": [\n  1,\n  {},\n  []\n ],\n \"b\": null\n}");
}

}  // namespace
