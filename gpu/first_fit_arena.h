// The HostArena allocator: one block carved with a first-fit free list that
// coalesces on release.  Used over cudaHostAlloc memory (gpu_engine.cpp) and
// over ordinary memory by the simulated GPU (gpu_simulated.cpp).
#pragma once

#include <iterator>
#include <map>
#include <mutex>

#include "engine.h"
#include "spin_lock.h"

namespace gpp {

class FirstFitArena final : public HostArena {
public:
  using ReleaseFn = void (*)(void *base, size_t bytes);

  // Takes ownership of [base, base + bytes); `release` frees it at the end.
  FirstFitArena(void *base, size_t bytes, ReleaseFn release)
      : base_(static_cast<uint8_t *>(base)), size_(bytes), release_(release) {
    free_[0] = bytes;
  }
  ~FirstFitArena() override { release_(base_, size_); }
  FirstFitArena(const FirstFitArena &) = delete;
  FirstFitArena &operator=(const FirstFitArena &) = delete;

  void *allocate(size_t bytes) override {
    bytes = std::max<size_t>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
    auto lock = spin_lock(mutex_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < bytes) continue;
      const size_t offset = it->first;
      const size_t left = it->second - bytes;
      free_.erase(it);
      if (left) free_[offset + bytes] = left;
      used_[offset] = bytes;
      in_use_ += bytes;
      return base_ + offset;
    }
    return nullptr;
  }

  void release(void *ptr) override {
    if (!ptr) return;
    auto lock = spin_lock(mutex_);
    const size_t offset = static_cast<uint8_t *>(ptr) - base_;
    auto used = used_.find(offset);
    if (used == used_.end()) return;
    size_t start = offset, len = used->second;
    in_use_ -= len;
    used_.erase(used);
    auto next = free_.lower_bound(start);
    if (next != free_.end() && next->first == start + len) {
      len += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == start) {
        start = prev->first;
        len += prev->second;
        free_.erase(prev);
      }
    }
    free_[start] = len;
  }

  bool contains(const void *ptr) const override {
    const auto *p = static_cast<const uint8_t *>(ptr);
    return p >= base_ && p < base_ + size_;
  }
  size_t capacity() const override { return size_; }
  size_t in_use() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return in_use_;
  }

private:
  uint8_t *base_;
  size_t size_;
  ReleaseFn release_;
  mutable std::mutex mutex_;
  std::map<size_t, size_t> free_; // offset -> length
  std::map<size_t, size_t> used_;
  size_t in_use_ = 0;
};

} // namespace gpp
