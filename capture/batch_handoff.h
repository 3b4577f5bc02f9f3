// What a live capture's threads (one per receive queue or socket) share
// with its consumer (a source element's streaming thread): the batch
// limits, whether to deliver (start / pause), and the hand-off.  Closed
// batches queue in the order they were closed, their packets are numbered
// as they are queued (so numbers count up in the order the consumer receives
// packets), and the consumer's wait ends for a batch, an interrupt (a
// flush), a poke (its state changed) or a thread's failure.  Shared by
// XdpCapture and PcapFanout.  No GStreamer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include <gpupacket/packet-batch.h>

#include "live_clock.h"

namespace gpp::capture {

enum class TakeResult { Batch, Timeout, Interrupted, Failed };

// `Batch` has `packets` (uint32_t) and `first_number` (uint64_t).
template <class Batch> class BatchHandoff {
public:
  virtual ~BatchHandoff() = default;

  // Read by each thread before every wait: a change applies to the batch
  // being built.
  void set_batch_limits(uint32_t packets, uint64_t timeout_ns) {
    packets = packets ? packets : 1;
    // Called for every batch taken: the threads are woken only by a change.
    const bool same_packets = batch_packets_.exchange(packets) == packets;
    const bool same_timeout = batch_timeout_ns_.exchange(timeout_ns) == timeout_ns;
    if (!same_packets || !same_timeout) wake_threads();
  }
  // The threads deliver batches (PLAYING) ...
  void start() {
    drop_queued();
    start_wall_ns_ = wall_clock_ns();
    ++starts_;
    running_ = true;
    wake_threads();
  }
  // ... or drop what they take, counted as discarded (PAUSED: nothing
  // captured then is delivered later).  A batch being built is dropped too.
  void pause() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      running_ = false;
      ++epoch_;              // a batch begun before the pause is never delivered
      changed_.notify_all(); // a thread waiting for room gives its batch up
    }
    wake_threads();
  }
  // Whether the threads deliver (start() since the last pause()).
  bool running() const { return running_.load(); }

  void interrupt() {
    std::lock_guard<std::mutex> lock(mutex_);
    interrupted_ = true;
    signal_consumer();
  }
  void resume() {
    std::lock_guard<std::mutex> lock(mutex_);
    interrupted_ = false;
  }
  // Ends a take() waiting now with Timeout (the consumer's state changed).
  void poke() {
    std::lock_guard<std::mutex> lock(mutex_);
    poked_ = true;
    signal_consumer();
  }
  std::string error() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }
  // Packets captured and never taken: dropped while not delivering, held
  // or queued at a stop.
  uint64_t discarded() const { return discarded_.load(); }

protected:
  // A batch nobody will take: its memory back to where it came from.
  virtual void give_back(const Batch &batch) = 0;
  // With mutex_ held: wakes take().
  virtual void signal_consumer() { changed_.notify_all(); }
  // Ends the threads' waits: they look at the state above again.
  virtual void wake_threads() = 0;

  // A thread failed: the consumer's take() answers Failed with `why`.
  void fail(const std::string &why) {
    failed_ = true;
    set_error(why);
  }

  // Whether take() has something to answer; with mutex_ held.
  bool attention() const { return interrupted_ || poked_ || !error_.empty() || !ready_.empty(); }

  // take()'s wait, with mutex_ held by `lock`, until `until` (steady clock).
  TakeResult take_ready(std::unique_lock<std::mutex> &lock, Batch *batch,
                        std::chrono::steady_clock::time_point until) {
    if (!changed_.wait_until(lock, until, [this] { return attention(); }) ||
        (poked_ && ready_.empty() && !interrupted_ && error_.empty())) {
      poked_ = false;
      return TakeResult::Timeout;
    }
    poked_ = false;
    if (interrupted_) return TakeResult::Interrupted;
    if (!ready_.empty()) {
      *batch = ready_.front();
      ready_.pop_front();
      changed_.notify_all(); // a capture thread may wait for room
      return TakeResult::Batch;
    }
    return TakeResult::Failed;
  }

  // With mutex_ held: numbers the batch's packets (`descs`, in the batch's
  // memory) in queue order and queues it.
  void queue_numbered(Batch batch, GppPacketDesc *descs) {
    batch.first_number = next_number_;
    for (uint32_t i = 0; i < batch.packets; ++i) descs[i].packet_number = next_number_++;
    ready_.push_back(batch);
    signal_consumer();
  }

  // The first failure's reason, for the consumer (Failed).
  void set_error(const std::string &why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.empty()) error_ = why;
    signal_consumer();
  }

  // Gives back the queued batches, counted as discarded (a restart, a stop).
  void drop_queued() {
    std::deque<Batch> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      dropped.swap(ready_);
      changed_.notify_all();
    }
    for (const Batch &b : dropped) {
      discarded_ += b.packets;
      give_back(b);
    }
  }

  std::atomic<uint32_t> batch_packets_{256};
  std::atomic<uint64_t> batch_timeout_ns_{1000000};
  std::atomic<bool> running_{false}, stopping_{false}, failed_{false};
  std::atomic<uint64_t> epoch_{0}; // counts pauses: a batch begun before one is dropped
  // When the last start() was (ns, wall clock), and how many there were:
  // a thread can tell packets captured before it from those after.
  std::atomic<uint64_t> start_wall_ns_{0}, starts_{0};

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> ready_;
  uint64_t next_number_ = 1;
  bool interrupted_ = false, poked_ = false;
  std::string error_;
  std::atomic<uint64_t> discarded_{0};
};

} // namespace gpp::capture
