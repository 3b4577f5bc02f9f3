// A flow table in a CUDA device's memory (flow_meter.h's FlowStore): the GPU
// engines count each batch into it on the device, ordered on one stream of
// its own, and FlowMeter's sweeps run as kernels over it.  Host code; CUDA
// types, so only gpu/ sees this header (the element asks engine.h's
// make_device_flow_store for one).
#pragma once

#include <memory>

#include "cuda_util.h"
#include "flow_kernels.h"
#include "flow_meter.h"

namespace gpp {

class DeviceFlowStore final : public FlowStore {
public:
  // Throws CudaError (set-up path).
  DeviceFlowStore(int device, uint32_t capacity);
  ~DeviceFlowStore() override;

  // Counts `count` device-readable records into the table once the work
  // queued on `batch_stream` so far is done; the work queued on it later
  // waits for the update.  Updates run in the order of these calls.
  // Per-batch path: a status, no allocation beyond growing scratch.
  cudaError_t update_after(cudaStream_t batch_stream, const GppResult *records, uint32_t count);
  // Makes room for batches of up to `max_packets` at set-up, so that no
  // update allocates: growing device memory while a persistent kernel runs
  // can wait for it to end.
  cudaError_t reserve(uint32_t max_packets);

  int device() const override { return device_; }
  uint32_t capacity() const override { return capacity_; }
  bool settle(FlowCounters &c, std::string *error) override;
  bool end_flows(const FlowEndRule &rule, uint16_t community_id_seed,
                 std::vector<GppFlowRecord> &out, std::string *error) override;
  bool live_ages(std::vector<FlowAge> &out, std::string *error) override;
  bool rebuild(std::string *error) override;
  bool read_slots(std::vector<FlowSlot> &out, std::string *error) override;
  bool write_slots(const std::vector<FlowSlot> &slots, std::string *error) override;

private:
  // Records a sweep kernel hands back at a time.
  static constexpr uint32_t kEndChunk = 1u << 16;

  FlowTableView view() const { return FlowTableView{slots_.get<FlowSlot>(), capacity_}; }
  cudaError_t launch_update(const GppResult *records, uint32_t count);
  bool sync(const char *what, std::string *error);

  int device_;
  uint32_t capacity_;
  Stream stream_;       // every step on the table, in order
  Event ready_, done_;  // a batch's records ready; its update done
  DeviceMemory slots_;
  StreamOrderedMemory slot_of_; // per packet of a batch, on stream_
  DeviceMemory counts_;         // FlowLaunchCounts since the last settle
  DeviceMemory end_records_;    // GppFlowRecord[kEndChunk]
  DeviceMemory end_count_;      // uint32_t
  PinnedMemory host_records_;   // GppFlowRecord[kEndChunk]
  PinnedMemory host_words_;     // FlowLaunchCounts, then a uint32_t count
};

} // namespace gpp
