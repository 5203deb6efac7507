// Fuzzes the merge of shard summaries (numprobe merge): the bytes are one shard's summary.json,
// merged alone and, split at a byte the input chooses, as two shards' summaries.
#include <cstddef>
#include <cstdint>
#include <string>

#include "numprobe/compare/shard.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const numprobe::MergeResult r = numprobe::merge_shard_summaries({{"fuzz.json", text}});
    if (r.summary_json.empty() || r.count < 1) __builtin_trap();
  } catch (const numprobe::Error&) {
  }
  if (size > 1) {
    const size_t cut = data[0] % size;
    try {
      numprobe::merge_shard_summaries(
          {{"a.json", text.substr(1, cut)}, {"b.json", text.substr(cut)}});
    } catch (const numprobe::Error&) {
    }
  }
  return 0;
}
