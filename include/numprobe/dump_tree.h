// Finding and loading the dumps under a path: a dump.json file, a rank directory, a step
// directory, or a dump root (dump_path/step{N}/{rank|rank{R}|proc{pid}}/...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "numprobe/dump.h"
#include "numprobe/stack_construct.h"

namespace numprobe {

struct RankLocation {
  int64_t step = -1;       // from a "step{N}" path component; -1 if none
  int64_t rank = -1;       // from "rank{R}"; -1 for "rank", "proc{pid}" or none
  std::string rank_label;  // the directory name: "rank0", "rank", "proc2016" ("" for a bare file)
  std::string dir;         // directory holding the files
  std::string dump_json;   // dir/dump.json (or the file given)
  bool has_dump_json = false;
  bool has_journal = false;  // a writer died mid-step (or is still running)
};

// Discovers rank dumps under `path`, sorted by (step, rank, label). Throws InputError if `path`
// does not exist or holds no dump.json / dump.journal within four directory levels.
std::vector<RankLocation> find_rank_dumps(const std::string& path);

// What reading a journal (a writer that died mid-step) kept and dropped.
struct RecoverReport {
  bool had_journal = false;
  size_t records = 0;
  size_t entries = 0;
  size_t stacks = 0;
  size_t constructs = 0;
  size_t bytes_total = 0;
  size_t bytes_dropped = 0;  // torn tail: bytes after the last intact record
  std::string detail;        // why the tail was dropped, if it was
};

struct RankDump {
  RankLocation where;
  DumpFile dump;
  std::optional<StackTable> stack;          // absent if stack.json is missing
  std::optional<ConstructTable> construct;  // absent if construct.json is missing
  bool recovered_from_journal = false;      // assembled in memory from dump.journal
  RecoverReport recover_report;
  std::vector<std::string> problems;  // non-fatal issues (missing or unreadable side files)
};

// Loads dump.json (or assembles dump.journal in memory when dump.json is missing) plus stack.json
// and construct.json when present. Errors in dump.json throw; errors in the side files become
// problems.
RankDump load_rank_dump(const RankLocation& where, const ReadOptions& opt = {});

}  // namespace numprobe
