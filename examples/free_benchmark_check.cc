// A libtorch program with one numerically fragile op, checked by numprobe's free_benchmark.
//
//   free_benchmark_check <config.json | ->      ("-": no numprobe at all)
//
// Two SGD steps of Linear -> tanh -> rrelu (random slopes: the check must replay the random
// generator's state), scaled by the difference of two nearly equal tensors
// (a - b: catastrophic cancellation, so a last-bit change of `a` moves the result by about 1 %,
// fifty times float32's threshold). With a config of task "free_benchmark", rows land in
// <dump_path>/free_benchmark.csv. Prints each step's loss and a weight checksum as exact hex
// floats: a check must not change them.
#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "numprobe/capture.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: free_benchmark_check <config.json | ->\n";
    return 2;
  }
  torch::manual_seed(0);
  torch::set_num_threads(1);
  torch::nn::Linear lin(8, 8);
  torch::optim::SGD opt(lin->parameters(), 0.1);
  auto x = torch::randn({4, 8});
  auto a = torch::rand({4, 8}) * 1000 + 1000;  // [1000, 2000): one ulp is 2^-13
  auto b = a + 0.01;                           // a - b keeps ~7 bits: one ulp of a is 1 %
  try {
    std::unique_ptr<numprobe::PrecisionDebugger> dbg;
    if (std::string(argv[1]) != "-") dbg = std::make_unique<numprobe::PrecisionDebugger>(argv[1]);
    for (int step = 0; step < 2; ++step) {
      if (dbg) dbg->start();
      opt.zero_grad();
      auto h = torch::rrelu(torch::tanh(lin->forward(x)), 0.125, 0.333, /*training=*/true);
      auto d = torch::sub(a, b);
      auto loss = (h * d).pow(2).mean();
      loss.backward();
      opt.step();
      if (dbg) {
        dbg->stop();
        dbg->step();
      }
      std::printf("step %d loss %a weight %a\n", step, loss.item<double>(),
                  lin->weight.sum().item<double>());
    }
  } catch (const std::exception& e) {
    std::cerr << "free_benchmark_check: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
