// Latency percentiles over the most recent samples (a fixed ring), for the
// `stats` properties.  Not thread-safe: callers hold their stats lock.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

class LatencyWindow {
public:
  static constexpr size_t kCapacity = 4096;

  // All memory up front: adding and reading never allocate (they run in
  // vfuncs and on the streaming thread, where nothing may throw).
  LatencyWindow() {
    samples_.reserve(kCapacity);
    scratch_.reserve(kCapacity);
  }

  void clear() {
    samples_.clear();
    next_ = 0;
  }

  void add(uint64_t ns) {
    if (samples_.size() < kCapacity) {
      samples_.push_back(ns);
    } else {
      samples_[next_] = ns;
      next_ = (next_ + 1) % kCapacity;
    }
  }

  // Nearest-rank percentile (0 < p <= 100) of the window; 0 when empty.
  // Selection, not a sort: the element asks for its p99 on the streaming
  // thread every few hundred batches.
  uint64_t percentile(double p) const {
    if (samples_.empty()) return 0;
    scratch_.assign(samples_.begin(), samples_.end()); // within its reserved capacity
    size_t rank = static_cast<size_t>(p / 100.0 * static_cast<double>(scratch_.size()) + 0.999999);
    rank = std::min(std::max<size_t>(rank, 1), scratch_.size());
    std::nth_element(scratch_.begin(), scratch_.begin() + (rank - 1), scratch_.end());
    return scratch_[rank - 1];
  }

private:
  std::vector<uint64_t> samples_;
  mutable std::vector<uint64_t> scratch_; // percentile's working copy
  size_t next_ = 0;
};
