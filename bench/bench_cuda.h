// Bounded CUDA waits for gpupacket-bench: poll with a deadline instead of
// blocking in the driver, so a GPU that never answers becomes an error.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "bench_common.h"
#include "cuda_util.h"

namespace gppbench {

// Polls `query(handle)` until it succeeds; throws on error or after `timeout_s`.
template <typename Handle>
void wait_bounded(cudaError_t (*query)(Handle), Handle handle, double timeout_s, const char *what) {
  const uint64_t deadline = now_ns() + static_cast<uint64_t>(timeout_s * 1e9);
  for (unsigned spins = 0;; ++spins) {
    const cudaError_t e = query(handle);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) GPP_CUDA_TRY(e);
    if ((spins & 255) == 255 && now_ns() > deadline)
      throw std::runtime_error(std::string(what) + ": no completion within " + fmt(timeout_s, 0) +
                               " s");
  }
}

inline void wait_event_bounded(cudaEvent_t event, double timeout_s, const char *what) {
  wait_bounded(cudaEventQuery, event, timeout_s, what);
}

inline void wait_stream_bounded(cudaStream_t stream, double timeout_s, const char *what) {
  wait_bounded(cudaStreamQuery, stream, timeout_s, what);
}

} // namespace gppbench
