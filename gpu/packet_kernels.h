// GPU kernels over packet batches.  Host code calls these launchers; the
// kernels run the same packet core (packet_core.h) as the CPU engine.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "packet_core.h"

namespace gpp {

// Runs the core over every packet of a validated batch that is already in
// device-visible memory (device or mapped pinned); writes results[0..count).
// Returns the launch status (cudaGetLastError after the launch).
[[nodiscard]] cudaError_t launch_process_batch(const uint8_t *batch, uint32_t packet_count,
                                               const CoreConfig &cfg, GppResult *results,
                                               cudaStream_t stream);

} // namespace gpp
