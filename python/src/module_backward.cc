#include "module_backward.h"

#include <ATen/Functions.h>
#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "torch/capture/torch_capture.h"

namespace py = pybind11;
using numprobe::capture::EntryRecord;
using numprobe::capture::InternalGuard;
using numprobe::capture::TorchCapture;
using torch::autograd::Edge;
using torch::autograd::Node;
using torch::autograd::variable_list;

namespace numprobe::python {

namespace {

// numprobe's own tensor work inside a hook: no autograd, no RecordFunction (L2), no re-entry.
struct Quiet {
  InternalGuard internal;
  at::NoGradGuard no_grad;
  at::RecordFunctionGuard no_record{false};
};

bool same_edge(const Edge& a, const Edge& b) {
  return a.function.get() == b.function.get() && a.input_nr == b.input_nr;
}

// The gradients of one module call, gathered from the hooks until the entry can be written.
// Shared by the hooks (which the nodes own); holds no node, so it keeps no graph alive.
struct CallState : std::enable_shared_from_this<CallState> {
  std::mutex mu;
  std::string name;
  std::optional<std::string> parent;
  Epoch epoch;
  uint64_t epoch_at = 0;
  TorchCapture* capture = nullptr;  // the capture that recorded the forward
  std::vector<int> output_leaves;
  std::vector<bool> output_is_tensor;  // per top-level output item
  std::vector<at::Tensor> grad_out;    // per top-level output item
  std::vector<at::Tensor> grad_in;     // per positional argument
  std::vector<bool> unobserved_in;     // gradient flows there, but no node of the call feeds it
  // An output the call also consumes itself (eager attention returns the attention weights it
  // multiplies with V): its node's gradient sums the call's own use with the caller's, and the
  // caller's part alone, what torch's hook reports, cannot be seen without adding a node.
  std::vector<bool> unobserved_out;
  std::vector<std::pair<size_t, size_t>> passed;  // (input, output) the call returned unchanged
  int outputs_pending = 0;                        // output nodes whose pre-hook has not run
  int consumers_pending = 0;                      // consumer nodes whose post-hook has not run
  bool has_consumers = false;
  bool fired = false;
  bool callback_queued = false;

  // Called with mu held by every hook: the entry is due once the last consumer has run (or, when
  // no input takes a gradient, once every output's gradient is there), as torch's hook was.
  void arrived() {
    if (!callback_queued) {
      callback_queued = true;
      queue_final_callback();
    }
    if (has_consumers ? consumers_pending == 0 : outputs_pending == 0) fire();
  }

  // Whatever is still pending when the backward pass ends (an output nobody used, a consumer that
  // did not run) is written then, with nulls where nothing arrived.
  void queue_final_callback();

  void fire() {
    if (fired) return;
    fired = true;
    TorchCapture* cap = TorchCapture::active();
    for (const auto& [in, out] : passed) grad_in[in] = grad_out[out];
    if (cap && cap == capture && cap->dumping() && epoch->load() == epoch_at) write(*cap);
    grad_out.clear();
    grad_in.clear();
  }

  void write(TorchCapture& cap) {
    Quiet quiet;
    EntryRecord rec = cap.new_record();
    rec.name = name;
    rec.begin_dict();
    if (cap.wants_inputs()) {
      rec.key("input");
      rec.begin_list();
      const std::string stem = cap.stem(name, "input");
      size_t row = 0;
      for (size_t i = 0; i < grad_out.size(); ++i) {
        // A top-level item that is not a tensor gets no gradient from torch's hook; msprobe then
        // writes one null per tensor inside it (nn.LSTM's (h_n, c_n)).
        const bool nested = output_leaves.size() == grad_out.size() && !output_is_tensor[i];
        const int nulls = nested ? output_leaves[i] : 1;
        if (output_is_tensor[i] && grad_out[i].defined() && !unobserved_out[i]) {
          cap.add_tensor(rec, grad_out[i], cap.stem(stem, row++), false);
          continue;
        }
        for (int k = 0; k < nulls; ++k, ++row) rec.null();
      }
      rec.end();
    }
    if (cap.wants_outputs()) {
      rec.key("output");
      rec.begin_list();
      const std::string stem = cap.stem(name, "output");
      for (size_t i = 0; i < grad_in.size(); ++i)
        cap.add_tensor(rec, grad_in[i], cap.stem(stem, i), true);
      rec.end();
    }
    bool gap = false;
    for (bool u : unobserved_in) gap |= u;
    for (bool u : unobserved_out) gap |= u;
    if (gap) {
      // The named gap (docs/capture.md, "Observer effect"): these places are null because their
      // gradient could not be seen without changing the graph, not because there was none.
      rec.key("unobserved");
      rec.begin_list();
      for (size_t i = 0, row = 0; i < unobserved_out.size(); ++i) {
        const bool nested = output_leaves.size() == unobserved_out.size() && !output_is_tensor[i];
        if (unobserved_out[i]) rec.string("input." + std::to_string(row));
        row += nested ? static_cast<size_t>(output_leaves[i]) : 1;
      }
      for (size_t i = 0; i < unobserved_in.size(); ++i)
        if (unobserved_in[i]) rec.string("output." + std::to_string(i));
      rec.end();
    }
    rec.end();
    auto parent_bwd =
        parent ? std::optional<std::string>(TorchCapture::backward_of(*parent)) : std::nullopt;
    cap.submit_module_backward(std::move(rec), parent_bwd);
  }
};

void CallState::queue_final_callback() {
  // Runs after the whole graph task; the hooks only ever run inside one, where this cannot fail.
  try {
    // The callback holds the state; the hooks are owned by nodes freed with the graph.
    torch::autograd::Engine::get_default_engine().queue_callback([self = shared_from_this()]() {
      std::lock_guard<std::mutex> lk(self->mu);
      self->fire();
    });
  } catch (const c10::Error&) {
  }
}

// On the node that produced some of the call's outputs: their gradients, fully summed.
class OutputGradHook : public torch::autograd::FunctionPreHook {
 public:
  // slots: (the node's input number, the output item's position)
  OutputGradHook(std::shared_ptr<CallState> state, std::vector<std::pair<size_t, size_t>> slots)
      : state_(std::move(state)), slots_(std::move(slots)) {}

  variable_list operator()(const variable_list& grads) override {
    std::lock_guard<std::mutex> lk(state_->mu);
    if (state_->fired) return grads;
    for (const auto& [nr, pos] : slots_)
      if (nr < grads.size()) state_->grad_out[pos] = grads[nr];
    --state_->outputs_pending;
    state_->arrived();
    return grads;
  }

 private:
  std::shared_ptr<CallState> state_;
  std::vector<std::pair<size_t, size_t>> slots_;
};

// On a node of the call that feeds an input directly: its contribution to that input's gradient.
class InputGradHook : public torch::autograd::FunctionPostHook {
 public:
  // slots: (the node's output edge, the input's position)
  InputGradHook(std::shared_ptr<CallState> state, std::vector<std::pair<size_t, size_t>> slots)
      : state_(std::move(state)), slots_(std::move(slots)) {}

  variable_list operator()(const variable_list& grad_inputs,
                           const variable_list& /*grad_outputs*/) override {
    std::lock_guard<std::mutex> lk(state_->mu);
    if (state_->fired) return grad_inputs;
    for (const auto& [edge, pos] : slots_) {
      if (edge >= grad_inputs.size() || !grad_inputs[edge].defined()) continue;
      at::Tensor& sum = state_->grad_in[pos];
      if (!sum.defined()) {
        sum = grad_inputs[edge];
      } else {
        // Several nodes of the call feed one input: summed here, on the side, for the entry only
        // (autograd sums its own copies in its own buffer, as it does without numprobe).
        Quiet quiet;
        sum = at::add(sum, grad_inputs[edge]);
      }
    }
    --state_->consumers_pending;
    state_->arrived();
    return grad_inputs;
  }

 private:
  std::shared_ptr<CallState> state_;
  std::vector<std::pair<size_t, size_t>> slots_;
};

const at::Tensor* tensor_of(py::handle obj) {
  return THPVariable_Check(obj.ptr()) ? &THPVariable_Unpack(obj.ptr()) : nullptr;
}

}  // namespace

ModuleCallInputs snapshot_module_inputs(py::handle args) {
  ModuleCallInputs in;
  in.observe = c10::GradMode::is_enabled();
  if (!in.observe || !PyTuple_Check(args.ptr())) return in;
  in.first_seq = at::sequence_number::peek();
  in.n_inputs = static_cast<size_t>(PyTuple_GET_SIZE(args.ptr()));
  for (size_t i = 0; i < in.n_inputs; ++i) {
    const at::Tensor* t = tensor_of(PyTuple_GET_ITEM(args.ptr(), static_cast<Py_ssize_t>(i)));
    if (!t || !t->defined() || !t->requires_grad()) continue;
    in.any_requires_grad = true;
    Edge e = torch::autograd::impl::gradient_edge(*t);
    bool seen = false;
    for (const auto& [pos, other] : in.edges) seen |= same_edge(other, e);
    if (!seen) in.edges.emplace_back(i, std::move(e));
  }
  return in;
}

void observe_module_backward(ModuleCallInputs inputs, py::handle output, std::string name,
                             std::optional<std::string> parent, Epoch epoch,
                             std::vector<int> output_leaves) {
  if (!inputs.observe) return;
  const uint64_t end_seq = at::sequence_number::peek();
  // torch's hook: a tuple output's top-level items, any other output as one item.
  std::vector<py::handle> items;
  if (PyTuple_Check(output.ptr())) {
    for (py::handle item : output) items.push_back(item);
  } else {
    items.push_back(output);
  }
  auto state = std::make_shared<CallState>();
  state->output_is_tensor.assign(items.size(), false);
  // Output edges grouped by node, in first-seen order.
  std::vector<std::pair<Edge, std::vector<std::pair<size_t, size_t>>>> out_nodes;
  std::vector<Edge> out_edges(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const at::Tensor* t = tensor_of(items[i]);
    if (!t) continue;
    state->output_is_tensor[i] = true;
    if (!t->defined() || !t->requires_grad()) continue;
    Edge e = torch::autograd::impl::gradient_edge(*t);
    if (!e.is_valid()) continue;
    out_edges[i] = e;
    auto it = std::find_if(out_nodes.begin(), out_nodes.end(), [&](const auto& n) {
      return n.first.function.get() == e.function.get();
    });
    if (it == out_nodes.end()) it = out_nodes.insert(out_nodes.end(), {e, {}});
    it->second.emplace_back(e.input_nr, i);
  }
  if (out_nodes.empty()) return;  // no output takes a gradient: torch's hook never fires

  // Walk back from the outputs through the nodes this call created; an edge into an input's
  // gradient edge makes its node a consumer of that input, an edge into an output's makes that
  // output one the call consumes itself (unobserved_out).
  auto in_call = [&](const Node* n) {
    const uint64_t s = n->sequence_nr();
    return s >= inputs.first_seq && s < end_seq;
  };
  std::unordered_map<Node*, std::vector<std::pair<size_t, size_t>>> consumers;
  std::vector<Node*> consumer_order;  // hooks are added in a fixed order
  std::unordered_set<Node*> seen;
  std::vector<Node*> todo;
  for (const auto& [e, slots] : out_nodes)
    if (in_call(e.function.get()) && seen.insert(e.function.get()).second)
      todo.push_back(e.function.get());
  std::vector<bool> unobserved_out(items.size(), false);
  {
    while (!todo.empty()) {
      Node* n = todo.back();
      todo.pop_back();
      const auto& next = n->next_edges();
      for (size_t j = 0; j < next.size(); ++j) {
        const Edge& e = next[j];
        if (!e.is_valid()) continue;
        for (size_t i = 0; i < items.size(); ++i)
          if (out_edges[i].is_valid() && same_edge(e, out_edges[i])) unobserved_out[i] = true;
        bool fed = false;
        for (const auto& [pos, in] : inputs.edges) {
          if (!same_edge(e, in)) continue;
          auto& slots = consumers[n];
          if (slots.empty()) consumer_order.push_back(n);
          slots.emplace_back(j, pos);
          fed = true;
        }
        Node* m = e.function.get();
        if (!fed && in_call(m) && seen.insert(m).second) todo.push_back(m);
      }
    }
  }

  state->name = std::move(name);
  state->parent = std::move(parent);
  state->epoch = std::move(epoch);
  state->epoch_at = state->epoch->load();
  state->capture = TorchCapture::active();
  state->output_leaves = std::move(output_leaves);
  state->grad_out.resize(items.size());
  state->grad_in.resize(inputs.n_inputs);
  state->unobserved_in.assign(inputs.n_inputs, false);
  state->unobserved_out = std::move(unobserved_out);
  state->outputs_pending = static_cast<int>(out_nodes.size());
  state->consumers_pending = static_cast<int>(consumer_order.size());
  state->has_consumers = !consumer_order.empty();
  // An input the call returns as it is (nn.Identity) gets its output's gradient, as torch's
  // identity node would pass it on. An input that takes a gradient but that no node of the call
  // feeds (the call replaced its edge, or ran its ops on another thread) is a named gap.
  std::vector<std::pair<size_t, size_t>> passed;  // (input position, output position)
  for (const auto& [pos, in] : inputs.edges) {
    bool fed = false;
    for (Node* n : consumer_order)
      for (const auto& slot : consumers[n]) fed |= slot.second == pos;
    if (fed) continue;
    size_t out = items.size();
    for (size_t i = 0; i < items.size() && out == items.size(); ++i)
      if (out_edges[i].is_valid() && same_edge(out_edges[i], in)) out = i;
    if (out < items.size())
      passed.emplace_back(pos, out);
    else
      state->unobserved_in[pos] = true;
  }
  state->passed = std::move(passed);
  for (auto& [e, slots] : out_nodes)
    e.function->add_pre_hook(std::make_unique<OutputGradHook>(state, std::move(slots)));
  for (Node* n : consumer_order)
    n->add_post_hook(std::make_unique<InputGradHook>(state, std::move(consumers[n])));
}

}  // namespace numprobe::python
