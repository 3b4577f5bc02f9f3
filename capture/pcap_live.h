// Live capture through libpcap: one activated handle on an interface
// (PcapSocket) and the loop that fills a batch from it until the batch is
// full, its timeout has passed, or its caller stops it.  pcapsrc device= runs
// the loop on its streaming thread (one socket); PcapFanout (pcap_fanout.h)
// runs it on a thread per socket of a PACKET_FANOUT group.  No GStreamer.
#pragma once

#include <pcap/pcap.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "batch_builder.h"
#include "live_clock.h"

namespace gpp::capture {

// The defaults of a live capture, pcapsrc's properties' too.
constexpr uint32_t kDefaultSnaplen = 262144;  // tcpdump's: whole packets
constexpr bool kDefaultPromiscuous = true;
constexpr uint32_t kDefaultBufferKib = 16384; // the kernel ring of each socket
constexpr bool kDefaultImmediate = true;

struct PcapLiveSettings {
  std::string interface;
  std::string filter;           // BPF, tcpdump syntax; "" = none
  uint32_t snaplen = kDefaultSnaplen;
  bool promiscuous = kDefaultPromiscuous;
  uint32_t buffer_kib = kDefaultBufferKib; // 0 = libpcap's default
  bool immediate = kDefaultImmediate;
  uint32_t timeout_us = 1000;   // batch-timeout: bounds libpcap's block timeout
};

// Why a socket could not be opened: `message` names the problem and the fix.
struct PcapLiveError {
  enum class Kind { NoSuchDevice, Permission, InterfaceDown, Filter, Fanout, Other };
  Kind kind = Kind::Other;
  std::string message;
  std::string detail;           // libpcap's or the kernel's own words
};

class PcapSocket;

// Packets of the batch being built, and when its first one came.
struct LiveBatch {
  gpp::BatchBuilder builder;
  uint64_t bytes = 0;            // captured bytes of its packets
  uint64_t first_ts = 0, last_ts = 0; // capture times (ns, wall clock)
  uint64_t first_arrival = 0;    // monotonic ns when its first packet was read
  uint64_t packets_read = 0;     // packets added since the capture began: their numbers
  uint32_t linktype = 0;
  bool nano = true;              // set by the socket that fills it
  // Packets captured before skip_before_ns (wall clock) are skipped, counted
  // in `skipped`, until the first one at or after it, or the first read at
  // or after skip_until_mono_ns (monotonic: a wall clock stepped back must
  // not skip the traffic for as long as the step).  0: none skipped.
  uint64_t skip_before_ns = 0;
  uint64_t skip_until_mono_ns = 0;
  uint64_t skipped = 0;
  uint64_t starts_seen = 0;      // the capture's starts (follow_start) seen so far

  uint32_t packets() const { return builder.packet_count(); }
  // Follows the capture's starts: `starts` counts them, `since_ns` is the
  // last one's time (wall clock; read after `starts`).  At a start not seen
  // yet, skips what `socket` captured before it (what it still holds from
  // before comes out within its stale window from now) and returns true.
  bool follow_start(uint64_t starts, uint64_t since_ns, const PcapSocket &socket);
  // The packets skipped since the last call.
  uint64_t take_skipped() { return std::exchange(skipped, 0); }
  // Empties the batch; the packets it held are no longer counted as read.
  void drop();
};

// What a fill consults between its looks at the socket.
struct FillControl {
  // Before each look: false ends the fill (Fill::Stopped).
  std::function<bool()> proceed;
  // batch-size and batch-timeout, read before each look, so a change applies
  // to the batch being built.
  std::function<void(uint32_t *packets, uint64_t *timeout_ns)> limits;
  // Longest wait for a reason of the caller's (ns; UINT64_MAX: none); may be empty.
  std::function<uint64_t()> wait_limit;
  int wake_fd = -1;              // readable: on_wake() is asked
  // After a wake-up: false ends the fill (Fill::Stopped); true looks again.
  std::function<bool()> on_wake;
};

enum class Fill { Ready, Stopped, Failed };

class PcapSocket {
public:
  // pcap_create / pcap_activate with the settings, the filter installed, the
  // handle non-blocking; nullptr with the reason in `error`.  `warning`: a
  // limitation pcap_activate reported, and in immediate mode a ring that
  // the interface's offloads make small (64 KiB a slot).
  static std::unique_ptr<PcapSocket> open(const PcapLiveSettings &settings, PcapLiveError *error,
                                          std::string *warning);
  ~PcapSocket();
  PcapSocket(const PcapSocket &) = delete;
  PcapSocket &operator=(const PcapSocket &) = delete;

  // Adds `batch` packets until it holds its batch-size, a batch's byte limit
  // (`max_bytes`), or its timeout has passed since its first packet's
  // capture (Ready); or until `control` ends it (Stopped), or libpcap fails
  // (Failed, `error` says why).
  Fill fill(LiveBatch &batch, const FillControl &control, size_t max_bytes, std::string *error);
  // Reads and drops what the kernel has queued; how many packets that was.
  uint64_t drain();
  // pcap_stats; false where libpcap has none.
  bool stats(pcap_stat *out);

  // How long after a start packets captured before it can still come out:
  // the kernel's block timeout without immediate mode, and a second for a
  // reader that starts late.
  uint64_t stale_window_ns() const { return block_timeout_ns_ + 1000000000u; }

  pcap_t *handle() const { return pcap_; }
  int fd() const { return fd_; }
  bool nano() const { return nano_; }
  uint32_t linktype() const;
  const char *linktype_name() const;

private:
  PcapSocket() = default;
  pcap_t *pcap_ = nullptr;
  bpf_program program_{};
  bool have_program_ = false;
  bool nano_ = true;
  uint64_t block_timeout_ns_ = 0; // 0 in immediate mode
  int fd_ = -1;
};

} // namespace gpp::capture
