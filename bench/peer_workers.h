// Pinned worker threads and a timing loop for gpupacket-cpu-peers.
//
// rte_eal_init pins the calling thread to the main lcore, and every thread
// created afterwards inherits that one-CPU mask: std::threads started after
// EAL set-up all share one CPU, so "N threads" measured one core N times
// over.  Here the process's allowed CPUs are read before rte_eal_init
// (allowed_cpus) and each worker is pinned to its own CPU of that set.
//
// A measured item is a WorkerSetup: it runs once on each worker's own thread,
// untimed (Hyperscan scratch, buffers), and returns the Work that the timed
// loop calls over the item's input, `chunk` items at a time.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace peers {

// The calling thread's allowed CPUs (sched_getaffinity), ascending; empty on failure.
std::vector<int> allowed_cpus();
// Sets the calling thread's allowed CPUs; false on failure.
bool set_allowed_cpus(const std::vector<int> &cpus);
// "0-3,8" for {0,1,2,3,8}; "none" for {}.
std::string cpu_list(const std::vector<int> &cpus);

// Processes items [first, first + count) of a measured item's input.
using Work = std::function<void(size_t first, size_t count)>;
// Runs once on worker `worker` (its own pinned thread) before the timed
// region; per-thread state lives in the returned Work's captures.  An empty
// Work fails the point, with the reason in *error.
using WorkerSetup = std::function<Work(unsigned worker, std::string *error)>;

// One worker's share of a timed point.
struct WorkerRun {
  int cpu = -1;              // the CPU it is pinned to
  std::vector<int> seen;     // every sched_getcpu() value it saw, set-up and timed loop
  uint64_t items = 0;        // items done in the timed loop
  double seconds = 0;        // its own elapsed time (steady_clock)
  double rate() const { return seconds > 0 ? items / seconds : 0; }
  bool stayed_pinned() const { return seen.size() == 1 && seen[0] == cpu; }
};

// A timed point on n workers.
struct Point {
  std::vector<WorkerRun> workers;
  std::string error; // non-empty: the point failed
  // Items per second on all workers: the sum of per-worker rates (each over
  // its own elapsed time), the figure used everywhere in this program.
  double rate() const;
  double mpps() const { return rate() / 1e6; }
  uint64_t items() const;
  // Every worker only ever ran on its own CPU, and the CPUs are distinct.
  bool pinned_ok() const;
};

// The same item on one worker and on all of the pool's workers.
struct Scaling {
  std::string name;
  size_t items = 0; // input size (the loop cycles over it)
  Point one, all;
  double scaling() const { return one.rate() > 0 ? all.rate() / one.rate() : 0; }
  bool ok() const { return one.error.empty() && all.error.empty(); }
};

class WorkerPool {
public:
  // Starts one thread per entry of `cpus`, each pinned to that CPU alone.
  explicit WorkerPool(const std::vector<int> &cpus);
  ~WorkerPool();
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  bool ok() const { return error_.empty(); }
  const std::string &error() const { return error_; }
  unsigned size() const { return static_cast<unsigned>(threads_.size()); }
  const std::vector<int> &cpus() const { return cpus_; }

  // Runs fn(worker) on workers first..first+n-1 at once and waits for them;
  // untimed.  An exception inside fn becomes the returned message ("" = fine).
  std::string run(unsigned n, const std::function<void(unsigned)> &fn, unsigned first = 0);

  // A timed point on workers 0..n-1: setup on each, then all start together
  // (a spinning barrier: each worker owns its CPU) and each calls its Work
  // over `items` cyclically, `chunk` at a time, worker w starting at
  // w * items / n, until min_seconds of its own time have passed.
  // `first` shifts the point to workers first..first+n-1 (Point::workers[0]
  // is worker `first`).
  Point measure(unsigned n, size_t items, size_t chunk, const WorkerSetup &setup,
                double min_seconds, unsigned first = 0);

  // measure() on all workers, and on one: the median of single-worker points
  // on the first, middle and last worker's CPUs (one core of a VM can be
  // slowed by what else runs there; seen as 16-core scaling of 22x).
  Scaling scaling(const std::string &name, size_t items, size_t chunk, const WorkerSetup &setup,
                  double min_seconds);

private:
  void worker_main(unsigned w);

  std::vector<int> cpus_;
  std::vector<std::thread> threads_;
  std::vector<std::string> pin_errors_;
  std::string error_;

  std::mutex mutex_;
  std::condition_variable job_cv_, done_cv_;
  const std::function<void(unsigned)> *job_ = nullptr;
  unsigned job_first_ = 0, job_workers_ = 0;
  uint64_t generation_ = 0;
  unsigned pending_ = 0;
  std::string job_error_;
  bool stop_ = false;
};

} // namespace peers
