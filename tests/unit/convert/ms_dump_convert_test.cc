#include "convert/ms_dump_convert.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/npy.h"
#include "numprobe/dump.h"
#include "numprobe/error.h"
#include "test_support.h"

namespace numprobe::convert {
namespace {

namespace fs = std::filesystem;
using numprobe::testing::read_file;
using numprobe::testing::scratch_dir;
using numprobe::testing::write_file;

// A MindSpore kernel dump as MindSpore 2.10 writes it on the CPU, in small: a Reshape (dumped
// with its input's shape, as the CPU does), a MatMul, and the MatMul's gradient kernel, one
// iteration of graph 0.
struct FakeDump {
  std::string root;
  std::string iter_dir;

  explicit FakeDump(const std::string& name) : root(scratch_dir(name) + "/ms") {
    iter_dir = root + "/rank_0/Net/0/0";
    fs::create_directories(iter_dir);
    fs::create_directories(root + "/rank_0/execution_order");
    fs::create_directories(root + "/rank_0/graphs");
    std::vector<float> x(6);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 2.0f;
    std::vector<float> w = {1, 2, 3, 4, 5, 6};
    tensor("Reshape.Default_Reshape-op0.0.0.100.input.0", x, {1, 2, 3});
    tensor("Reshape.Default_Reshape-op0.0.0.101.output.0", x, {1, 2, 3});
    tensor("MatMul.Default_MatMul-op0.0.0.200.input.0", x, {1, 2, 3});
    tensor("MatMul.Default_MatMul-op0.0.0.201.input.1", w, {2, 3});
    tensor("MatMul.Default_MatMul-op0.0.0.202.output.0", w, {2, 3});
    // The gradient kernel was dumped first (the CPU runtime runs independent kernels early);
    // the execution order and the IR still put it last.
    tensor("MatMul.Gradients_Default_Grad_MatMul_MatMul-op1.0.0.50.input.0", w, {2, 3});
    tensor("MatMul.Gradients_Default_Grad_MatMul_MatMul-op1.0.0.51.output.0", x, {2, 3});
    tensor("Parameter.fc_weight.0.0.300.output.0", w, {2, 3});
    write_file(root + "/rank_0/execution_order/ms_execution_order_graph_0.csv",
               "NodeExecutionOrder-FullNameWithScope\nDefault/Reshape-op0\nDefault/MatMul-op0\n"
               "Gradients/Default/Grad_MatMul/MatMul-op1\n");
    write_file(root + "/rank_0/graphs/ms_output_trace_code_graph_0.ir",
               "  %0(x) = PrimFunc_Reshape(%para1, (I64(-1), I64(3)))\n"
               "      : (<Tensor[Float32], (1, 2, 3)>, <Tuple[Int64*2], TupleShape(NoShape, "
               "NoShape)>) -> (<Tensor[Float32], (2, 3)>)\n"
               "      # Fullname with scope: (Default/Reshape-op0)\n"
               "  %1(x) = PrimFunc_MatMul(%0, %para2)\n"
               "      : (<Tensor[Float32], (2, 3)>, <Tensor[Float32], (2, 3)>) -> "
               "(<Tensor[Float32], (2, 3)>)\n"
               "      # Fullname with scope: (Default/MatMul-op0)\n"
               "  %2(x) = PrimFunc_MatMul(%3, %para2)\n"
               "      : (<Tensor[Float32], (2, 3)>) -> (<Tensor[Float32], (2, 3)>)\n"
               "      # Fullname with scope: (Gradients/Default/Grad_MatMul/MatMul-op1)\n");
  }
  void tensor(const std::string& stem, const std::vector<float>& v, std::vector<int64_t> shape) {
    write_npy(iter_dir + "/" + stem + ".DefaultFormat.Float32.npy", v.data(), DType::kF32, shape);
  }
};

std::vector<std::string> entry_names(const DumpFile& d) {
  std::vector<std::string> out;
  for (size_t i = 0; i < d.entries.size(); ++i) out.emplace_back(d.entry_name(i));
  return out;
}

TEST(MsDumpConvert, WritesMsprobeLayoutInGraphOrder) {
  FakeDump dump("convert_layout");
  const std::string out = fs::path(dump.root).parent_path().string() + "/out";
  ConvertReport r = convert_mindspore_dump(dump.root, {out, true, true});
  EXPECT_TRUE(r.problems.empty()) << r.problems[0].path << ": " << r.problems[0].what;
  EXPECT_EQ(r.ranks, 1u);
  EXPECT_EQ(r.steps, 1u);
  EXPECT_EQ(r.entries, 4u);
  EXPECT_EQ(r.tensor_files, 8u);
  DumpFile d = read_dump_json(out + "/step0/rank0/dump.json");
  // Graph order; the parameter (named by no order file) right after the call dumped before it.
  EXPECT_EQ(entry_names(d), (std::vector<std::string>{
                                "Kernel.Reshape.0.forward", "Kernel.MatMul.0.forward",
                                "Parameter.fc_weight.0.forward", "Kernel.MatMul.0.backward"}));
  const std::string text = read_file(out + "/step0/rank0/dump.json");
  EXPECT_NE(text.find("\"framework\": \"mindspore\""), std::string::npos);
  EXPECT_NE(text.find("\"level\": \"L2\""), std::string::npos);
  // The Reshape's output carries the graph's shape, not the buffer's.
  NpyFile reshaped =
      NpyFile::open(out + "/step0/rank0/dump_tensor_data/Kernel.Reshape.0.forward.output.0.npy");
  EXPECT_EQ(reshaped.header().shape, (std::vector<int64_t>{2, 3}));
  NpyFile in0 =
      NpyFile::open(out + "/step0/rank0/dump_tensor_data/Kernel.Reshape.0.forward.input.0.npy");
  EXPECT_EQ(in0.header().shape, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(static_cast<const float*>(reshaped.data())[5], 3.0f);
  const std::string kernels = read_file(out + "/step0/rank0/kernels.json");
  EXPECT_NE(kernels.find("Gradients/Default/Grad_MatMul/MatMul-op1"), std::string::npos);
  // Never over a dump already there.
  EXPECT_THROW(convert_mindspore_dump(dump.root, {out, true, true}), InputError);
  // Nor into the MindSpore dump itself.
  EXPECT_THROW(convert_mindspore_dump(dump.root, {dump.root + "/converted", true, true}),
               InputError);
}

TEST(MsDumpConvert, StatisticsOnlyWritesNoTensors) {
  FakeDump dump("convert_stats");
  const std::string out = fs::path(dump.root).parent_path().string() + "/out";
  ConvertReport r = convert_mindspore_dump(dump.root, {out, false, false});
  EXPECT_EQ(r.tensor_files, 0u);
  EXPECT_EQ(r.entries, 3u);
  EXPECT_FALSE(fs::exists(out + "/step0/rank0/dump_tensor_data"));
  const std::string text = read_file(out + "/step0/rank0/dump.json");
  EXPECT_NE(text.find("\"task\": \"statistics\""), std::string::npos);
  EXPECT_NE(text.find("\"Max\": 3.0"), std::string::npos);  // x = -2..3
}

bool has_problem(const ConvertReport& r, const std::string& path_part, const std::string& what) {
  for (const MsDumpProblem& p : r.problems)
    if (p.path.find(path_part) != std::string::npos && p.what.find(what) != std::string::npos)
      return true;
  return false;
}

TEST(MsDumpConvert, IncompleteDumpsAreConvertedAsFarAsTheyGo) {
  FakeDump dump("convert_incomplete");
  // A rank killed mid-step: the gradient kernel never ran; a stray file; no IR for graph 0.
  fs::remove(dump.iter_dir +
             "/MatMul.Gradients_Default_Grad_MatMul_MatMul-op1.0.0.50.input.0."
             "DefaultFormat.Float32.npy");
  fs::remove(dump.iter_dir +
             "/MatMul.Gradients_Default_Grad_MatMul_MatMul-op1.0.0.51.output.0."
             "DefaultFormat.Float32.npy");
  write_file(dump.iter_dir + "/notes.txt", "x");
  write_file(dump.iter_dir + "/MatMul.Default_MatMul-op9.0.0.1.input.0.DefaultFormat.Float32.npy",
             "not an npy");
  fs::remove(dump.root + "/rank_0/graphs/ms_output_trace_code_graph_0.ir");
  const std::string out = fs::path(dump.root).parent_path().string() + "/out";
  ConvertReport r = convert_mindspore_dump(dump.root, {out, true, true});
  EXPECT_TRUE(has_problem(r, "notes.txt", "unknown file name pattern"));
  EXPECT_TRUE(has_problem(r, "Net/0/0", "stopped mid-step"));
  EXPECT_TRUE(has_problem(r, "MatMul-op9", "unreadable"));
  EXPECT_TRUE(has_problem(r, "Net/0", "ms_output_trace_code_graph_0.ir"));
  DumpFile d = read_dump_json(out + "/step0/rank0/dump.json");
  EXPECT_EQ(d.entries.size(), 4u);  // Reshape, MatMul, the unreadable one, the parameter
}

TEST(MsDumpConvert, MissingExecutionOrderIsNamed) {
  FakeDump dump("convert_no_order");
  fs::remove_all(dump.root + "/rank_0/execution_order");
  const std::string out = fs::path(dump.root).parent_path().string() + "/out";
  ConvertReport r = convert_mindspore_dump(dump.root, {out, true, true});
  EXPECT_TRUE(has_problem(r, "execution_order", "missing"));
  EXPECT_EQ(r.entries, 4u);
}

TEST(MsDumpConvert, NotAMindSporeDump) {
  const std::string dir = scratch_dir("convert_not_ms");
  EXPECT_THROW(convert_mindspore_dump(dir, {dir + "/../out_x", true, true}), InputError);
  EXPECT_THROW(convert_mindspore_dump(dir + "/absent", {dir + "/../out_y", true, true}),
               InputError);
}

}  // namespace
}  // namespace numprobe::convert
