// Minimal kernels for the raw limits of section A of gpupacket-bench: an
// empty kernel (launch + sync round trip) and a one-thread resident kernel
// that answers a flag in mapped pinned memory through another mapped flag
// (the floor under the persistent mode).  Host code sees no CUDA C++ here.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace gppbench {

// Shared between the host and the ping-pong kernel, in mapped pinned memory
// (cudaHostAllocMapped).  `ping` and `pong` sit on separate 128-byte lines so
// the host's write and the kernel's write never share a line.
struct alignas(128) PingPongShared {
  uint32_t ping;        // host: sequence number to answer (1, 2, ...); kPingStop ends the kernel
  uint32_t pad0[31];
  uint32_t pong;        // kernel: the last sequence number it saw
  uint32_t ready;       // kernel: 1 once it runs
  uint32_t exit_reason; // kernel: kExitStopped or kExitIdle when it returns
  uint32_t pad1[29];
};

constexpr uint32_t kPingStop = 0xffffffffu;
constexpr uint32_t kExitStopped = 1;
constexpr uint32_t kExitIdle = 2;

// <<<1, 1>>> of an empty kernel; returns the launch status.
[[nodiscard]] cudaError_t launch_empty_kernel(cudaStream_t stream);

// <<<1, 1>>> of the ping-pong kernel.  `shared` is the device view of the
// mapped struct.  The kernel returns by itself after `idle_timeout_ns` without
// a new ping (GPU global timer), so a host that died never leaves it spinning.
[[nodiscard]] cudaError_t launch_pingpong(PingPongShared *shared, uint64_t idle_timeout_ns,
                                          cudaStream_t stream);

// Threads of the payload ping-pong kernel.
constexpr unsigned kPingPongPayloadThreads = 256;

// How the payload ping-pong kernel publishes its answer after the records.
enum class AnswerStyle : uint32_t {
  FenceThenStore,    // fence.sc.sys, then a volatile store
  StoreRelease,      // st.release.sys: the fence folded into the store
  StoreReleaseFence, // st.release.sys, then fence.sc.sys to push it out
};

// <<<1, kPingPongPayloadThreads>>> of a ping-pong kernel that, before each
// answer, reads `read_bytes` from `src` and writes `write_bytes` to `dst`
// (both mapped pinned memory, device views, 16-byte aligned, multiples of
// 16), the way a persistent job stages a batch and returns its records, with
// no work in between: the floor under one persistent job of that size.
[[nodiscard]] cudaError_t launch_pingpong_payload(PingPongShared *shared, const void *src,
                                                  uint32_t read_bytes, void *dst,
                                                  uint32_t write_bytes, AnswerStyle answer,
                                                  uint64_t idle_timeout_ns, cudaStream_t stream);

// Copies `bytes` (a multiple of 16, 16-byte aligned pointers) with a
// grid-stride kernel of 16-byte loads and stores: with one side a device
// pointer to cudaHostAllocMapped memory, the kernel itself moves the data
// over PCIe (the zero-copy way), no copy engine involved.
[[nodiscard]] cudaError_t launch_copy_kernel(void *dst, const void *src, size_t bytes,
                                             unsigned blocks, cudaStream_t stream);

} // namespace gppbench
