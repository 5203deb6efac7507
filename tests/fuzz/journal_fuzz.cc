// Fuzzes journal scanning and assembly. Half the inputs are raw bytes behind a valid magic (the
// record parser must stop cleanly at any damage); the other half are decoded into well-formed
// records whose fields the fuzzer chooses, so assembly and the readers of its output run too.
// Both versions' magics are used, and every record type, stack references included.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format/dump_writer.h"
#include "format/journal.h"
#include "numprobe/dump.h"
#include "numprobe/error.h"
#include "numprobe/stack_construct.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace f = numprobe::format;
  if (size == 0) return 0;
  const char* magic = (data[0] & 2) ? f::kJournalMagicV1 : f::kJournalMagic;
  std::string bytes(magic, sizeof f::kJournalMagic);
  if (data[0] & 1) {
    bytes.append(reinterpret_cast<const char*>(data) + 1, size - 1);
  } else {
    // Records: [type selector][n fields][len][bytes]... taken from the input.
    static const char kTypes[] = {f::kRecHeader,   f::kRecEntry, f::kRecStack,    f::kRecConstruct,
                                  f::kRecStackRef, f::kRecStack, f::kRecStackRef, f::kRecEntry};
    size_t p = 1;
    while (p + 2 <= size) {
      char type = kTypes[data[p] & 7];
      size_t n = data[p + 1] % 6;
      p += 2;
      std::vector<std::string_view> fields;
      for (size_t i = 0; i < n && p < size; ++i) {
        size_t len = std::min<size_t>(data[p], size - p - 1);
        fields.emplace_back(reinterpret_cast<const char*>(data) + p + 1, len);
        p += 1 + len;
      }
      f::encode_record(bytes, type, fields);
    }
  }
  try {
    numprobe::AssembledDump a =
        numprobe::assemble_journal_bytes(bytes.data(), bytes.size(), "fuzz.journal");
    if (a.report.bytes_dropped > bytes.size()) __builtin_trap();
    // Stack and construct texts are built by our writer from arbitrary strings: always valid.
    numprobe::parse_stack_json(a.stack_json, "assembled-stack.json");
    try {
      numprobe::parse_construct_json(a.construct_json, "assembled-construct.json");
      numprobe::parse_dump_json(a.dump_json, "assembled-dump.json");
    } catch (const numprobe::InputError&) {
      // Rendered values inside records are trusted text; garbage there is reported, not fatal.
    }
  } catch (const numprobe::InputError&) {
  }
  return 0;
}
