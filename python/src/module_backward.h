// Module backward entries (levels L0 and mix) observed on the autograd nodes a module call made,
// without adding any node, view or accumulation step to the graph.
//
// torch's full module backward hooks put an identity Function on a module's inputs and outputs.
// Its node gathers the gradients of all consumers of an output before passing the sum on, which
// changes where (and in which order) floating-point gradients are summed: Llama's residual stream
// came out different by rounding. This observer reads the same gradients where autograd already
// has them:
//   - grad_output (the entry's "input"): a pre-hook on the node that produced each output, which
//     sees the output's gradient once every consumer's contribution has been summed into it;
//   - grad_input (the entry's "output"): post-hooks on the nodes the call created that consume an
//     input directly (found by walking the graph from the outputs back to the inputs' edges,
//     through nodes whose sequence number lies within the call), summed on the side.
// Every hook returns the gradients it was given, untouched.
#pragma once

#include <pybind11/pybind11.h>
#include <torch/csrc/autograd/edge.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace numprobe::python {

// What a module call's backward entry needs from its forward pre-hook: the gradient edges of its
// positional tensor arguments before the module runs (it may modify them in place).
struct ModuleCallInputs {
  bool observe = false;    // grad mode was on
  uint64_t first_seq = 0;  // the first autograd sequence number the call can give a node
  size_t n_inputs = 0;     // positional arguments (torch's grad_input has one slot each)
  bool any_requires_grad = false;
  // (position, edge) of each tensor argument that requires grad; a tensor passed at several
  // positions is listed once, at its first (its gradient is reported there).
  std::vector<std::pair<size_t, torch::autograd::Edge>> edges;
};

ModuleCallInputs snapshot_module_inputs(pybind11::handle args);

// A counter the module's recorder bumps at every step: observers of an earlier step's forward
// whose backward runs later record nothing (as torch's hooks did once their names were reset).
using Epoch = std::shared_ptr<std::atomic<uint64_t>>;

// Puts the observers of one call on the nodes it made. No-op when no output requires grad (torch's
// full hook would not fire either). output_leaves: see ModuleRecorder::nested_output_leaves.
void observe_module_backward(ModuleCallInputs inputs, pybind11::handle output, std::string name,
                             std::optional<std::string> parent, Epoch epoch,
                             std::vector<int> output_leaves);

}  // namespace numprobe::python
