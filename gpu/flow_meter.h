// Flow metering: a flow table (gpu/flow_table.h, the code CPU and GPU
// share) fed batch by batch with the records the packet core wrote, and
// swept between batches for flows that ended.  FlowMeter holds the policy
// (when to sweep, what a full table evicts, the counters); a FlowStore holds
// the slots and runs the whole-table steps where they live: HostFlowStore in
// host memory here, the device store (engine.h's make_device_flow_store) in
// a GPU's memory, where the GPU modes' batches update it themselves.  What a
// caller sees: add() (host) or added() (a device store counted the batch)
// per batch, sweep() where it may emit records, flush() at the end of a
// stream.  Not thread-safe as a whole; add() spreads a batch over `threads`
// host threads (a pool the host store keeps).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gpupacket/flow-record.h>
#include <gpupacket/packet-result.h>

#include "flow_table.h"
#include "worker_pool.h"

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
  // Host threads a host table's add() spreads a batch over, 0 = one per
  // core.
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

// Where a table's slots live, and the whole-table steps run there.  Every
// step returns false with a message on failure (a device store's CUDA
// error); a host store never fails.
class FlowStore {
public:
  virtual ~FlowStore() = default;
  // The CUDA device holding the slots, or -1 for host memory.
  virtual int device() const = 0;
  virtual uint32_t capacity() const = 0; // slots
  size_t table_bytes() const { return static_cast<size_t>(capacity()) * sizeof(FlowSlot); }
  // Waits for the updates in flight and adds what they did (packets_not_ip,
  // packets_untracked, flows_created) to `c`.
  virtual bool settle(FlowCounters &c, std::string *error) = 0;
  // Ends every live flow `rule` ends (tombstones stay); appends their
  // records, in no particular order.
  virtual bool end_flows(const FlowEndRule &rule, uint16_t community_id_seed,
                         std::vector<GppFlowRecord> &out, std::string *error) = 0;
  // The ages of every live flow, in no particular order.
  virtual bool live_ages(std::vector<FlowAge> &out, std::string *error) = 0;
  // Rebuilds the table without its tombstones.
  virtual bool rebuild(std::string *error) = 0;
  // The whole table, to move it to another store (a mode switch).
  virtual bool read_slots(std::vector<FlowSlot> &out, std::string *error) = 0;
  virtual bool write_slots(const std::vector<FlowSlot> &slots, std::string *error) = 0;
};

// The table in host memory, updated by add() on host threads.
class HostFlowStore final : public FlowStore {
public:
  HostFlowStore(uint32_t capacity, unsigned threads);
  // Counts a batch of parsed records into their flows; `tunnels` (decap=inner):
  // their GppTunnelInfo, whose tunnel_id is part of the flow key.
  void add(const GppResult *records, uint32_t count, const GppTunnelInfo *tunnels = nullptr);

  int device() const override { return -1; }
  uint32_t capacity() const override { return static_cast<uint32_t>(slots_.size()); }
  bool settle(FlowCounters &c, std::string *error) override;
  bool end_flows(const FlowEndRule &rule, uint16_t community_id_seed,
                 std::vector<GppFlowRecord> &out, std::string *error) override;
  bool live_ages(std::vector<FlowAge> &out, std::string *error) override;
  bool rebuild(std::string *error) override;
  bool read_slots(std::vector<FlowSlot> &out, std::string *error) override;
  bool write_slots(const std::vector<FlowSlot> &slots, std::string *error) override;

private:
  void add_range(const GppResult *records, const GppTunnelInfo *tunnels, uint32_t begin,
                 uint32_t end, FlowCounters &c);

  std::vector<FlowSlot> slots_;
  WorkerPool pool_;
  FlowCounters unsettled_; // what add() did since settle()
};

// A host table of `capacity` slots, or nullptr with *error saying why (no
// memory for it).
std::unique_ptr<FlowStore> make_host_flow_store(uint32_t capacity, unsigned threads,
                                                std::string *error);

class FlowMeter {
public:
  // A table in host memory.
  explicit FlowMeter(const FlowSettings &settings);
  // A table in `store` (of flow_table_slots(settings.max_flows) slots).
  FlowMeter(const FlowSettings &settings, std::unique_ptr<FlowStore> store);

  // Counts a batch of parsed records into their flows (the store must be
  // the host's); `tunnels` as HostFlowStore::add's.
  void add(const GppResult *records, uint32_t count, const GppTunnelInfo *tunnels = nullptr);
  // The store counted a batch of `count` packets by itself (a device store,
  // from the batch's kernels), `latest_ns` the latest packet time in it.
  void added(uint32_t count, uint64_t latest_ns);
  // Ends the flows whose time has come (by the latest packet time seen), if
  // a check is due, and evicts from a table that holds more than
  // max_flows; appends their records, ordered by first packet.
  bool sweep(std::vector<GppFlowRecord> &out, std::string *error = nullptr);
  // Ends every flow (GPP_FLOW_END_FORCED): end of stream.
  bool flush(std::vector<GppFlowRecord> &out, std::string *error = nullptr);
  // Moves the table, open flows and all, into `store` (same capacity).
  bool move_to(std::unique_ptr<FlowStore> store, std::string *error);

  FlowStore &store() { return *store_; }
  const FlowCounters &counters() const { return counters_; }
  const FlowSettings &settings() const { return settings_; }
  // Bytes the table takes.
  size_t table_bytes() const { return store_->table_bytes(); }

private:
  bool settle(std::string *error);
  // Ends the flows `rule` ends; then rebuilds if tombstones fill the table.
  bool end_flows(const FlowEndRule &rule, std::vector<GppFlowRecord> &out, std::string *error);

  FlowSettings settings_;
  std::unique_ptr<FlowStore> store_;
  FlowCounters counters_;
  uint64_t unsettled_packets_ = 0; // counted by the store, not yet in counters_
  uint64_t now_ns_ = 0;        // latest packet time seen
  uint64_t last_sweep_ns_ = 0; // packet time of the last timeout check
  bool swept_ = false;
  uint64_t dead_slots_ = 0;    // tombstones
};

} // namespace gpp
