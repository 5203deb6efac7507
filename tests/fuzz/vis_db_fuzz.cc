// libFuzzer target for VisDbReader: the bytes become a .vis.db file (SQLite parses it, damaged or
// not), which is opened and asked what the viewer asks. A damaged file or odd JSON column may throw
// InputError; any crash or sanitizer report is a bug. Seeds: tests/fuzz/seeds/vis_db/.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "graph/vis_db_reader.h"
#include "numprobe/error.h"

namespace {

std::string scratch_path() {
  static const std::string path =
      "/tmp/numprobe_vis_db_fuzz_" + std::to_string(static_cast<long>(getpid())) + ".vis.db";
  return path;
}

void query(numprobe::graph::VisDbReader& r) {
  using numprobe::graph::GraphKey;
  using numprobe::graph::Side;
  const auto& c = r.config();
  for (Side side : {Side::kTarget, Side::kGolden}) {
    GraphKey g{c.steps.empty() ? 0 : c.steps.front(), c.ranks.empty() ? 0 : c.ranks.front(), side,
               std::nullopt};
    const auto roots = r.children(g, std::nullopt);
    for (size_t i = 0; i < roots.size() && i < 4; ++i) {
      const auto kids = r.children(g, roots[i].name);
      if (!kids.empty()) r.node(g, kids.front().name);
      r.node(g, roots[i].name);
    }
    r.search(g, "a", 8);
    r.filter_unmatched(g, 8);
    if (!c.colors.empty()) r.filter_color(g, c.colors.front().color, 8);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = scratch_path();
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  try {
    numprobe::graph::VisDbReader r(path);
    query(r);
  } catch (const numprobe::InputError&) {
  }
  std::remove(path.c_str());
  return 0;
}
