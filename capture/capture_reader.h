// Reads a capture file (pcap with any timestamp precision and either byte
// order, or pcapng; stored plainly, gzip- or zstd-compressed) into packet
// batches of <gpupacket/packet-batch.h>.  A batch is planned first (the
// record walk: where each packet lies, its lengths, time and number), then
// written in one pass straight into memory the caller provides (pcapsrc: the
// pinned pool downstream offers), by several threads for large batches.
//
// Packets, numbers, timestamps and errors are libpcap's: the walk reads the
// common layouts itself, and hands over to libpcap, from the same packet on,
// at anything it does not handle (damage, a changed link type or snapshot
// length, binary timestamp resolutions, the pcap variants libpcap rewrites).
// So a damaged file fails with libpcap's words at libpcap's packet.
#pragma once

#include <pcap/pcap.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capture_source.h"

namespace gpp {
class WorkerPool;
}

namespace gpp::capture {

// One packet of a planned batch: where its bytes are (in the file's bytes,
// or, with kStaged, in the reader's staging area) and what its descriptor says.
struct PlannedPacket {
  static constexpr uint64_t kStaged = 1ull << 63;
  // The source is a pcap record header in the mapped file, whose time and
  // wire length the writer threads read (timestamp_ns and wirelen unset).
  static constexpr uint64_t kPcapRecord = 1ull << 62;
  static constexpr uint64_t kOffsetMask = kPcapRecord - 1;
  uint64_t source;       // offset of its bytes (or record), with the flags above
  uint64_t data_at;      // offset of its bytes in the batch's packet area
  uint64_t timestamp_ns;
  uint64_t number;       // 1-based place in the file
  uint32_t caplen, wirelen;
};

struct BatchPlan {
  std::vector<PlannedPacket> packets;
  uint64_t data_bytes = 0; // the packet area: each caplen rounded up to GPP_PACKET_ALIGN
  uint64_t captured_bytes = 0;

  uint32_t count() const { return static_cast<uint32_t>(packets.size()); }
  // Bytes of the written batch, header included.
  size_t size() const;
  void clear() {
    packets.clear();
    data_bytes = captured_bytes = 0;
  }
};

class CaptureReader {
public:
  enum class Step { Batch, End, Error };
  // Why open() failed: the file cannot be read as a capture, or the filter
  // does not compile.
  enum class OpenError { None, File, Filter };

  // Opens `path` and compiles `filter` (tcpdump syntax; "" = none) for its
  // link type.  nullptr with the reason in `error` and `kind` on failure.
  static std::unique_ptr<CaptureReader> open(const std::string &path, const std::string &filter,
                                             std::string *error, OpenError *kind);
  ~CaptureReader();
  CaptureReader(const CaptureReader &) = delete;
  CaptureReader &operator=(const CaptureReader &) = delete;

  // Forces libpcap for every record (the reference the tests compare with).
  void use_libpcap_only();

  uint32_t linktype() const { return linktype_; }
  // libpcap's name of the link type (e.g. "EN10MB"), or "" when unnamed.
  const char *linktype_name() const;
  Compression compression() const { return compression_; }
  // Whether the records are walked here (false: libpcap reads them).
  bool walking_natively() const { return !fallback_; }

  // Plans the next batch: packets up to `max_packets`, ending early once
  // the batch reaches `max_bytes` (the packet that crosses it included).
  // Filtered-out packets are counted in numbers, not planned.  Batch: the
  // plan holds packets (after the last of them the file may end or be
  // damaged: the next call says so).  End: nothing more.  Error: the file is
  // damaged here (error()), nothing planned.
  Step plan(BatchPlan *plan, uint32_t max_packets, size_t max_bytes);

  // Writes a batch planned by the last plan() into `dst` (plan.size()
  // bytes): header, descriptors, packets, zeroed padding.  With `pool`, the
  // packets are spread over its threads.
  void write(const BatchPlan &plan, uint8_t *dst, WorkerPool *pool) const;

  // Packets read from the file so far (the last one's number).
  uint64_t records_read() const { return records_read_; }
  // Why the file could not be read further (after Step::Error).
  const std::string &error() const { return error_; }

private:
  struct Record {
    uint64_t source;
    const uint8_t *data;
    uint32_t caplen, wirelen;
    uint64_t timestamp_ns;
  };
  struct Interface {
    uint64_t units_per_second; // if_tsresol, a power of 10 up to 10^9
    uint64_t scale;            // to nanoseconds
    uint64_t offset_seconds;   // if_tsoffset
  };
  enum class Format { Pcap, Pcapng };

  CaptureReader() = default;
  Step next(Record *r);
  Step next_native(Record *r);
  Step next_pcap(Record *r);
  Step next_pcapng(Record *r);
  Step next_libpcap(Record *r);
  bool read_pcap_header();
  // The walk stops here: libpcap reads on from the first record not yet read.
  Step hand_over(Record *r);
  Step source_end();
  void prefetch_ahead();
  void plan_mapped_pcap(BatchPlan *plan, uint32_t max_packets, size_t max_bytes);
  void add(BatchPlan *plan, uint64_t source, uint32_t caplen, uint32_t wirelen,
           uint64_t timestamp_ns) const;
  uint64_t pcap_timestamp(uint32_t seconds, uint32_t fraction) const;
  const uint8_t *packet_bytes(uint64_t source) const;

  std::string path_;
  Compression compression_ = Compression::None;
  std::unique_ptr<ByteSource> source_;
  pcap_t *fallback_ = nullptr;  // libpcap reading on after a hand-over
  bool libpcap_only_ = false;
  bpf_program filter_{};
  bool have_filter_ = false;
  uint32_t linktype_ = 0;
  int dlt_ = 0;
  uint32_t snapshot_ = 0;       // libpcap's adjusted snapshot length

  Format format_ = Format::Pcap;
  bool swapped_ = false;        // the file's byte order is not the host's
  bool nanosecond_ = false;     // pcap: nanosecond timestamps
  uint64_t offset_ = 0;         // next record or block in the file's bytes
  // A mapped file (ByteSource::fixed_bytes): walked through pointers.
  const uint8_t *mapped_ = nullptr;
  uint64_t mapped_size_ = 0;
  uint64_t prefetched_to_ = 0;
  static constexpr uint64_t kPrefetchDistance = 4096;
  std::vector<Interface> interfaces_;
  uint32_t first_idb_snaplen_ = 0;
  bool have_first_idb_ = false;

  uint64_t records_read_ = 0;
  std::string error_;
  std::vector<uint8_t> staging_; // packets libpcap read, for the current plan
};

} // namespace gpp::capture
