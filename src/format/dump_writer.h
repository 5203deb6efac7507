// Writing msprobe-format dumps crash-safely.
//
// While a step is captured, every record (header, entry, stack, construct edge) is appended to
// `dump.journal` in the rank directory with one write(2) call; a record that has been written
// survives the death of the writing process (and, with sync_each_record, of the machine). The
// three files are built at the same time: dump.json streams to `dump.json.tmp` as entries come,
// stacks and construct edges are kept (deduplicated) in memory. finish() completes them, renames
// them into place and removes the journal; it never reads the journal back. A journal left behind
// by a dead writer is turned into the same three files by recover_rank_dir() (`numprobe
// recover`), keeping every record that reached the journal intact.
//
// Not thread-safe: one writer per rank directory, driven by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numprobe/dump_tree.h"

namespace numprobe {

namespace base {
class AtomicFileWriter;
}  // namespace base
namespace format {
class DumpAssembly;
}  // namespace format

inline constexpr const char* kJournalFileName = "dump.journal";

struct DumpHeader {
  std::string task = "statistics";
  std::string level = "L1";
  std::string framework = "pytorch";
  std::optional<std::string> dump_data_dir;  // null in dump.json when unset
};

struct DumpWriterOptions {
  bool sync_each_record = false;  // fdatasync after every record (survives power loss)
};

class DumpWriter {
 public:
  // Creates rank_dir if needed and removes dump.json/stack.json/construct.json of an earlier run
  // there (the journal is the authority from now on). Throws Error if a journal is already there
  // (a previous writer died: recover it first) or the directory cannot be written.
  DumpWriter(const std::string& rank_dir, const DumpHeader& header, DumpWriterOptions opt = {});
  // Header copied verbatim from a dump that was read (all top-level members except "data").
  DumpWriter(const std::string& rank_dir, const DumpFile& header_from, DumpWriterOptions opt = {});
  // Closes the journal without assembling: the same state a crash leaves.
  ~DumpWriter();
  DumpWriter(const DumpWriter&) = delete;
  DumpWriter& operator=(const DumpWriter&) = delete;

  // body: the entry value rendered as msprobe writes it inside "data" (see
  // format::render_entry_body).
  void add_entry(std::string_view name, std::string_view body);
  void add_entry(const DumpFile& d, size_t index);
  // The frames of an entry's stack. Entries sharing a stack share its frames: the journal records
  // them once, later entries only name the first. `key` (non-zero) identifies the stack for the
  // caller, who promises the same frames for the same key within this writer; 0 compares the
  // frames themselves.
  void add_stack(std::string_view name, const std::vector<std::string>& frames, uint64_t key = 0);
  // parent: nullopt writes null.
  void add_construct(std::string_view name, std::optional<std::string_view> parent);
  // An edge read from a construct.json, in its own form (Megatron's [parent, micro_step] too).
  void add_construct(const ConstructTable& table, const ConstructEdge& edge);

  // Between hold_writes() and write_held(), records are collected and written together, whenever
  // 64 KiB are held: one write(2) per ~50 entries instead of one per record. A record is in the
  // journal once it has been written; a crash loses the held ones, as it loses the records a
  // writer had not added yet. finish() and the destructor write what is held.
  void hold_writes();
  void write_held();

  // Completes the three files, commits them (stack.json, construct.json, then dump.json) and
  // removes the journal. No more records may be added. On an error nothing more is committed and
  // the journal stays.
  void finish();

  size_t entries() const { return entries_; }
  const std::string& dir() const { return dir_; }

 private:
  void open_journal();
  void append_header(const std::vector<std::string_view>& fields);
  void append(char type, const std::vector<std::string_view>& fields);
  void write_buffer();
  // Throws once a write has failed: the files being built, or the journal's tail, are incomplete.
  void check_usable() const;
  // Runs f; an exception marks the writer failed.
  template <typename F>
  void building(F&& f);

  std::string dir_;
  DumpWriterOptions opt_;
  int fd_ = -1;
  size_t entries_ = 0;
  bool finished_ = false;
  bool holding_ = false;
  bool failed_ = false;
  std::string buf_;
  std::unique_ptr<base::AtomicFileWriter> dump_file_;  // dump.json.tmp, written as entries come
  std::unique_ptr<format::DumpAssembly> out_;          // the three files, built as records come
};

struct AssembledDump {
  std::string dump_json;
  std::string stack_json;
  std::string construct_json;
  RecoverReport report;
};

// Reads a journal and builds the three files' contents in memory (what readers do when they find
// a journal and no dump.json). Throws InputError if the file is not a numprobe journal.
AssembledDump assemble_journal(const std::string& journal_path);
// Same over journal bytes in memory; `name` is used in messages.
AssembledDump assemble_journal_bytes(const char* data, size_t size, const std::string& name);

// Writes dump.json/stack.json/construct.json from rank_dir/dump.journal (keeping every intact
// record) and removes the journal. report.had_journal is false when there is nothing to recover.
RecoverReport recover_rank_dir(const std::string& rank_dir);

}  // namespace numprobe
