// CPU engine: runs the packet core over a validated batch, spreading large
// batches over a fixed pool of worker threads (worker_pool.h).
#pragma once

#include <cstdint>

#include "packet_core.h"
#include "worker_pool.h"

namespace gpp {

// The byte table (detail::RssTable) of `key` for the calling thread, made
// again when the key changes (about 0.1 ms): the CPU then hashes a packet with
// a lookup per input byte, where toeplitz_word()'s loop over the input's bits
// took most of a small packet's parse + RSS (1166 of 1597 instructions).
const detail::RssTable &host_rss_table(const uint8_t (&key)[kRssKeySize]);

// Runs the core over packets [begin, end) of a batch that passed
// gpp_batch_validate(); results[i] is written for packet i (RSS through
// host_rss_table()).
void process_batch_range(const uint8_t *batch, const CoreConfig &cfg, GppResult *results,
                         uint32_t begin, uint32_t end);

// Batches a pipelined cpu engine (make_cpu_engine) holds at once: one
// running, the next queued behind it, so the engine never waits for the
// chain (more would only add a batch of latency each).
constexpr unsigned kPipelinedCpuSlots = 2;

class CpuEngine {
public:
  // Batches smaller than this run on the calling thread: handing work to
  // another core costs more than parsing a few hundred packets.
  static constexpr uint32_t kMinPacketsPerThread = 512;

  // threads == 0 means one per online core.
  explicit CpuEngine(unsigned threads) : pool_(threads) {}

  unsigned threads() const { return pool_.threads(); }

  // Processes a whole validated batch into results[0 .. packet_count).
  void process(const uint8_t *batch, const CoreConfig &cfg, GppResult *results);

private:
  WorkerPool pool_;
};

} // namespace gpp
