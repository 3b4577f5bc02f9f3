#include "bench_kernels.h"

namespace gppbench {
namespace {

__global__ void empty_kernel() {}

__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread: poll `ping` in host memory, copy each new value to `pong`.
__global__ void pingpong_kernel(PingPongShared *shared, uint64_t idle_timeout_ns) {
  volatile uint32_t *ping = &shared->ping;
  volatile uint32_t *pong = &shared->pong;
  *reinterpret_cast<volatile uint32_t *>(&shared->ready) = 1;
  __threadfence_system();
  uint32_t last = 0;
  uint64_t last_seen = global_timer_ns();
  for (uint32_t polls = 0;; ++polls) {
    const uint32_t v = *ping;
    if (v == kPingStop) {
      *reinterpret_cast<volatile uint32_t *>(&shared->exit_reason) = kExitStopped;
      break;
    }
    if (v != last) {
      last = v;
      *pong = v;
      __threadfence_system();
      last_seen = global_timer_ns();
      continue;
    }
    if ((polls & 1023u) == 1023u && global_timer_ns() - last_seen > idle_timeout_ns) {
      *reinterpret_cast<volatile uint32_t *>(&shared->exit_reason) = kExitIdle;
      break;
    }
  }
  __threadfence_system();
}

__global__ void copy_kernel(uint4 *dst, const uint4 *src, size_t words) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride)
    dst[i] = src[i];
}

} // namespace

cudaError_t launch_copy_kernel(void *dst, const void *src, size_t bytes, unsigned blocks,
                               cudaStream_t stream) {
  copy_kernel<<<blocks, 256, 0, stream>>>(static_cast<uint4 *>(dst),
                                          static_cast<const uint4 *>(src), bytes / 16);
  return cudaGetLastError();
}

cudaError_t launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t launch_pingpong(PingPongShared *shared, uint64_t idle_timeout_ns,
                            cudaStream_t stream) {
  pingpong_kernel<<<1, 1, 0, stream>>>(shared, idle_timeout_ns);
  return cudaGetLastError();
}

} // namespace gppbench
