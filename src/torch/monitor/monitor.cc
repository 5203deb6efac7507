// numprobe::TrainerMon (numprobe/monitor.h): the libtorch front of the training monitor.
#include "numprobe/monitor.h"

#include <torch/nn/module.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <type_traits>

#include "monitor/param_name.h"
#include "numprobe/error.h"
#include "numprobe/monitor/config.h"
#include "torch/monitor/monitor_collector.h"

namespace numprobe {

using monitor::MetricGroup;

namespace {

// The optimizer's state of p. libtorch keys it by the TensorImpl's address: as a string
// (c10::guts::to_string, torch 1.x) or as the pointer (torch 2.x).
template <typename Map>
const torch::optim::OptimizerParamState* param_state(const Map& states, const at::Tensor& p) {
  using Key = typename Map::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;
    key << p.unsafeGetTensorImpl();
    auto it = states.find(key.str());
    return it == states.end() ? nullptr : it->second.get();
  } else {
    auto it = states.find(static_cast<Key>(p.unsafeGetTensorImpl()));
    return it == states.end() ? nullptr : it->second.get();
  }
}

// exp_avg and exp_avg_sq of Adam and AdamW states (undefined for other optimizers).
std::pair<at::Tensor, at::Tensor> moments(const torch::optim::OptimizerParamState* s) {
  if (auto* a = dynamic_cast<const torch::optim::AdamParamState*>(s))
    return {a->exp_avg(), a->exp_avg_sq()};
  if (auto* w = dynamic_cast<const torch::optim::AdamWParamState*>(s))
    return {w->exp_avg(), w->exp_avg_sq()};
  return {};
}

int64_t rank_from_env() {
  const char* r = std::getenv("RANK");
  return r && *r ? std::strtoll(r, nullptr, 10) : 0;
}

}  // namespace

struct TrainerMon::Impl {
  std::string config_path;
  monitor::MonitorConfig config;
  int64_t rank = 0;
  std::unique_ptr<capture::MonitorCollector> collector;
  torch::optim::Optimizer* optimizer = nullptr;
  std::vector<std::pair<at::Tensor, std::string>> params;  // parameter, row name
  std::vector<int64_t> param_micro;                        // micro step of each parameter
  std::map<std::string, int64_t> module_micro;             // forward micro step per module
  std::map<std::string, int64_t> module_grad_micro;
  int64_t micro_batches = 1;
  int64_t step = 0;
  int64_t collected = 0;
  std::vector<std::string> anomalies;

  // Counted, not derived from the step: a run resumed past start_step (start_iteration) still
  // collects collect_times steps, as msprobe's has_collect_times does.
  bool collecting() const {
    if (!collector || step < config.start_step) return false;
    if ((step - config.start_step) % config.step_interval != 0) return false;
    return collected < config.collect_times;
  }

  static int64_t next_micro(std::map<std::string, int64_t>& m, const std::string& k, int64_t n) {
    int64_t& v = m[k];
    const int64_t cur = v;
    v = (v + 1) % n;
    return cur;
  }
};

TrainerMon::TrainerMon(const std::string& config_path, int64_t rank)
    : impl_(std::make_shared<Impl>()) {
  impl_->config_path = config_path;
  impl_->config = monitor::load_monitor_config(config_path);
  impl_->rank = rank >= 0 ? rank : rank_from_env();
  // What needs Python's hooks (module hooks, torch.distributed's functions) is refused here.
  const auto& c = impl_->config;
  for (const auto& [on, field] : {std::pair<bool, const char*>{c.dynamic_on, "dynamic_on"},
                                  {c.cc.enable, "cc_distribution"},
                                  {c.stack_info, "stack_info"},
                                  {c.print_struct, "print_struct"}})
    if (on)
      throw Error(config_path + ": field '" + field +
                  "' is supported by the Python TrainerMon only (docs/monitor.md)");
  if (impl_->config.xy_distribution && impl_->config.all_xy)
    throw Error(config_path +
                ": field 'all_xy' needs module hooks, which libtorch modules do not have: name "
                "the modules with record_activation and list them in targets");
  const char* base = std::getenv("MONITOR_OUTPUT_DIR");
  if (impl_->config.monitors_rank(impl_->rank) && impl_->config.collect_times > 0)
    impl_->collector = std::make_unique<capture::MonitorCollector>(
        impl_->config, base && *base ? base : "./monitor_output", impl_->rank);
}

TrainerMon::~TrainerMon() {
  try {
    if (impl_->collector) impl_->collector->close();
  } catch (const std::exception& e) {  // a destructor must not throw (a full disk, say)
    std::fprintf(stderr, "numprobe TrainerMon: closing the monitor files: %s\n", e.what());
  }
}

void TrainerMon::set_monitor(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                             int64_t grad_acc_steps, int64_t start_iteration) {
  if (grad_acc_steps < 1) throw Error("numprobe TrainerMon: grad_acc_steps must be >= 1");
  Impl& m = *impl_;
  // The gradient hooks of a first call cannot be taken back from libtorch's tensors.
  if (m.optimizer)
    throw Error("numprobe TrainerMon: set_monitor was already called (one model per monitor)");
  m.optimizer = &optimizer;
  m.micro_batches = grad_acc_steps;
  m.step = start_iteration;
  m.params.clear();
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    const at::Tensor& p = item.value();
    if (!p.requires_grad()) continue;
    const std::string full = "0:" + item.key();
    const std::string squashed =
        "0:" + monitor::squash_param_name(item.key(), m.config.squash_name);
    bool wanted = m.config.targets.empty();
    for (const auto& [target, spec] : m.config.targets)
      if (item.key().rfind(target, 0) == 0 || full.rfind(target, 0) == 0 ||
          squashed.rfind(target, 0) == 0)
        wanted = true;
    if (!wanted) continue;
    bool taken = false;
    for (const auto& [q, name] : m.params) taken = taken || name == squashed;
    m.params.emplace_back(p, taken ? full : squashed);
  }
  m.param_micro.assign(m.params.size(), 0);
  if (!m.config.wg_distribution || !m.collector) return;
  std::weak_ptr<Impl> weak = impl_;
  for (size_t i = 0; i < m.params.size(); ++i) {
    at::Tensor p = m.params[i].first;
    // Called with each micro-batch's gradient before it is accumulated into p.grad().
    p.register_hook([weak, i](const at::Tensor& grad) {
      auto self = weak.lock();
      if (!self) return;
      Impl& s = *self;
      const int64_t micro = s.param_micro[i];
      s.param_micro[i] = (micro + 1) % s.micro_batches;
      if (!s.collecting()) return;
      const auto& [param, name] = s.params[i];
      // The gradient as accumulated so far (what Python and msprobe read after accumulation).
      if (!s.config.monitor_mbs_grad && micro + 1 != s.micro_batches) return;
      const at::Tensor acc = param.grad().defined() ? param.grad() + grad : grad;
      s.collector->add(MetricGroup::kGradUnreduced, name, s.config.monitor_mbs_grad ? micro : -1,
                       acc);
    });
  }
}

void TrainerMon::record_activation(const std::string& module, const at::Tensor& input,
                                   const at::Tensor& output) {
  Impl& m = *impl_;
  if (!m.config.xy_distribution || !m.collecting()) return;
  const std::string name = "0:" + module;
  if (!m.config.targets.empty() && !m.config.targets.count(module) && !m.config.targets.count(name))
    return;
  const int64_t micro = Impl::next_micro(m.module_micro, name, m.micro_batches);
  if (!m.config.backward_only) {
    m.collector->add(MetricGroup::kActv, name + ".input", micro, input);
    m.collector->add(MetricGroup::kActv, name + ".output", micro, output);
  }
  if (m.config.forward_only) return;
  std::weak_ptr<Impl> weak = impl_;
  // Gradients arrive in backward: the output's first, then the input's (where it needs one).
  auto grad_hook = [weak, name](const char* slot) {
    return [weak, name, slot](const at::Tensor& grad) {
      auto self = weak.lock();
      if (!self || !self->collecting()) return;
      const int64_t mi =
          Impl::next_micro(self->module_grad_micro, name + slot, self->micro_batches);
      self->collector->add(MetricGroup::kActvGrad, name + slot, mi, grad);
    };
  };
  if (output.requires_grad()) output.register_hook(grad_hook(".output"));
  if (input.requires_grad()) input.register_hook(grad_hook(".input"));
}

void TrainerMon::before_step() {
  Impl& m = *impl_;
  if (!m.collecting() || !m.optimizer) return;
  auto& c = *m.collector;
  if (m.config.wg_distribution)
    for (const auto& [p, name] : m.params)
      if (p.grad().defined()) c.add(MetricGroup::kGradReduced, name, -1, p.grad());
  const auto& states = m.optimizer->state();
  if (m.config.mv_distribution || m.config.mg_direction) {
    std::vector<std::pair<at::Tensor, at::Tensor>> mv;
    for (const auto& [p, name] : m.params) mv.push_back(moments(param_state(states, p)));
    if (m.config.mv_distribution) {
      for (size_t i = 0; i < m.params.size(); ++i)
        if (mv[i].first.defined()) c.add(MetricGroup::kExpAvg, m.params[i].second, -1, mv[i].first);
      for (size_t i = 0; i < m.params.size(); ++i)
        if (mv[i].second.defined())
          c.add(MetricGroup::kExpAvgSq, m.params[i].second, -1, mv[i].second);
    }
    if (m.config.mg_direction) {
      for (size_t i = 0; i < m.params.size(); ++i) {
        const at::Tensor& g = m.params[i].first.grad();
        const at::Tensor& mom = mv[i].first;
        if (!g.defined()) continue;
        if (m.step == 0 || !mom.defined() || mom.numel() == 0) {
          c.add_value(MetricGroup::kOther, m.params[i].second, 1.0);
        } else {
          const double n = static_cast<double>(mom.numel());
          c.add(MetricGroup::kOther, m.params[i].second, -1,
                ((g.sign() * mom.sign()).sum() / n + 1) / 2);
        }
      }
    }
  }
  if (m.config.param_distribution)
    for (const auto& [p, name] : m.params) c.add(MetricGroup::kParamOrigin, name, -1, p);
}

void TrainerMon::after_step() {
  Impl& m = *impl_;
  if (m.collecting()) {
    m.collector->forget_cached_stats();  // the update may not have bumped version counters
    if (m.config.param_distribution)
      for (const auto& [p, name] : m.params)
        m.collector->add(MetricGroup::kParamUpdated, name, -1, p);
    for (const auto& a : m.collector->finish_step(m.step)) m.anomalies.push_back(a.message);
    ++m.collected;
  } else if (m.collector && m.collector->pending_rows()) {
    m.collector->discard_step();
  }
  ++m.step;
}

bool TrainerMon::collecting() const {
  return impl_->collecting();
}
int64_t TrainerMon::step() const {
  return impl_->step;
}
std::string TrainerMon::run_dir() const {
  return impl_->collector ? impl_->collector->run_dir() : std::string();
}
std::vector<std::string> TrainerMon::anomalies() const {
  return impl_->anomalies;
}

}  // namespace numprobe
