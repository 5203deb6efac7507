// MindSpore against PyTorch: the built-in primitive mapping (nn.LayerNorm's LayerNorm primitive
// against F.layer_norm), normalisation parameter names under -cm, and gradients only one framework
// returns (src/compare/mapping_ms_pt_primitives.h, cross_framework.h).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "compare/mapping_ms_pt_primitives.h"
#include "numprobe/compare.h"
#include "numprobe/compare/mapping.h"

using namespace numprobe;

namespace {

std::string t(const char* fw, double max, const char* shape = "[4]") {
  const bool ms = std::string(fw) == "mindspore";
  return std::string(R"({"type": ")") + fw + R"(.Tensor", "dtype": ")" +
         (ms ? "Float32" : "torch.float32") + R"(", "shape": )" + shape + R"(, "Max": )" +
         std::to_string(max) + R"(, "Min": 0, "Mean": 0.5, "Norm": 1})";
}

RankDump dump(const char* fw, const std::string& data) {
  RankDump d;
  d.dump = parse_dump_json(std::string(R"({"task": "statistics", "level": "mix", "framework": ")") +
                               fw + R"(", "dump_data_dir": null, "data": {)" + data + "}}",
                           std::string(fw) + ".json");
  return d;
}

struct Result {
  std::map<std::string, std::string> golden_of, reason_of;
  PairResult p;
};

Result run(RankDump target, RankDump golden) {
  CompareMappings m;
  m.api = m.cell = true;
  Result r;
  r.p.target = std::move(target);
  r.p.golden = std::move(golden);
  compare_pair(r.p, &m);
  for (const RowResult& row : r.p.rows) {
    if (row.pair.target < 0) continue;
    const std::string name(r.p.target_rows[row.pair.target].name);
    r.golden_of[name] =
        row.pair.golden >= 0 ? std::string(r.p.golden_rows[row.pair.golden].name) : "";
    r.reason_of[name] = std::string(row.reason);
  }
  return r;
}

const std::string kMsLayerNorm =
    R"("Primitive.layer_norm.LayerNorm.0.forward": {"input_args": [)" + t("mindspore", 3) + ", " +
    t("mindspore", 1.5) + ", " + t("mindspore", 0.5) + R"(], "input_kwargs": {}, "output": [)" +
    t("mindspore", 2) + ", " + t("mindspore", 0.1) + ", " + t("mindspore", 0.2) + "]}";
const std::string kPtLayerNorm =
    R"("Functional.layer_norm.0.forward": {"input_args": [)" + t("torch", 3) +
    R"(, [{"type": "int", "value": 4}], )" + t("torch", 1.5) + ", " + t("torch", 0.5) +
    R"(, {"type": "float", "value": 1e-05}], "input_kwargs": {}, "output": [)" + t("torch", 2) +
    "]}";

}  // namespace

TEST(CrossFramework, PrimitiveTableIsKeyedByClass) {
  ASSERT_NE(builtin_primitive_mapping("Primitive.layer_norm.LayerNorm"), nullptr);
  EXPECT_EQ(builtin_primitive_mapping("Primitive.norm.LayerNorm")->pt_api, "Functional.layer_norm");
  EXPECT_EQ(builtin_primitive_mapping("Primitive.LayerNorm"), nullptr);
  EXPECT_EQ(builtin_primitive_mapping("Functional.layer_norm"), nullptr);
  EXPECT_EQ(builtin_primitive_mapping("Primitive.matmul.MatMul"), nullptr);
}

TEST(CrossFramework, LayerNormPrimitivePairsWithFunctionalLayerNormByArgument) {
  Result r = run(dump("mindspore", kMsLayerNorm), dump("pytorch", kPtLayerNorm));
  const std::string ms = "Primitive.layer_norm.LayerNorm.0.forward.";
  const std::string pt = "Functional.layer_norm.0.forward.";
  EXPECT_EQ(r.golden_of[ms + "input.0"], pt + "input.0");
  EXPECT_EQ(r.golden_of[ms + "input.1"], pt + "input.2");  // gamma: weight
  EXPECT_EQ(r.golden_of[ms + "input.2"], pt + "input.3");  // beta: bias
  EXPECT_EQ(r.golden_of[ms + "output.0"], pt + "output.0");
  EXPECT_EQ(r.golden_of[ms + "output.1"], "");  // mean: PyTorch returns none
  EXPECT_EQ(r.p.error, 0u);
  EXPECT_FALSE(r.p.first_divergence.has_value());
}

TEST(CrossFramework, NormalisationParameterNamesPairUnderCellMapping) {
  const std::string ms = R"("Cell.ln.LayerNorm.parameters_grad.0": {"gamma": )" +
                         t("mindspore", 1) + R"(, "beta": )" + t("mindspore", 2) + "}";
  const std::string pt = R"("Module.ln.LayerNorm.parameters_grad.0": {"weight": )" + t("torch", 1) +
                         R"(, "bias": )" + t("torch", 2) + "}";
  Result r = run(dump("mindspore", ms), dump("pytorch", pt));
  EXPECT_EQ(r.golden_of["Cell.ln.LayerNorm.parameters_grad.0.gamma"],
            "Module.ln.LayerNorm.parameters_grad.0.weight");
  EXPECT_EQ(r.golden_of["Cell.ln.LayerNorm.parameters_grad.0.beta"],
            "Module.ln.LayerNorm.parameters_grad.0.bias");
}

TEST(CrossFramework, AGradientOnlyOneFrameworkReturnsIsExcused) {
  // mse_loss's backward: MindSpore returns the target's gradient too, PyTorch None.
  const std::string ms = R"("Functional.mse_loss.0.backward": {"input": [)" +
                         t("mindspore", 1, "[]") + R"(], "output": [)" + t("mindspore", 0.5) +
                         ", " + t("mindspore", 0.5) + "]}";
  const std::string pt = R"("Functional.mse_loss.0.backward": {"input": [)" + t("torch", 1, "[]") +
                         R"(], "output": [)" + t("torch", 0.5) + ", null]}";
  Result r = run(dump("mindspore", ms), dump("pytorch", pt));
  EXPECT_EQ(r.reason_of["Functional.mse_loss.0.backward.output.1"], "gradient_one_framework");
  EXPECT_EQ(r.p.error, 0u);
  EXPECT_FALSE(r.p.first_divergence.has_value());
  // Within one framework the same difference stays an error (a gradient that went missing).
  const std::string ms2 = R"("Functional.mse_loss.0.backward": {"input": [)" +
                          t("mindspore", 1, "[]") + R"(], "output": [)" + t("mindspore", 0.5) +
                          ", null]}";
  Result same = run(dump("mindspore", ms), dump("mindspore", ms2));
  EXPECT_EQ(same.reason_of["Functional.mse_loss.0.backward.output.1"], "kind_mismatch");
  EXPECT_EQ(same.p.error, 1u);
}
