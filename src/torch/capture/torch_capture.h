// The capture engine for PyTorch: one per process, shared by the Python module and the C++ API.
// It turns tensors and IValues into entry records, names entries (per-step counters), keeps the
// module stack for construct.json, attaches C++ autograd post-hooks for backward entries, and runs
// the L2 RecordFunction observer. Everything that is not torch lives in CaptureSession.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "capture/capture_config.h"
#include "capture/capture_session.h"

namespace numprobe::capture {

// Set while numprobe itself runs ATen ops (statistics, copies): hooks and the observer ignore them.
struct InternalGuard {
  InternalGuard();
  ~InternalGuard();
  static bool inside();
};

class TorchCapture {
 public:
  explicit TorchCapture(CaptureConfig cfg);
  ~TorchCapture();
  TorchCapture(const TorchCapture&) = delete;
  TorchCapture& operator=(const TorchCapture&) = delete;

  // The started engine, or nullptr: the one check every hook makes first.
  static TorchCapture* active() { return active_.load(std::memory_order_acquire); }

  // observe_aten: run the RecordFunction observer for levels L1/L2/mix too (the C++ API, where
  // aten ops are the APIs); Python runs it for L2 only.
  void start(bool observe_aten = false);
  void stop();
  void step();
  void set_init_step(int64_t step) { session_.set_step(step); }
  void set_rank(int64_t rank) { session_.set_rank(rank); }
  // What numprobe_env.json (env_summary.h) says about the front: "python" or "c++", and the JSON
  // members it adds (Python's version and seeds).
  void set_environment_info(std::string runtime, std::string extra) {
    env_runtime_ = std::move(runtime);
    env_extra_ = std::move(extra);
  }
  CaptureSession& session() { return session_; }
  const CaptureConfig& config() const { return session_.config(); }
  bool dumping() const { return session_.active(); }

  // "Functional.gelu" -> "Functional.gelu.3" (per-step counter).
  std::string next_api_name(const std::string& api_type);
  // Decides whether a forward entry is dumped (list/scope), given its full name.
  bool wants(const std::string& forward_entry);
  bool wants_direction(bool forward) const;
  // Whether tensors may be saved as files (then callers build file stems).
  bool names_tensors() const {
    return config().task == Task::kTensor || !config().tensor_list.empty();
  }
  // The file stem "<base>.<part>" of a tensor that may be saved; "" (no string built on the hot
  // path) when no tensor can be.
  std::string stem(const std::string& base, std::string_view part) const;
  std::string stem(const std::string& base, size_t index) const;
  bool wants_inputs() const { return config().data_mode.input; }
  bool wants_outputs() const { return config().data_mode.output; }

  // Appends one value: a tensor leaf, or null for an undefined tensor. file_stem names the .npy
  // in tensor mode: "<entry>.<input|output>.<i>[.<j>]".
  void add_tensor(EntryRecord& rec, const at::Tensor& t, const std::string& file_stem,
                  bool is_output);
  void add_ivalue(EntryRecord& rec, const c10::IValue& v, const std::string& file_stem,
                  bool is_output);

  // Module stack of the calling thread (innermost last), for construct.json parents.
  static std::vector<std::string>& module_stack();
  std::optional<std::string> current_parent() const;
  static std::string backward_of(const std::string& forward_name);

  // An empty record with recycled buffers (see CaptureSession::new_record).
  EntryRecord new_record() { return session_.new_record(); }
  // Queues the entry (stack attached when with_stack and a provider is set).
  void submit(EntryRecord&& rec, bool with_stack, std::optional<std::string> parent);
  // A module's backward entry, held with the module backward entries that follow it until an entry
  // of another kind comes: a parameters_grad entry of a held module goes before that module's
  // backward. msprobe's dumps list a module's parameters_grad before its backward (torch runs the
  // AccumulateGrad nodes before the hook node full backward hooks add); numprobe observes the
  // module's backward on the nodes the call made, which finish first.
  // Its construct.json node is added when it is queued.
  void submit_module_backward(EntryRecord&& rec, std::optional<std::string> parent);
  void add_construct(const std::string& name, std::optional<std::string> parent);

  // Registers a C++ post-hook on out.grad_fn() that dumps "<name>.backward" (inputs: grads of the
  // forward outputs; outputs: grads of the forward inputs). No-op when out has no grad_fn.
  // `in_place`: the API modified `out` in place. When out is a view (a module backward hook's
  // input is one), autograd then records the op inside a CopySlices node of the view's base and
  // gives the view a fresh view node that only passes gradients through; the hook goes on the
  // CopySlices node where the view covers its whole base, so the entry holds the op's gradients.
  void attach_backward(const at::Tensor& out, std::string backward_name,
                       std::optional<std::string> parent, bool in_place = false);

  using StackProvider = CaptureSession::Frames (*)();
  static void set_stack_provider(StackProvider p) { stack_provider_ = p; }

 private:
  void enable_observer();
  void disable_observer();
  void submit_now(EntryRecord&& rec, bool with_stack, std::optional<std::string> parent);
  void flush_held();  // the held module backward entries, if any, are queued

  struct Held {
    EntryRecord rec;
    std::optional<std::string> parent;
    std::string params_prefix;  // "<module>.parameters_grad."
  };
  void submit_held(Held& h);
  std::mutex held_mu_;      // module backward entries may come from autograd's threads
  std::vector<Held> held_;  // in the order they came

  CaptureSession session_;
  EntryFilter filter_;
  uint64_t observer_handle_ = 0;
  bool observer_on_ = false;
  int64_t overflow_left_;
  static std::atomic<TorchCapture*> active_;
  static StackProvider stack_provider_;
  std::string env_runtime_ = "c++", env_extra_;  // numprobe_env.json's front fields
};

}  // namespace numprobe::capture
