// The free_benchmark section of msprobe's config.json (reference: msprobe.md §1.2, "task =
// free_benchmark"): each API in scope is run a second time with perturbed inputs and its outputs
// compared (docs/capture.md, "free_benchmark"). The values are msprobe's names, kept as strings:
// the Python front, which runs the perturbations, switches on them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

namespace numprobe::capture {

struct FreeBenchmarkConfig {
  std::string pert_mode = "improve_precision";
  std::string handler_type = "check";
  std::string fuzz_level = "L1";
  std::string fuzz_stage = "forward";
  std::string fuzz_device = "npu";  // "npu" = the tensors' own device; "cpu" goes with to_cpu
  bool if_preheat = false;
  int64_t preheat_step = 15;
  int64_t max_sample = 20;  // perturbed calls per API and step; > 0
};

// Allowed values, for the parser's "is not one of" messages.
inline constexpr std::initializer_list<const char*> kPertModes = {
    "improve_precision", "add_noise", "bit_noise", "no_change", "change_value", "to_cpu"};
inline constexpr std::initializer_list<const char*> kHandlerTypes = {"check", "fix"};
inline constexpr std::initializer_list<const char*> kFuzzStages = {"forward", "backward"};
inline constexpr std::initializer_list<const char*> kFuzzDevices = {"npu", "cpu"};
inline constexpr std::initializer_list<const char*> kFuzzLevels = {"L1"};

// The rules between fields (msprobe's, made errors where msprobe only warns or silently does
// something else): fix replaces a forward output with a higher-precision one, so it needs
// fuzz_stage forward, pert_mode improve_precision or to_cpu, and no preheat; fuzz_device cpu and
// pert_mode to_cpu go together; a backward stage needs a non-empty list (a backward re-run per
// API call is too costly for every API); level must be L1. Throws InputError(source, ...) naming
// the fields.
void check_free_benchmark(const FreeBenchmarkConfig& fb, bool list_empty, bool level_is_l1,
                          const std::string& source);

}  // namespace numprobe::capture
