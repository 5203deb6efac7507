// The dump journal's byte layout (docs/format.md, "Journal"):
//   file   := magic "NPJRNL02" record*   (version 1 journals, "NPJRNL01", are read too)
//   record := u32 payload_len | u32 crc32(type, payload) | u8 type | payload
//   payload:= u32 n_fields (u32 len | bytes)*
// Little-endian. A record is valid only if it is complete and its CRC matches; reading stops at
// the first invalid record (a torn write at the tail).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace numprobe::format {

// Version 2 adds the stack-reference record; readers take version 1 journals as well.
inline constexpr char kJournalMagic[8] = {'N', 'P', 'J', 'R', 'N', 'L', '0', '2'};
inline constexpr char kJournalMagicV1[8] = {'N', 'P', 'J', 'R', 'N', 'L', '0', '1'};
inline constexpr uint32_t kJournalMaxRecord = 1u << 30;
// Journal writes are gathered up to this size, dump.json text too. Below glibc's mmap threshold
// (128 KiB): the buffers never move to fresh, page-faulting pages.
inline constexpr size_t kHeldBytes = size_t{64} << 10;

enum JournalRecordType : char {
  kRecHeader = 'H',     // fields: key1, rendered value1, key2, value2, ... ; "data" marks its slot
  kRecEntry = 'E',      // fields: name, rendered body
  kRecStack = 'S',      // fields: name, frame...
  kRecConstruct = 'C',  // fields: name, rendered parent value
  kRecStackRef = 'T',   // fields: name, name of an earlier entry whose stack this one shares (v2)
};

void encode_record(std::string& out, char type, const std::vector<std::string_view>& fields);

struct JournalRecord {
  char type;
  std::vector<std::string_view> fields;  // views into the journal bytes
};

// Streams records one at a time (bounded memory for journals of any size).
class JournalReader {
 public:
  // Throws InputError if the magic is wrong; a file holding only a prefix of the magic (the writer
  // died before its first write) reads as an empty journal.
  JournalReader(const char* data, size_t size, const std::string& name);
  // False at the end or at the first damaged record (see stop_reason()).
  bool next(JournalRecord& r);
  size_t valid_bytes() const { return valid_; }
  const std::string& stop_reason() const { return stop_reason_; }

 private:
  const char* data_;
  size_t size_;
  size_t pos_;
  size_t valid_;
  std::string stop_reason_;
};

}  // namespace numprobe::format
