#include "worker_pool.h"

#include <algorithm>

namespace gpp {

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
    pending_ = used - 1;
    ++generation_;
  }
  work_ready_.notify_all();
  share(0);
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [this] { return pending_ == 0; });
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
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    if (index >= chunks_) continue;
    const std::function<void(unsigned)> &job = *job_;
    lock.unlock();
    job(index);
    lock.lock();
    if (--pending_ == 0) work_done_.notify_one();
  }
}

} // namespace gpp
