// Builds packet batches in the format of <gpupacket/packet-batch.h>.  Host
// only; used by pcapsrc, the tests and the benchmarks so that the layout is
// written in exactly one place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <gpupacket/packet-batch.h>

namespace gpp {

class BatchBuilder {
public:
  void reset(uint32_t linktype);

  // Appends one packet; `data` holds `caplen` bytes.
  void add(const uint8_t *data, uint32_t caplen, uint32_t wirelen, uint64_t timestamp_ns,
           uint64_t packet_number);

  uint32_t packet_count() const { return static_cast<uint32_t>(descs_.size()); }

  // Bytes the finished batch takes.
  size_t size() const;

  // Writes the finished batch into `dst`, which holds size() bytes.
  void write(uint8_t *dst) const;

  // Convenience for tests and tools: the finished batch as a byte vector.
  std::vector<uint8_t> finish() const;

  // A batch of some packets of a validated batch `src` (those at `picks`,
  // in that order, descriptors kept), written straight into `dst`, which
  // holds subset_size() bytes: one copy of each packet (several GPUs'
  // shares of a batch).  `picks` nullptr: every packet in order, i.e. `src`
  // with its packets packed (a batch whose packets lie apart).
  static size_t subset_size(const uint8_t *src, const uint32_t *picks, uint32_t count);
  static void write_subset(const uint8_t *src, const uint32_t *picks, uint32_t count,
                           uint8_t *dst);
  // The same subset written in pieces, by several threads at once: each
  // packet at its place, and the header.  A packet's data takes
  // subset_packet_size() bytes; `data_at` is the sum of those of the packets
  // before it in the subset.
  static size_t subset_packet_size(const uint8_t *src, uint32_t pick);
  static void write_subset_packet(const uint8_t *src, uint32_t pick, uint32_t index,
                                  uint32_t count, size_t data_at, uint8_t *dst);
  static void write_subset_header(const uint8_t *src, uint32_t count, size_t data_bytes,
                                  uint8_t *dst);

private:
  uint32_t linktype_ = 0;
  std::vector<GppPacketDesc> descs_; // offsets relative to the packet area
  std::vector<uint8_t> data_;
};

} // namespace gpp
