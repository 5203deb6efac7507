// A libtorch program that trains a small MLP with AdamW under numprobe's training monitor
// (numprobe/monitor.h): weight gradients, Adam moments, parameters and the two layers'
// activations, every step, in msprobe's monitor files.
//
//   train_mlp_monitor <monitor_config.json> [steps] [nan_step]
// nan_step >= 0 multiplies fc1's output by NaN at that step (an injected fault for the anomaly
// rules). Output under $MONITOR_OUTPUT_DIR (./monitor_output); then numprobe monitor-analyse.
#include <torch/torch.h>

#include <cstdlib>
#include <iostream>
#include <limits>

#include "numprobe/monitor.h"

struct Mlp : torch::nn::Module {
  Mlp() {
    fc1 = register_module("fc1", torch::nn::Linear(16, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 4));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: train_mlp_monitor <monitor_config.json> [steps] [nan_step]\n";
    return 2;
  }
  const int steps = argc > 2 ? std::atoi(argv[2]) : 5;
  const int nan_step = argc > 3 ? std::atoi(argv[3]) : -1;
  torch::manual_seed(0);
  torch::set_num_threads(1);
  auto model = std::make_shared<Mlp>();
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-2));
  auto x = torch::randn({8, 16});
  auto y = torch::randn({8, 4});
  try {
    numprobe::TrainerMon mon(argv[1]);
    mon.set_monitor(*model, opt);
    for (int step = 0; step < steps; ++step) {
      opt.zero_grad();
      auto h = model->fc1->forward(x);
      if (step == nan_step) h = h * std::numeric_limits<float>::quiet_NaN();
      mon.record_activation("fc1", x, h);
      auto a = torch::gelu(h);
      auto out = model->fc2->forward(a);
      mon.record_activation("fc2", a, out);
      auto loss = torch::mse_loss(out, y);
      loss.backward();
      mon.before_step();
      opt.step();
      mon.after_step();
      std::cout << "step " << step << " loss " << loss.item<double>() << "\n";
    }
    std::cout << "monitor output: " << mon.run_dir() << "\n";
    for (const auto& a : mon.anomalies()) std::cout << "anomaly: " << a << "\n";
  } catch (const std::exception& e) {
    std::cerr << "train_mlp_monitor: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
