// The training monitor for libtorch programs: msprobe's TrainerMon in C++ (the Python one is
// numprobe.TrainerMon). Same config.json, same files (docs/monitor.md).
//
//   numprobe::TrainerMon mon("monitor_config.json");        // rank from $RANK, else 0
//   mon.set_monitor(model, optimizer);                        // names parameters, hooks grads
//   for (...) {
//     auto y = model->forward(x);
//     mon.record_activation("fc1", x, y);                     // xy_distribution (no module hooks
//     loss.backward();                                        //   in libtorch: the program names
//     them) mon.before_step(); optimizer.step(); mon.after_step();  // writes the step
//   }
//
// Weight gradients unreduced are read by tensor hooks on the parameters as they are accumulated
// (before any data-parallel reduce the program does), reduced ones in before_step(); Adam/AdamW
// exp_avg and exp_avg_sq from the optimizer's state. Errors (bad config, unwritable output)
// throw numprobe::Error naming the file and field.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace at {
class Tensor;
}
namespace torch {
namespace nn {
class Module;
}
namespace optim {
class Optimizer;
}
}  // namespace torch

namespace numprobe {

class TrainerMon {
 public:
  // rank < 0: $RANK where set, else 0. Output under $MONITOR_OUTPUT_DIR (./monitor_output).
  explicit TrainerMon(const std::string& config_path, int64_t rank = -1);
  ~TrainerMon();
  TrainerMon(const TrainerMon&) = delete;
  TrainerMon& operator=(const TrainerMon&) = delete;

  void set_monitor(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                   int64_t grad_acc_steps = 1, int64_t start_iteration = 0);
  // A module's input and output of this micro-batch (rows "<module>.input", "<module>.output");
  // their gradients are recorded when backward reaches them (actv_grad).
  void record_activation(const std::string& module, const at::Tensor& input,
                         const at::Tensor& output);
  void before_step();
  void after_step();

  bool collecting() const;
  int64_t step() const;
  std::string run_dir() const;
  // Anomaly messages reported so far.
  std::vector<std::string> anomalies() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with the gradient hooks
};

}  // namespace numprobe
