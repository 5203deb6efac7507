// The name of one tensor file in MindSpore's kernel dump (e2e dump, saved_data "tensor"):
//   <OpType>.<scope>.<task>.<stream>.<timestamp>.{input,output}.<i>.<format>.<dtype>.npy
// where <scope> is the kernel's full name with '/' written as '_' (docs/formats/mindspore_dump.md).
// Graph inputs are dumped as `Parameter.<name>....output.0....npy` in the same pattern.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace numprobe::convert {

struct MsKernelFile {
  std::string op_type;  // "MatMul", "LayerNormGrad", "Parameter"
  std::string scope;    // "Default_MatMul-op5", "Gradients_Default_Grad_GeLU_GeLUGrad-op0"
  int64_t task = 0;
  int64_t stream = 0;
  uint64_t timestamp = 0;  // microseconds; MindSpore writes a kernel's files as it runs
  bool output = false;     // false: input
  int64_t index = 0;       // slot
  std::string format;      // "DefaultFormat", "NCHW", ...
  std::string dtype;       // MindSpore's spelling: "Float32", "Bool", "Int64"
};

// Parses a file name (no directory). Never throws: nullopt when the name does not follow the
// pattern (the caller names the file as a problem). The scope may itself contain dots; the
// fields are taken from the right, and the op type is the text before the first dot.
std::optional<MsKernelFile> parse_ms_kernel_file(std::string_view name);

// True for kernels MindSpore put under the backward graph's scope ("Gradients/..."), written as
// backward entries.
bool is_gradient_scope(std::string_view scope);

}  // namespace numprobe::convert
