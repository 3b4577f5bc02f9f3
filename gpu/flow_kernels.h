// The flow table on a CUDA device: gpu/flow_table.h's update, one thread per
// packet, then its first-packet pass, on one stream.  Host-callable.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <gpupacket/packet-result.h>

#include "flow_table.h"

namespace gpp {

// Per-outcome packet counts of one launch (FlowUpdate order).
struct FlowLaunchCounts {
  uint32_t not_ip, counted, created, no_room;
};

// Counts `count` device-resident records into the device table `table`;
// `slot_of` (count entries) and `counts` are device scratch.  Asynchronous
// on `stream`.
[[nodiscard]] cudaError_t launch_flow_update(const FlowTableView &table, const GppResult *records,
                                             uint32_t count, uint32_t *slot_of,
                                             FlowLaunchCounts *counts, cudaStream_t stream);

} // namespace gpp
