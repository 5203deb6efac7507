// A libtorch program that trains a small torch::nn MLP for three steps and dumps it with
// numprobe: aten ops through the RecordFunction observer, modules through NUMPROBE_SCOPE.
//
//   train_mlp <dump_path> [level]      (level: mix (default), L1, L2, L0)
// Then: numprobe info <dump_path>, or numprobe compare between two such dumps.
#include <torch/torch.h>

#include <iostream>

#include "numprobe/capture.h"
#include "numprobe/capture_scope.h"

struct Mlp : torch::nn::Module {
  Mlp() {
    fc1 = register_module("fc1", torch::nn::Linear(16, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 4));
  }
  torch::Tensor forward(torch::Tensor x) {
    NUMPROBE_SCOPE_VAR(block, "mlp.Mlp");
    block.input(x);
    torch::Tensor h;
    {
      NUMPROBE_SCOPE_VAR(s, "mlp.fc1.Linear");
      s.input(x);
      h = fc1->forward(x);
      s.output(h);
    }
    h = torch::gelu(h);
    {
      NUMPROBE_SCOPE_VAR(s, "mlp.fc2.Linear");
      s.input(h);
      h = fc2->forward(h);
      s.output(h);
    }
    block.output(h);
    return h;
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: train_mlp <dump_path> [level]\n";
    return 2;
  }
  torch::manual_seed(0);
  torch::set_num_threads(1);
  auto model = std::make_shared<Mlp>();
  torch::optim::SGD opt(model->parameters(), 0.1);
  auto x = torch::randn({8, 16});
  auto y = torch::randn({8, 4});

  numprobe::DebuggerOptions o;
  o.dump_path = argv[1];
  o.level = argc > 2 ? argv[2] : "mix";
  try {
    numprobe::PrecisionDebugger dbg(o);
    for (int step = 0; step < 3; ++step) {
      dbg.start();
      opt.zero_grad();
      auto loss = torch::mse_loss(model->forward(x), y);
      loss.backward();
      opt.step();
      dbg.stop();
      std::cout << "step " << step << " loss " << loss.item<double>() << " -> " << dbg.rank_dir()
                << "\n";
      dbg.step();
    }
  } catch (const std::exception& e) {
    std::cerr << "train_mlp: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
