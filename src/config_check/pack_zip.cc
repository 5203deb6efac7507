// The pack reader (pack_zip.h): zip central directory, stored and deflated members (zlib).
#include "config_check/pack_zip.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include "numprobe/error.h"

namespace numprobe::configcheck {
namespace {

constexpr uint32_t kEndOfCentralDir = 0x06054b50, kCentralFile = 0x02014b50,
                   kLocalFile = 0x04034b50;
constexpr size_t kEndSize = 22, kCentralSize = 46, kLocalSize = 30;
constexpr size_t kMaxMembers = 1000000;
constexpr uint64_t kMaxDeflateRatio = 1032;

class Bytes {
 public:
  Bytes(std::string_view d, const std::string& file) : d_(d), file_(file) {}
  uint64_t le(size_t at, int n) const {
    if (at > d_.size() || d_.size() - at < static_cast<size_t>(n)) fail("truncated zip", at);
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(d_[at + i]);
    return v;
  }
  std::string_view sub(size_t at, size_t n) const {
    if (at > d_.size() || d_.size() - at < n) fail("truncated zip", at);
    return d_.substr(at, n);
  }
  [[noreturn]] void fail(const std::string& what, size_t at) const {
    throw InputError(file_, "not a readable config_check pack (zip): " + what,
                     static_cast<int64_t>(at));
  }
  size_t size() const { return d_.size(); }

 private:
  std::string_view d_;
  const std::string& file_;
};

std::string inflate_raw(std::string_view in, size_t out_size, const Bytes& b,
                        const std::string& name) {
  std::string out(out_size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) b.fail("zlib init failed", 0);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const size_t produced = out_size - z.avail_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != out_size)
    b.fail("member " + name + " does not inflate to its recorded size", 0);
  return out;
}

}  // namespace

std::map<std::string, std::string> read_zip_members(std::string_view data,
                                                    const std::string& file) {
  const Bytes b(data, file);
  if (data.size() < kEndSize) b.fail("shorter than a zip's end record", 0);
  // The end record: its signature, searched back over the longest comment (64 KiB).
  size_t end = std::string_view::npos;
  const size_t stop = data.size() > kEndSize + 65535 ? data.size() - kEndSize - 65535 : 0;
  for (size_t at = data.size() - kEndSize + 1; at-- > stop;) {
    if (b.le(at, 4) == kEndOfCentralDir) {
      end = at;
      break;
    }
  }
  if (end == std::string_view::npos) b.fail("no end of central directory record", data.size());
  const uint64_t count = b.le(end + 10, 2), dir_size = b.le(end + 12, 4),
                 dir_at = b.le(end + 16, 4);
  if (count == 0xffff || dir_at == 0xffffffff) b.fail("ZIP64 packs are not supported", end);
  if (dir_at + dir_size > end) b.fail("central directory past its end record", end);
  if (count > kMaxMembers) b.fail("too many members", end);
  std::map<std::string, std::string> members;
  size_t at = dir_at;
  for (uint64_t i = 0; i < count; ++i) {
    if (b.le(at, 4) != kCentralFile) b.fail("bad central directory entry", at);
    const uint64_t flags = b.le(at + 8, 2), method = b.le(at + 10, 2), crc = b.le(at + 16, 4),
                   csize = b.le(at + 20, 4), usize = b.le(at + 24, 4), nlen = b.le(at + 28, 2),
                   xlen = b.le(at + 30, 2), clen = b.le(at + 32, 2), local = b.le(at + 42, 4);
    std::string name(b.sub(at + kCentralSize, nlen));
    std::replace(name.begin(), name.end(), '\\', '/');
    at += kCentralSize + nlen + xlen + clen;
    if (!name.empty() && name.back() == '/') continue;  // a directory
    if (flags & 1) b.fail("member " + name + " is encrypted", at);
    if (usize > kMaxMemberBytes)
      b.fail("member " + name + " is " + std::to_string(usize) + " bytes, over the limit", at);
    if (b.le(local, 4) != kLocalFile) b.fail("member " + name + ": bad local header", local);
    const size_t body = local + kLocalSize + b.le(local + 26, 2) + b.le(local + 28, 2);
    const std::string_view raw = b.sub(body, csize);
    std::string bytes;
    if (method == 0) {
      if (csize != usize) b.fail("member " + name + ": stored sizes differ", body);
      bytes = std::string(raw);
    } else if (method == 8) {
      // deflate expands at most ~1032:1: a larger claim is a lie, refused before allocating it
      if (usize > csize * kMaxDeflateRatio + 64)
        b.fail("member " + name + " claims " + std::to_string(usize) + " bytes from " +
                   std::to_string(csize) + " compressed",
               body);
      bytes = inflate_raw(raw, usize, b, name);
    } else {
      b.fail("member " + name + " uses compression method " + std::to_string(method) +
                 " (stored and deflate are read)",
             body);
    }
    const uLong got = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()),
                            static_cast<uInt>(bytes.size()));
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION  // a fuzzed input never matches its CRC
    if (got != crc) b.fail("member " + name + ": CRC-32 mismatch", body);
#else
    (void)got;
    (void)crc;
#endif
    if (!members.emplace(name, std::move(bytes)).second)
      b.fail("member " + name + " appears twice", body);
  }
  if (members.empty()) throw InputError(file, "the pack is empty (no member)");
  return members;
}

namespace {

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open the pack");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Pack::Pack(const std::string& path) : path_(path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw InputError(path, "no such pack file");
  members_ = read_zip_members(read_whole(path), path);
  const fs::path p = fs::absolute(path, ec);
  const std::string name = p.filename().string();
  if (name.size() < 4 || name.compare(name.size() - 4, 4, ".zip") != 0) return;
  const std::string stem = name.substr(0, name.size() - 4);
  std::vector<std::pair<long, std::string>> ranks;
  for (const auto& entry : fs::directory_iterator(p.parent_path(), ec)) {
    const std::string f = entry.path().filename().string();
    const std::string head = stem + "_rank";
    if (f.size() <= head.size() + 4 || f.compare(0, head.size(), head) != 0 ||
        f.compare(f.size() - 4, 4, ".zip") != 0)
      continue;
    const std::string digits = f.substr(head.size(), f.size() - head.size() - 4);
    if (digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    ranks.emplace_back(std::stol(digits), entry.path().string());
  }
  std::sort(ranks.begin(), ranks.end());
  for (const auto& [rank, other] : ranks) {
    for (auto& [member, bytes] : read_zip_members(read_whole(other), other)) {
      if (members_.count(member))
        throw InputError(other, "member " + member + " is also in " + path);
      members_.emplace(member, std::move(bytes));
    }
  }
}

bool Pack::has_under(const std::string& prefix) const {
  const auto it = members_.lower_bound(prefix + "/");
  return it != members_.end() && it->first.compare(0, prefix.size() + 1, prefix + "/") == 0;
}

const std::string& Pack::member(const std::string& name) const {
  const auto it = members_.find(name);
  if (it == members_.end()) throw InputError(path_, "no member " + name);
  return it->second;
}

}  // namespace numprobe::configcheck
