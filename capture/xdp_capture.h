// Live capture on AF_XDP (libxdp / libbpf): one XSK socket and one thread per
// receive queue, each with its own UMEM, behind a small XDP program of ours
// that redirects the queues to them (attached only where no other program
// is, detached at the end).  Each thread copies its frames straight
// into batches of <gpupacket/packet-batch.h> in memory the caller provides
// (afxdpsrc: the pinned pool downstream offers), or (frames in place)
// writes only a batch's descriptors, pointing at the frames in the UMEM,
// closes a batch by size or timeout and queues it; the consumer takes batches in the order they were
// closed.  Packet numbers are given as a batch is queued, so they count up
// in the order the consumer receives packets.  No GStreamer.
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
#include <vector>

#include <gpupacket/packet-batch.h>

#include "batch_handoff.h"

namespace gpp::capture {

enum class XdpCopyMode { Auto, ZeroCopy, Copy };   // XDP_ZEROCOPY / XDP_COPY bind
enum class XdpAttachMode { Auto, Native, Generic }; // driver or SKB mode program

// The defaults of a capture, afxdpsrc's properties' too.
constexpr uint32_t kDefaultFrameCount = 8192;
constexpr uint32_t kDefaultFrameSize = 4096;
constexpr uint32_t kDefaultRingSize = 2048;

struct XdpSettings {
  std::string interface;
  // Receive queues to open, in this order; empty: every one the interface has.
  std::vector<uint32_t> queues;
  XdpCopyMode copy_mode = XdpCopyMode::Auto;
  XdpAttachMode attach_mode = XdpAttachMode::Auto;
  bool busy_poll = false;       // SO_PREFER_BUSY_POLL: the thread drives the NIC's NAPI
  uint32_t frame_count = kDefaultFrameCount; // UMEM frames per queue (a power of two)
  uint32_t frame_size = kDefaultFrameSize;   // bytes per frame: the longest packet captured whole
  uint32_t ring_size = kDefaultRingSize;     // RX ring entries (a power of two, at most frame_count / 4;
                                // the fill ring has twice as many)
  uint32_t batch_capacity_bytes = 16u << 20; // memory asked for each batch
  // Frames in place: a batch's packets are its frames, where the kernel
  // wrote them, instead of copies in memory from Allocate.  Each queue's
  // mapping then holds kInPlaceSlots descriptor slots ahead of its UMEM: a
  // batch is a slot's header and descriptors, whose offsets reach into the
  // UMEM behind it (a valid <gpupacket/packet-batch.h> batch that runs to
  // the mapping's end).  Its frames return to the fill ring, and its slot
  // to the queue, when release_in_place() is called for it.
  bool frames_in_place = false;
  // Frames in place: called once for each queue's mapping (base, bytes), to
  // register it with a GPU; what it returns is kept while the mapping lives
  // and destroyed before it is unmapped.  nullptr: not registered.
  std::function<std::shared_ptr<void>(void *base, size_t bytes)> on_mapped;
};

// Frames in place: descriptor slots a queue has, i.e. its batches out at
// once; a thread whose slots are all out waits for one (its rings then fill,
// and what the kernel drops is counted).
constexpr uint32_t kInPlaceSlots = 32;

// A queue still held by an XDP socket closed a moment ago (the kernel lets
// it go shortly after): how often binding tries, and the wait between tries.
constexpr int kQueueBusyTries = 50;
constexpr uint32_t kQueueBusyWaitUs = 20000;

// Parses afxdpsrc's `queues`: "all" (or ""), a count "N" (queues 0..N-1), or
// a list of queues and ranges "0,2,4-7" (a single queue: "3-3" or "3,").
// False with a reason on bad text.
bool parse_queue_list(const std::string &text, std::vector<uint32_t> *queues, bool *all,
                      std::string *error);
// Receive / transmit queues the interface has (ethtool's channels, else
// /sys/class/net/IF/queues/rx-*, tx-*); 0 when unknown.
uint32_t interface_rx_queues(const std::string &interface);
uint32_t interface_tx_queues(const std::string &interface);

// Kernel and capture counters of one queue (XDP_STATISTICS, and ours).
struct XdpQueueStats {
  uint32_t queue = 0;
  uint64_t packets = 0, bytes = 0;           // copied into batches
  uint64_t rx_dropped = 0;                   // dropped by the kernel (e.g. too long for a frame)
  uint64_t rx_invalid_descs = 0, rx_ring_full = 0, rx_fill_ring_empty = 0;
};

// A closed batch: the caller's memory handle (frames in place: the
// capture's, for release_in_place()), its size and packets.  The memory
// may be larger than the batch (taken when the batch opened, see
// receive()): `size` is what a buffer of it should say.
struct XdpBatch {
  void *memory = nullptr;
  uint8_t *data = nullptr;      // frames in place: the batch's first byte
  bool device_mapped = false;   // frames in place: its mapping registered (on_mapped)
  uint32_t queue = 0;
  uint32_t packets = 0;
  uint64_t size = 0;            // bytes of the batch (its header's total_size)
  uint64_t captured_bytes = 0;
  uint64_t first_capture_ns = 0, last_capture_ns = 0; // CLOCK_REALTIME
  uint64_t first_number = 0;    // packet number of its first packet
};

class XdpCapture final : public BatchHandoff<XdpBatch> {
public:
  // Memory for a batch of at most `capacity` bytes: where to write it, and
  // the handle that travels with it; nullptr when none can be had.  Called
  // from the queues' threads, when a batch closes or, where its deadline
  // will close it, when it opens.
  using Allocate = std::function<uint8_t *(size_t capacity, void **memory)>;
  // Gives back the memory of a batch nobody took, or one left empty.
  using Discard = std::function<void(void *memory)>;

  // Opens the sockets and attaches the XDP program; nothing is received
  // until start().  nullptr with a message naming the fix on failure;
  // `warning` says what was changed from what was asked (generic mode).
  static std::unique_ptr<XdpCapture> open(const XdpSettings &settings, Allocate allocate,
                                          Discard discard, std::string *error,
                                          std::string *warning);
  // Ends the threads and gives back the queued batches (counted as
  // discarded); the sockets stay until destruction.  Idempotent.
  void stop();
  // stop(), then deletes the sockets; the last capture of this process on
  // the interface detaches the program.
  ~XdpCapture();
  XdpCapture(const XdpCapture &) = delete;
  XdpCapture &operator=(const XdpCapture &) = delete;

  // set_batch_limits(), start(), pause() (the threads take frames off the
  // rings and drop them), running(): BatchHandoff's.

  using Take = TakeResult;
  // The next closed batch, waiting at most `wait_ns`; Interrupted after
  // interrupt() (until resume()), Failed once a thread has failed (error()).
  // With busy polling the caller spins while a batch is being built (it
  // takes the batch the moment it closes) and sleeps otherwise.
  // interrupt(), resume(), poke(), error(), discarded(): BatchHandoff's.
  Take take(XdpBatch *batch, uint64_t wait_ns);

  bool zero_copy() const { return zero_copy_; }
  bool native() const { return native_; }
  const std::vector<uint32_t> &queues() const { return queue_ids_; }
  std::vector<XdpQueueStats> stats() const;
  bool frames_in_place() const { return in_place_; }
  // Frames in place: whether every queue's mapping was registered (on_mapped).
  bool device_mapped() const { return device_mapped_; }

  // Frames in place: gives a batch's frames and slot back to its queue.
  // Once for every batch taken, from any thread, also after the capture is
  // gone (the mapping lives until its last batch is given back).
  static void release_in_place(void *memory);

  struct Queue;   // one socket, its UMEM and its thread (xdp_capture.cpp)
  struct Mapping; // a queue's mmap: descriptor slots (frames in place), then the UMEM
  struct Program; // the interface's redirect program and socket map

private:
  XdpCapture(Allocate allocate, Discard discard, uint32_t capacity);
  void run_queue(Queue &q);
  void receive(Queue &q);
  void deliver(Queue &q, bool at_deadline);
  void take_open_memory(Queue &q);
  void drop_open_memory(Queue &q);
  void release(Queue &q);
  void deliver_in_place(Queue &q);
  XdpBatch held_batch(Queue &q);
  void queue_batch(Queue &q, XdpBatch batch, GppPacketDesc *descs);
  bool take_returned(Queue &q);
  void give_back(const XdpBatch &batch) override;
  void signal_consumer() override; // with mutex_ held
  bool spin_for_batch(uint64_t seen, uint64_t until_ns);
  void wake_threads() override;

  Allocate allocate_;
  Discard discard_;
  const uint32_t capacity_;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<uint32_t> queue_ids_;
  bool zero_copy_ = false, native_ = false, in_place_ = false, device_mapped_ = false;
  // The redirect program on the interface, shared with this process's other
  // captures there (each with queues of its own).
  std::shared_ptr<Program> program_;
  bool busy_poll_ = false;
  // Batches being built (a queue's first frame taken, not yet queued or
  // dropped), and a count of what take() waits for (a batch queued, an
  // interrupt, a poke, a failure): with busy polling take() spins on them.
  std::atomic<uint32_t> open_batches_{0};
  std::atomic<uint64_t> signals_{0};
  std::atomic<bool> consumer_asleep_{false}; // take() waits for a batch to open
  int wake_fd_ = -1; // eventfd: start/pause/stop end the threads' waits
};

} // namespace gpp::capture
