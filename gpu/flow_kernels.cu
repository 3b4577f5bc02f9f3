#include "flow_kernels.h"

#include "flow_device.cuh"

#include <algorithm>

namespace gpp {
namespace {

__global__ void flow_update_kernel(FlowDeviceTarget target, const GppResult *records,
                                   const GppTunnelInfo *tunnels, uint32_t count) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) flow_count_packet(target, records[i], tunnels ? tunnels[i].tunnel_id : 0);
}

// Enough blocks to fill an H200 a few times over; each walks the table in
// strides.
constexpr uint32_t kSweepBlocks = 1024, kSweepThreads = 256;

__global__ void flow_end_kernel(FlowTableView table, FlowEndRule rule, uint16_t seed,
                                GppFlowRecord *out, uint32_t capacity, uint32_t *out_count) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < table.capacity;
       i += gridDim.x * blockDim.x) {
    FlowSlot &s = table.slots[i];
    if (s.state != kFlowLive) continue;
    const uint8_t why = flow_end_reason(s, rule);
    if (!why) continue;
    const uint32_t at = atomicAdd(out_count, 1u);
    if (at >= capacity) continue; // the next launch takes it
    GppFlowRecord rec;
    flow_record(s, why, seed, rec);
    out[at] = rec;
    s.state = kFlowDead;
  }
}

__global__ void flow_ages_kernel(FlowTableView table, FlowAge *out, uint32_t *out_count) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < table.capacity;
       i += gridDim.x * blockDim.x) {
    const FlowSlot &s = table.slots[i];
    if (s.state == kFlowLive) out[atomicAdd(out_count, 1u)] = FlowAge{s.end_ns, s.first};
  }
}

__global__ void flow_reinsert_kernel(FlowTableView from, FlowTableView to) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < from.capacity;
       i += gridDim.x * blockDim.x)
    if (from.slots[i].state == kFlowLive) flow_reinsert(to, from.slots[i]);
}

uint32_t sweep_blocks(uint32_t slots) {
  return std::min(kSweepBlocks, (slots + kSweepThreads - 1) / kSweepThreads);
}

} // namespace

cudaError_t preload_flow_kernels() {
  cudaFuncAttributes attributes;
  for (const void *kernel : {reinterpret_cast<const void *>(flow_update_kernel),
                             reinterpret_cast<const void *>(flow_end_kernel),
                             reinterpret_cast<const void *>(flow_ages_kernel),
                             reinterpret_cast<const void *>(flow_reinsert_kernel)}) {
    const cudaError_t e = cudaFuncGetAttributes(&attributes, kernel);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t launch_flow_end(const FlowTableView &table, const FlowEndRule &rule, uint16_t seed,
                            GppFlowRecord *out, uint32_t capacity, uint32_t *out_count,
                            cudaStream_t stream) {
  flow_end_kernel<<<sweep_blocks(table.capacity), kSweepThreads, 0, stream>>>(
      table, rule, seed, out, capacity, out_count);
  return cudaGetLastError();
}

cudaError_t launch_flow_ages(const FlowTableView &table, FlowAge *out, uint32_t *out_count,
                             cudaStream_t stream) {
  flow_ages_kernel<<<sweep_blocks(table.capacity), kSweepThreads, 0, stream>>>(table, out,
                                                                               out_count);
  return cudaGetLastError();
}

cudaError_t launch_flow_reinsert(const FlowTableView &from, const FlowTableView &to,
                                 cudaStream_t stream) {
  flow_reinsert_kernel<<<sweep_blocks(from.capacity), kSweepThreads, 0, stream>>>(from, to);
  return cudaGetLastError();
}

cudaError_t launch_flow_update(const FlowDeviceTarget &target, const GppResult *records,
                               const GppTunnelInfo *tunnels, uint32_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  constexpr uint32_t kThreads = 256;
  flow_update_kernel<<<(count + kThreads - 1) / kThreads, kThreads, 0, stream>>>(target, records,
                                                                                 tunnels, count);
  return cudaGetLastError();
}

} // namespace gpp
