#include "format/journal.h"

#include <cstring>

#include "core/hash.h"
#include "numprobe/error.h"

namespace numprobe::format {
namespace {

void put_u32(std::string& out, uint32_t v) {
  char b[4] = {static_cast<char>(v & 0xFF), static_cast<char>((v >> 8) & 0xFF),
               static_cast<char>((v >> 16) & 0xFF), static_cast<char>((v >> 24) & 0xFF)};
  out.append(b, 4);
}

uint32_t get_u32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint32_t>(u[0]) | (static_cast<uint32_t>(u[1]) << 8) |
         (static_cast<uint32_t>(u[2]) << 16) | (static_cast<uint32_t>(u[3]) << 24);
}

bool known_type(char t) {
  return t == kRecHeader || t == kRecEntry || t == kRecStack || t == kRecConstruct ||
         t == kRecStackRef;
}

// The magic of either version, or a prefix of it (n bytes).
bool is_magic(const char* data, size_t n) {
  return memcmp(data, kJournalMagic, n) == 0 || memcmp(data, kJournalMagicV1, n) == 0;
}

}  // namespace

void encode_record(std::string& out, char type, const std::vector<std::string_view>& fields) {
  size_t payload = 4;
  for (auto f : fields) payload += 4 + f.size();
  if (payload > kJournalMaxRecord) throw Error("journal record too large");
  size_t start = out.size();
  put_u32(out, static_cast<uint32_t>(payload));
  put_u32(out, 0);  // crc placeholder
  out += type;
  put_u32(out, static_cast<uint32_t>(fields.size()));
  for (auto f : fields) {
    put_u32(out, static_cast<uint32_t>(f.size()));
    out.append(f.data(), f.size());
  }
  uint32_t crc = crc32(out.data() + start + 8, 1 + payload);
  char b[4] = {static_cast<char>(crc & 0xFF), static_cast<char>((crc >> 8) & 0xFF),
               static_cast<char>((crc >> 16) & 0xFF), static_cast<char>((crc >> 24) & 0xFF)};
  memcpy(&out[start + 4], b, 4);
}

JournalReader::JournalReader(const char* data, size_t size, const std::string& name)
    : data_(data), size_(size) {
  // An empty file maps to no memory at all (data may be null), so test size first.
  if (size < sizeof kJournalMagic && (size == 0 || is_magic(data, size))) {
    // The writer stopped before its first write completed: an empty journal, not a foreign file.
    pos_ = valid_ = size;
    stop_reason_ = "journal ends inside its magic (writer stopped before its first record)";
    return;
  }
  if (size < sizeof kJournalMagic || !is_magic(data, sizeof kJournalMagic)) {
    throw InputError(name, "not a numprobe journal (bad magic)", 0);
  }
  pos_ = valid_ = sizeof kJournalMagic;
}

bool JournalReader::next(JournalRecord& r) {
  if (pos_ >= size_ || !stop_reason_.empty() || pos_ < sizeof kJournalMagic) return false;
  auto stop = [&](const std::string& why) {
    stop_reason_ = why + " at byte " + std::to_string(pos_);
    return false;
  };
  if (size_ - pos_ < 9) return stop("truncated record header");
  uint32_t len = get_u32(data_ + pos_), crc = get_u32(data_ + pos_ + 4);
  char type = data_[pos_ + 8];
  if (len < 4 || len > kJournalMaxRecord || len > size_ - pos_ - 9) {
    return stop("truncated or corrupt record (length " + std::to_string(len) + ")");
  }
  const size_t record_end = pos_ + 9 + static_cast<size_t>(len);
  if (crc32(data_ + pos_ + 8, 1 + static_cast<size_t>(len)) != crc) {
    return stop("record checksum mismatch");
  }
  if (!known_type(type)) return stop("unknown record type");
  const char* p = data_ + pos_ + 9;
  const char* end = p + len;
  uint32_t n = get_u32(p);
  p += 4;
  r.type = type;
  r.fields.clear();
  if (n > len / 4) return stop("malformed record fields");
  for (uint32_t i = 0; i < n; ++i) {
    if (end - p < 4) return stop("malformed record fields");
    uint32_t fl = get_u32(p);
    p += 4;
    if (static_cast<size_t>(end - p) < fl) return stop("malformed record fields");
    r.fields.emplace_back(p, fl);
    p += fl;
  }
  if (p != end) return stop("malformed record fields");
  pos_ = record_end;
  valid_ = pos_;
  return true;
}

}  // namespace numprobe::format
