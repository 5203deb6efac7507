// `numprobe convert`: a MindSpore kernel dump (MINDSPORE_DUMP_CONFIG, e2e, saved_data "tensor")
// written as msprobe's dump layout, so info, compare, graph and acc-check read it as any dump.
//
// Per rank and iteration: <out>/step<iteration>/rank<rank>/dump.json with one entry per kernel
// call in the order MindSpore ran it, `Kernel.<OpType>.<n>.forward` (`.backward` for kernels
// under the Gradients scope; n counts per op type and direction within the step), graph inputs as
// `Parameter.<name>.0.forward`; statistics computed by numprobe's engine from the tensors; with
// tensors on, each tensor rewritten under dump_tensor_data/ as `<entry>.<input|output>.<i>.npy`;
// kernels.json maps each entry to MindSpore's kernel full name and graph
// (docs/formats/mindspore_dump.md).
//
// The input is only read. The output directory must not hold any step<N> directory yet, so a
// conversion never writes over earlier files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "convert/ms_dump_scan.h"

namespace numprobe::convert {

struct ConvertOptions {
  std::string out;
  bool tensors = true;     // task "tensor": copy each tensor; false: statistics only
  bool parameters = true;  // graph inputs (Parameter.* files) as entries
};

struct ConvertReport {
  std::vector<MsDumpProblem> problems;  // the scan's, then the conversion's
  size_t ranks = 0;
  size_t steps = 0;  // (rank, iteration) dumps written
  size_t entries = 0;
  size_t tensor_files = 0;
  std::vector<std::string> rank_dirs;  // written
};

// Throws InputError when `in` is no MindSpore dump or `out` already holds step directories; every
// other problem is reported and the conversion goes on.
ConvertReport convert_mindspore_dump(const std::string& in, const ConvertOptions& opt);

}  // namespace numprobe::convert
