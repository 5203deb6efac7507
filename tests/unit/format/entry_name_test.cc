#include "format/entry_name.h"

#include <gtest/gtest.h>

using numprobe::Direction;
using numprobe::parse_entry_name;

TEST(EntryName, ApiNames) {
  auto e = parse_entry_name("Functional.relu.0.forward");
  EXPECT_EQ(e.prefix, "Functional");
  EXPECT_EQ(e.op, "relu");
  EXPECT_EQ(e.index, 0);
  EXPECT_EQ(e.direction, Direction::kForward);
  EXPECT_FALSE(e.is_module);
  e = parse_entry_name("Aten.add.Tensor.12.backward");
  EXPECT_EQ(e.prefix, "Aten");
  EXPECT_EQ(e.op, "add.Tensor");
  EXPECT_EQ(e.index, 12);
  EXPECT_EQ(e.direction, Direction::kBackward);
  e = parse_entry_name("Tensor.backward.0.forward");
  EXPECT_EQ(e.op, "backward");
  EXPECT_EQ(e.direction, Direction::kForward);
}

TEST(EntryName, ModuleNames) {
  auto e = parse_entry_name("Module.layer1.0.conv1.Conv2d.forward.3");
  EXPECT_EQ(e.prefix, "Module");
  EXPECT_EQ(e.op, "layer1.0.conv1.Conv2d");
  EXPECT_EQ(e.index, 3);
  EXPECT_TRUE(e.is_module);
  EXPECT_EQ(e.direction, Direction::kForward);
  e = parse_entry_name("Module.fc.Linear.parameters_grad.1");
  EXPECT_EQ(e.direction, Direction::kParametersGrad);
  EXPECT_EQ(e.op, "fc.Linear");
  e = parse_entry_name("Cell.network.Dense.backward.0");
  EXPECT_EQ(e.prefix, "Cell");
  EXPECT_EQ(e.direction, Direction::kBackward);
}

TEST(EntryName, DebugAndUnknown) {
  auto e = parse_entry_name("loss.0");
  EXPECT_EQ(e.direction, Direction::kDebug);
  EXPECT_EQ(e.op, "loss");
  e = parse_entry_name("Module");
  EXPECT_EQ(e.direction, Direction::kUnknown);
  e = parse_entry_name("matmul.backward");
  EXPECT_EQ(e.direction, Direction::kUnknown);
  e = parse_entry_name("");
  EXPECT_EQ(e.direction, Direction::kUnknown);
  e = parse_entry_name("a..b.");
  EXPECT_EQ(e.direction, Direction::kUnknown);
}
