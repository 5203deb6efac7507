// Module level for C++ frontend models (libtorch has no module hooks): a Scope names the module
// that the aten ops run inside it belong to, and dumps "Module.<name>.forward.<n>" with the
// tensors given to input()/output() when it ends.
//
//   torch::Tensor forward(torch::Tensor x) {
//     NUMPROBE_SCOPE_VAR(s, "encoder.layer3.Linear");   // or NUMPROBE_SCOPE("...") without output
//     s.input(x);
//     auto y = fc->forward(x);
//     s.output(y);
//     return y;
//   }
// A Scope does nothing when no PrecisionDebugger is capturing, or for levels L1/L2.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace numprobe {

class Scope {
 public:
  explicit Scope(std::string module_name);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  void input(const at::Tensor& t);
  void output(const at::Tensor& t);

 private:
  bool active_ = false;
  std::string name_;  // "Module.<module_name>.forward.<n>"
  std::vector<at::Tensor> inputs_, outputs_;
};

}  // namespace numprobe

#define NUMPROBE_CONCAT_INNER(a, b) a##b
#define NUMPROBE_CONCAT(a, b) NUMPROBE_CONCAT_INNER(a, b)
#define NUMPROBE_SCOPE(name) ::numprobe::Scope NUMPROBE_CONCAT(numprobe_scope_, __LINE__)(name)
#define NUMPROBE_SCOPE_VAR(var, name) ::numprobe::Scope var(name)
