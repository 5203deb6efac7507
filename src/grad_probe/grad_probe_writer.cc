#include "grad_probe/grad_probe_writer.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "numprobe/error.h"

namespace numprobe::grad_probe {
namespace {

std::string absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof buf) == nullptr) return p;
  return std::string(buf) + "/" + p;
}

}  // namespace

GradProbeWriter::GradProbeWriter(capture::CaptureConfig cfg, int64_t rank)
    : cfg_(std::move(cfg)), rank_(rank) {
  if (cfg_.task != capture::Task::kGradProbe)
    throw Error("grad_probe writer: the config's task is " +
                std::string(capture::task_name(cfg_.task)) + ", not grad_probe");
  cfg_.dump_path = absolute(cfg_.dump_path);
}

std::string GradProbeWriter::rank_dir() const {
  return cfg_.dump_path + "/rank" + std::to_string(rank_);
}

bool GradProbeWriter::step_selected(int64_t step) const {
  return capture::step_selected(cfg_, step);
}

bool GradProbeWriter::param_selected(const std::string& name) const {
  const auto& l = cfg_.grad_probe.param_list;
  return l.empty() || std::find(l.begin(), l.end(), name) != l.end();
}

void GradProbeWriter::begin_step(int64_t step) {
  step_ = step;
  step_dir_made_ = false;
  text_ = std::string(kUtf8Bom) + summary_header(cfg_.grad_probe);
  files_.make_dirs(rank_dir());
}

void GradProbeWriter::add(const std::string& name, const void* data, size_t count, DType dtype,
                          const std::vector<int64_t>& shape) {
  if (step_ < 0) throw Error("grad_probe writer: add() before begin_step()");
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw Error("grad_probe: parameter name \"" + name + "\" cannot name a direction file");
  const bool directions = cfg_.grad_probe.level != capture::GradLevel::kL0;
  std::vector<uint8_t> direction(directions ? count : 0);
  GradStat s = compute_grad_stat(name, data, count, dtype, shape, cfg_.grad_probe,
                                 directions ? direction.data() : nullptr);
  text_ += summary_line(s, cfg_.grad_probe);
  if (!directions) return;
  const std::string dir = rank_dir() + "/step" + std::to_string(step_);
  if (!step_dir_made_) {
    files_.make_dirs(dir);
    step_dir_made_ = true;
  }
  files_.write_bool_npy(dir + "/" + name + ".npy", std::move(direction), shape);
}

void GradProbeWriter::end_step() {
  if (step_ < 0) return;
  // No fsync: a step's files are rewritten by a rerun, and fsync per step would cost milliseconds.
  files_.write_text(rank_dir() + "/grad_summary_" + std::to_string(step_) + ".csv",
                    std::move(text_));
  step_ = -1;
  text_.clear();
}

}  // namespace numprobe::grad_probe
