// numprobe stats <file.npy|file.pt>...: the statistics line per file.
#include <cstdio>

#include "base/json_text.h"
#include "cli/subcommand.h"
#include "core/hash.h"
#include "core/stats.h"
#include "format/tensor_file.h"
#include "numprobe/error.h"

namespace numprobe::cli {
namespace {

std::string py(double v) {
  std::string s;
  base::append_py_float(s, v);
  return s;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

class StatsCommand : public Subcommand {
 public:
  const char* name() const override { return "stats"; }
  const char* summary() const override {
    return "Print min/max/mean/norm, NaN/Inf/zero counts and CRC-32 of .npy and torch .pt files";
  }
  std::vector<Flag> flags() override {
    return {
        {"files", ".npy or .pt (torch.save) files", Flag::kStrings, &files_, true},
        {"--json", "one JSON object per line", Flag::kBool, &json_},
        {"-j,--threads", "threads for large tensors (0 = all cores)", Flag::kInt, &threads_},
    };
  }

  int run() override {
    int failures = 0;
    if (!json_) {
      printf("%-9s %-16s %10s %24s %24s %24s %24s %5s %5s %5s %8s %8s  %s\n", "dtype", "shape",
             "count", "min", "max", "mean", "norm", "nan", "+inf", "-inf", "zeros", "crc32",
             "file");
    }
    for (const auto& f : files_) {
      try {
        print_one(f);
      } catch (const InputError& e) {
        fprintf(stderr, "numprobe stats: error: %s\n", e.what());
        ++failures;
      } catch (const Error& e) {
        fprintf(stderr, "numprobe stats: error: %s: %s\n", f.c_str(), e.what());
        ++failures;
      }
    }
    return failures ? 1 : 0;
  }

 private:
  void print_one(const std::string& path) {
    TensorFile f = TensorFile::open(path);
    StatsOptions opt;
    opt.threads = static_cast<int>(threads_);
    uint32_t crc = 0;
    opt.crc32 = &crc;  // one pass over the file for both
    TensorStats s = compute_stats(f.data(), f.count(), f.dtype(), opt);
    if (json_) {
      std::string out = "{\"file\": ";
      base::append_py_string(out, path);
      out += ", \"dtype\": \"" + std::string(dtype_name(f.dtype())) + "\"";
      out += ", \"shape\": " + shape_text(f.shape());
      out += ", \"count\": " + std::to_string(s.count);
      out += ", \"min\": " + py(s.min) + ", \"max\": " + py(s.max);
      out += ", \"mean\": " + py(s.mean()) + ", \"norm\": " + py(s.norm());
      out += ", \"sum\": " + py(s.sum);
      out += ", \"nan\": " + std::to_string(s.nan_count);
      out += ", \"pos_inf\": " + std::to_string(s.pos_inf_count);
      out += ", \"neg_inf\": " + std::to_string(s.neg_inf_count);
      out += ", \"zeros\": " + std::to_string(s.zero_count);
      out += ", \"crc32\": \"" + crc32_hex(crc) + "\"";
      out += ", \"xxh3\": \"" + xxh3_hex(f.data(), f.bytes()) + "\"}";
      printf("%s\n", out.c_str());
      return;
    }
    printf("%-9s %-16s %10llu %24s %24s %24s %24s %5llu %5llu %5llu %8llu %8s  %s\n",
           std::string(dtype_name(f.dtype())).c_str(), shape_text(f.shape()).c_str(),
           (unsigned long long)s.count, py(s.min).c_str(), py(s.max).c_str(), py(s.mean()).c_str(),
           py(s.norm()).c_str(), (unsigned long long)s.nan_count,
           (unsigned long long)s.pos_inf_count, (unsigned long long)s.neg_inf_count,
           (unsigned long long)s.zero_count, crc32_hex(crc).c_str(), path.c_str());
  }

  static std::string xxh3_hex(const void* p, size_t n) {
    char buf[20];
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)xxh3_64(p, n));
    return buf;
  }

  std::vector<std::string> files_;
  bool json_ = false;
  int64_t threads_ = 0;
};

}  // namespace

std::unique_ptr<Subcommand> make_stats_command() {
  return std::make_unique<StatsCommand>();
}

}  // namespace numprobe::cli
