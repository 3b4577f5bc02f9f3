#include "flow_kernels.h"

namespace gpp {
namespace {

constexpr uint32_t kNoSlot = 0xffffffffu;

__global__ void flow_update_kernel(FlowTableView table, const GppResult *records, uint32_t count,
                                   uint32_t *slot_of, FlowLaunchCounts *counts) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  uint32_t slot = kNoSlot;
  const FlowUpdate outcome = flow_update(table, records[i], &slot);
  slot_of[i] = slot;
  uint32_t *counter = outcome == kFlowNotIp     ? &counts->not_ip
                      : outcome == kFlowCounted ? &counts->counted
                      : outcome == kFlowNew     ? &counts->created
                                                : &counts->no_room;
  atomicAdd(counter, 1u);
}

__global__ void flow_first_kernel(FlowTableView table, const GppResult *records, uint32_t count,
                                  const uint32_t *slot_of) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count && slot_of[i] != kNoSlot) flow_first_packet(table, records[i], slot_of[i]);
}

} // namespace

cudaError_t launch_flow_update(const FlowTableView &table, const GppResult *records,
                               uint32_t count, uint32_t *slot_of, FlowLaunchCounts *counts,
                               cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  constexpr uint32_t kThreads = 256;
  const uint32_t blocks = (count + kThreads - 1) / kThreads;
  flow_update_kernel<<<blocks, kThreads, 0, stream>>>(table, records, count, slot_of, counts);
  flow_first_kernel<<<blocks, kThreads, 0, stream>>>(table, records, count, slot_of);
  return cudaGetLastError();
}

} // namespace gpp
