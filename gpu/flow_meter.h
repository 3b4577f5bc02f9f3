// Flow metering on the host: a flow table in host memory (gpu/flow_table.h,
// the code the GPU runs too), fed batch by batch with the records the packet
// core wrote, and swept between batches for flows that ended.  What a
// caller sees: add() per batch, sweep() where it may emit records, flush()
// at the end of a stream.  Not thread-safe as a whole; add() spreads a batch
// over `threads` host threads.
#pragma once

#include <cstdint>
#include <vector>

#include <gpupacket/flow-record.h>
#include <gpupacket/packet-result.h>

#include "flow_table.h"

namespace gpp {

// Defaults, also of gpupacketproc's flow-* properties: YAF's timeouts.
constexpr uint32_t kDefaultMaxFlows = 1u << 20;
constexpr uint32_t kDefaultFlowIdleTimeoutS = 300;
constexpr uint32_t kDefaultFlowActiveTimeoutS = 1800;

struct FlowSettings {
  // Flows tracked at once; the table has twice as many slots (rounded up to
  // a power of two).
  uint32_t max_flows = kDefaultMaxFlows;
  uint64_t idle_timeout_ns = kDefaultFlowIdleTimeoutS * 1000000000ull;
  uint64_t active_timeout_ns = kDefaultFlowActiveTimeoutS * 1000000000ull;
  // Timeouts are checked when packet time has moved on this much since the
  // last check (and whenever the table is nearly full).
  uint64_t sweep_interval_ns = 1000000000ull;
  uint16_t community_id_seed = kDefaultCommunityIdSeed;
  unsigned threads = 1;
};

// Slots of a table for `max_flows` flows: twice as many, a power of two.
uint32_t flow_table_slots(uint32_t max_flows);

struct FlowCounters {
  uint64_t packets = 0;            // packets seen
  uint64_t packets_not_ip = 0;     // no IP header: no flow
  uint64_t packets_untracked = 0;  // no slot found (table full): counted nowhere else
  uint64_t flows_created = 0;
  uint64_t flows_ended = 0;        // records written, every reason
  uint64_t flows_evicted = 0;      // of those, GPP_FLOW_END_NO_ROOM
  uint64_t active_flows = 0;       // live now
};

class FlowMeter {
public:
  explicit FlowMeter(const FlowSettings &settings);

  // Counts a batch of parsed records into their flows.
  void add(const GppResult *records, uint32_t count);
  // Ends the flows whose time has come (by the latest packet time seen), if
  // a check is due; appends their records, ordered by first packet.
  void sweep(std::vector<GppFlowRecord> &out);
  // Ends every flow (GPP_FLOW_END_FORCED): end of stream.
  void flush(std::vector<GppFlowRecord> &out);

  const FlowCounters &counters() const { return counters_; }
  const FlowSettings &settings() const { return settings_; }
  // Bytes the table takes.
  size_t table_bytes() const { return slots_.size() * sizeof(FlowSlot); }

private:
  void add_range(const GppResult *records, uint32_t begin, uint32_t end, uint32_t *slot_of,
                 FlowCounters &c);
  // Ends flows: those whose reason() is not 0; then rebuilds if tombstones
  // fill the table.
  template <typename Reason> void end_flows(Reason reason, std::vector<GppFlowRecord> &out);
  void rebuild();

  FlowSettings settings_;
  std::vector<FlowSlot> slots_;
  FlowTableView view_{};
  FlowCounters counters_;
  uint64_t now_ns_ = 0;        // latest packet time seen
  uint64_t last_sweep_ns_ = 0; // packet time of the last timeout check
  bool swept_ = false;
  uint64_t dead_slots_ = 0;    // tombstones
  std::vector<uint32_t> slot_of_; // per packet of the batch in add()
};

} // namespace gpp
