#include "capture/capture_session.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <iterator>
#include <utility>

#include "base/file_util.h"
#include "core/npy.h"
#include "format/dump_writer.h"
#include "numprobe/dump.h"
#include "numprobe/error.h"
#include "numprobe/stack_construct.h"

namespace numprobe::capture {
namespace {

// Bounds the memory the queue can hold while the writer lags (each job is one entry).
constexpr size_t kMaxQueuedJobs = 1 << 16;
// The writer is woken once this many jobs wait, or by its own timer: one wake-up per batch (a
// wake-up is a futex call on the recording thread).
constexpr size_t kWakeBatch = 2048;
constexpr auto kWriterPeriod = std::chrono::milliseconds(20);
// Jobs and records kept for reuse: enough for the entries of a few writer periods.
constexpr size_t kMaxPooled = 8192;
// Records and jobs a recording thread takes from the pools at once.
constexpr size_t kCacheChunk = 32;

std::atomic<uint64_t> g_next_session_id{1};

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[4096];
  if (!::getcwd(buf, sizeof buf)) return path;
  std::string p = path;
  if (p.rfind("./", 0) == 0) p = p.substr(2);
  return std::string(buf) + "/" + p;
}

}  // namespace

struct CaptureSession::Job {
  enum Kind { kEntry, kConstruct, kFinish, kSideFile } kind = kEntry;
  EntryRecord rec;
  Frames frames;
  bool has_parent = false;
  std::string name;
  std::optional<std::string> parent;
  std::string text;  // kSideFile: the file's bytes (name: its file name)
  // Rank dir at submission (a step change must not redirect queued work).
  std::shared_ptr<const std::string> dir;
};

CaptureSession::CaptureSession(CaptureConfig cfg)
    : cfg_(std::move(cfg)), id_(g_next_session_id.fetch_add(1)) {
  if (cfg_.task == Task::kFreeBenchmark) {
    // A session would silently dump statistics instead: free_benchmark runs in the Python torch
    // front (numprobe.PrecisionDebugger), which never makes a session for it.
    throw InputError(
        cfg_.dump_path,
        "task \"free_benchmark\" is run by numprobe.PrecisionDebugger for torch, not by "
        "this capture engine");
  }
  // grad_probe records gradients at optimizer steps, not calls: a capture session with it would
  // silently dump statistics instead (numprobe.PrecisionDebugger routes it to its own writer).
  if (cfg_.task == Task::kGradProbe)
    throw Error(
        "task \"grad_probe\" is not a capture of calls: numprobe records it through the torch "
        "PrecisionDebugger's monitor(model)");
  cfg_.dump_path = absolute(cfg_.dump_path);
  thread_ = std::thread([this] { writer_loop(); });
}

CaptureSession::~CaptureSession() {
  try {
    async_finish_ = false;  // the files must be complete when the session is gone
    stop();
  } catch (...) {
    // Destructors must not throw; the journal stays for `numprobe recover`.
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_thread_ = true;
  }
  cv_work_.notify_all();
  thread_.join();
}

void CaptureSession::set_step(int64_t step) {
  step_ = step;
  rank_dir_.clear();
}

bool CaptureSession::finished_for_good() const {
  int64_t last = max_step(cfg_);
  return last >= 0 && step_ > last;
}

std::string CaptureSession::rank_dir() const {
  if (!rank_dir_.empty()) return rank_dir_;
  // msprobe's names: rank{N} under torch.distributed, proc{pid} for a single process (msprobe 8.3
  // wrote a bare "rank" there; its newer releases find only proc{pid} or rank{N} in a step
  // directory).
  std::string dir = cfg_.dump_path + "/step" + std::to_string(step_);
  dir += rank_ >= 0 ? "/rank" + std::to_string(rank_) : "/proc" + std::to_string(::getpid());
  return dir;
}

std::string CaptureSession::tensor_dir() {
  std::string dir = rank_dir() + "/dump_tensor_data";
  base::make_dirs(dir);
  return dir;
}

void CaptureSession::start() {
  if (std::string err = writer_error(); !err.empty()) throw Error("numprobe capture: " + err);
  started_ = true;
  rank_dir_.clear();
  rank_dir_ = rank_dir();
  bool on = step_selected(cfg_, step_) && rank_selected(cfg_, rank_ < 0 ? 0 : rank_) &&
            !finished_for_good();
  active_.store(on, std::memory_order_relaxed);
}

void CaptureSession::stop() {
  active_.store(false, std::memory_order_relaxed);
  started_ = false;
  finish_writer();
}

void CaptureSession::advance_step() {
  bool was_started = started_;
  active_.store(false, std::memory_order_relaxed);
  finish_writer();
  ++step_;
  rank_dir_.clear();
  {
    // Slots stay valid: counters restart at 0 instead of being erased.
    std::lock_guard<std::mutex> lk(counters_mu_);
    for (auto& [key, count] : counters_) count.store(0, std::memory_order_relaxed);
  }
  if (was_started) start();
}

CaptureSession::CounterSlot CaptureSession::counter_slot(const std::string& key) {
  std::lock_guard<std::mutex> lk(counters_mu_);
  return &counters_.try_emplace(key, 0).first->second;
}

int64_t CaptureSession::next_count(const std::string& key) {
  return next_count(counter_slot(key));
}

// Per recording thread: records and jobs taken from a session's pools a chunk at a time, so that
// recording an entry takes no pool lock (each lock is a locked instruction that drains the
// store buffer, and the pool's cache line travels between the recording and writer cores).
struct CaptureSession::ProducerCache {
  uint64_t session = 0;
  std::vector<EntryRecord> records;
  std::vector<std::unique_ptr<Job>> jobs;
};

CaptureSession::ProducerCache& CaptureSession::producer_cache() {
  thread_local ProducerCache cache;
  if (cache.session != id_) {  // another session's leftovers: dropped, not mixed in
    cache.records.clear();
    cache.jobs.clear();
    cache.session = id_;
  }
  return cache;
}

namespace {
// Takes one item from a thread's cache into `out`, first refilling the cache from the shared pool
// (up to kCacheChunk items under one lock); false when both are empty.
template <typename T>
bool take_cached(std::vector<T>& local, std::vector<T>& pool, std::mutex& mu, T& out) {
  if (local.empty()) {
    std::lock_guard<std::mutex> lk(mu);
    const auto first = pool.end() - static_cast<std::ptrdiff_t>(std::min(pool.size(), kCacheChunk));
    local.insert(local.end(), std::make_move_iterator(first), std::make_move_iterator(pool.end()));
    pool.erase(first, pool.end());
  }
  if (local.empty()) return false;
  out = std::move(local.back());
  local.pop_back();
  return true;
}
}  // namespace

EntryRecord CaptureSession::new_record() {
  EntryRecord r;
  if (take_cached(producer_cache().records, free_records_, pool_mu_, r)) return r;
  // Room for a typical API entry (a few tensors), so that it does not grow step by step.
  r.reserve(32, 4, 64);
  return r;
}

// Called with mu_ held.
std::shared_ptr<const std::string> CaptureSession::job_dir() {
  if (rank_dir_.empty()) return std::make_shared<const std::string>(rank_dir());
  if (!job_dir_ || *job_dir_ != rank_dir_)
    job_dir_ = std::make_shared<const std::string>(rank_dir_);
  return job_dir_;
}

std::unique_ptr<CaptureSession::Job> CaptureSession::new_job() {
  std::unique_ptr<Job> job;
  if (!take_cached(producer_cache().jobs, free_jobs_, pool_mu_, job)) job = std::make_unique<Job>();
  return job;
}

void CaptureSession::submit(EntryRecord&& rec, Frames frames, bool has_parent,
                            std::optional<std::string> parent) {
  std::unique_ptr<Job> job = new_job();
  job->kind = Job::kEntry;
  std::swap(job->rec, rec);  // rec takes the job's old (empty) buffers back to the caller
  job->frames = std::move(frames);
  job->has_parent = has_parent;
  job->parent = std::move(parent);
  std::unique_lock<std::mutex> lk(mu_);
  job->dir = job_dir();
  cv_done_.wait(lk, [&] { return queue_.size() < kMaxQueuedJobs; });
  queue_.push_back(std::move(job));
  ++submitted_;
  if (queue_.size() > stats_.queue_high_water) stats_.queue_high_water = queue_.size();
  // Waking the writer is a futex syscall and a context switch: only when it sleeps. It drains
  // everything queued before it sleeps again.
  const bool wake = writer_waiting_ && queue_.size() >= kWakeBatch;
  lk.unlock();
  if (wake) cv_work_.notify_one();
}

void CaptureSession::add_construct(std::string name, std::optional<std::string> parent) {
  std::unique_ptr<Job> job = new_job();
  job->kind = Job::kConstruct;
  job->name = std::move(name);
  job->parent = std::move(parent);
  enqueue(std::move(job));
}

void CaptureSession::write_side_file(std::string file_name, std::string text) {
  std::unique_ptr<Job> job = new_job();
  job->kind = Job::kSideFile;
  job->name = std::move(file_name);
  job->text = std::move(text);
  enqueue(std::move(job));  // a finish job after it finds no writer open and does nothing
}

void CaptureSession::enqueue(std::unique_ptr<Job> job) {
  std::unique_lock<std::mutex> lk(mu_);
  job->dir = job_dir();
  queue_.push_back(std::move(job));
  ++submitted_;
  // As submit(): a wake-up per batch, not per module call.
  const bool wake = writer_waiting_ && queue_.size() >= kWakeBatch;
  lk.unlock();
  if (wake) cv_work_.notify_one();
}

void CaptureSession::flush() {
  std::unique_lock<std::mutex> lk(mu_);
  uint64_t target = submitted_;
  if (completed_ >= target) return;
  flush_requested_ = true;
  cv_work_.notify_one();
  cv_done_.wait(lk, [&] { return completed_ >= target; });
  flush_requested_ = false;
}

void CaptureSession::finish_writer() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (submitted_ == finished_at_) return;  // nothing written since the last finish
  }
  // Not from the per-thread cache: this also runs in ~CaptureSession, perhaps at thread exit.
  auto job = std::make_unique<Job>();
  job->kind = Job::kFinish;
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(std::move(job));
    finished_at_ = ++submitted_;
  }
  cv_work_.notify_one();
  if (async_finish_) return;
  flush();
  std::string err = writer_error();
  if (!err.empty()) throw Error("numprobe capture: " + err);
}

std::string CaptureSession::writer_error() const {
  std::lock_guard<std::mutex> lk(mu_);
  return error_;
}

SessionStats CaptureSession::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

void CaptureSession::writer_loop() {
  std::deque<std::unique_ptr<Job>> batch;
  for (;;) {
    bool failed;
    {
      std::unique_lock<std::mutex> lk(mu_);
      writer_waiting_ = true;
      // Jobs left below the wake-up batch are picked up within one period (a crash loses at most
      // that much).
      while (!stop_thread_ && queue_.empty()) cv_work_.wait_for(lk, kWriterPeriod);
      while (!stop_thread_ && queue_.size() < kWakeBatch && !flush_requested_ &&
             cv_work_.wait_for(lk, kWriterPeriod) == std::cv_status::no_timeout) {
      }
      writer_waiting_ = false;
      if (queue_.empty()) return;
      batch.swap(queue_);
      failed = !error_.empty();
    }
    cv_done_.notify_all();  // a producer blocked on a full queue may go on
    // The batch's records reach the journal in few writes (a crash loses what is queued anyway);
    // a writer that open_writer() makes during the batch holds its records too.
    if (writer_) writer_->hold_writes();
    for (auto& job : batch) {
      if (!failed) {
        try {
          run_job(*job);
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lk(mu_);
          error_ = e.what();
          failed = true;
        }
      }
      // Release tensor bytes and stacks before the producer is told; keep the buffers.
      job->rec.clear();
      job->frames.reset();
      job->parent.reset();
      job->name.clear();
      job->text.clear();
      job->dir.reset();
    }
    if (writer_ && !failed) {
      try {
        writer_->write_held();
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lk(mu_);
        error_ = e.what();
      }
    }
    const size_t done = batch.size();
    {
      std::lock_guard<std::mutex> lk(pool_mu_);
      for (auto& job : batch) {
        if (free_records_.size() < kMaxPooled && job->kind == Job::kEntry) {
          free_records_.push_back(std::move(job->rec));
          job->rec = EntryRecord();
        }
        if (free_jobs_.size() < kMaxPooled) free_jobs_.push_back(std::move(job));
      }
    }
    batch.clear();
    {
      // The batch's counts join stats_ here, not per entry: the queue lock is the one training
      // threads take to submit.
      std::lock_guard<std::mutex> lk(mu_);
      completed_ += done;
      stats_.entries += batch_counts_.entries;
      stats_.tensor_files += batch_counts_.tensor_files;
      stats_.tensor_bytes += batch_counts_.tensor_bytes;
    }
    batch_counts_ = SessionStats();
    cv_done_.notify_all();
  }
}

// Opens the writer for `dir`. A step captured in several start/stop rounds appends: the files an
// earlier round completed are read back and replayed into the new journal first.
void CaptureSession::open_writer() {
  DumpHeader h;
  h.task = std::string(task_name(cfg_.task));
  h.level = std::string(level_name(cfg_.level));
  h.framework = framework_;
  if (cfg_.task == Task::kTensor) h.dump_data_dir = writer_dir_ + "/dump_tensor_data";
  std::string json = writer_dir_ + "/dump.json";
  if (!base::file_exists(json)) {
    base::make_dirs(writer_dir_);
    writer_ = std::make_unique<DumpWriter>(writer_dir_, h);
    writer_->hold_writes();  // open_writer() runs inside a writer batch
    return;
  }
  DumpFile old = read_dump_json(json);
  StackTable stacks;
  ConstructTable constructs;
  if (base::file_exists(writer_dir_ + "/stack.json"))
    stacks = read_stack_json(writer_dir_ + "/stack.json");
  if (base::file_exists(writer_dir_ + "/construct.json"))
    constructs = read_construct_json(writer_dir_ + "/construct.json");
  writer_ = std::make_unique<DumpWriter>(writer_dir_, old);
  writer_->hold_writes();
  for (size_t i = 0; i < old.entries.size(); ++i) writer_->add_entry(old, i);
  for (size_t g = 0; g < stacks.group_names.size(); ++g) {
    std::vector<std::string> frames;
    for (uint32_t f : stacks.group_frames[g]) frames.emplace_back(stacks.strings.get(f));
    for (uint32_t n : stacks.group_names[g]) writer_->add_stack(stacks.strings.get(n), frames);
  }
  for (const auto& e : constructs.edges) writer_->add_construct(constructs, e);
  // The new writer removed the earlier round's files: its records go to the journal now, not
  // with the batch, so that a crash meanwhile keeps them.
  writer_->write_held();
  writer_->hold_writes();
}

std::string CaptureSession::frame_text(const StackFrame& f) {
  auto it = source_lines_.find(f.file);
  if (it == source_lines_.end()) {
    std::vector<std::string> lines;
    std::ifstream in(f.file);
    for (std::string l; std::getline(in, l);) lines.push_back(std::move(l));
    it = source_lines_.emplace(f.file, std::move(lines)).first;
  }
  // msprobe leaves out frames whose source line cannot be read (<string>, deleted files); a
  // blank line is kept with empty code.
  if (f.line < 1 || static_cast<size_t>(f.line) > it->second.size()) return std::string();
  std::string code;
  const std::string& l = it->second[static_cast<size_t>(f.line) - 1];
  size_t b = l.find_first_not_of(" \t");
  size_t e = l.find_last_not_of(" \t\r");
  if (b != std::string::npos) code = l.substr(b, e - b + 1);
  // msprobe's frame text: "File <path>, line <n>, in <func>, \n <code>".
  return "File " + f.file + ", line " + std::to_string(f.line) + ", in " + f.func + ", \n " + code;
}

void CaptureSession::run_job(Job& job) {
  if (job.kind == Job::kFinish) {
    if (writer_) {
      writer_->finish();
      writer_.reset();
    }
    rendered_stacks_.clear();
    return;
  }
  if (job.kind == Job::kSideFile) {  // beside the dump, whichever writer is open
    const std::string path = *job.dir + "/" + job.name;
    if (base::file_exists(path)) return;
    base::make_dirs(*job.dir);
    base::AtomicFileWriter w(path, /*durable=*/false);
    w.write(job.text);
    w.commit();
    return;
  }
  if (!writer_ || writer_dir_ != *job.dir) {
    if (writer_) writer_->finish();
    writer_.reset();
    writer_dir_ = *job.dir;
    open_writer();
  }
  if (job.kind == Job::kConstruct) {
    writer_->add_construct(
        job.name, job.parent ? std::optional<std::string_view>(*job.parent) : std::nullopt);
    return;
  }
  EntryRecord& rec = job.rec;
  for (TensorLeaf& t : rec.tensors()) {
    t.resolve_stats();
    if (!t.pending.owner) continue;
    std::string dir = writer_dir_ + "/dump_tensor_data";
    base::make_dirs(dir);
    write_npy(dir + "/" + t.data_name, t.pending.bytes(), t.pending.dtype, t.shape);
    size_t bytes = dtype_size(t.pending.dtype);
    for (int64_t d : t.shape) bytes *= static_cast<size_t>(d);
    ++batch_counts_.tensor_files;
    batch_counts_.tensor_bytes += bytes;
    t.pending = {};
  }
  render_entry_record(rec, rendered_);
  writer_->add_entry(rec.name, rendered_);
  if (job.frames && !job.frames->empty() && cfg_.extra_info) {
    auto it = rendered_stacks_.find(job.frames.get());
    if (it == rendered_stacks_.end()) {
      std::vector<std::string> lines;
      lines.reserve(job.frames->size());
      for (const StackFrame& f : *job.frames) {
        std::string text = frame_text(f);
        if (!text.empty()) lines.push_back(std::move(text));
      }
      it = rendered_stacks_.emplace(job.frames.get(), std::make_pair(job.frames, std::move(lines)))
               .first;
    }
    // The Frames object is the stack's key: rendered_stacks_ keeps it alive as long as the writer.
    writer_->add_stack(rec.name, it->second.second,
                       static_cast<uint64_t>(reinterpret_cast<uintptr_t>(job.frames.get())));
  }
  if (job.has_parent && cfg_.extra_info && cfg_.level != Level::kL1 && cfg_.level != Level::kL2)
    writer_->add_construct(
        rec.name, job.parent ? std::optional<std::string_view>(*job.parent) : std::nullopt);
  ++batch_counts_.entries;
}

}  // namespace numprobe::capture
