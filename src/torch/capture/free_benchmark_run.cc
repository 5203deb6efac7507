#include "torch/capture/free_benchmark_run.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/core/stack.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "capture/free_benchmark_compare.h"
#include "capture/free_benchmark_rules.h"
#include "numprobe/error.h"
#include "torch/capture/aten_ops.h"
#include "torch/capture/torch_capture.h"
#include "torch/dtype_names.h"

namespace numprobe::capture {

std::atomic<TorchFreeBenchmark*> TorchFreeBenchmark::active_{nullptr};

namespace {

// numprobe's own ATen work: no autograd, no RecordFunction (so no re-entry), hooks stay away.
struct Quiet {
  InternalGuard internal;
  at::NoGradGuard no_grad;
  at::RecordFunctionGuard no_record{false};
};

enum class Mode { kImprovePrecision, kAddNoise, kBitNoise, kNoChange, kChangeValue, kToCpu };

Mode parse_mode(const std::string& m) {
  if (m == "improve_precision") return Mode::kImprovePrecision;
  if (m == "add_noise") return Mode::kAddNoise;
  if (m == "bit_noise") return Mode::kBitNoise;
  if (m == "no_change") return Mode::kNoChange;
  if (m == "change_value") return Mode::kChangeValue;
  return Mode::kToCpu;  // the config parser admits nothing else
}

bool is_float(const at::Tensor& t) {
  return t.defined() && t.is_floating_point() && t.device().type() != c10::DeviceType::Meta;
}

// Applies fn to every tensor of a value (tensors, tensor lists, lists of optional tensors).
template <typename Fn>
c10::IValue map_tensors(const c10::IValue& v, Fn&& fn) {
  if (v.isTensor()) return fn(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorList().vec()) out.push_back(fn(t));
    return out;
  }
  if (v.isList()) {
    auto list = v.toList();
    c10::impl::GenericList out(list.elementType());
    for (size_t i = 0; i < list.size(); ++i) out.push_back(map_tensors(list.get(i), fn));
    return out;
  }
  return v;
}

// The input a value-changing perturbation goes to: the first floating tensor or tensor list
// (msprobe: the first positional argument that is a floating tensor or a container; aten's
// integer lists are sizes, not data); -1 when there is none (the call is not checked).
int perturbed_index(c10::ArrayRef<const c10::IValue> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& v = inputs[i];
    if ((v.isTensor() && is_float(v.toTensor())) || v.isTensorList()) return static_cast<int>(i);
  }
  return -1;
}

class Perturbation {
 public:
  explicit Perturbation(Mode m) : mode_(m) {}
  bool applied() const { return applied_; }

  std::vector<c10::IValue> operator()(std::vector<c10::IValue> args, int index) {
    switch (mode_) {
      case Mode::kNoChange:
        applied_ = true;
        return args;
      case Mode::kImprovePrecision:
      case Mode::kToCpu:
        for (auto& a : args) a = map_tensors(a, [&](const at::Tensor& t) { return widen(t); });
        return args;
      default:
        args[static_cast<size_t>(index)] = map_tensors(
            args[static_cast<size_t>(index)], [&](const at::Tensor& t) { return change(t); });
        return args;
    }
  }

 private:
  at::Tensor widen(const at::Tensor& t) {
    if (!t.defined()) return t;
    const bool half = t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
    if (mode_ == Mode::kImprovePrecision) {
      if (!half) return t;
      applied_ = true;
      return t.to(at::kFloat);
    }
    applied_ = true;  // to_cpu; half-precision CPU kernels are missing or slow: fp32, as msprobe
    return t.to(at::kCPU, half ? at::kFloat : t.scalar_type());
  }

  static bool large_enough(const at::Tensor& t) {
    const double noise = free_benchmark_noise(to_dtype(t.scalar_type()));
    if (!is_float(t) || t.numel() == 0 || noise == 0) return false;
    return t.abs().max().item<double>() >= noise;
  }

  at::Tensor change(const at::Tensor& t) {
    if (!is_float(t)) return t;
    if (mode_ == Mode::kAddNoise) {
      if (!large_enough(t)) return t;
      const double eps = free_benchmark_noise(to_dtype(t.scalar_type()));
      applied_ = true;
      return at::where(t.abs() > std::sqrt(eps), t + eps, t).to(t.scalar_type());
    }
    if (mode_ == Mode::kBitNoise) {
      c10::ScalarType bits_type;
      double tiny;
      switch (t.scalar_type()) {
        case at::kHalf:
          bits_type = at::kShort, tiny = 6.103515625e-05;
          break;
        case at::kBFloat16:
          bits_type = at::kShort, tiny = std::numeric_limits<float>::min();
          break;
        case at::kFloat:
          bits_type = at::kInt, tiny = std::numeric_limits<float>::min();
          break;
        case at::kDouble:
          bits_type = at::kLong, tiny = std::numeric_limits<double>::min();
          break;
        default:
          return t;
      }
      if (!large_enough(t)) return t;
      applied_ = true;
      const at::Tensor c = t.contiguous();
      const at::Tensor bits = c.view(bits_type);
      const at::Tensor flipped = at::bitwise_xor(bits, 1);
      return at::where(c.abs() > tiny, flipped, bits).view(t.scalar_type());
    }
    // change_value: swap the first and last element (rows of a 3-D tensor, as msprobe does)
    if (t.dim() == 0 || t.size(0) < 2) return t;
    applied_ = true;
    at::Tensor out = t.clone();
    if (t.dim() == 1) {
      out[0].copy_(t[-1]);
      out[-1].copy_(t[0]);
    } else {
      out[0][0].copy_(t[-1][-1]);
      out[-1][-1].copy_(t[0][0]);
    }
    return out;
  }

  Mode mode_;
  bool applied_ = false;
};

// The default generators a call may draw from: the CPU one, and the CUDA one of each device its
// inputs are on. Their states before the call are kept; the re-run starts from them.
struct RngStates {
  std::vector<std::pair<at::Generator, at::Tensor>> states;

  static RngStates of(const std::vector<c10::IValue>& inputs) {
    RngStates r;
    r.add(at::detail::getDefaultCPUGenerator());
    std::set<c10::DeviceIndex> cuda;
    for (const auto& v : inputs) {
      map_tensors(v, [&](const at::Tensor& t) {
        if (t.defined() && t.is_cuda()) cuda.insert(t.device().index());
        return t;
      });
    }
    for (c10::DeviceIndex d : cuda)
      r.add(at::globalContext().defaultGenerator(c10::Device(c10::DeviceType::CUDA, d)));
    return r;
  }
  RngStates now() const {
    RngStates r;
    for (const auto& [g, s] : states) r.add(g);
    return r;
  }
  void restore() const {
    for (const auto& [g, s] : states) {
      at::Generator gen = g;
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(s);
    }
  }

 private:
  void add(at::Generator g) {
    std::lock_guard<std::mutex> lock(g.mutex());
    states.emplace_back(g, g.get_state());
  }
};

struct Context : public at::ObserverContext {
  std::string entry, api_type;
  const AtenOpInfo* info = nullptr;
  std::vector<c10::IValue> inputs;  // copies, taken before the call
  int index = -1;
  RngStates rng;
};

thread_local int t_depth = 0;     // FUNCTION records open on this thread
thread_local int t_backward = 0;  // BACKWARD_FUNCTION records open on this thread

std::string shape_text(const at::Tensor& t) {
  std::string s = "torch.Size([";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "])";
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    ++t_backward;
    return nullptr;
  }
  const bool outermost = t_depth++ == 0 && t_backward == 0;
  TorchFreeBenchmark* fb = TorchFreeBenchmark::active();
  if (!outermost || !fb || InternalGuard::inside()) return nullptr;
  const AtenOpInfo& info = aten_op_info(fn);
  if (info.skip) return nullptr;
  const auto inputs = fn.inputs();
  const int index = perturbed_index(inputs);
  std::string entry;
  if (!fb->sample(info.api_type, index >= 0, entry)) return nullptr;
  Quiet quiet;
  auto ctx = std::make_unique<Context>();
  ctx->entry = std::move(entry);
  ctx->api_type = info.api_type;
  ctx->info = &info;
  ctx->index = index;
  for (const auto& v : inputs)
    ctx->inputs.push_back(
        map_tensors(v, [](const at::Tensor& t) { return t.defined() ? t.detach().clone() : t; }));
  ctx->rng = RngStates::of(ctx->inputs);
  return ctx;
}

void compare_outputs(TorchFreeBenchmark& fb, const Context& ctx, const at::RecordFunction& fn,
                     const std::vector<c10::IValue>& perturbed) {
  const auto& outputs = fn.outputs();
  const bool to_cpu = fb.config().free_benchmark.pert_mode == "to_cpu";
  const bool no_change = fb.config().free_benchmark.pert_mode == "no_change";
  for (size_t i = 0; i < outputs.size() && i < perturbed.size(); ++i) {
    if (!outputs[i].isTensor() || !perturbed[i].isTensor()) continue;
    const at::Tensor& o = outputs[i].toTensor();
    const at::Tensor& p = perturbed[i].toTensor();
    if (!is_float(o) || !is_float(p) || o.numel() != p.numel()) continue;
    const bool wide = o.scalar_type() == at::kDouble || p.scalar_type() == at::kDouble || to_cpu;
    const auto type = wide ? at::kDouble : at::kFloat;
    const at::Tensor a = o.detach().to(at::kCPU, type).contiguous();
    const at::Tensor b = p.detach().to(at::kCPU, type).contiguous();
    const auto n = static_cast<size_t>(a.numel());
    const DType out_type = to_dtype(o.scalar_type());
    double deviation;
    bool consistent, flipped = false;
    if (to_cpu) {
      const BenchmarkErrors e = benchmark_errors(a.data_ptr<double>(), b.data_ptr<double>(), n,
                                                 kFreeBenchmarkCpuSmallValue);
      if (!e.golden_finite) continue;
      const double rtol = free_benchmark_cpu_rtol(out_type);
      consistent = e.max_abs_small <= rtol && e.max_rel <= rtol &&
                   e.err_balance <= kFreeBenchmarkCpuErrBalance;
      deviation = std::max(e.max_rel, e.max_abs_small);
    } else {
      const double tol = free_benchmark_abs_tol(to_dtype(p.scalar_type()));
      const PerturbationRatio r =
          wide ? perturbation_ratio(a.data_ptr<double>(), b.data_ptr<double>(), n, tol)
               : perturbation_ratio(a.data_ptr<float>(), b.data_ptr<float>(), n, tol);
      deviation = r.ratio - 1;
      if (fb.preheating(ctx.api_type, r.ratio)) continue;
      const double th = std::max(free_benchmark_threshold(out_type, no_change),
                                 fb.preheat_threshold(ctx.api_type));
      flipped = r.sign_flipped;
      consistent = !flipped && 1.0 / th <= r.ratio && r.ratio <= th;
    }
    const bool single = outputs.size() == 1;
    if (!consistent)
      fb.report(ctx.entry, deviation, flipped, torch_dtype_name(o.scalar_type()), shape_text(o),
                single ? std::nullopt : std::optional<int64_t>(i));
  }
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* base) {
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    --t_backward;
    return;
  }
  --t_depth;
  auto* ctx = static_cast<Context*>(base);
  TorchFreeBenchmark* fb = TorchFreeBenchmark::active();
  if (!ctx || !fb) return;
  Quiet quiet;
  Perturbation perturb(parse_mode(fb->config().free_benchmark.pert_mode));
  torch::jit::Stack stack = perturb(ctx->inputs, ctx->index);
  if (!perturb.applied()) return;
  fb->count_perturbed();
  const RngStates after = ctx->rng.now();
  ctx->rng.restore();
  try {
    ctx->info->handle->callBoxed(&stack);
  } catch (const std::exception& e) {
    after.restore();
    // The training goes on; the call is named, not silently dropped.
    static std::set<std::string> warned;
    if (warned.insert(ctx->api_type).second)
      std::fprintf(stderr,
                   "numprobe free_benchmark: %s: the perturbed re-run failed, not checked "
                   "(%s)\n",
                   ctx->entry.c_str(), e.what());
    return;
  }
  after.restore();
  compare_outputs(*fb, *ctx, fn, stack);
}

}  // namespace

TorchFreeBenchmark::TorchFreeBenchmark(CaptureConfig cfg, const std::string& source)
    : cfg_(std::move(cfg)), filter_(cfg_) {
  if (cfg_.task != Task::kFreeBenchmark)
    throw InputError(source, "field \"task\": expected \"free_benchmark\"");
  const auto& fb = cfg_.free_benchmark;
  if (fb.handler_type == "fix")
    throw InputError(source,
                     "free_benchmark: field \"free_benchmark.handler_type\": \"fix\" replaces an "
                     "API's output, which the C++ API's aten observer cannot do; use \"check\" "
                     "here, or fix from Python (numprobe.PrecisionDebugger)");
  if (fb.fuzz_stage == "backward")
    throw InputError(source,
                     "free_benchmark: field \"free_benchmark.fuzz_stage\": \"backward\" needs a "
                     "gradient hook per API call, which the C++ API does not attach; use "
                     "\"forward\" here, or the Python front for backward");
  TorchFreeBenchmark* expected = nullptr;
  if (!active_.compare_exchange_strong(expected, this))
    throw Error("numprobe: a free_benchmark PrecisionDebugger is already running in this process");
}

TorchFreeBenchmark::~TorchFreeBenchmark() {
  stop();
  active_.store(nullptr, std::memory_order_release);
}

bool TorchFreeBenchmark::selected() const {
  return step_selected(cfg_, step_) && rank_selected(cfg_, rank_);
}

void TorchFreeBenchmark::start() {
  if (observing_ || !selected()) return;
  if (first_step_ < 0) first_step_ = step_;
  handle_ = at::addGlobalCallback(
      at::RecordFunctionCallback(&on_start, &on_end)
          .needsInputs(true)
          .needsOutputs(true)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  observing_ = true;
}

void TorchFreeBenchmark::stop() {
  if (!observing_) return;
  at::removeCallback(handle_);
  observing_ = false;
  t_depth = 0;
  t_backward = 0;
}

void TorchFreeBenchmark::step() {
  const bool was = observing_;
  stop();
  ++step_;
  calls_.clear();
  sampled_.clear();
  filter_.reset();
  if (was) start();
}

bool TorchFreeBenchmark::sample(const std::string& api_type, bool checkable, std::string& entry) {
  const int64_t n = calls_[api_type]++;
  entry = api_type + "." + std::to_string(n) + ".forward";
  if (!filter_.selects_everything() && !filter_.wants_forward(entry, "")) return false;
  if (!checkable) return false;  // counted, but takes none of the API's max_sample (as Python)
  int64_t& taken = sampled_[api_type];
  if (taken >= cfg_.free_benchmark.max_sample) return false;
  ++taken;
  return true;
}

bool TorchFreeBenchmark::preheating(const std::string& api_type, double ratio) {
  const auto& fb = cfg_.free_benchmark;
  if (!fb.if_preheat || first_step_ < 0 || step_ - first_step_ >= fb.preheat_step) return false;
  auto [it, fresh] = preheat_ratio_.emplace(api_type, 1.0);
  it->second = std::max(it->second, ratio);
  return true;
}

double TorchFreeBenchmark::preheat_threshold(const std::string& api_type) const {
  auto it = preheat_ratio_.find(api_type);
  return it == preheat_ratio_.end() ? 1.0 : it->second;
}

void TorchFreeBenchmark::report(const std::string& entry, double deviation, bool symbol_flipping,
                                const std::string& dtype, const std::string& shape,
                                std::optional<int64_t> output_index) {
  FreeBenchmarkRow row;
  row.rank = rank_;
  row.pert_mode = cfg_.free_benchmark.pert_mode;
  row.stage = "forward";
  row.step = step_;
  row.api_name = entry;
  row.max_rel = deviation;
  row.symbol_flipping = symbol_flipping;
  row.dtype = dtype;
  row.shape = shape;
  row.output_index = output_index;
  append_free_benchmark_row(cfg_.dump_path, row);
  ++rows_written_;
}

}  // namespace numprobe::capture
