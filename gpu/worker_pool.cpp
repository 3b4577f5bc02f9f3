#include "worker_pool.h"

#include <algorithm>
#include <chrono>

#include "spin_lock.h"

namespace gpp {
namespace {

// Polls `done` for up to `budget`; whether it became true.
template <typename Done> bool spin_until(Done done, std::chrono::microseconds budget) {
  const auto until = std::chrono::steady_clock::now() + budget;
  for (unsigned n = 0;; ++n) {
    if (done()) return true;
    cpu_relax();
    // The clock costs tens of ns: read it now and then.
    if ((n & 63) == 63 && std::chrono::steady_clock::now() >= until) return done();
  }
}

} // namespace

WorkerPool::WorkerPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(threads - 1);
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back(&WorkerPool::worker_loop, this, i);
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto &t : workers_) t.join();
}

void WorkerPool::run(unsigned chunks, const std::function<void(unsigned)> &chunk) {
  // Thread k runs chunks k, k + used, k + 2 * used...
  const unsigned used = std::min(chunks, threads());
  auto share = [&](unsigned k) {
    for (unsigned c = k; c < chunks; c += used) chunk(c);
  };
  if (used <= 1) {
    if (used == 1) share(0);
    return;
  }
  const std::function<void(unsigned)> job = share;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    chunks_ = used;
    pending_.store(used - 1, std::memory_order_relaxed);
    generation_.store(generation_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  work_ready_.notify_all(); // wakes only the workers asleep: the others spin
  share(0);
  // The workers' shares usually end about when this one does.
  if (spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; }, kSpin)) return;
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
}

void WorkerPool::run_ranges(uint32_t count,
                            const std::function<void(uint32_t, uint32_t)> &range) {
  const unsigned parts = threads();
  run(parts, [&](unsigned k) {
    range(static_cast<uint32_t>(uint64_t{count} * k / parts),
          static_cast<uint32_t>(uint64_t{count} * (k + 1) / parts));
  });
}

void WorkerPool::worker_loop(unsigned index) {
  uint64_t seen = 0;
  for (;;) {
    // A job that follows the last one closely (a batch a few tens of
    // microseconds after the previous) finds this worker still polling: a
    // condition variable's wake-up costs about as much again.
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; }, kSpin);
    const std::function<void(unsigned)> *job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [&] {
        return stopping_ || generation_.load(std::memory_order_relaxed) != seen;
      });
      if (stopping_) return;
      seen = generation_.load(std::memory_order_relaxed);
      if (index >= chunks_) continue;
      job = job_;
    }
    (*job)(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_); // the caller may be about to wait
      work_done_.notify_one();
    }
  }
}

} // namespace gpp
