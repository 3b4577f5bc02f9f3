// A fixed pool of host threads that runs one job at a time, split into
// chunks: chunk 0 on the calling thread, the others on workers that poll
// for kSpin after a job, then sleep.  Used where a batch is spread over the
// host's cores (the cpu mode's packet core, the host flow table, the
// sharded engine's split), so no batch starts threads, and batches that
// follow each other closely pay no thread wake-ups.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpp {

class WorkerPool {
public:
  // threads == 0 means one per online core; the caller is one of them.
  explicit WorkerPool(unsigned threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Calls chunk(i) for every i in [0, chunks), spread over the threads
  // (each on its own thread while chunks <= threads()), and returns when all
  // are done.  One caller at a time.
  void run(unsigned chunks, const std::function<void(unsigned)> &chunk);
  // Calls range(first, last) for threads() contiguous, near-equal parts of
  // [0, count), one per thread (a large table's rows, a batch's packets).
  void run_ranges(uint32_t count, const std::function<void(uint32_t, uint32_t)> &range);

private:
  void worker_loop(unsigned index);

  // How long a worker polls for the next job, and the caller for the
  // workers' shares, before sleeping on a condition variable.
  static constexpr std::chrono::microseconds kSpin{50};

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  const std::function<void(unsigned)> *job_ = nullptr; // thread k's share: (*job_)(k)
  unsigned chunks_ = 0;                                 // threads taking part
  std::atomic<uint64_t> generation_{0};                 // written under mutex_
  std::atomic<unsigned> pending_{0};                    // workers' shares not done
  bool stopping_ = false;
};

} // namespace gpp
