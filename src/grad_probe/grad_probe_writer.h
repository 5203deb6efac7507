// Writes a run as msprobe's grad_probe does (docs/formats/grad_probe.md):
//   {dump_path}/rank{r}/grad_summary_{step}.csv   one line per recorded parameter
//   {dump_path}/rank{r}/step{step}/{param}.npy    grad > 0 as a numpy bool array (L1, L2)
// Each file goes to a temporary name and is renamed into place, so a reader never sees half a
// file; the summary is written last, after the step's direction files. Statistics and direction
// bits are computed on the calling thread (the gradient is only valid there); the files are written
// by a FileQueue thread: flush() waits for them and reports a write error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capture/capture_config.h"
#include "grad_probe/file_queue.h"
#include "grad_probe/grad_summary.h"
#include "numprobe/dtype.h"

namespace numprobe::grad_probe {

class GradProbeWriter {
 public:
  // cfg.task must be grad_probe; dump_path is made absolute now (a later chdir changes nothing).
  GradProbeWriter(capture::CaptureConfig cfg, int64_t rank);

  const capture::CaptureConfig& config() const { return cfg_; }
  int64_t rank() const { return rank_; }
  std::string rank_dir() const;

  // The optimizer step counter's rule (msprobe: the step-th call of an optimizer's step, from 0)
  // lives in the front; these say what the config selects.
  bool step_selected(int64_t step) const;
  bool param_selected(const std::string& name) const;

  // Starts step `step`: lines and direction files go to it until end_step().
  void begin_step(int64_t step);
  // One parameter's gradient (count contiguous elements of dtype, shape as torch gives it).
  void add(const std::string& name, const void* data, size_t count, DType dtype,
           const std::vector<int64_t>& shape);
  // Writes grad_summary_{step}.csv (the header alone when no parameter had a gradient, as msprobe).
  void end_step();
  // Returns once every file of the steps ended so far is on disk; rethrows a write error.
  void flush() { files_.flush(); }

 private:
  capture::CaptureConfig cfg_;
  int64_t rank_;
  int64_t step_ = -1;
  bool step_dir_made_ = false;
  std::string text_;
  FileQueue files_;
};

}  // namespace numprobe::grad_probe
