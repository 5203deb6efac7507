// numprobe recover <dir>: turn journals left by a writer that died mid-step into valid dump files.
#include <cstdio>

#include "cli/subcommand.h"
#include "format/dump_writer.h"
#include "numprobe/dump_tree.h"
#include "numprobe/error.h"

namespace numprobe::cli {
namespace {

class RecoverCommand : public Subcommand {
 public:
  const char* name() const override { return "recover"; }
  const char* summary() const override {
    return "Rebuild dump.json/stack.json/construct.json from dump.journal after a crash";
  }
  std::vector<Flag> flags() override {
    return {{"path", "rank dir, step dir or dump root", Flag::kString, &path_, true}};
  }

  int run() override {
    size_t recovered = 0, seen = 0;
    for (const RankLocation& loc : find_rank_dumps(path_)) {
      ++seen;
      if (!loc.has_journal) continue;
      RecoverReport r = recover_rank_dir(loc.dir);
      if (!r.had_journal) continue;
      ++recovered;
      printf("%s: ", loc.dir.c_str());
      if (r.records == 0 && !r.detail.empty()) {
        printf("%s\n", r.detail.c_str());
        continue;
      }
      printf("recovered %zu entries, %zu stacks, %zu construct nodes from %zu records", r.entries,
             r.stacks, r.constructs, r.records);
      if (r.bytes_dropped)
        printf("; dropped a torn tail of %zu bytes (%s)", r.bytes_dropped, r.detail.c_str());
      printf("\n");
    }
    if (recovered == 0)
      printf("%s: nothing to recover (%zu dump(s), no journal)\n", path_.c_str(), seen);
    return 0;
  }

 private:
  std::string path_;
};

}  // namespace

std::unique_ptr<Subcommand> make_recover_command() {
  return std::make_unique<RecoverCommand>();
}

}  // namespace numprobe::cli
