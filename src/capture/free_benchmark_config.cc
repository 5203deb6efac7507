#include "capture/free_benchmark_config.h"

#include "numprobe/error.h"

namespace numprobe::capture {

void check_free_benchmark(const FreeBenchmarkConfig& fb, bool list_empty, bool level_is_l1,
                          const std::string& source) {
  auto fail = [&](const std::string& what) { throw InputError(source, "free_benchmark: " + what); };
  if (!level_is_l1) {
    fail("field \"level\" must be \"L1\" (free_benchmark perturbs APIs)");
  }
  if (fb.handler_type == "fix") {
    if (fb.fuzz_stage != "forward") {
      fail(
          "field \"free_benchmark.fuzz_stage\": handler_type \"fix\" replaces forward outputs; "
          "it cannot apply to the backward stage (use handler_type \"check\" there)");
    }
    if (fb.pert_mode != "improve_precision" && fb.pert_mode != "to_cpu") {
      fail(
          "field \"free_benchmark.pert_mode\": handler_type \"fix\" needs pert_mode "
          "improve_precision or to_cpu (the output is replaced by the perturbed run's), got \"" +
          fb.pert_mode + "\"");
    }
    if (fb.if_preheat) {
      fail(
          "field \"free_benchmark.if_preheat\": preheat is not supported with handler_type "
          "\"fix\"");
    }
  }
  if ((fb.fuzz_device == "cpu") != (fb.pert_mode == "to_cpu")) {
    fail(
        "fields \"free_benchmark.fuzz_device\" and \"free_benchmark.pert_mode\": fuzz_device "
        "\"cpu\" goes with pert_mode \"to_cpu\" and only with it (got fuzz_device \"" +
        fb.fuzz_device + "\", pert_mode \"" + fb.pert_mode + "\")");
  }
  if (fb.fuzz_stage == "backward" && list_empty) {
    fail(
        "field \"free_benchmark.list\": fuzz_stage \"backward\" needs a non-empty list of the "
        "APIs to check");
  }
}

}  // namespace numprobe::capture
