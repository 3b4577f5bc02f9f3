#include "cpu_engine.h"

#include "engine.h"
#include "spin_lock.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include <gpupacket/packet-batch.h>

namespace gpp {

const detail::RssTable &host_rss_table(const uint8_t (&key)[kRssKeySize]) {
  struct Cache {
    std::unique_ptr<detail::RssTable> table;
    uint8_t key[kRssKeySize] = {};
  };
  thread_local Cache cache;
  if (!cache.table || !std::equal(key, key + kRssKeySize, cache.key)) {
    if (!cache.table) cache.table = std::make_unique<detail::RssTable>();
    cache.table->fill(key, 0, 1);
    std::copy(key, key + kRssKeySize, cache.key);
  }
  return *cache.table;
}

void process_batch_range(const uint8_t *batch, const CoreConfig &cfg, GppResult *results,
                         uint32_t begin, uint32_t end) {
  const auto *header = reinterpret_cast<const GppBatchHeader *>(batch);
  const GppPacketDesc *descs = gpp_batch_descs(batch);
  GppTunnelInfo *tunnels = cfg.decap ? tunnel_plane(results, header->packet_count) : nullptr;
  const detail::RssTable *rss_table = begin < end ? &host_rss_table(cfg.rss_key) : nullptr;
  for (uint32_t i = begin; i < end; ++i) {
    const GppPacketDesc &d = descs[i];
    process_packet(batch + d.offset, d.caplen, d.wirelen, header->linktype,
                   d.packet_number, d.timestamp_ns, cfg, results[i], ClassifyStages::kInline,
                   rss_table, tunnels ? tunnels + i : nullptr);
  }
}

void CpuEngine::process(const uint8_t *batch, const CoreConfig &cfg, GppResult *results) {
  const uint32_t count = reinterpret_cast<const GppBatchHeader *>(batch)->packet_count;
  const unsigned chunks =
      std::min<unsigned>(threads(), std::max(1u, count / kMinPacketsPerThread));
  const uint32_t per_chunk = (count + chunks - 1) / chunks;
  pool_.run(chunks, [&](unsigned chunk) {
    const uint32_t begin = std::min(count, chunk * per_chunk);
    process_batch_range(batch, cfg, results, begin, std::min(count, begin + per_chunk));
  });
}

namespace {

// mode=cpu as an Engine: the batch is done when submit() returns.
class CpuModeEngine final : public Engine {
public:
  explicit CpuModeEngine(unsigned threads) : cpu_(threads) {}
  Mode mode() const override { return Mode::Cpu; }
  unsigned slots() const override { return 1; }
  bool completes_inline() const override { return true; }
  bool submit(const uint8_t *batch, size_t, uint32_t, const CoreConfig &cfg, GppResult *results,
              std::string *) override {
    cpu_.process(batch, cfg, results);
    return true;
  }
  bool wait_oldest(std::string *) override { return true; }
  GpuCounters counters() const override { return {}; }

private:
  CpuEngine cpu_;
};

// mode=cpu pipelined: submit() queues the batch for a thread of the engine's
// own (thread 0 of its pool) and returns, so the caller's next batch arrives,
// and the previous batch's results leave, while this one runs.  Without it
// each batch's arrival and push were added to its processing: on 16 cores a
// 4096-packet batch parses in ~137 us, and the gaps between batches let the
// pool's workers fall asleep (6.7 of 29.8 Mpps through a pipeline).
class PipelinedCpuEngine final : public Engine {
public:
  explicit PipelinedCpuEngine(unsigned threads) : threads_(threads) {
    runner_ = std::thread(&PipelinedCpuEngine::run_jobs, this);
  }
  ~PipelinedCpuEngine() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    job_ready_.notify_one();
    runner_.join();
  }
  Mode mode() const override { return Mode::Cpu; }
  unsigned slots() const override { return kPipelinedCpuSlots; }
  bool submit(const uint8_t *batch, size_t, uint32_t, const CoreConfig &cfg, GppResult *results,
              std::string *) override {
    const uint64_t ticket = submitted_.load(std::memory_order_relaxed);
    jobs_[ticket % kPipelinedCpuSlots] = {batch, cfg, results};
    // Sequentially consistent, as the runner's and the waiter's sleeps: each
    // side stores its flag and then reads the other's.
    submitted_.store(ticket + 1, std::memory_order_seq_cst);
    if (runner_asleep_.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lock(mutex_); // the runner may be about to sleep
      job_ready_.notify_one();
    }
    return true;
  }
  bool wait_oldest(std::string *) override {
    const uint64_t ticket = retired_++;
    auto done = [&] { return completed_.load(std::memory_order_acquire) > ticket; };
    // The batch usually runs for longer than a short spin: sleep soon, so
    // the waiter does not take a core from the engine's threads.
    for (int i = 0; i < kWaiterSpins; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    waiter_asleep_.store(true, std::memory_order_seq_cst);
    job_done_.wait(lock, done);
    waiter_asleep_.store(false, std::memory_order_relaxed);
    return true;
  }
  GpuCounters counters() const override { return {}; }

private:
  static constexpr int kWaiterSpins = 256;
  // How long the runner polls for the next batch before it sleeps.  A
  // source that keeps up has queued it before this one ends; one that does
  // not is the slower stage, and a longer poll only takes its core (on the
  // 2-core VM a 50 us poll cost ~150 us of CPU a batch at cpu-threads=1).
  static constexpr std::chrono::microseconds kRunnerSpin{5};

  struct Job {
    const uint8_t *batch = nullptr;
    CoreConfig cfg{};
    GppResult *results = nullptr;
  };

  void run_jobs() {
    CpuEngine cpu(threads_); // its workers are started from this thread
    uint64_t next = 0;
    for (;;) {
      auto ready = [&] { return submitted_.load(std::memory_order_acquire) > next; };
      const auto until = std::chrono::steady_clock::now() + kRunnerSpin;
      for (unsigned n = 0; !ready(); ++n) {
        cpu_relax();
        if ((n & 63) == 63 && std::chrono::steady_clock::now() >= until) break;
      }
      if (!ready()) {
        std::unique_lock<std::mutex> lock(mutex_);
        runner_asleep_.store(true, std::memory_order_seq_cst);
        job_ready_.wait(lock, [&] { return stopping_ || ready(); });
        runner_asleep_.store(false, std::memory_order_relaxed);
        // Destroyed with nothing outstanding (the caller waits for every
        // batch first): nothing is left to run.
        if (stopping_) return;
      }
      const Job &job = jobs_[next % kPipelinedCpuSlots];
      cpu.process(job.batch, job.cfg, job.results);
      completed_.store(++next, std::memory_order_seq_cst);
      if (waiter_asleep_.load(std::memory_order_seq_cst)) {
        std::lock_guard<std::mutex> lock(mutex_);
        job_done_.notify_one();
      }
    }
  }

  const unsigned threads_;
  Job jobs_[kPipelinedCpuSlots];
  std::atomic<uint64_t> submitted_{0}; // written by the submitter
  std::atomic<uint64_t> completed_{0}; // written by the runner
  uint64_t retired_ = 0;               // the waiter's
  std::atomic<bool> runner_asleep_{false}, waiter_asleep_{false};
  std::mutex mutex_;
  std::condition_variable job_ready_, job_done_;
  bool stopping_ = false;
  std::thread runner_;
};

} // namespace

std::unique_ptr<Engine> make_cpu_engine(unsigned threads, bool pipelined) {
  if (pipelined) return std::make_unique<PipelinedCpuEngine>(threads);
  return std::make_unique<CpuModeEngine>(threads);
}

} // namespace gpp
