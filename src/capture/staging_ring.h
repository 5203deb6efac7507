// Space accounting of a ring buffer whose blocks are returned in any order (the pinned staging
// memory of CUDA statistics: copies are enqueued in order by several threads, and resolved by the
// writer in its own order). Only offsets: the memory is the owner's. Not thread-safe.
#pragma once

#include <cstddef>
#include <deque>

namespace numprobe::capture {

class StagingRing {
 public:
  static constexpr size_t kAlign = 256;

  StagingRing() = default;
  explicit StagingRing(size_t capacity) : capacity_(capacity / kAlign * kAlign) {}

  // Takes `bytes` (rounded up to kAlign) at the tail; a block that does not fit before the end
  // starts at 0 instead, and the skipped end counts in its size. False when there is no room.
  bool take(size_t bytes, size_t& offset, size_t& taken) {
    const size_t need = (bytes + kAlign - 1) / kAlign * kAlign;
    if (need == 0 || need > capacity_) return false;
    const size_t tail = (head_ + used_) % capacity_;
    size_t skip = 0;
    if (used_ > 0 && tail <= head_) {  // free: [tail, head)
      if (head_ - tail < need) return false;
    } else if (capacity_ - tail < need) {  // free: [tail, capacity) and [0, head)
      if (head_ < need) return false;
      skip = capacity_ - tail;
    }
    offset = skip ? 0 : tail;
    taken = skip + need;
    used_ += taken;
    blocks_.push_back({offset, taken, false});
    return true;
  }

  // Returns the block at `offset`; the head moves past every returned block at the front.
  void give_back(size_t offset) {
    for (Block& b : blocks_) {
      if (b.offset == offset && !b.returned) {
        b.returned = true;
        break;
      }
    }
    while (!blocks_.empty() && blocks_.front().returned) {
      head_ = (head_ + blocks_.front().size) % capacity_;
      used_ -= blocks_.front().size;
      blocks_.pop_front();
    }
    if (used_ == 0) head_ = 0;
  }

  size_t used() const { return used_; }
  size_t capacity() const { return capacity_; }

 private:
  struct Block {
    size_t offset;
    size_t size;
    bool returned;
  };
  size_t capacity_ = 0;
  size_t head_ = 0;
  size_t used_ = 0;
  std::deque<Block> blocks_;
};

}  // namespace numprobe::capture
