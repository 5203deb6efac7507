#include "torch/capture/torch_capture.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/function.h>

#include <cstring>
#include <mutex>
#include <type_traits>
#include <utility>

#include "numprobe/error.h"
#include "torch/capture/aten_ops.h"
#include "torch/capture/env_summary.h"
#include "torch/stats_batch.h"
#include "torch/stats_cache.h"
#include "torch/tensor_leaf.h"

namespace numprobe::capture {

std::atomic<TorchCapture*> TorchCapture::active_{nullptr};
TorchCapture::StackProvider TorchCapture::stack_provider_ = nullptr;

namespace {
thread_local int t_internal = 0;
}

InternalGuard::InternalGuard() {
  ++t_internal;
}
// The outermost guard is a section of device statistics (stats_batch.h): sealed on the way out,
// while numprobe's own ops are still ignored, so its tensors are read before the step goes on.
InternalGuard::~InternalGuard() {
  if (t_internal == 1) seal_stats_batches();
  --t_internal;
}
bool InternalGuard::inside() {
  return t_internal > 0;
}

namespace {

// Everything numprobe runs on tensors: no autograd, no RecordFunction, no re-entry.
struct QuietGuard {
  InternalGuard internal;
  at::NoGradGuard no_grad;
  at::RecordFunctionGuard no_record{false};
};

// Post-hook on a backward node: one "<api>.<n>.backward" entry per run of the node.
class BackwardEntryHook : public torch::autograd::FunctionPostHook {
 public:
  BackwardEntryHook(std::string name, std::optional<std::string> parent)
      : name_(std::move(name)), parent_(std::move(parent)) {}

  torch::autograd::variable_list operator()(
      const torch::autograd::variable_list& grad_inputs,
      const torch::autograd::variable_list& grad_outputs) override {
    TorchCapture* cap = TorchCapture::active();
    if (!cap || !cap->dumping() || InternalGuard::inside()) return grad_inputs;
    QuietGuard quiet;
    EntryRecord rec = cap->new_record();
    rec.name = name_;
    rec.begin_dict();
    // msprobe's backward entry: "input" = grads of the forward outputs, "output" = grads of the
    // forward inputs.
    if (cap->wants_inputs()) {
      rec.key("input");
      rec.begin_list();
      const std::string stem = cap->stem(name_, "input");
      for (size_t i = 0; i < grad_outputs.size(); ++i)
        cap->add_tensor(rec, grad_outputs[i], cap->stem(stem, i), false);
      rec.end();
    }
    if (cap->wants_outputs()) {
      rec.key("output");
      rec.begin_list();
      const std::string stem = cap->stem(name_, "output");
      for (size_t i = 0; i < grad_inputs.size(); ++i)
        cap->add_tensor(rec, grad_inputs[i], cap->stem(stem, i), true);
      rec.end();
    }
    rec.end();
    cap->submit(std::move(rec), false, parent_);
    return grad_inputs;
  }

 private:
  std::string name_;
  std::optional<std::string> parent_;
};

// ---- L2: aten ops through RecordFunction ------------------------------------------------------

thread_local int t_depth = 0;     // FUNCTION records open on this thread
thread_local int t_backward = 0;  // BACKWARD_FUNCTION records open on this thread

struct AtenContext : public at::ObserverContext {
  EntryRecord rec;
  std::optional<std::string> parent;
};

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    ++t_backward;
    return nullptr;
  }
  const bool outermost = t_depth++ == 0 && t_backward == 0;
  TorchCapture* cap = TorchCapture::active();
  if (!outermost || !cap || !cap->dumping() || InternalGuard::inside()) return nullptr;
  const AtenOpInfo& info = aten_op_info(fn);
  if (info.skip) return nullptr;
  std::string name = cap->next_api_name(info.api_type);
  if (!cap->wants(name + ".forward")) return nullptr;
  QuietGuard quiet;
  auto ctx = std::make_unique<AtenContext>();
  ctx->rec.name = name + ".forward";
  ctx->parent = cap->current_parent();
  ctx->rec.begin_dict();
  if (cap->wants_inputs()) {
    ctx->rec.key("input_args");
    ctx->rec.begin_list();
    auto inputs = fn.inputs();
    const std::string stem = cap->stem(ctx->rec.name, "input");
    for (size_t i = 0; i < inputs.size(); ++i)
      cap->add_ivalue(ctx->rec, inputs[i], cap->stem(stem, i), false);
    ctx->rec.end();
    ctx->rec.key("input_kwargs");
    ctx->rec.begin_dict();
    ctx->rec.end();
  }
  return ctx;
}

void on_op_end(const at::RecordFunction& fn, at::ObserverContext* base) {
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    --t_backward;
    return;
  }
  --t_depth;
  auto* ctx = static_cast<AtenContext*>(base);
  TorchCapture* cap = TorchCapture::active();
  if (!ctx || !cap) return;
  QuietGuard quiet;
  const auto& outputs = fn.outputs();
  if (cap->wants_outputs()) {
    ctx->rec.key("output");
    ctx->rec.begin_list();
    const std::string stem = cap->stem(ctx->rec.name, "output");
    for (size_t i = 0; i < outputs.size(); ++i)
      cap->add_ivalue(ctx->rec, outputs[i], cap->stem(stem, i), true);
    ctx->rec.end();
  }
  ctx->rec.end();
  std::string base_name = ctx->rec.name.substr(0, ctx->rec.name.size() - 8);  // ".forward"
  if (cap->wants_direction(false)) {
    for (const auto& o : outputs) {
      if (o.isTensor() && o.toTensor().defined() && o.toTensor().grad_fn()) {
        cap->attach_backward(
            o.toTensor(), base_name + ".backward",
            ctx->parent ? std::optional<std::string>(TorchCapture::backward_of(*ctx->parent))
                        : std::nullopt);
        break;
      }
    }
  }
  std::optional<std::string> parent = ctx->parent;
  if (cap->wants_direction(true)) cap->submit(std::move(ctx->rec), true, parent);
}

}  // namespace

TorchCapture::TorchCapture(CaptureConfig cfg)
    : session_(std::move(cfg)),
      filter_(session_.config()),
      overflow_left_(session_.config().overflow_nums) {
  TorchCapture* expected = nullptr;
  if (!active_.compare_exchange_strong(expected, this))
    throw Error("numprobe: a PrecisionDebugger is already capturing in this process");
}

TorchCapture::~TorchCapture() {
  flush_held();
  disable_observer();
  active_.store(nullptr, std::memory_order_release);
}

void TorchCapture::start(bool observe_aten) {
  session_.start();
  // The file itself is the writer thread's: creating it here took 0.1-3 ms of the training
  // thread's kernel time per dumped step.
  if (session_.active())
    session_.write_side_file(kEnvSummaryFile, environment_summary_json(env_runtime_, env_extra_));
  next_stats_generation();
  const Level lv = config().level;
  const bool aten = lv == Level::kL2 || (observe_aten && lv != Level::kL0);
  if (aten && session_.active()) enable_observer();
}

void TorchCapture::stop() {
  flush_held();
  disable_observer();
  session_.stop();
}

void TorchCapture::step() {
  flush_held();
  bool had_observer = observer_on_;
  disable_observer();
  session_.advance_step();
  next_stats_generation();
  filter_.reset();
  overflow_left_ = config().overflow_nums;
  if (had_observer && session_.active()) enable_observer();
}

void TorchCapture::enable_observer() {
  if (observer_on_) return;
  observer_handle_ = at::addGlobalCallback(
      at::RecordFunctionCallback(&on_op_start, &on_op_end)
          .needsInputs(true)
          .needsOutputs(true)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  observer_on_ = true;
}

void TorchCapture::disable_observer() {
  if (!observer_on_) return;
  at::removeCallback(observer_handle_);
  observer_on_ = false;
  t_depth = 0;
  t_backward = 0;
}

std::string TorchCapture::next_api_name(const std::string& api_type) {
  return api_type + "." + std::to_string(session_.next_count(api_type));
}

bool TorchCapture::wants(const std::string& forward_entry) {
  if (filter_.selects_everything()) return true;
  auto parent = current_parent();
  return filter_.wants_forward(forward_entry, parent ? *parent : std::string());
}

bool TorchCapture::wants_direction(bool forward) const {
  return forward ? config().data_mode.forward : config().data_mode.backward;
}

void TorchCapture::add_tensor(EntryRecord& rec, const at::Tensor& t, const std::string& file_stem,
                              bool is_output) {
  if (!t.defined()) {
    rec.null();
    return;
  }
  const CaptureConfig& cfg = config();
  LeafRequest req;
  if (cfg.task == Task::kStructure)
    req.data = LeafData::kNone;
  else if (cfg.summary_mode == SummaryMode::kMd5 && cfg.task == Task::kStatistics)
    req.data = LeafData::kMd5;
  const bool save = cfg.task == Task::kTensor ||
                    (cfg.task == Task::kStatistics && filter_.tensor_list_matches(rec.name));
  if (save) req.save_as = file_stem + ".npy";
  req.async = cfg.async_dump;
  req.batch = InternalGuard::inside();
  TensorLeaf& leaf = rec.tensor();
  fill_tensor_leaf(t, req, leaf);
  if (is_output && cfg.task == Task::kOverflowCheck) leaf.resolve_stats();  // decided now
  if (is_output && leaf.has_stats && !leaf.deferred &&
      (leaf.stats.nan_count || leaf.stats.pos_inf_count || leaf.stats.neg_inf_count))
    rec.overflow = true;
}

void TorchCapture::add_ivalue(EntryRecord& rec, const c10::IValue& v, const std::string& file_stem,
                              bool is_output) {
  if (v.isTensor()) {
    add_tensor(rec, v.toTensor(), file_stem, is_output);
  } else if (v.isNone()) {
    rec.null();
  } else if (v.isBool()) {
    rec.typed("bool");
    rec.boolean(v.toBool());
  } else if (v.isInt()) {
    rec.typed("int");
    rec.integer(v.toInt());
  } else if (v.isDouble()) {
    rec.typed("float");
    rec.floating(v.toDouble());
  } else if (v.isString()) {
    rec.typed("str");
    rec.string(v.toStringRef());
  } else if (v.isScalar()) {
    at::Scalar s = v.toScalar();
    if (s.isIntegral(false)) {
      rec.typed("int");
      rec.integer(s.toLong());
    } else if (s.isBoolean()) {
      rec.typed("bool");
      rec.boolean(s.toBool());
    } else {
      rec.typed("float");
      rec.floating(s.toDouble());
    }
  } else if (v.isIntList()) {
    rec.typed("torch.Size");
    rec.begin_list();
    for (int64_t x : v.toIntVector()) rec.integer(x);
    rec.end();
  } else if (v.isList() || v.isTuple() || v.isTensorList()) {
    std::vector<c10::IValue> items;
    if (v.isTuple()) {
      const auto& el = v.toTupleRef().elements();
      items.assign(el.begin(), el.end());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) items.emplace_back(t);
    } else {
      for (const auto& x : v.toList()) items.push_back(x);
    }
    rec.begin_list();
    for (size_t i = 0; i < items.size(); ++i)
      add_ivalue(rec, items[i], stem(file_stem, i), is_output);
    rec.end();
  } else if (v.isDevice()) {
    rec.typed("torch.device");
    rec.string(v.toDevice().str());
  } else {
    rec.null();
  }
}

std::string TorchCapture::stem(const std::string& base, std::string_view part) const {
  if (!names_tensors()) return std::string();
  std::string s = base;
  s += '.';
  s += part;
  return s;
}

std::string TorchCapture::stem(const std::string& base, size_t index) const {
  return names_tensors() ? base + "." + std::to_string(index) : std::string();
}

std::vector<std::string>& TorchCapture::module_stack() {
  thread_local std::vector<std::string> stack;
  return stack;
}

std::optional<std::string> TorchCapture::current_parent() const {
  const auto& st = module_stack();
  if (st.empty()) return std::nullopt;
  return st.back();
}

std::string TorchCapture::backward_of(const std::string& forward_name) {
  // "Module.x.Linear.forward.3" -> "Module.x.Linear.backward.3"
  size_t pos = forward_name.rfind(".forward.");
  if (pos == std::string::npos) return forward_name;
  return forward_name.substr(0, pos) + ".backward." + forward_name.substr(pos + 9);
}

void TorchCapture::submit(EntryRecord&& rec, bool with_stack, std::optional<std::string> parent) {
  seal_stats_batches();  // the writer never waits for a batch its thread has not launched
  std::lock_guard<std::mutex> lk(held_mu_);
  // A held module's parameters_grad goes before that module's backward (and after the backward
  // entries held before it); anything else comes after every held entry.
  size_t before = held_.size();
  for (size_t i = 0; i < held_.size(); ++i) {
    const std::string& prefix = held_[i].params_prefix;
    if (!prefix.empty() && rec.name.compare(0, prefix.size(), prefix) == 0) {
      before = i;
      break;
    }
  }
  for (size_t i = 0; i < before; ++i) submit_held(held_[i]);
  if (before == held_.size()) {
    held_.clear();
    submit_now(std::move(rec), with_stack, std::move(parent));
    return;
  }
  submit_now(std::move(rec), with_stack, std::move(parent));
  for (size_t i = before; i < held_.size(); ++i) submit_held(held_[i]);
  held_.clear();
}

void TorchCapture::submit_module_backward(EntryRecord&& rec, std::optional<std::string> parent) {
  seal_stats_batches();
  std::lock_guard<std::mutex> lk(held_mu_);
  // "Module.fc.Linear.backward.0" -> "Module.fc.Linear.parameters_grad."
  std::string prefix = rec.name;
  const size_t at = prefix.rfind(".backward.");
  prefix = at == std::string::npos ? std::string() : prefix.substr(0, at) + ".parameters_grad.";
  held_.push_back(Held{std::move(rec), std::move(parent), std::move(prefix)});
}

void TorchCapture::flush_held() {
  std::lock_guard<std::mutex> lk(held_mu_);
  for (Held& h : held_) submit_held(h);
  held_.clear();
}

void TorchCapture::submit_held(Held& h) {
  add_construct(h.rec.name, h.parent);  // construct.json lists it where dump.json does
  submit_now(std::move(h.rec), false, std::move(h.parent));
}

void TorchCapture::submit_now(EntryRecord&& rec, bool with_stack,
                              std::optional<std::string> parent) {
  if (config().task == Task::kOverflowCheck) {
    if (!rec.overflow) return;
    if (overflow_left_ == 0) return;
    if (overflow_left_ > 0) --overflow_left_;
  }
  CaptureSession::Frames frames;
  if (with_stack && stack_provider_ && config().extra_info) frames = stack_provider_();
  session_.submit(std::move(rec), std::move(frames), true, std::move(parent));
}

void TorchCapture::add_construct(const std::string& name, std::optional<std::string> parent) {
  const Level lv = config().level;
  if (lv == Level::kL1 || lv == Level::kL2 || !config().extra_info) return;
  session_.add_construct(name, std::move(parent));
}

namespace {

// A tensor's grad_fn: std::shared_ptr<Node> in torch 1.13, c10::intrusive_ptr<Node> in torch 2.14.
using NodePtr = std::decay_t<decltype(std::declval<const at::Tensor&>().grad_fn())>;

// The CopySlices node that holds an in-place op applied to the view `out`, when out covers all of
// its base (same sizes, strides and offset, so the base's gradients are the view's); else null.
NodePtr copy_slices_of(const at::Tensor& out, const NodePtr& fn) {
  if (!out.is_view() || fn->num_inputs() == 0 || fn->next_edges().empty()) return nullptr;
  const at::TensorBase& base = out._base();
  const auto& base_fn = base.grad_fn();
  if (!base_fn) return nullptr;
  // Node::name() is the demangled C++ type: "torch::autograd::CopySlices".
  const std::string kind = base_fn->name();
  if (kind.size() < 10 || kind.compare(kind.size() - 10, 10, "CopySlices") != 0) return nullptr;
  if (fn->next_edge(0).function.get() != base_fn.get()) return nullptr;
  if (base.sizes() != out.sizes() || base.strides() != out.strides() ||
      base.storage_offset() != out.storage_offset())
    return nullptr;
  return base_fn;
}

}  // namespace

void TorchCapture::attach_backward(const at::Tensor& out, std::string backward_name,
                                   std::optional<std::string> parent, bool in_place) {
  auto fn = out.grad_fn();
  if (!fn) return;
  if (in_place)
    if (auto slices = copy_slices_of(out, fn)) fn = std::move(slices);
  fn->add_post_hook(
      std::make_unique<BackwardEntryHook>(std::move(backward_name), std::move(parent)));
}

}  // namespace numprobe::capture
