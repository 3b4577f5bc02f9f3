// Reads a capture ahead of its consumer: a thread of its own plans each
// batch, takes memory for it from the caller (pcapsrc: a GstBuffer from the
// allocator downstream), writes it there with its writer threads and queues
// it.  The consumer takes batches in file order; while it hands one
// downstream, the next is being read.  No GStreamer.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "capture_reader.h"
#include "worker_pool.h"

namespace gpp::capture {

struct ProducedBatch {
  enum class Kind { Batch, End, Error, NoMemory, Stopped } kind = Kind::Stopped;
  void *memory = nullptr;       // the caller's handle for the batch's memory
  uint32_t packets = 0;
  uint64_t captured_bytes = 0;
  uint64_t first_record = 0;    // records read before its first packet (filter: some skipped)
  uint64_t last_record = 0;     // records read up to its last packet (Error: before the damage)
  std::string error;            // Error: why the file cannot be read on
};

class BatchProducer {
public:
  // Memory for a batch of `size` bytes: returns where to write it and sets
  // the handle that travels with the batch; nullptr when there is none.
  using Allocate = std::function<uint8_t *(size_t size, void **memory)>;
  // Gives back the memory of a batch nobody took (a stop).
  using Discard = std::function<void(const ProducedBatch &batch)>;

  // `writer_threads` (0: one per core) write each large batch; `depth`
  // batches are read ahead.  The reader is used only by the producer's
  // thread from start() to stop().
  BatchProducer(CaptureReader &reader, Allocate allocate, Discard discard,
                unsigned writer_threads, unsigned depth);
  ~BatchProducer();
  BatchProducer(const BatchProducer &) = delete;
  BatchProducer &operator=(const BatchProducer &) = delete;

  // Packets a batch holds at most; read at the start of each batch, so a
  // change applies from the next batch planned.
  void set_batch_size(uint32_t packets) { batch_size_.store(packets); }
  void set_max_batch_bytes(size_t bytes) { max_batch_bytes_ = bytes; }

  void start();
  // The next batch in file order; Stopped once interrupt() was called
  // (until resume()).  End and Error come once, after every batch.
  ProducedBatch take();
  // Ends a take() waiting now or later (GstBaseSrc's unlock).
  void interrupt();
  void resume();
  // Stops the thread and discards the batches it queued.
  void stop();

  unsigned writer_threads() const { return writers_.threads(); }

private:
  void run();
  void put(ProducedBatch item);

  CaptureReader &reader_;
  Allocate allocate_;
  Discard discard_;
  WorkerPool writers_;
  const unsigned depth_;
  std::atomic<uint32_t> batch_size_{256};
  size_t max_batch_bytes_ = 256u << 20;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<ProducedBatch> queue_;
  bool stopping_ = false, interrupted_ = false;
  std::thread thread_;
};

} // namespace gpp::capture
