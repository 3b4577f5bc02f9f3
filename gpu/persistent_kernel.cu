// The persistent kernel: one resident grid that serves every batch of a
// PersistentEngine (see packet_kernels.h for the protocol).
#include "packet_kernels.h"

#include <gpupacket/packet-batch.h>

namespace gpp {
namespace {

// A batch this small (and of at most one block's packets) is staged whole in
// one round of loads; larger ones read their descriptors first, then only the
// bytes of each block's packets.
constexpr uint64_t kStageWholeBatchMax = 64 << 10;
// 16-byte loads each thread keeps in flight while staging: a PCIe read takes
// about a microsecond, so loads must overlap rather than queue.
constexpr unsigned kLoadsInFlight = 8;
constexpr unsigned kWorkWords = sizeof(PersistentWork) / sizeof(uint4);

__device__ __forceinline__ uint64_t load_acquire_system(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long load_acquire_gpu(const unsigned long long *p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
template <typename T> __device__ __forceinline__ T load_volatile(const T *p) {
  return *reinterpret_cast<const volatile T *>(p);
}

// Copies bytes [lo, hi) of a host batch, widened to 16-byte words, to the same
// offsets of `staging`; the whole block calls it.
__device__ void stage(const uint8_t *host, uint8_t *staging, uint64_t lo, uint64_t hi) {
  const auto *src = reinterpret_cast<const uint4 *>(host);
  auto *dst = reinterpret_cast<uint4 *>(staging);
  const uint64_t first = lo / sizeof(uint4);
  const uint64_t end = (hi + sizeof(uint4) - 1) / sizeof(uint4);
  for (uint64_t base = first + threadIdx.x; base < end; base += blockDim.x * kLoadsInFlight) {
    uint4 words[kLoadsInFlight];
#pragma unroll
    for (unsigned k = 0; k < kLoadsInFlight; ++k) {
      const uint64_t w = base + k * blockDim.x;
      if (w < end) words[k] = __ldcv(src + w); // host rewrote it since: never a cached copy
    }
#pragma unroll
    for (unsigned k = 0; k < kLoadsInFlight; ++k) {
      const uint64_t w = base + k * blockDim.x;
      if (w < end) dst[w] = words[k];
    }
  }
}

// Waits for job `ticket` and brings its work into shared memory; false when
// the kernel is to stop instead.
__device__ bool receive(const PersistentLaunch &launch, uint64_t ticket, PersistentWork &work,
                        int &stop) {
  PersistentDeviceState *st = launch.state;
  const unsigned slot = ticket % launch.slots;
  if (blockIdx.x == 0) {
    if (threadIdx.x == 0) {
      PersistentControl *control = launch.control;
      int s = 0;
      for (;;) {
        if (load_volatile(&control->stop)) {
          s = 1;
          break;
        }
        // Acquire: the work the host wrote before the doorbell is read after it.
        if (load_acquire_system(&control->jobs[slot].doorbell) == ticket + 1) break;
        if (launch.idle_sleep_ns) __nanosleep(launch.idle_sleep_ns);
      }
      stop = s;
      if (s) atomicExch(&st->stop, 1u);
    }
    __syncthreads();
    if (stop) return false;
    if (threadIdx.x < kWorkWords) {
      const uint4 w = __ldcv(reinterpret_cast<const uint4 *>(&launch.control->jobs[slot].work) +
                             threadIdx.x);
      reinterpret_cast<uint4 *>(&work)[threadIdx.x] = w;
      reinterpret_cast<uint4 *>(&st->work[slot])[threadIdx.x] = w;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      atomicExch(&st->generation, static_cast<unsigned long long>(ticket + 1));
    }
    return true;
  }
  if (threadIdx.x == 0) {
    unsigned long long g;
    while ((g = load_acquire_gpu(&st->generation)) < ticket + 1 && load_volatile(&st->stop) == 0) {
    }
    stop = g < ticket + 1;
  }
  __syncthreads();
  if (stop) return false;
  if (threadIdx.x < kWorkWords) // written by block 0, another SM: bypass L1
    reinterpret_cast<uint4 *>(&work)[threadIdx.x] =
        __ldcg(reinterpret_cast<const uint4 *>(&st->work[slot]) + threadIdx.x);
  __syncthreads();
  return true;
}

__global__ void __launch_bounds__(kPersistentThreads) persistent_kernel(PersistentLaunch launch) {
  __shared__ PersistentWork work;
  __shared__ GppPacketDesc descs[kPersistentThreads];
  __shared__ GppResult records[kPersistentThreads];
  __shared__ unsigned span_lo, span_hi;
  __shared__ int stop;
  const unsigned tid = threadIdx.x;
  constexpr unsigned T = kPersistentThreads;

  for (uint64_t ticket = 0;; ++ticket) {
    if (!receive(launch, ticket, work, stop)) return;
    const unsigned slot = ticket % launch.slots;
    const bool fits = work.batch_size <= launch.batch_capacity;
    const uint32_t count = fits ? work.packet_count : 0;
    uint8_t *staging = launch.batch_staging + slot * launch.batch_capacity;
    const uint32_t chunks = (count + T - 1) / T;
    const bool whole = chunks == 1 && work.batch_size <= kStageWholeBatchMax;
    const auto *host_descs =
        reinterpret_cast<const uint4 *>(work.batch + sizeof(GppBatchHeader));

    // Chunk c (packets [c*T, c*T+T)) belongs to block c mod gridDim.x: a small
    // batch never waits for the fan-out, block 0 has its work already.
    for (uint32_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
      const uint32_t first = chunk * T;
      const uint32_t n = min(T, count - first);
      if (whole) {
        stage(work.batch, staging, 0, work.batch_size);
        __syncthreads();
        if (tid < n)
          descs[tid] = reinterpret_cast<const GppPacketDesc *>(staging + sizeof(GppBatchHeader))[tid];
      } else {
        if (tid == 0) {
          span_lo = UINT32_MAX;
          span_hi = 0;
        }
        __syncthreads();
        if (tid < n) {
          static_assert(sizeof(GppPacketDesc) == 2 * sizeof(uint4), "two words per descriptor");
          const uint4 *src = host_descs + 2 * static_cast<uint64_t>(first + tid);
          auto *dst = reinterpret_cast<uint4 *>(&descs[tid]);
          const uint4 a = __ldcv(src), b = __ldcv(src + 1);
          dst[0] = a;
          dst[1] = b;
          atomicMin(&span_lo, descs[tid].offset);
          atomicMax(&span_hi, descs[tid].offset + descs[tid].caplen);
        }
        __syncthreads();
        if (span_hi > span_lo) stage(work.batch, staging, span_lo, span_hi);
      }
      __syncthreads();
      if (tid < n) {
        const GppPacketDesc d = descs[tid];
        process_packet(staging + d.offset, d.caplen, d.wirelen, work.linktype, d.packet_number,
                       d.timestamp_ns, work.cfg, records[tid]);
      }
      __syncthreads();
      // Whole records leave in 16-byte stores: PCIe sees full lines, not fields.
      const unsigned words = n * sizeof(GppResult) / sizeof(uint4);
      const auto *rsrc = reinterpret_cast<const uint4 *>(records);
      auto *rdst = reinterpret_cast<uint4 *>(work.results + first);
      for (unsigned w = tid; w < words; w += T) rdst[w] = rsrc[w];
      __syncthreads(); // records and descs are reused by the next chunk
    }
    __threadfence_system(); // this thread's records reach the host before the count
    __syncthreads();
    if (tid == 0) {
      PersistentDeviceState *st = launch.state;
      if (atomicAdd(&st->arrived[slot], 1u) == gridDim.x - 1) {
        // Every block is done with this job, and so with its slot.
        st->arrived[slot] = 0;
        __threadfence_system();
        PersistentJob *job = &launch.control->jobs[slot];
        *reinterpret_cast<volatile int32_t *>(&job->error) =
            fits ? kPersistentOk : kPersistentBatchTooLarge;
        __threadfence_system();
        *reinterpret_cast<volatile uint64_t *>(&job->done) = ticket + 1;
      }
    }
  }
}

} // namespace

cudaError_t persistent_max_blocks(int device, unsigned *blocks) {
  int per_sm = 0, sms = 0;
  cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, persistent_kernel,
                                                                kPersistentThreads, 0);
  if (e != cudaSuccess) return e;
  e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return e;
  *blocks = static_cast<unsigned>(per_sm * sms);
  return cudaSuccess;
}

cudaError_t launch_persistent(const PersistentLaunch &launch, cudaStream_t stream) {
  PersistentLaunch args = launch;
  void *params[] = {&args};
  cudaError_t e = cudaLaunchCooperativeKernel(reinterpret_cast<void *>(persistent_kernel),
                                              dim3(launch.blocks), dim3(kPersistentThreads),
                                              params, 0, stream);
  if (e != cudaSuccess) return e;
  return cudaGetLastError();
}

} // namespace gpp
