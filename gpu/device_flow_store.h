// A flow table in a CUDA device's memory (flow_meter.h's FlowStore): the GPU
// engines' batch kernels count their packets into it on the batches' own
// streams, several batches at once (the update commutes: flow_table.h), and
// FlowMeter's sweeps run as kernels over it on a stream of the table's own,
// after every batch counted before them.  Host code; CUDA types, so only gpu/
// sees this header (the element asks engine.h's make_device_flow_store for
// one).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "cuda_util.h"
#include "flow_kernels.h"
#include "flow_meter.h"

namespace gpp {

class DeviceFlowStore final : public FlowStore {
public:
  // Throws CudaError (set-up path).
  DeviceFlowStore(int device, uint32_t capacity);
  ~DeviceFlowStore() override;

  // What a batch kernel launched now counts its packets into (the slots
  // move when a sweep rebuilds the table).
  FlowDeviceTarget batch_target() const {
    return FlowDeviceTarget{view(), counts_.get<FlowLaunchCounts>()};
  }
  // The work queued on `batch_stream` so far (a kernel given batch_target())
  // counts into the table: the table's own steps wait for it.  Per-batch
  // path: a status; the first call for a stream makes its event.
  cudaError_t counted_on(cudaStream_t batch_stream);
  // Counts `count` device-readable records into the table on `batch_stream`
  // (records a kernel other than the packet kernels wrote).
  cudaError_t update_on(cudaStream_t batch_stream, const GppResult *records, uint32_t count,
                        const GppTunnelInfo *tunnels = nullptr);
  // What the table's steps call first, on the thread that asks for them:
  // an engine whose kernel keeps the GPU (persistent) stops it there, after
  // the batches posted to it, for the steps' kernels to run (the next batch
  // relaunches it).  Shared, so that whichever of the table and the engine
  // goes first, the other never calls into it: the engine that set it
  // (owner) clears it when it goes.
  struct StepGuard {
    const void *owner = nullptr;
    std::function<bool(std::string *)> before;
  };
  const std::shared_ptr<StepGuard> &step_guard() const { return step_guard_; }

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
  // Batch streams remembered before done ones are dropped.
  static constexpr size_t kMaxBatchStreams = 32;

  FlowTableView view() const { return FlowTableView{slots_.get<FlowSlot>(), capacity_}; }
  // Makes the table's stream wait for every batch counted so far.
  cudaError_t after_batches();
  // A step's start: the device current, the table's stream after the batches.
  bool begin(std::string *why);
  // Copies on the table's stream and waits for it.
  bool copy_sync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, std::string *why);
  static bool failed(const char *step, const std::string &why, std::string *error);
  uint32_t *host_count(); // host_words_' count word

  struct BatchStream {
    cudaStream_t stream;
    Event counted; // recorded after its latest batch's update
  };

  int device_;
  uint32_t capacity_;
  Stream stream_; // the whole-table steps, in order
  std::vector<BatchStream> batch_streams_;
  std::shared_ptr<StepGuard> step_guard_ = std::make_shared<StepGuard>();
  StreamOrderedMemory slots_;   // on stream_: rebuilds replace it without cudaMalloc
  DeviceMemory counts_;         // FlowLaunchCounts since the last settle
  DeviceMemory end_records_;    // GppFlowRecord[kEndChunk]
  DeviceMemory end_count_;      // uint32_t
  PinnedMemory host_records_;   // GppFlowRecord[kEndChunk]
  PinnedMemory host_words_;     // FlowLaunchCounts, then a uint32_t count
};

} // namespace gpp
