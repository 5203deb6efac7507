// Converted MindSpore kernels (Kernel.<Op>) against a PyNative capture's APIs of the same model:
// the fuzzy stage pairs a forward kernel with the API of the same op only
// (src/compare/kernel_names.h).
#include <gtest/gtest.h>

#include <string>

#include "compare/kernel_names.h"
#include "numprobe/compare.h"

using namespace numprobe;

namespace {

std::string leaf(const std::string& shape) {
  return R"({"type": "mindspore.Tensor", "dtype": "Float32", "shape": )" + shape +
         R"(, "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0})";
}

std::string entry(const std::string& name, const std::string& shape) {
  const bool bwd = name.find(".backward") != std::string::npos;
  return "\"" + name + "\": {\"" + (bwd ? "input" : "input_args") + "\": [" + leaf(shape) +
         "], \"output\": [" + leaf(shape) + "]}";
}

DumpFile dump_of(const std::vector<std::string>& entries, const std::string& name) {
  std::string body;
  for (const std::string& e : entries) body += (body.empty() ? "" : ", ") + e;
  return parse_dump_json(R"({"task": "statistics", "level": "L2", "framework": "mindspore", )"
                         R"("dump_data_dir": null, "data": {)" +
                             body + "}}",
                         name);
}

TEST(KernelPairing, KeyIsTheOpNameWithoutCaseOrUnderscores) {
  EXPECT_EQ(kernel_pairing_key("Kernel", "LayerNorm"), "layernorm");
  EXPECT_EQ(kernel_pairing_key("Primitive", "layer_norm.LayerNorm"), "layernorm");
  EXPECT_EQ(kernel_pairing_key("Functional", "softmax"), "softmax");
  EXPECT_EQ(kernel_pairing_key("Kernel", "BatchMatMul"), "matmul");
  EXPECT_EQ(kernel_pairing_key("Tensor", "__truediv__"), "div");
  EXPECT_NE(kernel_pairing_key("Kernel", "Erf"), kernel_pairing_key("Functional", "gelu"));
  EXPECT_TRUE(is_kernel_prefix("Kernel"));
  EXPECT_FALSE(is_kernel_prefix("Primitive"));
}

TEST(KernelPairing, ForwardKernelsPairWithTheirApisOnly) {
  // Graph mode lowers gelu to Erf and friends: no API of that name, so it stays unpaired even
  // though its shapes agree with the next API's; backward kernels never pair with API backwards.
  DumpFile t = dump_of(
      {entry("Kernel.MatMul.0.forward", "[10, 8]"), entry("Kernel.Erf.0.forward", "[10, 8]"),
       entry("Kernel.LayerNorm.0.forward", "[10, 8]"),
       entry("Kernel.MatMul.0.backward", "[10, 8]")},
      "t");
  DumpFile g = dump_of({entry("Primitive.matmul.MatMul.0.forward", "[10, 8]"),
                        entry("Functional.gelu.0.forward", "[10, 8]"),
                        entry("Primitive.layer_norm.LayerNorm.0.forward", "[10, 8]"),
                        entry("Primitive.matmul.MatMul.0.backward", "[10, 8]")},
                       "g");
  EntryPairing p = pair_entries(t, g, flatten_rows(t), flatten_rows(g));
  EXPECT_EQ(p.golden_of[0], 0);
  EXPECT_EQ(p.how[0], MatchKind::kFuzzy);
  EXPECT_EQ(p.golden_of[1], -1);
  EXPECT_EQ(p.golden_of[2], 2);
  EXPECT_EQ(p.golden_of[3], -1);
}

TEST(KernelPairing, ApisAmongThemselvesStillPairBySignature) {
  // Without a kernel on either side nothing changes: a renamed op pairs by its signature.
  DumpFile t = dump_of({entry("Functional.gelu_new.0.forward", "[2, 4]")}, "t");
  DumpFile g = dump_of({entry("Functional.gelu.0.forward", "[2, 4]")}, "g");
  EntryPairing p = pair_entries(t, g, flatten_rows(t), flatten_rows(g));
  EXPECT_EQ(p.golden_of[0], 0);
}

}  // namespace
