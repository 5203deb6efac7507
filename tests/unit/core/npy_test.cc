#include "core/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "numprobe/error.h"
#include "test_support.h"

namespace numprobe {
namespace {

using numprobe::testing::read_file;
using numprobe::testing::scratch_dir;
using numprobe::testing::write_file;

// A .npy image with the given header text (no padding added) and data bytes.
std::string make_npy(const std::string& header, const std::string& data = "", int major = 1,
                     int minor = 0) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += static_cast<char>(minor);
  const size_t len = header.size();
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) out += static_cast<char>((len >> (8 * i)) & 0xFF);
  return out + header + data;
}

NpyHeader parse(const std::string& bytes) {
  return parse_npy_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.npy");
}

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 37 + 11);
  return v;
}

constexpr DType kAllTypes[] = {DType::kF64,      DType::kF32,    DType::kF16, DType::kBF16,
                               DType::kF8E4M3FN, DType::kF8E5M2, DType::kI8,  DType::kI16,
                               DType::kI32,      DType::kI64,    DType::kU8,  DType::kBool};

TEST(Npy, DescrNames) {
  EXPECT_EQ(npy_descr(DType::kF32), "<f4");
  EXPECT_EQ(npy_descr(DType::kBool), "|b1");
  EXPECT_EQ(npy_descr(DType::kI8), "|i1");
  EXPECT_EQ(npy_descr(DType::kBF16), "bfloat16");
  EXPECT_EQ(npy_descr(DType::kF8E4M3FN), "float8_e4m3fn");
  EXPECT_EQ(npy_descr(DType::kF8E5M2), "float8_e5m2");
  EXPECT_EQ(npy_descr(DType::kBF16, NpyNarrowMode::kRawBits), "<u2");
  EXPECT_EQ(npy_descr(DType::kF8E4M3FN, NpyNarrowMode::kRawBits), "|u1");
  EXPECT_EQ(npy_descr(DType::kF32, NpyNarrowMode::kRawBits), "<f4");
  EXPECT_THROW(npy_descr(DType::kUnknown), Error);
}

// Headers produced by numpy 1.24 np.save, byte for byte.
TEST(Npy, WritesTheSameHeaderAsNumpy) {
  const std::string dir = scratch_dir("npy_numpy_header");
  struct Case {
    DType dtype;
    std::vector<int64_t> shape;
    bool fortran;
    std::string dict;
  };
  const Case cases[] = {
      {DType::kF32, {2, 3}, false, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
      {DType::kI64, {5}, false, "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }"},
      {DType::kF16, {}, false, "{'descr': '<f2', 'fortran_order': False, 'shape': (), }"},
      {DType::kF64, {2, 3}, true, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }"},
      {DType::kBool, {0}, false, "{'descr': '|b1', 'fortran_order': False, 'shape': (0,), }"},
  };
  const size_t header_len[] = {118, 118, 118, 118, 118};
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    size_t count = 1;
    for (int64_t d : c.shape) count *= static_cast<size_t>(d);
    const std::vector<uint8_t> data = pattern(count * dtype_size(c.dtype));
    const std::string path = dir + "/a" + std::to_string(i) + ".npy";
    write_npy(path, data.data(), c.dtype, c.shape, c.fortran);
    const std::string bytes = read_file(path);
    std::string want("\x93NUMPY\x01\x00", 8);
    want += static_cast<char>(header_len[i] & 0xFF);
    want += static_cast<char>(header_len[i] >> 8);
    want += c.dict;
    want.append(header_len[i] - c.dict.size() - 1, ' ');
    want += '\n';
    ASSERT_GE(bytes.size(), want.size());
    EXPECT_EQ(bytes.substr(0, want.size()), want) << c.dict;
    EXPECT_EQ(bytes.substr(want.size()), std::string(data.begin(), data.end()));
  }
}

TEST(Npy, RoundTripsEveryDtypeInBothModes) {
  const std::string dir = scratch_dir("npy_round_trip");
  const std::vector<std::vector<int64_t>> shapes = {{},     {0},       {1},      {7},
                                                    {2, 3}, {3, 0, 2}, {2, 3, 5}};
  for (DType t : kAllTypes) {
    for (NpyNarrowMode mode : {NpyNarrowMode::kExplicitDescr, NpyNarrowMode::kRawBits}) {
      for (bool fortran : {false, true}) {
        for (const auto& shape : shapes) {
          size_t count = 1;
          for (int64_t d : shape) count *= static_cast<size_t>(d);
          const std::vector<uint8_t> data = pattern(count * dtype_size(t));
          const std::string path = dir + "/x.npy";
          write_npy(path, data.data(), t, shape, fortran, mode);
          const NpyFile f = NpyFile::open(path);
          const NpyHeader& h = f.header();
          const std::string what = std::string(dtype_name(t)) + " " + npy_descr(t, mode);
          EXPECT_EQ(h.major_version, 1) << what;
          EXPECT_EQ(h.descr, npy_descr(t, mode)) << what;
          EXPECT_EQ(h.itemsize, dtype_size(t)) << what;
          if (mode == NpyNarrowMode::kRawBits && t == DType::kBF16) {
            EXPECT_EQ(h.dtype, DType::kUnknown) << what;  // '<u2': bits only
          } else if (mode == NpyNarrowMode::kRawBits && dtype_size(t) == 1 &&
                     dtype_is_floating(t)) {
            EXPECT_EQ(h.dtype, DType::kU8) << what;
          } else {
            EXPECT_EQ(h.dtype, t) << what;
          }
          EXPECT_EQ(h.fortran_order, fortran);
          EXPECT_EQ(h.shape, shape) << what;
          EXPECT_EQ(h.element_count, count);
          EXPECT_EQ(h.data_bytes, data.size());
          EXPECT_EQ(h.data_offset % 64, 0u);
          EXPECT_EQ(read_file(path)[h.data_offset - 1], '\n');
          ASSERT_NE(f.data(), nullptr);
          if (!data.empty()) {
            EXPECT_EQ(std::memcmp(f.data(), data.data(), data.size()), 0) << what;
          }
        }
      }
    }
  }
}

TEST(Npy, FallsBackToVersion2ForHugeHeaders) {
  const std::string dir = scratch_dir("npy_v2");
  const std::vector<int64_t> shape(25000, 1);  // "1, " per dimension: > 65535 header bytes
  const float value = 3.5f;
  write_npy(dir + "/big.npy", &value, DType::kF32, shape);
  const NpyFile f = NpyFile::open(dir + "/big.npy");
  EXPECT_EQ(f.header().major_version, 2);
  EXPECT_EQ(f.header().shape, shape);
  EXPECT_EQ(f.header().data_offset % 64, 0u);
  EXPECT_GT(f.header().data_offset, 65536u);
  float got;
  std::memcpy(&got, f.data(), 4);
  EXPECT_EQ(got, 3.5f);
}

TEST(Npy, WritesAtomically) {
  const std::string dir = scratch_dir("npy_atomic");
  const int32_t v[] = {1, 2, 3};
  write_npy(dir + "/a.npy", v, DType::kI32, {3});
  EXPECT_THROW(read_file(dir + "/a.npy.tmp"), std::runtime_error);  // renamed away
  // An unwritable destination leaves nothing behind and says why.
  try {
    write_npy(dir + "/missing/a.npy", v, DType::kI32, {3});
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing/a.npy"), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_npy(dir + "/b.npy", v, DType::kI32, {-3}), Error);
  EXPECT_THROW(write_npy(dir + "/b.npy", nullptr, DType::kI32, {3}), Error);
  EXPECT_THROW(write_npy(dir + "/b.npy", v, DType::kUnknown, {3}), Error);
  write_npy(dir + "/empty.npy", nullptr, DType::kI32, {0});
  EXPECT_EQ(NpyFile::open(dir + "/empty.npy").header().element_count, 0u);
}

TEST(Npy, ParsesHeaderVariants) {
  const std::string data(24, 'x');
  struct Case {
    std::string header;
    std::vector<int64_t> shape;
    bool fortran;
  };
  const Case cases[] = {
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", {2, 3}, false},
      {"{'shape': (2, 3), 'descr': '<f4', 'fortran_order': True}", {2, 3}, true},
      {"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (6,)}\n", {6}, false},
      {"{ 'descr' : '<f4' ,\n 'fortran_order' : False , 'shape' : ( 3 , 2 , ) , }   \n",
       {3, 2},
       false},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", {2, 3}, false},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", {2, 3}, false},
      {"{'descr': '=f4', 'fortran_order': False, 'shape': (6,), 'extra': None}", {6}, false},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }" + std::string(5, '\0'),
       {6},
       false},
  };
  for (const Case& c : cases) {
    const NpyHeader h = parse(make_npy(c.header, data));
    EXPECT_EQ(h.dtype, DType::kF32) << c.header;
    EXPECT_EQ(h.shape, c.shape) << c.header;
    EXPECT_EQ(h.fortran_order, c.fortran) << c.header;
    EXPECT_EQ(h.data_bytes, 24u) << c.header;
    EXPECT_EQ(h.data_offset, 10 + c.header.size()) << c.header;
  }
  for (int major : {2, 3}) {
    const std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }\n";
    const NpyHeader h = parse(make_npy(header, "abcd", major));
    EXPECT_EQ(h.major_version, major);
    EXPECT_EQ(h.dtype, DType::kU8);
    EXPECT_EQ(h.data_offset, 12 + header.size());
  }
  // Extra trailing bytes after the data are allowed.
  EXPECT_EQ(parse(make_npy("{'descr': '>u1', 'fortran_order': False, 'shape': (2,)}", "abc"))
                .element_count,
            2u);
  EXPECT_EQ(
      parse(make_npy("{'descr': 'bfloat16', 'fortran_order': False, 'shape': (3,)}", "123456"))
          .dtype,
      DType::kBF16);
  EXPECT_EQ(parse(make_npy("{'descr': '<u8', 'fortran_order': False, 'shape': (1,)}", "12345678"))
                .itemsize,
            8u);
}

struct Corrupt {
  const char* name;
  std::string bytes;
  std::string message;  // expected substring
};

std::vector<Corrupt> corrupt_cases() {
  const auto dict = [](const std::string& descr, const std::string& shape,
                       const std::string& fortran = "False") {
    return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  };
  const std::string ok_data(64, '\0');
  std::string v1 = make_npy(dict("'<f4'", "(2,)"), ok_data);
  std::string bad_version = v1;
  bad_version[6] = 4;
  std::string bad_minor = v1;
  bad_minor[7] = 1;
  std::string long_header = v1.substr(0, 10) + "{'descr'";
  std::string bad_magic = v1;
  bad_magic[5] = 'Z';
  return {
      {"empty", "", "too short"},
      {"truncated magic", "\x93NUM", "too short"},
      {"wrong magic", bad_magic, "bad magic"},
      {"text file", "hello world, this is not numpy", "bad magic"},
      {"bad major version", bad_version, "version 4.0"},
      {"bad minor version", bad_minor, "version 1.1"},
      {"no header length", v1.substr(0, 9), "no header length"},
      {"header beyond file", long_header, "extends past the end"},
      {"not a dict", make_npy("[1, 2, 3]"), "not a Python dict"},
      {"unclosed dict", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)"),
       "malformed .npy header"},
      {"garbage after dict", make_npy(dict("'<f4'", "(2,)") + " x", ok_data), "after the header"},
      {"unterminated string", make_npy("{'descr: '<f4'}"), "malformed"},
      {"non-string key", make_npy("{1: 2}"), "keys must be strings"},
      {"duplicate key", make_npy("{'descr': '<f4', 'descr': '<f8'}"), "duplicate key 'descr'"},
      {"missing shape", make_npy("{'descr': '<f4', 'fortran_order': False}"),
       "missing key 'shape'"},
      {"missing descr", make_npy("{'fortran_order': False, 'shape': (2,)}"), "missing key 'descr'"},
      {"missing fortran_order", make_npy("{'descr': '<f4', 'shape': (2,)}"),
       "missing key 'fortran_order'"},
      {"negative dim", make_npy(dict("'<f4'", "(2, -1)"), ok_data), "negative shape dimension -1"},
      {"nan dim", make_npy(dict("'<f4'", "(nan,)"), ok_data), "dimension 0 is a float (nan)"},
      {"float dim", make_npy(dict("'<f4'", "(2.0, 3)"), ok_data), "dimension 0 is a float (2.0)"},
      {"string dim", make_npy(dict("'<f4'", "('2',)"), ok_data), "dimension 0 is a string"},
      {"nested dim", make_npy(dict("'<f4'", "((2,),)"), ok_data), "dimension 0 is a tuple"},
      {"shape not a tuple", make_npy(dict("'<f4'", "5"), ok_data), "'shape' must be a tuple"},
      {"dim out of int64 range", make_npy(dict("'<f4'", "(99999999999999999999,)"), ok_data),
       "out of range"},
      {"element count overflow",
       make_npy(dict("'<f4'", "(4294967296, 4294967296, 4294967296)"), ok_data),
       "too many elements"},
      {"byte count overflow", make_npy(dict("'<f8'", "(2305843009213693952,)"), ok_data),
       "too large"},
      {"data shorter than shape", make_npy(dict("'<f4'", "(17,)"), ok_data),
       "needs 68 bytes but only 64"},
      {"no data at all", make_npy(dict("'<i8'", "(1,)")), "data truncated"},
      {"big-endian descr", make_npy(dict("'>f4'", "(2,)"), ok_data), "big-endian dtype '>f4'"},
      {"object descr", make_npy(dict("'|O'", "(2,)"), ok_data), "object arrays"},
      {"structured descr", make_npy(dict("[('a', '<f4')]", "(2,)"), ok_data), "structured"},
      {"complex descr", make_npy(dict("'<c8'", "(2,)"), ok_data), "unsupported dtype descr '<c8'"},
      {"descr not a string", make_npy(dict("4", "(2,)"), ok_data), "'descr' must be a string"},
      {"fortran not bool", make_npy(dict("'<f4'", "(2,)", "'yes'"), ok_data),
       "'fortran_order' must be True or False"},
      {"unknown name", make_npy(dict("'<f4'", "(x,)"), ok_data), "unexpected name 'x'"},
      {"header too large", make_npy("{" + std::string((1 << 20) + 10, ' ') + "}", "", 2), "limit"},
      {"deep nesting", make_npy("{'a': " + std::string(200, '(') + std::string(200, ')') + "}"),
       "nesting too deep"},
  };
}

TEST(Npy, CorruptInputsThrowInputErrorWithContext) {
  const std::string dir = scratch_dir("npy_corrupt");
  for (const Corrupt& c : corrupt_cases()) {
    try {
      parse(c.bytes);
      ADD_FAILURE() << c.name << ": no error";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": " << msg;
      EXPECT_NE(msg.find("t.npy"), std::string::npos) << c.name << ": " << msg;
      EXPECT_EQ(e.file(), "t.npy");
    }
    // The same through a file.
    const std::string path = dir + "/bad.npy";
    write_file(path, c.bytes);
    try {
      NpyFile::open(path);
      ADD_FAILURE() << c.name << ": no error from open";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path) << c.name;
    }
  }
}

TEST(Npy, ErrorOffsetsPointAtTheProblem) {
  try {
    parse("\x93NUMPZ\x01\x00");
  } catch (const InputError& e) {
    EXPECT_EQ(e.offset(), 0);
  }
  const std::string bytes = make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (5,)}", "");
  try {
    parse(bytes);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.offset(), static_cast<int64_t>(bytes.size()));  // where the data should start
  }
  const std::string neg = make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-5,)}");
  try {
    parse(neg);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.offset(), static_cast<int64_t>(neg.find("-5")));
  }
}

TEST(Npy, OpenReportsFileProblems) {
  const std::string dir = scratch_dir("npy_open");
  EXPECT_THROW(NpyFile::open(dir + "/nope.npy"), InputError);
  EXPECT_THROW(NpyFile::open(dir), InputError);
  write_file(dir + "/empty.npy", "");
  try {
    NpyFile::open(dir + "/empty.npy");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
}

TEST(Npy, NpyFileIsMovable) {
  const std::string dir = scratch_dir("npy_move");
  const double v[] = {1.0, 2.0};
  write_npy(dir + "/a.npy", v, DType::kF64, {2});
  NpyFile a = NpyFile::open(dir + "/a.npy");
  NpyFile b = std::move(a);
  EXPECT_EQ(b.header().element_count, 2u);
  NpyFile c = NpyFile::open(dir + "/a.npy");
  c = std::move(b);
  double got[2];
  std::memcpy(got, c.data(), sizeof(got));
  EXPECT_EQ(got[1], 2.0);
  EXPECT_EQ(c.path(), dir + "/a.npy");
}

}  // namespace
}  // namespace numprobe
