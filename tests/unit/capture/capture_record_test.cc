// render_entry_record: the entry body text must be what msprobe's json.dump(indent=1) writes inside
// "data" (expected texts below were produced by Python's json.dumps for the same objects), and it
// must read back through numprobe's own dump.json reader.
#include "capture/capture_record.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "core/hash.h"
#include "format/dump_render.h"
#include "numprobe/dump.h"
#include "numprobe/error.h"

using numprobe::capture::EntryRecord;
using numprobe::capture::render_entry_record;
using numprobe::capture::TensorLeaf;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Statistics giving Max/Min/Mean/Norm = max, min, sum / count, sqrt(sumsq).
numprobe::TensorStats stats(double max, double min, uint64_t count, double sum, double sumsq) {
  numprobe::TensorStats s;
  s.max = max;
  s.min = min;
  s.count = count;
  s.sum = sum;
  s.sumsq = sumsq;
  return s;
}

TensorLeaf& add_tensor(EntryRecord& r, const char* dtype, std::vector<int64_t> shape) {
  TensorLeaf& t = r.tensor();
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

void typed_int(EntryRecord& r, const char* type, int64_t v) {
  r.typed(type);
  r.integer(v);
}

void typed_float(EntryRecord& r, double v) {
  r.typed("float");
  r.floating(v);
}

void typed_str(EntryRecord& r, const char* v) {
  r.typed("str");
  r.string(v);
}

// A full dump.json holding one entry whose body is `body` (as msprobe writes the file).
std::string wrap(const std::string& name, const std::string& body) {
  return "{\n \"task\": \"statistics\",\n \"level\": \"L1\",\n \"framework\": \"pytorch\",\n"
         " \"dump_data_dir\": null,\n \"data\": {\n  \"" +
         name + "\": " + body + "\n }\n}";
}

// Parses the wrapped body with numprobe's reader and checks that writing it back gives the same
// text (the reader keeps every field, so this is a full round trip).
numprobe::DumpFile parse_back(const EntryRecord& r, const std::string& body) {
  numprobe::DumpFile d = numprobe::parse_dump_json(wrap(r.name, body), "rendered.json");
  EXPECT_EQ(d.entries.size(), 1u);
  if (d.entries.size() == 1) {
    EXPECT_EQ(d.entry_name(0), r.name);
    EXPECT_EQ(numprobe::format::render_entry_body(d, 0), body);
  }
  return d;
}

// An API entry: tensor args, every scalar kind msprobe writes, nested lists and dicts.
void fill_api_entry(EntryRecord& r) {
  r.name = "Functional.conv2d.0.forward";
  r.begin_dict();
  r.key("input_args");
  r.begin_list();
  {
    TensorLeaf& t = add_tensor(r, "torch.float32", {2, 3});
    t.has_stats = true;
    t.stats = stats(3.5, -1.25, 4, 2.0, 16.0);
    t.requires_grad = true;
  }
  typed_int(r, "int", 3);
  typed_float(r, 0.1);
  r.typed("bool");
  r.boolean(true);
  typed_str(r, "mean");
  r.typed("torch.Size");
  r.begin_list();
  r.integer(2);
  r.integer(3);
  r.end();
  r.null();
  r.begin_list();
  typed_float(r, 1e-05);
  typed_float(r, 1e16);
  typed_int(r, "int", -7);
  r.end();
  r.end();  // input_args
  r.key("input_kwargs");
  r.begin_dict();
  r.key("dim");
  typed_int(r, "int", 1);
  r.key("cfg");
  r.begin_dict();
  r.key("eps");
  typed_float(r, 2.5);
  r.key("names");
  r.begin_list();
  typed_str(r, "a\"b caf\xc3\xa9");
  r.end();
  r.end();  // cfg
  r.key("empty_list");
  r.begin_list();
  r.end();
  r.key("empty_dict");
  r.begin_dict();
  r.end();
  r.key("none");
  r.null();
  r.end();  // input_kwargs
  r.key("output");
  r.begin_list();
  {
    TensorLeaf& t = add_tensor(r, "torch.bfloat16", {});
    t.has_stats = true;
    t.stats = stats(2.0, 2.0, 1, 2.0, 4.0);
  }
  r.end();
  r.end();
}

EntryRecord api_entry() {
  EntryRecord r;
  fill_api_entry(r);
  return r;
}

const char* const kApiEntryText = R"({
   "input_args": [
    {
     "type": "torch.Tensor",
     "dtype": "torch.float32",
     "shape": [
      2,
      3
     ],
     "Max": 3.5,
     "Min": -1.25,
     "Mean": 0.5,
     "Norm": 4.0,
     "requires_grad": true
    },
    {
     "type": "int",
     "value": 3
    },
    {
     "type": "float",
     "value": 0.1
    },
    {
     "type": "bool",
     "value": true
    },
    {
     "type": "str",
     "value": "mean"
    },
    {
     "type": "torch.Size",
     "value": [
      2,
      3
     ]
    },
    null,
    [
     {
      "type": "float",
      "value": 1e-05
     },
     {
      "type": "float",
      "value": 1e+16
     },
     {
      "type": "int",
      "value": -7
     }
    ]
   ],
   "input_kwargs": {
    "dim": {
     "type": "int",
     "value": 1
    },
    "cfg": {
     "eps": {
      "type": "float",
      "value": 2.5
     },
     "names": [
      {
       "type": "str",
       "value": "a\"b caf\u00e9"
      }
     ]
    },
    "empty_list": [],
    "empty_dict": {},
    "none": null
   },
   "output": [
    {
     "type": "torch.Tensor",
     "dtype": "torch.bfloat16",
     "shape": [],
     "Max": 2.0,
     "Min": 2.0,
     "Mean": 2.0,
     "Norm": 2.0,
     "requires_grad": false
    }
   ]
  })";

// Tensor leaves of every special form: md5, no statistics, bool, non-finite values with and
// without counts, data_name, md5 with data_name.
EntryRecord special_tensors_entry() {
  EntryRecord r;
  r.name = "Tensor.add.0.forward";
  r.begin_dict();
  r.key("input_args");
  r.begin_list();
  {
    TensorLeaf& t = add_tensor(r, "torch.float16", {4});
    t.has_stats = true;
    t.stats = stats(1.0, -1.0, 4, 0.0, 4.0);
    t.crc32 = 0x00abc123u;
  }
  {
    TensorLeaf& t = add_tensor(r, "torch.float32", {0});
    t.has_stats = false;
  }
  {
    TensorLeaf& t = add_tensor(r, "torch.bool", {3});
    t.bool_stats = true;
    t.has_stats = true;
    t.stats = stats(1.0, 0.0, 3, 2.0, 2.0);  // any() true, all() false
  }
  {
    TensorLeaf& t = add_tensor(r, "torch.bool", {0});
    t.bool_stats = true;
    t.has_stats = false;
  }
  {
    TensorLeaf& t = add_tensor(r, "torch.float32", {5});
    t.has_stats = true;
    t.stats = stats(kInf, -3.0, 5, kNaN, kInf);
    t.stats.nan_count = 1;
    t.stats.pos_inf_count = 2;
  }
  {
    TensorLeaf& t = add_tensor(r, "torch.float32", {2});
    t.has_stats = true;
    t.stats = stats(kNaN, -kInf, 1, -kInf, kInf);
    t.stats.nan_count = 1;
    t.stats.neg_inf_count = 1;
    t.write_counts = false;
  }
  {
    TensorLeaf& t = add_tensor(r, "torch.float32", {1, 2});
    t.has_stats = true;
    t.stats = stats(1.0, 1.0, 2, 2.0, 2.0);
    t.data_name = "Tensor.add.0.forward.input.6.npy";
  }
  {
    TensorLeaf& t = add_tensor(r, "torch.int64", {2});
    t.has_stats = true;
    t.stats = stats(7.0, -3.0, 2, 4.0, 58.0);
    t.crc32 = 0xdeadbeefu;
    t.data_name = "Tensor.add.0.forward.input.7.npy";
  }
  r.end();
  r.key("input_kwargs");
  r.begin_dict();
  r.end();
  r.key("output");
  r.begin_list();
  r.end();
  r.end();
  return r;
}

const char* const kSpecialTensorsText = R"({
   "input_args": [
    {
     "type": "torch.Tensor",
     "dtype": "torch.float16",
     "shape": [
      4
     ],
     "Max": 1.0,
     "Min": -1.0,
     "Mean": 0.0,
     "Norm": 2.0,
     "requires_grad": false,
     "md5": "00abc123"
    },
    {
     "type": "torch.Tensor",
     "dtype": "torch.float32",
     "shape": [
      0
     ],
     "Max": null,
     "Min": null,
     "Mean": null,
     "Norm": null,
     "requires_grad": false
    },
    {
     "type": "torch.Tensor",
     "dtype": "torch.bool",
     "shape": [
      3
     ],
     "Max": true,
     "Min": false,
     "Mean": null,
     "Norm": null,
     "requires_grad": false
    },
    {
     "type": "torch.Tensor",
     "dtype": "torch.bool",
     "shape": [
      0
     ],
     "Max": null,
     "Min": null,
     "Mean": null,
     "Norm": null,
     "requires_grad": false
    },
    {
     "type": "torch.Tensor",
     "dtype": "torch.float32",
     "shape": [
      5
     ],
     "Max": Infinity,
     "Min": -3.0,
     "Mean": NaN,
     "Norm": Infinity,
     "requires_grad": false,
     "nan_count": 1,
     "pos_inf_count": 2,
     "neg_inf_count": 0
    },
    {
     "type": "torch.Tensor",
     "dtype": "torch.float32",
     "shape": [
      2
     ],
     "Max": NaN,
     "Min": -Infinity,
     "Mean": -Infinity,
     "Norm": Infinity,
     "requires_grad": false
    },
    {
     "type": "torch.Tensor",
     "dtype": "torch.float32",
     "shape": [
      1,
      2
     ],
     "Max": 1.0,
     "Min": 1.0,
     "Mean": 1.0,
     "Norm": 1.4142135623730951,
     "requires_grad": false,
     "data_name": "Tensor.add.0.forward.input.6.npy"
    },
    {
     "type": "torch.Tensor",
     "dtype": "torch.int64",
     "shape": [
      2
     ],
     "Max": 7.0,
     "Min": -3.0,
     "Mean": 2.0,
     "Norm": 7.615773105863909,
     "requires_grad": false,
     "md5": "deadbeef",
     "data_name": "Tensor.add.0.forward.input.7.npy"
    }
   ],
   "input_kwargs": {},
   "output": []
  })";

// One tensor leaf alone in {"output": [leaf]}.
EntryRecord leaf_record(const TensorLeaf& leaf) {
  EntryRecord r;
  r.name = "Functional.x.0.forward";
  r.begin_dict();
  r.key("output");
  r.begin_list();
  r.tensor() = leaf;
  r.end();
  r.end();
  return r;
}

std::string render_leaf(const TensorLeaf& leaf) {
  return render_entry_record(leaf_record(leaf));
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(CaptureRecord, ApiEntryIsMsprobeText) {
  EntryRecord r = api_entry();
  EXPECT_EQ(render_entry_record(r), kApiEntryText);
}

TEST(CaptureRecord, SpecialTensorLeavesAreMsprobeText) {
  EntryRecord r = special_tensors_entry();
  EXPECT_EQ(render_entry_record(r), kSpecialTensorsText);
}

TEST(CaptureRecord, ApiEntryReadsBack) {
  EntryRecord r = api_entry();
  std::string body = render_entry_record(r);
  numprobe::DumpFile d = parse_back(r, body);
  ASSERT_EQ(d.tensors.size(), 2u);
  const numprobe::TensorLeaf& t = d.tensors[0];
  EXPECT_EQ(d.str(t.dtype_name), "torch.float32");
  EXPECT_EQ(t.dtype, numprobe::DType::kF32);
  ASSERT_EQ(t.ndim, 2u);
  EXPECT_EQ(d.shapes[t.shape_begin], 2);
  EXPECT_EQ(d.shapes[t.shape_begin + 1], 3);
  EXPECT_EQ(t.max.kind, numprobe::StatKind::kFloat);
  EXPECT_EQ(t.max.v, 3.5);
  EXPECT_EQ(t.min.v, -1.25);
  EXPECT_EQ(t.mean.v, 0.5);
  EXPECT_EQ(t.norm.v, 4.0);
  EXPECT_EQ(t.requires_grad, 1);
  EXPECT_EQ(d.tensors[1].ndim, 0u);
  EXPECT_EQ(d.tensors[1].dtype, numprobe::DType::kBF16);
  EXPECT_EQ(d.tensors[1].requires_grad, 0);
}

TEST(CaptureRecord, SpecialTensorLeavesReadBack) {
  EntryRecord r = special_tensors_entry();
  std::string body = render_entry_record(r);
  numprobe::DumpFile d = parse_back(r, body);
  ASSERT_EQ(d.tensors.size(), 8u);
  EXPECT_EQ(d.str(d.tensors[0].md5), "00abc123");
  EXPECT_EQ(d.tensors[1].max.kind, numprobe::StatKind::kNull);
  EXPECT_EQ(d.tensors[1].norm.kind, numprobe::StatKind::kNull);
  EXPECT_EQ(d.tensors[2].max.kind, numprobe::StatKind::kBool);
  EXPECT_EQ(d.tensors[2].max.v, 1);
  EXPECT_EQ(d.tensors[2].min.kind, numprobe::StatKind::kBool);
  EXPECT_EQ(d.tensors[2].min.v, 0);
  EXPECT_EQ(d.tensors[2].mean.kind, numprobe::StatKind::kNull);
  EXPECT_EQ(d.tensors[3].max.kind, numprobe::StatKind::kNull);
  EXPECT_TRUE(std::isinf(d.tensors[4].max.v) && d.tensors[4].max.v > 0);
  EXPECT_TRUE(std::isnan(d.tensors[4].mean.v));
  EXPECT_TRUE(std::isnan(d.tensors[5].max.v));
  EXPECT_TRUE(std::isinf(d.tensors[5].min.v) && d.tensors[5].min.v < 0);
  EXPECT_EQ(d.str(d.tensors[6].data_name), "Tensor.add.0.forward.input.6.npy");
  EXPECT_EQ(d.tensors[6].md5, numprobe::kNoString);
  EXPECT_EQ(d.str(d.tensors[7].md5), "deadbeef");
  EXPECT_EQ(d.str(d.tensors[7].data_name), "Tensor.add.0.forward.input.7.npy");
}

TEST(CaptureRecord, ClearedRecordIsReusedWithFreshLeaves) {
  // Records are recycled between entries: a cleared record must render exactly like a new one,
  // with no state of its earlier leaves (statistics, md5, file name, pending bytes) left over.
  EntryRecord r = api_entry();
  for (TensorLeaf& t : r.tensors()) {
    t.crc32 = 7;
    t.data_name = "old.npy";
    t.bool_stats = true;
    t.write_counts = false;
    t.stats.nan_count = 3;
    t.pending.owner = std::make_shared<int>(1);
  }
  std::weak_ptr<const void> bytes = r.tensors()[0].pending.owner;
  r.clear();
  EXPECT_TRUE(bytes.expired()) << "clear() must release pending tensor bytes";
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.tensors().size(), 0u);
  EXPECT_TRUE(r.name.empty());
  fill_api_entry(r);
  EXPECT_EQ(r.tensors().size(), 2u);
  EXPECT_EQ(render_entry_record(r), kApiEntryText);
}

TEST(CaptureRecord, TensorKeyOrder) {
  TensorLeaf t;
  t.dtype = "torch.float32";
  t.shape = {1};
  t.has_stats = true;
  t.stats = stats(1, 1, 1, 1, 1);
  t.crc32 = 1;
  t.data_name = "x.npy";
  t.stats.nan_count = 1;
  std::string s = render_leaf(t);
  const char* keys[] = {"\"type\"",         "\"dtype\"",     "\"shape\"",     "\"Max\"",
                        "\"Min\"",          "\"Mean\"",      "\"Norm\"",      "\"requires_grad\"",
                        "\"md5\"",          "\"data_name\"", "\"nan_count\"", "\"pos_inf_count\"",
                        "\"neg_inf_count\""};
  size_t prev = 0;
  for (const char* k : keys) {
    size_t at = s.find(k);
    ASSERT_NE(at, std::string::npos) << k << " in " << s;
    EXPECT_GT(at, prev) << k << " out of order in " << s;
    prev = at;
  }
}

TEST(CaptureRecord, LeafWithoutRequiresGradMember) {
  // msprobe's MindSpore leaves have no requires_grad member: a front that says so gets none, the
  // other members in their order, and the leaf reads back with requires_grad absent.
  TensorLeaf t;
  t.type = "mindspore.Tensor";
  t.dtype = "Float32";
  t.shape = {2};
  t.has_stats = true;
  t.stats = stats(1, 0, 2, 1, 1);
  t.requires_grad = true;
  t.write_requires_grad = false;
  std::string s = render_leaf(t);
  EXPECT_FALSE(contains(s, "requires_grad")) << s;
  EXPECT_TRUE(contains(s, "\"Norm\"")) << s;
  EntryRecord r = leaf_record(t);
  numprobe::DumpFile d = parse_back(r, render_entry_record(r));
  ASSERT_EQ(d.tensors.size(), 1u);
  EXPECT_EQ(d.tensors[0].requires_grad, -1);
  t.write_requires_grad = true;
  EXPECT_TRUE(contains(render_leaf(t), "\"requires_grad\": true"));
}

TEST(CaptureRecord, Md5IsEightLowercaseHexDigits) {
  TensorLeaf t;
  t.dtype = "torch.float32";
  t.has_stats = true;
  t.crc32 = 0;
  EXPECT_TRUE(contains(render_leaf(t), "\"md5\": \"00000000\""));
  t.crc32 = 0xFFFFFFFFu;
  EXPECT_TRUE(contains(render_leaf(t), "\"md5\": \"ffffffff\""));
  t.crc32 = 0x0000ABCDu;
  EXPECT_TRUE(contains(render_leaf(t), "\"md5\": \"0000abcd\""));
  t.crc32.reset();
  EXPECT_FALSE(contains(render_leaf(t), "md5"));
}

TEST(CaptureRecord, NonFiniteCountsOnlyWhenNonzero) {
  TensorLeaf t;
  t.dtype = "torch.float32";
  t.shape = {4};
  t.has_stats = true;
  t.stats = stats(1, 0, 4, 1, 1);
  // Zeros are counted but are not a non-finite count: nothing is added.
  t.stats.zero_count = 3;
  std::string healthy = render_leaf(t);
  EXPECT_FALSE(contains(healthy, "nan_count")) << healthy;
  EXPECT_FALSE(contains(healthy, "inf_count")) << healthy;
  EXPECT_FALSE(contains(healthy, "zero")) << healthy;
  // Any one nonzero count writes all three.
  t.stats.neg_inf_count = 1;
  t.stats.min = -kInf;
  std::string s = render_leaf(t);
  EXPECT_TRUE(contains(s,
                       "\"nan_count\": 0,\n     \"pos_inf_count\": 0,\n"
                       "     \"neg_inf_count\": 1\n    }"))
      << s;
  EXPECT_TRUE(contains(s, "\"Min\": -Infinity,")) << s;
  // Not without statistics, and not when the capture turned counts off.
  t.write_counts = false;
  EXPECT_FALSE(contains(render_leaf(t), "_count"));
  t.write_counts = true;
  t.has_stats = false;
  std::string no_stats = render_leaf(t);
  EXPECT_FALSE(contains(no_stats, "_count")) << no_stats;
  EXPECT_TRUE(contains(no_stats, "\"Min\": null,")) << no_stats;
}

TEST(CaptureRecord, BoolTensorStatistics) {
  TensorLeaf t;
  t.dtype = "torch.bool";
  t.shape = {2};
  t.bool_stats = true;
  t.has_stats = true;
  t.stats = stats(1, 1, 2, 2, 2);  // all true
  std::string s = render_leaf(t);
  EXPECT_TRUE(contains(s,
                       "\"Max\": true,\n     \"Min\": true,\n     \"Mean\": null,\n"
                       "     \"Norm\": null,"))
      << s;
  t.stats = stats(0, 0, 2, 0, 0);  // all false
  s = render_leaf(t);
  EXPECT_TRUE(contains(s, "\"Max\": false,\n     \"Min\": false,")) << s;
  // Counts never apply to bools (no NaN/Inf), even if set.
  EXPECT_FALSE(contains(s, "_count")) << s;
}

TEST(CaptureRecord, FloatsAreWrittenAsPythonRepr) {
  // Expected texts are Python's repr() of the same doubles.
  const std::pair<double, const char*> cases[] = {
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {1.0 / 3.0, "0.3333333333333333"},
      {123456789.0, "123456789.0"},
      {1e-4, "0.0001"},
      {1.5e-5, "1.5e-05"},
      {1e22, "1e+22"},
      {-2.5e-300, "-2.5e-300"},
      {9007199254740993.0, "9007199254740992.0"},
      {kNaN, "NaN"},
      {-kInf, "-Infinity"},
  };
  for (const auto& [v, text] : cases) {
    EntryRecord r;
    r.name = "x";
    r.begin_list();
    r.floating(v);
    r.end();
    EXPECT_EQ(render_entry_record(r), std::string("[\n   ") + text + "\n  ]") << text;
  }
}

TEST(CaptureRecord, TypedValueWrappingAContainer) {
  EntryRecord r;
  r.name = "Functional.pad.0.forward";
  r.begin_dict();
  r.key("input_kwargs");
  r.begin_dict();
  r.key("pad");
  r.typed("tuple");
  r.begin_list();
  r.begin_dict();
  r.end();
  r.null();
  r.end();
  r.key("mode");
  typed_str(r, "constant");
  r.end();
  r.end();
  EXPECT_EQ(render_entry_record(r), R"({
   "input_kwargs": {
    "pad": {
     "type": "tuple",
     "value": [
      {},
      null
     ]
    },
    "mode": {
     "type": "str",
     "value": "constant"
    }
   }
  })");
}

TEST(CaptureRecord, StringsUseEnsureAsciiEscapes) {
  EntryRecord r;
  r.name = "x";
  r.begin_list();
  typed_str(r, "tab\there\nq\"\\ \x01 \xe4\xb8\xad \xf0\x9f\x98\x80");
  r.end();
  // json.dumps("tab\there\nq\"\\ \x01 中 😀", ensure_ascii=True)
  EXPECT_TRUE(
      contains(render_entry_record(r), R"("value": "tab\there\nq\"\\ \u0001 \u4e2d \ud83d\ude00")"))
      << render_entry_record(r);
}

TEST(CaptureRecord, EmptyContainersAtTheTop) {
  EntryRecord r;
  r.name = "Module.a.A.parameters_grad";
  r.begin_dict();
  r.end();
  EXPECT_EQ(render_entry_record(r), "{}");
}

TEST(CaptureRecord, UnbalancedStreamsThrow) {
  {
    EntryRecord r;  // one end too many
    r.name = "Functional.a.0.forward";
    r.begin_dict();
    r.end();
    r.end();
    EXPECT_THROW(render_entry_record(r), numprobe::Error);
  }
  {
    EntryRecord r;  // end with nothing open
    r.name = "Functional.b.0.forward";
    r.end();
    EXPECT_THROW(render_entry_record(r), numprobe::Error);
  }
  {
    EntryRecord r;  // a dict left open
    r.name = "Functional.c.0.forward";
    r.begin_dict();
    r.key("input_args");
    r.begin_list();
    r.end();
    EXPECT_THROW(render_entry_record(r), numprobe::Error);
  }
  {
    EntryRecord r;  // a list left open
    r.name = "Functional.d.0.forward";
    r.begin_list();
    r.integer(1);
    EXPECT_THROW(render_entry_record(r), numprobe::Error);
  }
  {
    EntryRecord r;  // typed() with no value
    r.name = "Functional.e.0.forward";
    r.begin_list();
    r.typed("int");
    r.end();
    EXPECT_THROW(render_entry_record(r), numprobe::Error);
  }
  {
    EntryRecord r;  // typed() last
    r.name = "Functional.f.0.forward";
    r.typed("int");
    EXPECT_THROW(render_entry_record(r), numprobe::Error);
  }
  {
    EntryRecord r;  // the message names the entry
    r.name = "Functional.g.0.forward";
    r.begin_dict();
    try {
      render_entry_record(r);
      ADD_FAILURE() << "no error";
    } catch (const numprobe::Error& e) {
      EXPECT_TRUE(contains(e.what(), "Functional.g.0.forward")) << e.what();
    }
  }
}

// Regression (second reader's review): malformed streams used to crash in JsonWriter::key or
// render invalid JSON; every one must throw.
TEST(CaptureRecord, MalformedStreamsThrowInsteadOfCrashing) {
  auto throws = [](auto build) {
    EntryRecord r;
    r.name = "Functional.m.0.forward";
    build(r);
    EXPECT_THROW(render_entry_record(r), numprobe::Error);
  };
  throws([](EntryRecord& r) { r.key("k"); });  // key with nothing open
  throws([](EntryRecord& r) {                  // key inside a list
    r.begin_list();
    r.key("k");
    r.end();
  });
  throws([](EntryRecord& r) {  // value without a key inside a dict
    r.begin_dict();
    r.integer(1);
    r.end();
  });
  throws([](EntryRecord& r) {  // key without a value
    r.begin_dict();
    r.key("k");
    r.end();
  });
  throws([](EntryRecord& r) {  // two keys in a row
    r.begin_dict();
    r.key("a");
    r.key("b");
    r.null();
    r.end();
  });
  throws([](EntryRecord& r) {  // two top-level values
    r.begin_dict();
    r.end();
    r.null();
  });
}

namespace {

// The layout JsonWriter gives a leaf: the reference the direct leaf renderer must reproduce.
void reference_leaf(const TensorLeaf& t, numprobe::base::JsonWriter& w) {
  auto stat = [&](const char* k, double v) {
    w.key(k);
    if (t.has_stats)
      w.float_value(v);
    else
      w.null_value();
  };
  w.begin_object();
  w.key("type");
  w.string_value(t.type);
  w.key("dtype");
  w.string_value(t.dtype);
  w.key("shape");
  w.begin_array();
  for (int64_t d : t.shape) w.int_value(d);
  w.end_array();
  if (t.bool_stats) {
    w.key("Max");
    if (t.has_stats)
      w.bool_value(t.stats.max != 0);
    else
      w.null_value();
    w.key("Min");
    if (t.has_stats)
      w.bool_value(t.stats.min != 0);
    else
      w.null_value();
    w.key("Mean");
    w.null_value();
    w.key("Norm");
    w.null_value();
  } else {
    stat("Max", t.stats.max);
    stat("Min", t.stats.min);
    stat("Mean", t.stats.mean());
    stat("Norm", t.stats.norm());
  }
  w.key("requires_grad");
  w.bool_value(t.requires_grad);
  if (t.crc32) {
    w.key("md5");
    w.string_value(numprobe::crc32_hex(*t.crc32));
  }
  if (!t.data_name.empty()) {
    w.key("data_name");
    w.string_value(t.data_name);
  }
  if (t.has_stats && (t.stats.nan_count || t.stats.pos_inf_count || t.stats.neg_inf_count)) {
    w.key("nan_count");
    w.int_value(static_cast<int64_t>(t.stats.nan_count));
    w.key("pos_inf_count");
    w.int_value(static_cast<int64_t>(t.stats.pos_inf_count));
    w.key("neg_inf_count");
    w.int_value(static_cast<int64_t>(t.stats.neg_inf_count));
  }
  w.end_object();
}

// Leaves are written directly, not through JsonWriter: every kind of leaf, at every nesting
// depth, must come out byte for byte as JsonWriter writes it.
TEST(RenderEntryRecord, DirectLeafTextEqualsTheGenericWriters) {
  std::vector<TensorLeaf> leaves(8);
  leaves[0].dtype = "torch.float32";
  leaves[0].shape = {4, 16};
  leaves[0].has_stats = true;
  leaves[0].stats = stats(1.5, -2.25, 64, -0.5, 70.0);
  leaves[0].requires_grad = true;
  leaves[1].dtype = "torch.bool";  // bool statistics
  leaves[1].shape = {3};
  leaves[1].has_stats = true;
  leaves[1].bool_stats = true;
  leaves[1].stats = stats(1, 0, 3, 1, 1);
  leaves[2].dtype = "torch.float16";   // scalar, no statistics
  leaves[3].dtype = "torch.bfloat16";  // non-finite counts, md5, data_name
  leaves[3].shape = {2, 0, 5};
  leaves[3].has_stats = true;
  leaves[3].stats = stats(kInf, -kInf, 10, kNaN, kInf);
  leaves[3].stats.nan_count = 2;
  leaves[3].stats.pos_inf_count = 1;
  leaves[3].crc32 = 0x0badf00du;
  leaves[3].data_name = "Functional.linear.0.forward.input.0.npy";
  leaves[4].dtype = "torch.int64";
  leaves[4].shape = {1};
  leaves[4].has_stats = true;
  leaves[4].stats = stats(7, 7, 1, 7, 49);
  leaves[5].dtype = "torch.bool";  // bool without statistics
  leaves[5].bool_stats = true;
  leaves[6].type = "torch.nn.parameter.Parameter";
  leaves[6].dtype = "torch.float64";
  leaves[6].shape = {1, 1, 1, 1, 1, 1, 1, 1};
  leaves[6].has_stats = true;
  leaves[6].stats = stats(1e-300, -1e300, 3, 1e-5, 1e17);
  leaves[7].dtype = "torch.\"quoted\"\tdtype";  // escaping goes through append_py_string
  for (int depth = 0; depth < 6; ++depth) {
    for (const TensorLeaf& leaf : leaves) {
      EntryRecord r;
      r.name = "Functional.x.0.forward";
      r.begin_dict();
      r.key("input_args");
      for (int d = 0; d < depth; ++d) r.begin_list();
      TensorLeaf& t = r.tensor();
      t = leaf;
      for (int d = 0; d < depth; ++d) r.end();
      r.end();

      std::string expected;
      numprobe::base::JsonWriter w(expected, numprobe::base::JsonDialect::python(1), 2);
      w.begin_object();
      w.key("input_args");
      for (int d = 0; d < depth; ++d) w.begin_array();
      reference_leaf(leaf, w);
      for (int d = 0; d < depth; ++d) w.end_array();
      w.end_object();
      EXPECT_EQ(render_entry_record(r), expected) << "depth " << depth << " dtype " << leaf.dtype;
    }
  }
}

}  // namespace
