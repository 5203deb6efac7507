#include "convert/ms_graph_ir.h"

#include <gtest/gtest.h>

namespace numprobe::convert {
namespace {

// Abridged from MindSpore 2.10's CPU graph IR (rank_0/graphs/ms_output_trace_code_graph_0.ir).
constexpr const char* kIr = R"(subgraph @kernel_graph0() {
  %0(equiv_61_x) = PrimFunc_Reshape(%para37_args0, (I64(-1), I64(8))) primitive_attrs: {IsFeatureMapOutput: Bool(1)}
      : (<Tensor[Float32], (2, 5, 8)>, <Tuple[Int64*2], TupleShape(NoShape, NoShape), elements_use_flags={[const vector]{1, 1}}>) -> (<Tensor[Float32], (10, 8)>)
      : (<Float32xDefaultFormat[const vector]{2, 5, 8}>, <Int64xDefaultFormat[const vector]{}>) -> (<Float32xDefaultFormat[const vector]{10, 8}>)
      : (Tensor, Tuple) -> (Tensor)
      # Fullname with scope: (Default/Reshape-op0)
      # In file model.py:806, 16~50/            x = self.reshape(x, (-1, x_shape[-1]))/
  %1(equiv_3_CNode_74) = Load(%para18_embed.weight, UMonad[U]) cnode_attrs: {checkpoint: Bool(1)}
      : (<Ref[Tensor[Float32]], (16, 8), ref_key=embed.weight, is_parameter>, <UMonad, NoShape>) -> (<Tensor[Float32], (16, 8)>)
      # Fullname with scope: (Default/Load-op0)
  %2(equiv_2_x) = PrimFunc_MatMul(%0, %1, Bool(0), Bool(1)) {instance name: matmul}
      : (<Tensor[Float32], (10, 8)>, <Tensor[Float32], (16, 8)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (10, 16)>)
      # Fullname with scope: (Default/MatMul-op0)
  %8(equiv_33_CNode_77) = PrimFunc_LayerNorm(%5, %6, %7, I64(-1), I64(-1), F32(1e-05)) {instance name: layer_norm}
      : (<Tensor[Float32], (2, 5, 16)>, <Tensor[Float32], (16)>, <Tensor[Float32], (16)>, <Int64, NoShape>, <Int64, NoShape>, <Float32, NoShape>) -> (<Tuple[Tensor[Float32]*3], TupleShape((2, 5, 16), (2, 5, 1), (2, 5, 1))>)
      # Fullname with scope: (Default/LayerNorm-op0)
  %9(x) = PrimFunc_ReduceSum(%8) broken line without abstract
      # Fullname with scope: (Default/ReduceSum-op0)
}
)";

TEST(MsGraphIr, ShapesPerKernelInIrOrder) {
  IrGraph g = parse_ms_graph_ir(kIr);
  EXPECT_EQ(g.order, (std::vector<std::string>{"Default/Reshape-op0", "Default/Load-op0",
                                               "Default/MatMul-op0", "Default/LayerNorm-op0"}));
  const IrKernelShapes& r = g.shapes.at("Default/Reshape-op0");
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(*r.inputs[0], (std::vector<int64_t>{2, 5, 8}));
  EXPECT_FALSE(r.inputs[1]);  // a tuple of scalars, no tensor
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(*r.outputs[0], (std::vector<int64_t>{10, 8}));
  const IrKernelShapes& m = g.shapes.at("Default/MatMul-op0");
  ASSERT_EQ(m.inputs.size(), 4u);
  EXPECT_EQ(*m.inputs[0], (std::vector<int64_t>{10, 8}));
  EXPECT_FALSE(m.inputs[2]);
  const IrKernelShapes& ln = g.shapes.at("Default/LayerNorm-op0");
  ASSERT_EQ(ln.outputs.size(), 3u);
  EXPECT_EQ(*ln.outputs[1], (std::vector<int64_t>{2, 5, 1}));
  EXPECT_EQ(*ln.inputs[1], (std::vector<int64_t>{16}));
  EXPECT_EQ(*g.shapes.at("Default/Load-op0").inputs[0], (std::vector<int64_t>{16, 8}));
}

TEST(MsGraphIr, GarbageGivesNothing) {
  EXPECT_TRUE(parse_ms_graph_ir("").order.empty());
  EXPECT_TRUE(parse_ms_graph_ir("# Fullname with scope: (Default/X-op0)\n").order.empty());
  EXPECT_TRUE(parse_ms_graph_ir("%0 = X\n : (<Tensor[F], (1, -2)>) -> ((((\n"
                                "# Fullname with scope: (A)\n")
                  .shapes.empty());
  // A shape with a negative or non-numeric dim is unknown, not wrong.
  IrGraph g = parse_ms_graph_ir(
      "%0 = X\n : (<Tensor[F], (-1, 2)>) -> (<Tensor[F], (a)>)\n"
      "# Fullname with scope: (A)\n");
  ASSERT_EQ(g.shapes.count("A"), 1u);
  EXPECT_FALSE(g.shapes["A"].inputs[0]);
  EXPECT_FALSE(g.shapes["A"].outputs[0]);
}

}  // namespace
}  // namespace numprobe::convert
