// Pinned worker threads and a timing loop for gpupacket-cpu-peers (peer_workers.h).
#include "peer_workers.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <system_error>

namespace peers {

namespace {

cpu_set_t mask_of(const std::vector<int> &cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  return set;
}

// Warm-up before each timed point, as a share of the point's minimum time.
constexpr double kWarmupShare = 0.25;

void note_cpu(WorkerRun &run, int cpu) {
  if (std::find(run.seen.begin(), run.seen.end(), cpu) == run.seen.end()) run.seen.push_back(cpu);
}

} // namespace

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

bool set_allowed_cpus(const std::vector<int> &cpus) {
  const cpu_set_t set = mask_of(cpus);
  return !cpus.empty() && sched_setaffinity(0, sizeof set, &set) == 0;
}

std::string cpu_list(const std::vector<int> &cpus) {
  if (cpus.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

double Point::rate() const {
  double sum = 0;
  for (const WorkerRun &w : workers) sum += w.rate();
  return sum;
}

uint64_t Point::items() const {
  uint64_t sum = 0;
  for (const WorkerRun &w : workers) sum += w.items;
  return sum;
}

bool Point::pinned_ok() const {
  std::vector<int> used;
  for (const WorkerRun &w : workers) {
    if (!w.stayed_pinned() || std::find(used.begin(), used.end(), w.cpu) != used.end()) return false;
    used.push_back(w.cpu);
  }
  return !workers.empty();
}

WorkerPool::WorkerPool(const std::vector<int> &cpus) : cpus_(cpus), pin_errors_(cpus.size()) {
  if (cpus_.empty()) {
    error_ = "no CPUs to run workers on";
    return;
  }
  try {
    for (unsigned w = 0; w < cpus_.size(); ++w) threads_.emplace_back(&WorkerPool::worker_main, this, w);
  } catch (const std::system_error &e) {
    error_ = std::string("cannot start worker threads: ") + e.what();
    return;
  }
  // Every worker has pinned itself once it has run a job.
  const std::string started = run(size(), [](unsigned) {});
  for (const std::string &e : pin_errors_)
    if (error_.empty() && !e.empty()) error_ = e;
  if (error_.empty()) error_ = started;
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  job_cv_.notify_all();
  for (std::thread &t : threads_) t.join();
}

void WorkerPool::worker_main(unsigned w) {
  // Explicitly, not inherited: a thread started after rte_eal_init carries
  // the main lcore's one-CPU mask.
  const cpu_set_t set = mask_of({cpus_[w]});
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (rc != 0)
    pin_errors_[w] = "worker " + std::to_string(w) + ": cannot pin to CPU " + std::to_string(cpus_[w]) +
                     ": " + std::strerror(rc);
  else if (allowed_cpus() != std::vector<int>{cpus_[w]})
    pin_errors_[w] = "worker " + std::to_string(w) + ": pinned to CPU " + std::to_string(cpus_[w]) +
                     " but allowed on " + cpu_list(allowed_cpus());

  uint64_t seen_generation = 0;
  for (;;) {
    const std::function<void(unsigned)> *job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      job_cv_.wait(lock, [&] { return stop_ || generation_ != seen_generation; });
      if (stop_) return;
      seen_generation = generation_;
      if (w < job_first_ || w >= job_first_ + job_workers_) continue;
      job = job_;
    }
    std::string error;
    try {
      (*job)(w);
    } catch (const std::exception &e) {
      error = e.what();
    } catch (...) {
      error = "unknown exception";
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error.empty() && job_error_.empty()) job_error_ = "worker " + std::to_string(w) + ": " + error;
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

std::string WorkerPool::run(unsigned n, const std::function<void(unsigned)> &fn, unsigned first) {
  if (first >= size()) return "";
  n = std::min(n, size() - first);
  if (n == 0) return "";
  std::unique_lock<std::mutex> lock(mutex_);
  job_ = &fn;
  job_first_ = first;
  job_workers_ = n;
  pending_ = n;
  job_error_.clear();
  ++generation_;
  job_cv_.notify_all();
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  return job_error_;
}

Point WorkerPool::measure(unsigned n, size_t items, size_t chunk, const WorkerSetup &setup,
                          double min_seconds, unsigned first) {
  Point p;
  if (!ok() || n == 0 || first + n > size() || items == 0 || chunk == 0) {
    p.error = !ok() ? error_ : "cannot measure " + std::to_string(items) + " items on " +
                                   std::to_string(n) + " of " + std::to_string(size()) + " workers";
    return p;
  }
  p.workers.resize(n);
  std::vector<std::string> errors(n);
  std::atomic<unsigned> ready{0};
  std::atomic<bool> failed{false};
  const auto min_time = std::chrono::duration<double>(min_seconds);
  const auto warmup = min_time * kWarmupShare;
  const std::string error = run(n, [&](unsigned worker) {
    const unsigned w = worker - first; // the worker's place in this point
    WorkerRun &me = p.workers[w];
    me.cpu = cpus_[worker];
    int last_cpu = sched_getcpu();
    note_cpu(me, last_cpu);
    Work work;
    try {
      work = setup(worker, &errors[w]);
    } catch (const std::exception &e) {
      errors[w] = e.what();
    }
    if (!work) {
      if (errors[w].empty()) errors[w] = "set-up failed";
      failed = true;
    }
    size_t pos = items * w / n / chunk * chunk; // chunks aligned as on worker 0
    uint64_t done = 0;
    // Runs the work for `length` from pos on; returns the time it took.
    auto loop = [&](std::chrono::duration<double> length) {
      const auto start = std::chrono::steady_clock::now();
      auto now = start;
      do {
        const size_t count = std::min(chunk, items - pos);
        work(pos, count);
        done += count;
        pos += count;
        if (pos == items) pos = 0;
        const int cpu = sched_getcpu();
        if (cpu != last_cpu) note_cpu(me, last_cpu = cpu);
        now = std::chrono::steady_clock::now();
      } while (now - start < length);
      return std::chrono::duration<double>(now - start).count();
    };
    // Warm-up, untimed: without it the first milliseconds of a point (an
    // idle CPU waking, cold caches and TLBs) skewed short points by up to 5x.
    if (work) loop(warmup);
    done = 0;
    // The start line: set-up and warm-up are done everywhere before any clock starts.
    ready.fetch_add(1);
    while (ready.load() < n) std::this_thread::yield();
    if (failed.load()) return;
    me.seconds = loop(min_time);
    me.items = done;
  }, first);
  for (unsigned w = 0; w < n && p.error.empty(); ++w)
    if (!errors[w].empty()) p.error = "worker " + std::to_string(w) + ": " + errors[w];
  if (p.error.empty()) p.error = error;
  return p;
}

Scaling WorkerPool::scaling(const std::string &name, size_t items, size_t chunk,
                            const WorkerSetup &setup, double min_seconds) {
  Scaling s;
  s.name = name;
  s.items = items;
  std::vector<unsigned> singles = {0, size() / 2, size() - 1};
  singles.erase(std::unique(singles.begin(), singles.end()), singles.end());
  std::vector<Point> ones;
  for (unsigned w : singles) ones.push_back(measure(1, items, chunk, setup, min_seconds, w));
  for (const Point &p : ones)
    if (!p.error.empty()) {
      s.one = p;
      break;
    }
  if (s.one.error.empty() && !ones.empty()) {
    std::sort(ones.begin(), ones.end(), [](const Point &a, const Point &b) { return a.rate() < b.rate(); });
    s.one = ones[ones.size() / 2];
  }
  s.all = size() == 1 ? s.one : measure(size(), items, chunk, setup, min_seconds);
  return s;
}

} // namespace peers
