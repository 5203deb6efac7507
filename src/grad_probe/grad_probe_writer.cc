#include "grad_probe/grad_probe_writer.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "base/file_util.h"
#include "core/npy.h"
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
  text_ = summary_header(cfg_.grad_probe);
  base::make_dirs(rank_dir());
}

void GradProbeWriter::add(const std::string& name, const void* data, size_t count, DType dtype,
                          const std::vector<int64_t>& shape) {
  if (step_ < 0) throw Error("grad_probe writer: add() before begin_step()");
  const bool directions = cfg_.grad_probe.level != capture::GradLevel::kL0;
  if (directions) direction_.resize(count);
  GradStat s = compute_grad_stat(name, data, count, dtype, shape, cfg_.grad_probe,
                                 directions ? direction_.data() : nullptr);
  text_ += summary_line(s, cfg_.grad_probe);
  if (!directions) return;
  const std::string dir = rank_dir() + "/step" + std::to_string(step_);
  if (!step_dir_made_) {
    base::make_dirs(dir);
    step_dir_made_ = true;
  }
  write_npy(dir + "/" + name + ".npy", direction_.data(), DType::kBool, shape);
}

void GradProbeWriter::end_step() {
  if (step_ < 0) return;
  // No fsync: a step's files are rewritten by a rerun, and fsync per step would cost milliseconds.
  base::AtomicFileWriter out(rank_dir() + "/grad_summary_" + std::to_string(step_) + ".csv",
                             /*durable=*/false);
  out.write(kUtf8Bom);
  out.write(text_);
  out.commit();
  step_ = -1;
  text_.clear();
}

}  // namespace numprobe::grad_probe
