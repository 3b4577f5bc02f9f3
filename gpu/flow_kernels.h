// The flow table on a CUDA device: gpu/flow_table.h's update, one thread per
// packet; and the whole-table steps of a sweep, one thread per slot.
// Host-callable, asynchronous on `stream`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <gpupacket/packet-result.h>

#include "flow_table.h"

namespace gpp {

// Loads every flow kernel now: with lazy module loading (CUDA's default) a
// kernel's first launch loads it, and loading may wait for the device to go
// idle, which a running persistent kernel never lets it do.
[[nodiscard]] cudaError_t preload_flow_kernels();

// Counts `count` device-resident records into the device table `target`
// (the packet kernels can do this themselves: packet_kernels.h); `tunnels`
// (decap=inner, or nullptr): their GppTunnelInfo, whose tunnel ids key the
// flows too.  Asynchronous on `stream`.
[[nodiscard]] cudaError_t launch_flow_update(const FlowDeviceTarget &target,
                                             const GppResult *records,
                                             const GppTunnelInfo *tunnels, uint32_t count,
                                             cudaStream_t stream);

// Ends the live flows `rule` ends, writing their records to out[0..capacity)
// in no particular order; *out_count (zeroed by the caller) counts every flow
// that qualified, so a count above `capacity` means a second launch finds
// the rest (those past capacity stay live).
[[nodiscard]] cudaError_t launch_flow_end(const FlowTableView &table, const FlowEndRule &rule,
                                          uint16_t community_id_seed, GppFlowRecord *out,
                                          uint32_t capacity, uint32_t *out_count,
                                          cudaStream_t stream);

// The ages of the live flows into out[] (room for every live flow);
// *out_count (zeroed by the caller) says how many.
[[nodiscard]] cudaError_t launch_flow_ages(const FlowTableView &table, FlowAge *out,
                                           uint32_t *out_count, cudaStream_t stream);

// Inserts the live flows of `from` into the empty table `to`.
[[nodiscard]] cudaError_t launch_flow_reinsert(const FlowTableView &from, const FlowTableView &to,
                                               cudaStream_t stream);

} // namespace gpp
