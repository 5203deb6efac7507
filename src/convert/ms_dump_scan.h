// Reads the layout of a MindSpore kernel dump directory (docs/formats/mindspore_dump.md) without
// opening any tensor: which ranks, graphs and iterations exist, which kernel calls each iteration
// holds (files grouped per call, calls in the order MindSpore ran them) and what is wrong with it.
// Never throws on a bad layout: each problem is recorded with the path it concerns, and whatever
// can be read is kept.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "convert/ms_graph_ir.h"
#include "convert/ms_kernel_name.h"

namespace numprobe::convert {

struct MsDumpProblem {
  std::string path;  // the file or directory concerned
  std::string what;
};

struct MsTensorFile {
  MsKernelFile name;
  std::string path;
};

// One run of one kernel: its input and output files, sorted by (input before output, slot).
// Calls are ordered as the graph's IR lists them (ms_graph_ir.h), else as its execution order
// file does, else by the time their files were written.
struct MsKernelCall {
  std::string op_type;
  std::string scope;  // as in the file name ('/' written as '_')
  std::string
      full_name;  // from execution_order when found there ("Default/MatMul-op5"), else scope
  int64_t graph = 0;
  uint64_t first_timestamp = 0;
  std::vector<MsTensorFile> files;
};

struct MsIteration {
  int64_t iteration = 0;
  std::vector<MsKernelCall> calls;  // every graph's calls of this iteration, by first timestamp
};

struct MsRankDump {
  int64_t rank = 0;
  std::string dir;
  std::string net_name;  // empty when no net directory was found
  std::map<int64_t, MsIteration> iterations;
  std::map<int64_t, IrGraph> graphs;  // graphs/ms_output_trace_code_graph_<g>.ir, where readable
};

struct MsDumpScan {
  std::vector<MsRankDump> ranks;
  std::vector<MsDumpProblem> problems;
};

// `root` is the dump's `path` (holding rank_<N>/) or one rank_<N> directory. Throws InputError
// only when root is not a readable directory or holds no rank_<N> directory at all.
MsDumpScan scan_mindspore_dump(const std::string& root);

}  // namespace numprobe::convert
