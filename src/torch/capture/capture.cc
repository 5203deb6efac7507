// The C++ API (numprobe/capture.h, numprobe/capture_scope.h) over TorchCapture.
#include <ATen/core/grad_mode.h>

#include <cstdlib>

#include "numprobe/capture.h"
#include "numprobe/capture_scope.h"
#include "numprobe/error.h"
#include "torch/capture/free_benchmark_run.h"
#include "torch/capture/torch_capture.h"

namespace numprobe {
namespace {

// NUMPROBE_CONFIG=<config.json> (set by `numprobe locate`, docs/locate.md) wins over the options:
// a driver changes what a program dumps without editing it.
std::string config_source(const DebuggerOptions& o) {
  if (const char* env = std::getenv("NUMPROBE_CONFIG"); env && *env) return env;
  return o.config_path.empty() ? "<DebuggerOptions>" : o.config_path;
}

capture::CaptureConfig make_config(const DebuggerOptions& o) {
  if (const char* env = std::getenv("NUMPROBE_CONFIG"); env && *env)
    return capture::load_capture_config(env);
  const std::string where = config_source(o);
  std::optional<std::string_view> task;
  if (o.task) task = *o.task;
  capture::CaptureConfig cfg;
  if (!o.config_path.empty())
    cfg = capture::load_capture_config(o.config_path, task);
  else if (task)
    cfg.task = capture::parse_task(*task, where);
  if (o.dump_path) cfg.dump_path = *o.dump_path;
  if (o.level) cfg.level = capture::parse_level(*o.level, where);
  if (o.step) cfg.steps = *o.step;
  return cfg;
}

}  // namespace

PrecisionDebugger::PrecisionDebugger(const std::string& config_path)
    : PrecisionDebugger(DebuggerOptions{config_path, {}, {}, {}, {}, {}}) {}

PrecisionDebugger::PrecisionDebugger(const DebuggerOptions& options) {
  capture::CaptureConfig cfg = make_config(options);
  if (cfg.task == capture::Task::kFreeBenchmark) {
    free_benchmark_ =
        std::make_unique<capture::TorchFreeBenchmark>(std::move(cfg), config_source(options));
    if (options.rank) free_benchmark_->set_rank(*options.rank);
    return;
  }
  impl_ = std::make_unique<capture::TorchCapture>(std::move(cfg));
  if (options.rank) impl_->set_rank(*options.rank);
}

PrecisionDebugger::~PrecisionDebugger() = default;

void PrecisionDebugger::start() {
  if (free_benchmark_) return free_benchmark_->start();
  impl_->start(/*observe_aten=*/true);
}
void PrecisionDebugger::stop() {
  if (free_benchmark_) return free_benchmark_->stop();
  impl_->stop();
}
void PrecisionDebugger::step() {
  if (free_benchmark_) return free_benchmark_->step();
  impl_->step();
}
void PrecisionDebugger::set_init_step(int64_t step) {
  if (free_benchmark_) return free_benchmark_->set_init_step(step);
  impl_->set_init_step(step);
}
std::string PrecisionDebugger::rank_dir() const {
  if (free_benchmark_) return free_benchmark_->dump_path();
  return impl_->session().rank_dir();
}

Scope::Scope(std::string module_name) {
  capture::TorchCapture* cap = capture::TorchCapture::active();
  if (!cap || !cap->dumping()) return;
  const capture::Level lv = cap->config().level;
  if (lv != capture::Level::kL0 && lv != capture::Level::kMix) return;
  const std::string base = "Module." + module_name;
  name_ = base + ".forward." + std::to_string(cap->session().next_count(base));
  active_ = true;
  cap->add_construct(name_, cap->current_parent());
  capture::TorchCapture::module_stack().push_back(name_);
}

void Scope::input(const at::Tensor& t) {
  if (active_) inputs_.push_back(t);
}

void Scope::output(const at::Tensor& t) {
  if (active_) outputs_.push_back(t);
}

Scope::~Scope() {
  if (!active_) return;
  auto& stack = capture::TorchCapture::module_stack();
  if (!stack.empty()) stack.pop_back();
  capture::TorchCapture* cap = capture::TorchCapture::active();
  if (!cap || !cap->dumping() || !cap->wants(name_)) return;
  capture::InternalGuard guard;
  at::NoGradGuard no_grad;
  capture::EntryRecord rec;
  rec.name = name_;
  rec.begin_dict();
  rec.key("input_args");
  rec.begin_list();
  const std::string in = cap->stem(name_, "input"), out = cap->stem(name_, "output");
  for (size_t i = 0; i < inputs_.size(); ++i)
    cap->add_tensor(rec, inputs_[i], cap->stem(in, i), false);
  rec.end();
  rec.key("input_kwargs");
  rec.begin_dict();
  rec.end();
  rec.key("output");
  rec.begin_list();
  for (size_t i = 0; i < outputs_.size(); ++i)
    cap->add_tensor(rec, outputs_[i], cap->stem(out, i), true);
  rec.end();
  rec.end();
  auto parent = stack.empty() ? std::nullopt : std::optional<std::string>(stack.back());
  cap->submit(std::move(rec), false, parent);
}

}  // namespace numprobe
