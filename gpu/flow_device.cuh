// Device side of counting packets into a GPU flow table (flow_table.h):
// one thread per packet, from whichever kernel holds the packet's record —
// the packet kernels themselves, or flow_kernels.cu's update over records
// already in device memory.  CUDA code only.
#pragma once

#include "flow_table.h"

namespace gpp {

__device__ __forceinline__ void flow_count_packet(const FlowDeviceTarget &target,
                                                  const GppResult &r, uint32_t tunnel_id = 0) {
  const FlowUpdate outcome = flow_update(target.table, r, tunnel_id);
  FlowLaunchCounts *c = target.counts;
  atomicAdd(outcome == kFlowNotIp     ? &c->not_ip
            : outcome == kFlowCounted ? &c->counted
            : outcome == kFlowNew     ? &c->created
                                      : &c->no_room,
            1u);
}

} // namespace gpp
