#include "numprobe/dump_tree.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "base/file_util.h"
#include "format/dump_writer.h"
#include "numprobe/error.h"

namespace fs = std::filesystem;

namespace numprobe {
namespace {

// "step12" -> 12, "rank3" -> 3; -1 when the prefix does not match or no digits follow.
int64_t numbered(const std::string& name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  int64_t v = -1;
  auto r = std::from_chars(name.data() + prefix.size(), name.data() + name.size(), v);
  if (r.ec != std::errc() || r.ptr != name.data() + name.size()) return -1;
  return v;
}

RankLocation locate(const fs::path& dir, const fs::path& json) {
  RankLocation loc;
  loc.dir = dir.string();
  loc.dump_json = json.string();
  loc.has_dump_json = base::file_exists(loc.dump_json);
  loc.has_journal = base::file_exists((dir / kJournalFileName).string());
  // Names come from the normalised absolute path: "rank0/", "." and "./dump.json" still say where
  // they are.
  std::error_code ec;
  fs::path named = fs::absolute(dir, ec).lexically_normal();
  if (named.filename().empty()) named = named.parent_path();
  std::string label = named.filename().string();
  if (label == "rank" || numbered(label, "rank") >= 0 || numbered(label, "proc") >= 0) {
    loc.rank_label = label;
    loc.rank = numbered(label, "rank");
  }
  for (fs::path p = named; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    int64_t s = numbered(p.filename().string(), "step");
    if (s >= 0) {
      loc.step = s;
      break;
    }
  }
  return loc;
}

void walk(const fs::path& dir, int depth, std::vector<RankLocation>& out) {
  std::error_code ec;
  if (base::file_exists((dir / "dump.json").string()) ||
      base::file_exists((dir / kJournalFileName).string())) {
    out.push_back(locate(dir, dir / "dump.json"));
    return;
  }
  if (depth == 0) return;
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec) && e.path().filename() != "dump_tensor_data")
      subdirs.push_back(e.path());
  }
  for (const auto& s : subdirs) walk(s, depth - 1, out);
}

}  // namespace

std::vector<RankLocation> find_rank_dumps(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  if (!fs::exists(p, ec)) throw InputError(path, "no such file or directory");
  std::vector<RankLocation> out;
  if (fs::is_regular_file(p, ec)) {
    fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    RankLocation loc = locate(dir, p);
    if (p.filename() != "dump.json") {
      // A dump.json under another name: only that file, no side files or journal.
      loc.has_journal = false;
    }
    out.push_back(loc);
    return out;
  }
  walk(p, 4, out);
  if (out.empty()) {
    throw InputError(path,
                     "no dump found (expected dump.json in this directory or in "
                     "step*/rank*/ below it)");
  }
  std::sort(out.begin(), out.end(), [](const RankLocation& a, const RankLocation& b) {
    if (a.step != b.step) return a.step < b.step;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.dir < b.dir;
  });
  return out;
}

RankDump load_rank_dump(const RankLocation& where, const ReadOptions& opt) {
  RankDump r;
  r.where = where;
  const bool side_files = fs::path(where.dump_json).filename() == "dump.json";
  if (where.has_dump_json) {
    r.dump = read_dump_json(where.dump_json, opt);
    if (where.has_journal && side_files) {
      r.problems.push_back("stale " + std::string(kJournalFileName) +
                           " next to a complete dump.json (run `numprobe recover " + where.dir +
                           "` to remove it)");
    }
  } else if (where.has_journal) {
    AssembledDump a = assemble_journal(where.dir + "/" + kJournalFileName);
    r.dump = parse_dump_json(a.dump_json, where.dir + "/" + kJournalFileName);
    r.stack = parse_stack_json(a.stack_json, where.dir + "/" + kJournalFileName);
    r.construct = parse_construct_json(a.construct_json, where.dir + "/" + kJournalFileName);
    r.recovered_from_journal = true;
    r.recover_report = a.report;
    r.problems.push_back(
        "no dump.json: writer stopped mid-step; read " + std::to_string(a.report.entries) +
        " entries from the journal" +
        (a.report.bytes_dropped
             ? " (torn tail of " + std::to_string(a.report.bytes_dropped) + " bytes dropped)"
             : std::string()));
    return r;
  } else {
    throw InputError(where.dump_json, "no such file");
  }
  if (!side_files) return r;
  auto side = [&](const char* file, auto reader, auto& slot) {
    std::string path = where.dir + "/" + file;
    if (!base::file_exists(path)) {
      r.problems.push_back(std::string(file) + " missing");
      return;
    }
    try {
      slot = reader(path);
    } catch (const InputError& e) {
      r.problems.push_back(e.what());
    }
  };
  side("stack.json", read_stack_json, r.stack);
  side("construct.json", read_construct_json, r.construct);
  return r;
}

}  // namespace numprobe
