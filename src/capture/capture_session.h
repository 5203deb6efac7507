// The torch-free half of capture: step/rank bookkeeping, per-step call counters, and a background
// writer that renders entries and writes them through DumpWriter (journal -> dump.json, stack.json,
// construct.json) and tensor .npy files, so the training thread only computes statistics.
//
// Threading: submit()/add_construct()/next_count() may be called from any thread (a mutex guards
// the queue and counters); step lifecycle calls (start/stop/advance_step) come from the thread that
// drives training. Files of a step are complete when stop() or advance_step() returns.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "capture/capture_config.h"
#include "capture/capture_record.h"

namespace numprobe {
class DumpWriter;
}

namespace numprobe::capture {

struct StackFrame {
  std::string file;
  int line = 0;
  std::string func;
};

struct SessionStats {
  uint64_t entries = 0;       // entries written so far (all steps)
  uint64_t tensor_files = 0;  // .npy files written
  uint64_t tensor_bytes = 0;
  uint64_t queue_high_water = 0;
};

class CaptureSession {
 public:
  explicit CaptureSession(CaptureConfig cfg);
  // Finishes the current step's files (like stop()).
  ~CaptureSession();
  CaptureSession(const CaptureSession&) = delete;
  CaptureSession& operator=(const CaptureSession&) = delete;

  const CaptureConfig& config() const { return cfg_; }
  // -1: not distributed, directory "rank"; otherwise "rank{R}". Call before start().
  void set_rank(int64_t rank) {
    rank_ = rank;
    rank_dir_.clear();
  }
  int64_t rank() const { return rank_; }
  // dump.json's "framework" ("pytorch" unless a front says otherwise: "mindspore"). Call before
  // start(); a step reopened from its files keeps the header they were written with.
  void set_framework(std::string framework) { framework_ = std::move(framework); }
  const std::string& framework() const { return framework_; }
  void set_step(int64_t step);  // msprobe set_init_step
  int64_t step() const { return step_; }

  // Begins capturing (files of the current step are reopened and appended to if an earlier
  // start/stop pair of this step wrote them). No-op when this step or rank is not selected.
  // Throws the writer's error, if it hit one since the last call.
  void start();
  // Stops capturing and completes the current step's files (queues the completion without
  // waiting for it when async_finish is on: then flush() or the destructor waits).
  void stop();
  // Off by default. On: stop()/advance_step() return at once and the writer assembles the
  // step's files while training goes on; the journal keeps a crash recoverable meanwhile.
  void set_async_finish(bool on) { async_finish_ = on; }
  // stop(), then the next step: counters reset. Capture stays started if it was.
  void advance_step();
  // True while started on a selected step and rank: the one check hooks make before any work.
  bool active() const { return active_.load(std::memory_order_relaxed); }
  bool finished_for_good() const;  // past the last selected step

  // Per-step call counter for a key (API type or module name); returns the value before the
  // increment.
  int64_t next_count(const std::string& key);
  // The counter of a key, for callers that count often: the slot stays valid for the session's
  // lifetime (a new step sets it to 0); next_count(slot) increments it.
  using CounterSlot = std::atomic<int64_t>*;
  CounterSlot counter_slot(const std::string& key);
  static int64_t next_count(CounterSlot slot) {
    return slot->fetch_add(1, std::memory_order_relaxed);
  }
  // Distinguishes sessions (a cached slot belongs to the session with this id).
  uint64_t id() const { return id_; }

  // An empty record whose buffers come from an entry already written (recording then allocates
  // nothing in steady state); a plain EntryRecord works as well.
  EntryRecord new_record();

  // The rank directory of the current step, and its dump_tensor_data/ (created on demand).
  std::string rank_dir() const;
  std::string tensor_dir();

  // Queue an entry; frames (innermost first, as msprobe) go to stack.json when extra_info is on;
  // parent goes to construct.json (nullopt: null) when has_parent. Blocks when the queue is full.
  // Stacks are shared: capture deduplicates them and the writer renders each one once per step.
  using Frames = std::shared_ptr<const std::vector<StackFrame>>;
  void submit(EntryRecord&& rec, Frames frames = nullptr, bool has_parent = false,
              std::optional<std::string> parent = std::nullopt);
  void add_construct(std::string name, std::optional<std::string> parent);
  // Queues <rank dir>/<file_name> for the writer thread, which writes `text` there unless the file
  // exists (directory made, tmp then rename, not durable; an error surfaces as the writer's).
  // For small per-step side files (numprobe_env.json): creating a directory and a file took the
  // training thread 0.1-3 ms of kernel time per dumped step on ext4, most of a small model's
  // capture cost.
  void write_side_file(std::string file_name, std::string text);
  // Waits until everything queued so far is written.
  void flush();
  // First error the writer hit (empty if none); capture stops writing after one.
  std::string writer_error() const;
  SessionStats stats() const;

 private:
  struct Job;
  struct ProducerCache;
  ProducerCache& producer_cache();
  void writer_loop();
  void run_job(Job& job);
  void open_writer();
  std::unique_ptr<Job> new_job();
  // Queues a construct or side-file job for the current rank directory (no back-pressure: few).
  void enqueue(std::unique_ptr<Job> job);
  std::shared_ptr<const std::string> job_dir();
  void finish_writer();
  std::string frame_text(const StackFrame& f);

  CaptureConfig cfg_;
  int64_t rank_ = -1;
  std::string framework_ = "pytorch";
  int64_t step_ = 0;
  bool started_ = false;
  std::atomic<bool> active_{false};

  const uint64_t id_;
  std::mutex counters_mu_;
  std::unordered_map<std::string, std::atomic<int64_t>> counters_;  // never erased (slots)

  mutable std::mutex mu_;
  std::condition_variable cv_work_, cv_done_;
  std::deque<std::unique_ptr<Job>> queue_;
  uint64_t submitted_ = 0, completed_ = 0;
  uint64_t finished_at_ = 0;     // submitted_ when the last finish job was queued
  bool writer_waiting_ = false;  // the writer sleeps on cv_work_
  bool flush_requested_ = false;
  bool async_finish_ = false;
  std::string rank_dir_;                        // cached while started (submit needs it per entry)
  std::shared_ptr<const std::string> job_dir_;  // rank_dir_, shared by the jobs of a step
  // Written jobs and emptied records, kept for reuse (bounded).
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Job>> free_jobs_;
  std::vector<EntryRecord> free_records_;
  bool stop_thread_ = false;
  std::string error_;
  SessionStats stats_;
  std::thread thread_;

  // Writer-thread state (also touched by the driving thread only while the queue is drained).
  std::unique_ptr<DumpWriter> writer_;
  std::string rendered_;       // writer thread: the entry being written
  SessionStats batch_counts_;  // writer thread: counts of the batch being written
  std::string writer_dir_;
  std::unordered_map<std::string, std::vector<std::string>> source_lines_;
  std::unordered_map<const void*, std::pair<Frames, std::vector<std::string>>> rendered_stacks_;
};

}  // namespace numprobe::capture
