#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "format/dump_render.h"
#include "numprobe/dump.h"
#include "numprobe/error.h"
#include "numprobe/stack_construct.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace numprobe;
using numprobe::testing::msprobe_fixture;
using numprobe::testing::read_file;

namespace {

const char* kQuick = "quick_start_resnet50_gpu_mix_statistics/step0/proc2016/";

std::string load_error(const std::string& text) {
  try {
    parse_dump_json(text, "bad/dump.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(DumpReader, ReadsResNetQuickStart) {
  DumpFile d = read_dump_json(msprobe_fixture(std::string(kQuick) + "dump.json"));
  EXPECT_EQ(d.task(), "statistics");
  EXPECT_EQ(d.level(), "mix");
  EXPECT_EQ(d.framework(), Framework::kPyTorch);
  EXPECT_FALSE(d.dump_data_dir().has_value());
  EXPECT_EQ(d.entries.size(), 760u);
  EXPECT_EQ(d.entry_name(0), "Functional.conv2d.0.forward");
  // First tensor: the input batch [32, 3, 224, 224].
  uint32_t args = d.member(d.entries[0].node, "input_args");
  ASSERT_NE(args, kNoNode);
  const Node& first = d.nodes[args + 1];
  ASSERT_EQ(first.kind, NodeKind::kTensor);
  const TensorLeaf& t = d.tensors[first.tensor];
  EXPECT_EQ(t.dtype, DType::kF32);
  EXPECT_EQ(t.ndim, 4u);
  EXPECT_EQ(t.element_count(d.shapes), 32 * 3 * 224 * 224);
  EXPECT_EQ(t.max.v, 1.0);
  EXPECT_EQ(t.min.v, 0.0);
  EXPECT_DOUBLE_EQ(t.mean.v, 0.4993983507156372);
  EXPECT_DOUBLE_EQ(t.norm.v, 1267.74462890625);
  EXPECT_EQ(t.requires_grad, 0);
  // The model is much smaller than the text.
  EXPECT_LT(d.memory_bytes(), fs::file_size(msprobe_fixture(std::string(kQuick) + "dump.json")));
}

// Our writer reproduces msprobe's own file byte for byte: same key order, number formatting,
// indentation and escaping.
TEST(DumpReader, RoundTripIsByteExact) {
  for (const char* step : {"step0", "step1"}) {
    std::string dir = msprobe_fixture(std::string("quick_start_resnet50_gpu_mix_statistics/") +
                                      step + "/proc2016/");
    std::string text = read_file(dir + "dump.json");
    DumpFile d = parse_dump_json(text, "dump.json");
    EXPECT_EQ(format::render_dump_json(d), text) << step;
    std::string stack = read_file(dir + "stack.json");
    EXPECT_EQ(render_stack_json(parse_stack_json(stack, "stack.json")), stack) << step;
    std::string construct = read_file(dir + "construct.json");
    EXPECT_EQ(render_construct_json(parse_construct_json(construct, "construct.json")), construct)
        << step;
  }
}

TEST(DumpReader, EveryFixtureDumpLoads) {
  size_t loaded = 0, rejected = 0;
  for (const auto& e : fs::recursive_directory_iterator(msprobe_fixture(""))) {
    if (!e.is_regular_file()) continue;
    std::string path = e.path().string();
    std::string name = e.path().filename().string();
    bool malformed = path.find("malformed_dump_json") != std::string::npos;
    if (name == "stack.json") {
      EXPECT_NO_THROW(read_stack_json(path)) << path;
      continue;
    }
    if (name == "construct.json") {
      EXPECT_NO_THROW(read_construct_json(path)) << path;
      continue;
    }
    bool dumpish = name == "dump.json" || name == "forward.json" ||
                   name.rfind("api_info", 0) == 0 || malformed;
    if (!dumpish || e.path().extension() != ".json") continue;
    if (malformed) {
      try {
        read_dump_json(path);
        ADD_FAILURE() << "malformed fixture loaded: " << path;
      } catch (const InputError& err) {
        std::string msg = err.what();
        EXPECT_NE(msg.find(name), std::string::npos) << msg;
        ++rejected;
      }
      continue;
    }
    DumpFile d = read_dump_json(path);
    EXPECT_GT(d.entries.size(), 0u) << path;
    ++loaded;
  }
  EXPECT_GE(loaded, 14u);
  EXPECT_EQ(rejected, 6u);
}

TEST(DumpReader, EdgeCaseFixtureValues) {
  DumpFile d = read_dump_json(msprobe_fixture("synthetic_edge_cases/statistics/npu/dump.json"));
  EXPECT_EQ(d.framework(), Framework::kMindSpore);
  size_t nonfinite = 0;
  for (const TensorLeaf& t : d.tensors) {
    if (t.max.kind == StatKind::kFloat && !std::isfinite(t.max.v)) ++nonfinite;
  }
  EXPECT_GT(nonfinite, 0u);
  DumpFile md5 = read_dump_json(msprobe_fixture("synthetic_edge_cases/md5/npu/dump.json"));
  size_t with_md5 = 0;
  for (const TensorLeaf& t : md5.tensors) with_md5 += t.md5 != kNoString;
  EXPECT_EQ(with_md5, md5.tensors.size());
}

TEST(DumpReader, StackFormatsBothLoad) {
  StackTable dedup = read_stack_json(msprobe_fixture(std::string(kQuick) + "stack.json"));
  EXPECT_TRUE(dedup.deduplicated);
  ASSERT_NE(dedup.frames_of("Functional.conv2d.0.forward"), nullptr);
  EXPECT_GT(dedup.frames_of("Functional.conv2d.0.forward")->size(), 3u);
  StackTable legacy =
      read_stack_json(msprobe_fixture("cross_framework_ms_vs_pt/pytorch_data/stack.json"));
  EXPECT_FALSE(legacy.deduplicated);
  ASSERT_NE(legacy.frames_of("Tensor.__add__.0.forward"), nullptr);
}

TEST(DumpReader, ConstructParents) {
  ConstructTable c = read_construct_json(msprobe_fixture(std::string(kQuick) + "construct.json"));
  EXPECT_EQ(c.parent_of("Functional.conv2d.0.forward").value_or("?"),
            "Module.conv1.Conv2d.forward.0");
  EXPECT_EQ(c.parent_of("Module.conv1.Conv2d.forward.0").value_or("?"), "");
  EXPECT_FALSE(c.parent_of("nope").has_value());
  ConstructTable megatron =
      parse_construct_json(R"({"a": ["Module.x", 3], "b": [null, 0], "c": [], "d": ["y"]})", "c");
  ASSERT_EQ(megatron.edges.size(), 4u);
  EXPECT_EQ(megatron.edges[0].micro_step, 3);
  // Regression (found by stack_construct_fuzz): an empty list used to make the reader step past
  // its closing bracket into the enclosing object.
  EXPECT_EQ(render_construct_json(megatron),
            "{\n \"a\": [\n  \"Module.x\",\n  3\n ],\n \"b\": [\n  null,\n  0\n ],\n"
            " \"c\": [],\n \"d\": [\n  \"y\"\n ]\n}");
  EXPECT_THROW(parse_construct_json(R"({"sk": [] ], "x": 1})", "c"), InputError);
}

TEST(DumpReader, AllLeafKindsKeepTheirShape) {
  const std::string text = R"({
 "task": "statistics",
 "level": "L1",
 "framework": "pytorch",
 "dump_data_dir": null,
 "data": {
  "Torch.x.0.forward": {
   "input_args": [
    {"type": "slice", "value": [1, null, 2]},
    "...",
    {"type": "torch.Size", "value": [2, 3]},
    {"type": "torch.dtype", "value": "torch.float16"},
    {"type": "torch.device", "value": "cuda:0"},
    {"type": "torch.ProcessGroup", "group_ranks": [0, 1], "group_id": "123"},
    null,
    [[{"type": "bool", "value": true}]],
    {"type": "torch.Tensor", "dtype": "torch.bool", "shape": [], "Max": true, "Min": false, "Mean": null, "Norm": null, "requires_grad": false},
    {"type": "torch.Tensor", "dtype": "torch.bfloat16", "shape": [2], "Max": NaN, "Min": -Infinity, "Mean": 1, "Norm": 2.5, "requires_grad": true, "device_mesh": [0, 1], "placements": [{"Shard": {"dim": 0}}], "md5": "0a0b0c0d"}
   ],
   "input_kwargs": {"alpha": {"type": "float", "value": 0.5}, "s": {"type": "str", "value": "x\u00e9"}},
   "output": []
  }
 }
})";
  DumpFile d = parse_dump_json(text, "t");
  ASSERT_EQ(d.tensors.size(), 2u);
  EXPECT_EQ(d.tensors[0].dtype, DType::kBool);
  EXPECT_EQ(d.tensors[0].max.kind, StatKind::kBool);
  EXPECT_EQ(d.tensors[0].ndim, 0u);
  const TensorLeaf& bf = d.tensors[1];
  EXPECT_EQ(bf.dtype, DType::kBF16);
  EXPECT_TRUE(std::isnan(bf.max.v));
  EXPECT_EQ(bf.min.v, -INFINITY);
  EXPECT_EQ(bf.mean.kind, StatKind::kInt);
  EXPECT_EQ(d.str(bf.md5), "0a0b0c0d");
  EXPECT_NE(bf.extras, kNoNode);
  // Writing back keeps every field, extras in place (checked by reparsing and re-rendering).
  std::string once = format::render_dump_json(d);
  DumpFile again = parse_dump_json(once, "again");
  EXPECT_EQ(format::render_dump_json(again), once);
  EXPECT_NE(once.find("\"placements\""), std::string::npos);
  EXPECT_LT(once.find("\"placements\""), once.find("\"md5\""));
}

TEST(DumpReader, CorruptInputsGiveClearErrors) {
  const std::string good = R"({"task": "tensor", "data": {"A.a.0.forward": {"output": [
    {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": 1.0}]}}})";
  EXPECT_EQ(load_error(good), "");
  // Truncated at every position: an error, never a crash, always naming the file.
  for (size_t cut = 0; cut < good.size(); ++cut) {
    std::string msg = load_error(good.substr(0, cut));
    EXPECT_NE(msg.find("bad/dump.json"), std::string::npos) << cut;
  }
  EXPECT_NE(load_error("[]").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(load_error(R"({"task": "x"})").find("no \"data\""), std::string::npos);
  EXPECT_NE(load_error(R"({"data": []})").find("\"data\" must be an object"), std::string::npos);
  EXPECT_NE(load_error(R"({"data": {"Module": 1}})").find("entry \"Module\" is not an object"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"data": {}, "data": {}})").find("duplicate"), std::string::npos);
  const char* bad_shapes[] = {"[NaN]", "[-1]", "[1.5]", "[\"2\"]", "3", "[[2]]"};
  for (const char* s : bad_shapes) {
    std::string t =
        std::string(
            R"({"data": {"A.a.0.forward": {"output": [{"dtype": "torch.float32", "shape": )") +
        s + "}]}}}";
    EXPECT_NE(load_error(t).find("shape"), std::string::npos) << s;
  }
  std::string deep = R"({"data": {"A.a.0.forward": {"output": )" + std::string(2000, '[');
  EXPECT_NE(load_error(deep).find("nesting"), std::string::npos);
  // A huge count in a shape is representable (no allocation follows from it).
  DumpFile big = parse_dump_json(
      R"({"data": {"A.a.0.forward": {"output": [{"dtype": "torch.float32", "shape": [9223372036854775807, 2]}]}}})",
      "t");
  EXPECT_EQ(big.tensors[0].element_count(big.shapes), -1);
}

}  // namespace

namespace {

// Regression (review): integer statistics were kept as double; INT64_MAX came back as INT64_MIN.
TEST(DumpReader, IntegerStatisticsStayExact) {
  const std::string text =
      "{\n \"data\": {\n  \"Torch.x.0.forward\": {\n   \"output\": [\n    {\n"
      "     \"type\": \"torch.Tensor\",\n     \"dtype\": \"torch.int64\",\n"
      "     \"shape\": [],\n     \"Max\": 9223372036854775807,\n"
      "     \"Min\": -9223372036854775807,\n     \"Mean\": 9007199254740993\n    }\n"
      "   ]\n  }\n }\n}";
  DumpFile d = parse_dump_json(text, "t");
  EXPECT_EQ(d.tensors[0].max.i, INT64_MAX);
  EXPECT_EQ(format::render_dump_json(d), text);
}

}  // namespace
