// Interned strings: one copy of each distinct string, addressed by a dense uint32 id.
// Views returned by get() stay valid for the pool's lifetime (storage is chunked, never moved).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace numprobe {

inline constexpr uint32_t kNoString = 0xFFFFFFFFu;

class StringPool {
 public:
  StringPool() = default;
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;

  uint32_t intern(std::string_view s);
  // kNoString if absent.
  uint32_t find(std::string_view s) const;
  std::string_view get(uint32_t id) const {
    return id == kNoString ? std::string_view() : views_[id];
  }
  // Drops the lookup map of a pool whose lookups are over (a million names hold ~50 MB of it):
  // get() and the strings stay; find() finds nothing and intern() must not be called afterwards.
  void release_index() { std::unordered_map<std::string_view, uint32_t>().swap(index_); }
  size_t size() const { return views_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  std::string_view store(std::string_view s);

  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t chunk_used_ = 0;
  size_t chunk_cap_ = 0;
  size_t bytes_ = 0;
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, uint32_t> index_;
};

}  // namespace numprobe
