#include "convert/ms_kernel_name.h"

#include <gtest/gtest.h>

namespace numprobe::convert {
namespace {

TEST(MsKernelName, ParsesAKernelFile) {
  auto f = parse_ms_kernel_file(
      "BiasAdd.Default_BiasAdd-op0.0.1.1795744007867169.input.1.DefaultFormat.Float32.npy");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->op_type, "BiasAdd");
  EXPECT_EQ(f->scope, "Default_BiasAdd-op0");
  EXPECT_EQ(f->task, 0);
  EXPECT_EQ(f->stream, 1);
  EXPECT_EQ(f->timestamp, 1795744007867169u);
  EXPECT_FALSE(f->output);
  EXPECT_EQ(f->index, 1);
  EXPECT_EQ(f->format, "DefaultFormat");
  EXPECT_EQ(f->dtype, "Float32");
  EXPECT_FALSE(is_gradient_scope(f->scope));
}

TEST(MsKernelName, GradientScopesAndParameters) {
  auto g = parse_ms_kernel_file(
      "GeLUGrad.Gradients_Default_Grad_GeLU_GeLUGrad-op0.0.0.17."
      "output.0.DefaultFormat.Float32.npy");
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->output);
  EXPECT_TRUE(is_gradient_scope(g->scope));
  auto p = parse_ms_kernel_file("Parameter.ln_beta.0.0.5.output.0.DefaultFormat.Float32.npy");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->op_type, "Parameter");
  EXPECT_EQ(p->scope, "ln_beta");
}

TEST(MsKernelName, ScopeMayHoldDots) {
  auto f = parse_ms_kernel_file("Add.Default_net.block_Add-op1.0.0.9.input.0.NCHW.Float16.npy");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->op_type, "Add");
  EXPECT_EQ(f->scope, "Default_net.block_Add-op1");
  EXPECT_EQ(f->format, "NCHW");
  EXPECT_EQ(f->dtype, "Float16");
}

TEST(MsKernelName, RejectsOtherNames) {
  for (const char* bad : {
           "",
           ".npy",
           "BiasAdd.Default_BiasAdd-op0.0.0.17.inout.1.DefaultFormat.Float32.npy",   // io
           "BiasAdd.Default_BiasAdd-op0.0.0.x17.input.1.DefaultFormat.Float32.npy",  // timestamp
           "BiasAdd.Default_BiasAdd-op0.0.0.17.input.-1.DefaultFormat.Float32.npy",  // slot
           "BiasAdd.Default_BiasAdd-op0.0.0.17.input.1.DefaultFormat.Float32.bin",   // extension
           "BiasAdd.0.0.17.input.1.DefaultFormat.Float32.npy",                       // no scope
           "ms_execution_order_graph_0.csv",
       })
    EXPECT_FALSE(parse_ms_kernel_file(bad)) << bad;
}

}  // namespace
}  // namespace numprobe::convert
