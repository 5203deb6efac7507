#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace numprobe::cli {

Progress::Progress(std::string label, uint64_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() {
  finish();
}

void Progress::update(uint64_t done) {
  if (!enabled_ || total_ == 0) return;
  auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::seconds(1)) return;
  if (shown_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  shown_ = true;
  const int width = 30;
  double frac = done >= total_ ? 1.0 : static_cast<double>(done) / static_cast<double>(total_);
  int filled = static_cast<int>(frac * width);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(width - filled), '.');
  fprintf(stderr, "\r%s [%s] %3d%%", label_.c_str(), bar.c_str(), static_cast<int>(frac * 100));
  fflush(stderr);
}

void Progress::finish() {
  if (shown_) {
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    shown_ = false;
  }
}

}  // namespace numprobe::cli
