// Writes synthetic msprobe statistics dumps of any size through numprobe's own DumpWriter, shaped
// like a transformer's mix-level dump: Functional/Tensor/Torch API entries with tensor and scalar
// arguments, Module entries with parameters, backward entries and parameter grads. Deterministic
// for a given seed. Used by the JSON and compare benchmarks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "core/npy.h"
#include "format/dump_writer.h"
#include "numprobe/dtype.h"
#include "numprobe/error.h"

namespace numprobe::bench {

struct GeneratedDump {
  size_t entries = 0;
  size_t tensors = 0;
};

inline void gen_tensor(base::JsonWriter& w, std::mt19937_64& rng, std::mt19937_64& values,
                       int ndim) {
  std::uniform_real_distribution<double> u(-3, 3);
  w.begin_object();
  w.key("type");
  w.string_value("torch.Tensor");
  w.key("dtype");
  w.string_value(rng() % 4 == 0 ? "torch.bfloat16" : "torch.float32");
  w.key("shape");
  w.begin_array();
  for (int i = 0; i < ndim; ++i) w.int_value(static_cast<int64_t>(1 + rng() % 4096));
  w.end_array();
  double a = u(values), b = u(values);
  w.key("Max");
  w.float_value(a > b ? a : b);
  w.key("Min");
  w.float_value(a > b ? b : a);
  w.key("Mean");
  w.float_value(u(values) * 1e-3);
  w.key("Norm");
  w.float_value(std::abs(u(values)) * 100);
  w.key("requires_grad");
  w.bool_value(rng() % 2 == 0);
  w.end_object();
}

// Writes `entries` entries into rank_dir through a DumpWriter and finishes it. `seed` fixes the
// structure (names, shapes, dtypes); `value_seed` the statistics, so two dumps with the same seed
// and different value seeds pair row for row and differ in values.
// `construct`: also a construct.json placing the entries in a model hierarchy (8 entries per
// block module, 100 blocks per stage module, stages at the root), for graph builds.
inline GeneratedDump generate_statistics_dump(const std::string& rank_dir, size_t entries,
                                              uint64_t seed = 1, uint64_t value_seed = 1,
                                              bool construct = false) {
  static const char* kApis[] = {"Functional.linear",     "Functional.gelu",   "Tensor.__add__",
                                "Functional.layer_norm", "Torch.matmul",      "Functional.softmax",
                                "Tensor.view",           "Functional.dropout"};
  std::mt19937_64 rng(seed), values(value_seed);
  DumpHeader h;
  h.level = "mix";
  DumpWriter writer(rank_dir, h);
  GeneratedDump g;
  std::string body;
  std::vector<size_t> counters(8, 0);
  while (g.entries < entries) {
    body.clear();
    base::JsonWriter w(body, base::JsonDialect::python(1), 2);
    size_t api = rng() % 8;
    size_t n = counters[api]++;
    bool backward = rng() % 3 == 0;
    std::string name =
        std::string(kApis[api]) + "." + std::to_string(n) + (backward ? ".backward" : ".forward");
    w.begin_object();
    if (backward) {
      w.key("input");
      w.begin_array();
      gen_tensor(w, rng, values, 3);
      w.end_array();
      w.key("output");
      w.begin_array();
      gen_tensor(w, rng, values, 3);
      gen_tensor(w, rng, values, 2);
      w.end_array();
      g.tensors += 3;
    } else {
      w.key("input_args");
      w.begin_array();
      gen_tensor(w, rng, values, 3);
      gen_tensor(w, rng, values, 2);
      w.begin_object();
      w.key("type");
      w.string_value("int");
      w.key("value");
      w.int_value(static_cast<int64_t>(rng() % 8));
      w.end_object();
      w.end_array();
      w.key("input_kwargs");
      w.begin_object();
      w.key("alpha");
      w.begin_object();
      w.key("type");
      w.string_value("float");
      w.key("value");
      w.float_value(0.5);
      w.end_object();
      w.end_object();
      w.key("output");
      w.begin_array();
      gen_tensor(w, rng, values, 3);
      w.end_array();
      g.tensors += 3;
    }
    w.end_object();
    writer.add_entry(name, body);
    writer.add_stack(
        name, {"File train.py, line " + std::to_string(10 + api) + ", in step, \n y = op(x)"});
    if (construct) {
      const size_t block = g.entries / 8, stage = block / 100;
      const std::string block_name = "Module.stages." + std::to_string(stage) + ".blocks." +
                                     std::to_string(block % 100) + ".Block.forward.0";
      const std::string stage_name = "Module.stages." + std::to_string(stage) + ".Stage.forward.0";
      if (g.entries % 800 == 0) writer.add_construct(stage_name, std::nullopt);
      if (g.entries % 8 == 0) writer.add_construct(block_name, stage_name);
      writer.add_construct(name, block_name);
    }
    ++g.entries;
  }
  writer.finish();
  return g;
}

}  // namespace numprobe::bench

namespace numprobe::bench {

// A tensor-mode dump of `rows` output tensors of `elements` elements each, with .npy data files.
// `scale` multiplies every value (1 for the golden side, 1 + 1e-4 for a target whose values all
// differ slightly). Returns the bytes of tensor data written.
inline size_t generate_tensor_dump(const std::string& rank_dir, size_t rows, size_t elements,
                                   DType dtype, double scale) {
  DumpHeader h;
  h.task = "tensor";
  h.dump_data_dir = rank_dir + "/dump_tensor_data";
  std::filesystem::create_directories(*h.dump_data_dir);
  DumpWriter writer(rank_dir, h);
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal;
  std::vector<float> f(elements);
  std::vector<uint16_t> half(elements);
  size_t bytes = 0;
  for (size_t r = 0; r < rows; ++r) {
    for (float& v : f) v = static_cast<float>(normal(rng) * scale);
    const std::string name = "Functional.op." + std::to_string(r) + ".forward";
    const std::string file = name + ".output.0.npy";
    const void* data = f.data();
    if (dtype == DType::kBF16 || dtype == DType::kF16) {
      for (size_t i = 0; i < elements; ++i)
        half[i] = dtype == DType::kBF16 ? float_to_bf16(f[i]) : float_to_half(f[i]);
      data = half.data();
    } else if (dtype != DType::kF32) {
      throw Error("generate_tensor_dump: float32, bfloat16 or float16 only");
    }
    write_npy(*h.dump_data_dir + "/" + file, data, dtype, {static_cast<int64_t>(elements)});
    bytes += elements * dtype_size(dtype);
    std::string body;
    base::JsonWriter w(body, base::JsonDialect::python(1), 2);
    w.begin_object();
    w.key("input_args");
    w.begin_array();
    w.end_array();
    w.key("output");
    w.begin_array();
    w.begin_object();
    w.key("type");
    w.string_value("torch.Tensor");
    w.key("dtype");
    w.string_value(std::string(dtype_torch_name(dtype)));
    w.key("shape");
    w.begin_array();
    w.int_value(static_cast<int64_t>(elements));
    w.end_array();
    w.key("data_name");
    w.string_value(file);
    w.end_object();
    w.end_array();
    w.end_object();
    writer.add_entry(name, body);
  }
  writer.finish();
  return bytes;
}

}  // namespace numprobe::bench
