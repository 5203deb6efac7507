// numprobe_env.json (env_summary.h): what the run's torch says about itself.
#include "torch/capture/env_summary.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include <cstdlib>
#include <string_view>

#include "base/json_writer.h"

namespace numprobe::capture {
namespace {

// The BLAS line of at::show_config() ("BLAS_INFO=open, ..." on most builds), or "".
std::string blas_of(const std::string& config) {
  for (std::string_view key : {"BLAS_INFO=", "LAPACK_INFO="}) {
    const size_t at = config.find(key);
    if (at == std::string::npos) continue;
    const size_t begin = at + key.size();
    const size_t end = config.find_first_of(",\n", begin);
    return config.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  }
  return "";
}

// Variables that change what a training computes (threads, BLAS, determinism, TF32, hashing).
constexpr const char* kVariables[] = {
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "PYTHONHASHSEED",
    "CUBLAS_WORKSPACE_CONFIG",
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_DETERMINISTIC",
    "CUDA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "WORLD_SIZE",
    "RANK",
};

}  // namespace

std::string environment_summary_json(const std::string& runtime, const std::string& extra) {
  static const std::string blas = blas_of(at::show_config());
  at::Context& ctx = at::globalContext();
  std::string out;
  base::JsonWriter w(out, base::JsonDialect::python(1));
  w.begin_object();
  w.key("runtime");
  w.string_value(runtime);
  w.key("torch_version");
  w.string_value(TORCH_VERSION);
  w.key("device");
  w.string_value(at::detail::getCUDAHooks().hasCUDA() ? "cuda" : "cpu");
  w.key("cuda_devices");
  w.int_value(at::detail::getCUDAHooks().hasCUDA() ? at::detail::getCUDAHooks().getNumGPUs() : 0);
  w.key("blas");
  w.string_value(blas);
  w.key("num_threads");
  w.int_value(at::get_num_threads());
  w.key("num_interop_threads");
  w.int_value(at::get_num_interop_threads());
  w.key("deterministic_algorithms");
  w.bool_value(ctx.deterministicAlgorithms());
  w.key("cudnn_deterministic");
  w.bool_value(ctx.deterministicCuDNN());
  w.key("cudnn_benchmark");
  w.bool_value(ctx.benchmarkCuDNN());
  w.key("allow_tf32_matmul");
  w.bool_value(ctx.allowTF32CuBLAS());
  w.key("allow_tf32_cudnn");
  w.bool_value(ctx.allowTF32CuDNN());
  w.key("torch_initial_seed");
  w.int_value(static_cast<int64_t>(at::detail::getDefaultCPUGenerator().current_seed()));
  w.key("environment");
  w.begin_object();
  for (const char* name : kVariables) {
    if (const char* v = std::getenv(name)) {
      w.key(name);
      w.string_value(v);
    }
  }
  w.end_object();
  w.end_object();
  if (!extra.empty()) {  // the front's members, before the closing brace
    out.pop_back();
    out += ",\n " + extra + "\n}";
  }
  out += '\n';
  return out;
}

}  // namespace numprobe::capture
