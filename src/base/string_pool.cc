#include "numprobe/string_pool.h"

#include <algorithm>
#include <cstring>

namespace numprobe {

std::string_view StringPool::store(std::string_view s) {
  constexpr size_t kChunk = 1 << 16;
  if (s.empty()) return std::string_view("", 0);
  if (s.size() > chunk_cap_ - chunk_used_) {
    size_t cap = std::max(kChunk, s.size());
    chunks_.emplace_back(new char[cap]);
    chunk_cap_ = cap;
    chunk_used_ = 0;
  }
  char* dst = chunks_.back().get() + chunk_used_;
  if (!s.empty()) memcpy(dst, s.data(), s.size());
  chunk_used_ += s.size();
  bytes_ += s.size();
  return std::string_view(dst, s.size());
}

uint32_t StringPool::intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  std::string_view stored = store(s);
  auto id = static_cast<uint32_t>(views_.size());
  views_.push_back(stored);
  index_.emplace(stored, id);
  return id;
}

uint32_t StringPool::find(std::string_view s) const {
  auto it = index_.find(s);
  return it == index_.end() ? kNoString : it->second;
}

}  // namespace numprobe
