// A config_check pack (docs/config_check.md, "Pack"): a zip of small JSON/text members, stored or
// deflated. Read whole into memory, every member checked (sizes, CRC-32, names); errors name the
// file and the member.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace numprobe::configcheck {

// The members of the zip bytes `data` (read from `file`, named in errors): member name -> bytes.
// Throws InputError on a truncated or malformed zip, an unsupported method, a member over
// kMaxMemberBytes, a CRC mismatch, a duplicate name or an empty zip.
std::map<std::string, std::string> read_zip_members(std::string_view data, const std::string& file);

inline constexpr size_t kMaxMemberBytes = size_t{1} << 30;

class Pack {
 public:
  // Reads path and the per-rank packs a job wrote beside it (`<stem>_rank<R>.zip`), as one pack.
  explicit Pack(const std::string& path);
  // A pack already in memory (tests, fuzzing): `path` only names it in errors.
  Pack(std::string path, std::map<std::string, std::string> members)
      : path_(std::move(path)), members_(std::move(members)) {}
  const std::string& path() const { return path_; }
  bool has(const std::string& name) const { return members_.count(name) != 0; }
  // name -> bytes, sorted by name.
  const std::map<std::string, std::string>& members() const { return members_; }
  // A member under `prefix/`.
  bool has_under(const std::string& prefix) const;
  const std::string& member(const std::string& name) const;

 private:
  std::string path_;
  std::map<std::string, std::string> members_;
};

}  // namespace numprobe::configcheck
