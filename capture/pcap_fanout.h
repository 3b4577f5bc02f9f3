// Live capture through libpcap over several sockets of one Linux
// PACKET_FANOUT group, as Suricata's AF_PACKET workers and Zeek's af_packet
// do: the kernel spreads the interface's packets over the sockets (by flow
// hash, round robin, CPU or receive queue), and each socket has a thread of
// its own that fills batches from it with PcapSocket::fill (the rules of a
// single socket: a batch closes at its batch-size or its timeout), writes
// each closed batch once into memory the caller provides (pcapsrc: the
// allocator downstream offers) and queues it.  The design is XdpCapture's
// (xdp_capture.h) with a socket where it has a receive queue: the consumer
// takes batches in the order they were closed, and packet numbers are given
// as a batch is queued, so they count up in the order the consumer receives
// packets.  No GStreamer.
#pragma once

#include <pcap/pcap.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "batch_handoff.h"
#include "pcap_live.h"

namespace gpp::capture {

// How the kernel spreads packets over the group's sockets (PACKET_FANOUT_*).
// HashDefrag is Hash with PACKET_FANOUT_FLAG_DEFRAG (Suricata's cluster_flow):
// the kernel reassembles IPv4 fragments before hashing, so the sockets see
// each fragmented datagram as one reassembled packet, on its flow's socket,
// and never see a datagram whose fragments do not all arrive.
enum class FanoutMode { Hash, HashDefrag, LoadBalance, Cpu, QueueMapping, Rollover };

// The mode's name in pcapsrc's fanout-mode: hash, hash-defrag, lb, cpu, qm,
// rollover.
const char *fanout_mode_name(FanoutMode mode);

// Sockets a fanout opens at most: each has its own kernel ring (buffer-size)
// and thread, and a group of more sockets than cores gains nothing.
constexpr uint32_t kMaxFanout = 64;

struct PcapFanoutSettings {
  PcapLiveSettings socket;      // every socket's
  uint32_t sockets = 2;         // 1 .. kMaxFanout
  FanoutMode mode = FanoutMode::Hash;
  // The group's id (1-65535): sockets of other processes that join the same
  // id share the packets with these.  0: a group of our own, a free id the
  // kernel picks (PACKET_FANOUT_FLAG_UNIQUEID; a kernel without it is an
  // error that asks for an id).
  uint32_t group = 0;
  size_t max_batch_bytes = 256u << 20;
};

// A socket's counters: packets queued to the consumer, and libpcap's
// pcap_stats (received: accepted by the filter, dropped ones included).
struct FanoutSocketStats {
  uint64_t packets = 0, bytes = 0;
  uint64_t received = 0, dropped = 0, if_dropped = 0;
};

// A closed batch: the caller's memory handle, its size and packets.
struct FanoutBatch {
  void *memory = nullptr;
  uint32_t socket = 0;          // index of the socket it came from
  uint32_t packets = 0;
  uint64_t size = 0;            // bytes of the batch
  uint64_t captured_bytes = 0;
  uint64_t first_capture_ns = 0, last_capture_ns = 0; // wall clock
  uint64_t first_number = 0;    // packet number of its first packet
};

class PcapFanout final : public BatchHandoff<FanoutBatch> {
public:
  // Memory for a batch of `size` bytes: where to write it, and the handle
  // that travels with it; nullptr when none can be had.  Called from the
  // sockets' threads.
  using Allocate = std::function<uint8_t *(size_t size, void **memory)>;
  // Gives back the memory of a batch nobody took.
  using Discard = std::function<void(void *memory)>;

  // Opens the sockets and joins them to the group; nothing is delivered
  // until start().  nullptr with the reason (naming the fix) in `error`.
  static std::unique_ptr<PcapFanout> open(const PcapFanoutSettings &settings, Allocate allocate,
                                          Discard discard, PcapLiveError *error,
                                          std::string *warning);
  // Ends the threads, drops what the sockets still queue and gives back the
  // queued batches (all counted as discarded); the sockets stay until
  // destruction.  Idempotent.
  void stop();
  ~PcapFanout();
  PcapFanout(const PcapFanout &) = delete;
  PcapFanout &operator=(const PcapFanout &) = delete;

  // set_batch_limits(), start(), pause() (the sockets are read and what
  // they hold dropped), running(): BatchHandoff's.

  using Take = TakeResult;
  // The next closed batch, waiting at most `wait_ns`; Interrupted after
  // interrupt() (until resume()), Failed once a thread has failed (error()).
  // interrupt(), resume(), poke(), error(), discarded(): BatchHandoff's.
  Take take(FanoutBatch *batch, uint64_t wait_ns);

  uint32_t sockets() const { return static_cast<uint32_t>(sockets_.size()); }
  uint32_t group() const { return group_; }
  uint32_t linktype() const;
  const char *linktype_name() const;
  // Per socket; pcap_stats read now, or the last answer after stop().
  std::vector<FanoutSocketStats> stats();

  struct Socket; // a handle, its batch and its thread (pcap_fanout.cpp)

private:
  PcapFanout(Allocate allocate, Discard discard, size_t max_batch_bytes);
  void run_socket(Socket &s);
  void capture(Socket &s);
  void deliver(Socket &s);
  void drop_batch(Socket &s);
  void give_back(const FanoutBatch &batch) override { discard_(batch.memory); }
  void wake_threads() override;

  Allocate allocate_;
  Discard discard_;
  const size_t max_batch_bytes_;
  std::vector<std::unique_ptr<Socket>> sockets_;
  uint32_t group_ = 0;
  std::mutex stats_mutex_;         // stats(): one reader of the handles' counters at a time
};

} // namespace gpp::capture
