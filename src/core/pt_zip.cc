#include "core/pt_zip.h"

#include <cstring>

#include "numprobe/error.h"

namespace numprobe::pt {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64LocatorSig = 0x07064b50, kEnd64Sig = 0x06064b50;
constexpr size_t kEndSize = 22, kCentralSize = 46, kLocalSize = 30, kLocatorSize = 20;
constexpr size_t kEnd64Size = 56;

// Little-endian reads at a checked position.
class Reader {
 public:
  Reader(const uint8_t* buf, size_t len, const std::string& name) : b_(buf), n_(len), name_(name) {}
  void need(size_t at, size_t bytes, const char* what) const {
    if (at > n_ || bytes > n_ - at)
      throw InputError(name_, std::string("zip: ") + what + " runs past the end of the file",
                       static_cast<int64_t>(at));
  }
  uint64_t le(size_t at, int bytes) const {
    need(at, static_cast<size_t>(bytes), "field");
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | b_[at + static_cast<size_t>(i)];
    return v;
  }
  [[noreturn]] void fail(const std::string& what, size_t at) const {
    throw InputError(name_, "zip: " + what, static_cast<int64_t>(at));
  }
  size_t size() const { return n_; }
  const uint8_t* data() const { return b_; }

 private:
  const uint8_t* b_;
  size_t n_;
  const std::string& name_;
};

constexpr const char* kNotZip =
    "not a zip archive: torch's legacy pre-1.6 .pt format is not supported, re-save with "
    "torch.save's default format";

size_t find_end_record(const Reader& r) {
  if (r.size() < kEndSize || r.le(0, 4) != kLocalSig) r.fail(kNotZip, 0);
  const size_t lowest = r.size() - kEndSize > 0xFFFF ? r.size() - kEndSize - 0xFFFF : 0;
  for (size_t at = r.size() - kEndSize + 1; at-- > lowest;) {
    if (r.le(at, 4) == kEndSig) return at;
  }
  r.fail("no end of central directory record (truncated archive?)", r.size());
}

// Reads the zip64 extra field (id 1) of a central record: the 64-bit values of the fields that
// hold 0xFFFFFFFF, in the order uncompressed size, compressed size, local header offset.
void apply_zip64_extra(const Reader& r, size_t extra, size_t extra_len, uint64_t* usize,
                       uint64_t* csize, uint64_t* offset) {
  size_t at = extra, end = extra + extra_len;
  while (at + 4 <= end) {
    const uint64_t id = r.le(at, 2), len = r.le(at + 2, 2);
    at += 4;
    if (len > end - at) r.fail("extra field runs past its record", at);
    if (id == 1) {
      size_t f = at;
      for (uint64_t* v : {usize, csize, offset}) {
        if (*v != 0xFFFFFFFFu) continue;
        if (f + 8 > at + len) r.fail("zip64 extra field too short", f);
        *v = r.le(f, 8);
        f += 8;
      }
    }
    at += len;
  }
}

}  // namespace

std::vector<ZipRecord> read_zip_directory(const uint8_t* buf, size_t len, const std::string& name) {
  Reader r(buf, len, name);
  const size_t end = find_end_record(r);
  uint64_t count = r.le(end + 10, 2), cd_size = r.le(end + 12, 4), cd_offset = r.le(end + 16, 4);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_offset == 0xFFFFFFFFu) {
    if (end < kLocatorSize || r.le(end - kLocatorSize, 4) != kEnd64LocatorSig)
      r.fail("zip64 end-of-directory locator missing", end);
    const uint64_t rec = r.le(end - kLocatorSize + 8, 8);
    if (rec > len || len - rec < kEnd64Size || r.le(static_cast<size_t>(rec), 4) != kEnd64Sig)
      r.fail("zip64 end-of-directory record missing", end);
    count = r.le(static_cast<size_t>(rec) + 32, 8);
    cd_size = r.le(static_cast<size_t>(rec) + 40, 8);
    cd_offset = r.le(static_cast<size_t>(rec) + 48, 8);
  }
  if (cd_offset > len || cd_size > len - cd_offset)
    r.fail("central directory outside the file", end);
  // Each central record takes >= 46 bytes: bounds the count before reserving.
  if (count > cd_size / kCentralSize)
    r.fail("central directory too small for its entry count", end);
  std::vector<ZipRecord> out;
  out.reserve(static_cast<size_t>(count));
  size_t at = static_cast<size_t>(cd_offset);
  for (uint64_t i = 0; i < count; ++i) {
    if (r.le(at, 4) != kCentralSig) r.fail("bad central directory record", at);
    const uint64_t method = r.le(at + 10, 2);
    uint64_t csize = r.le(at + 20, 4), usize = r.le(at + 24, 4), local = r.le(at + 42, 4);
    const size_t name_len = r.le(at + 28, 2), extra_len = r.le(at + 30, 2),
                 comment_len = r.le(at + 32, 2);
    r.need(at + kCentralSize, name_len + extra_len + comment_len, "central record");
    ZipRecord z;
    z.name.assign(reinterpret_cast<const char*>(buf + at + kCentralSize), name_len);
    apply_zip64_extra(r, at + kCentralSize + name_len, extra_len, &usize, &csize, &local);
    if (method != 0)
      r.fail("record '" + z.name + "' is compressed (method " + std::to_string(method) +
                 "); torch.save stores records uncompressed",
             at);
    if (csize != usize) r.fail("record '" + z.name + "' has different stored and real sizes", at);
    if (local > len || r.le(static_cast<size_t>(local), 4) != kLocalSig)
      r.fail("record '" + z.name + "' has no local header", at);
    const size_t lname = r.le(static_cast<size_t>(local) + 26, 2),
                 lextra = r.le(static_cast<size_t>(local) + 28, 2);
    const uint64_t data = local + kLocalSize + lname + lextra;
    if (data > len || usize > len - data) r.fail("record '" + z.name + "' runs past the end", at);
    z.data_begin = static_cast<size_t>(data);
    z.size = static_cast<size_t>(usize);
    out.push_back(std::move(z));
    at += kCentralSize + name_len + extra_len + comment_len;
  }
  return out;
}

}  // namespace numprobe::pt
