// CPU engine: runs the packet core over a validated batch, spreading large
// batches over a fixed pool of worker threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "packet_core.h"

namespace gpp {

// Runs the core over packets [begin, end) of a batch that passed
// gpp_batch_validate(); results[i] is written for packet i.
void process_batch_range(const uint8_t *batch, const CoreConfig &cfg, GppResult *results,
                         uint32_t begin, uint32_t end);

class CpuEngine {
public:
  // Batches smaller than this run on the calling thread: handing work to
  // another core costs more than parsing a few hundred packets.
  static constexpr uint32_t kMinPacketsPerThread = 512;

  // threads == 0 means one per online core.
  explicit CpuEngine(unsigned threads);
  ~CpuEngine();
  CpuEngine(const CpuEngine &) = delete;
  CpuEngine &operator=(const CpuEngine &) = delete;

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Processes a whole validated batch into results[0 .. packet_count).
  void process(const uint8_t *batch, const CoreConfig &cfg, GppResult *results);

private:
  struct Job {
    const uint8_t *batch = nullptr;
    const CoreConfig *cfg = nullptr;
    GppResult *results = nullptr;
    uint32_t packet_count = 0;
    uint32_t chunks = 0;
  };

  void worker_loop(unsigned index);
  void run_chunk(const Job &job, unsigned chunk) const;

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  Job job_;
  uint64_t generation_ = 0;
  unsigned pending_ = 0;
  bool stopping_ = false;
};

} // namespace gpp
