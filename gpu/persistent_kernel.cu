// The persistent kernel.  Built with -Xptxas -dlcm=cg (see meson.build):
// global loads skip the per-SM L1, which is not coherent between SMs, so a
// block never reads a stale line of a staging buffer that another block
// rewrote for the next batch.
#include "packet_kernels.h"

#include <gpupacket/packet-batch.h>

namespace gpp {
namespace {

template <typename T> __device__ __forceinline__ T load_volatile(const T *p) {
  return *reinterpret_cast<const volatile T *>(p);
}

// Grid-wide barrier over the co-resident blocks of a cooperative launch
// (sense-reversing, counter in device memory).  Waiters poll with plain
// volatile loads: polling with atomics would queue behind each other in L2
// and delay the release by orders of magnitude.
__device__ void grid_barrier(PersistentDeviceState *st, unsigned blocks, unsigned &sense) {
  __syncthreads();
  if (threadIdx.x == 0) {
    sense ^= 1u;
    __threadfence();
    if (atomicAdd(&st->barrier_count, 1u) == blocks - 1) {
      st->barrier_count = 0;
      __threadfence();
      atomicExch(&st->barrier_sense, sense);
    } else {
      while (load_volatile(&st->barrier_sense) != sense) {
      }
    }
    __threadfence();
  }
  __syncthreads();
}

__global__ void __launch_bounds__(kPersistentThreads)
    persistent_kernel(PersistentLaunch launch) {
  PersistentControl *control = launch.control;
  PersistentDeviceState *st = launch.state;
  const unsigned blocks = gridDim.x;
  const unsigned slots = control->slots;
  __shared__ CoreConfig cfg;
  __shared__ uint32_t packet_count;
  __shared__ uint64_t batch_size;
  __shared__ int32_t job_error;
  __shared__ int stop;
  unsigned sense = 0;

  for (uint64_t ticket = 0;; ++ticket) {
    PersistentJob *job = &control->jobs[ticket % slots];
    // One thread watches host memory; the others wait on device memory.
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      for (;;) {
        if (*reinterpret_cast<volatile uint32_t *>(&control->stop)) {
          atomicExch(&st->stop, 1u);
          break;
        }
        if (load_volatile(&job->doorbell) == ticket + 1) break;
        if (launch.idle_sleep_ns) __nanosleep(launch.idle_sleep_ns);
      }
      __threadfence_system();
      atomicExch(&st->generation, static_cast<unsigned long long>(ticket + 1));
    }
    if (threadIdx.x == 0) {
      while (load_volatile(&st->generation) < ticket + 1 && load_volatile(&st->stop) == 0) {
      }
      __threadfence();
      stop = load_volatile(&st->stop) != 0;
      if (!stop) {
        const volatile PersistentJob *vjob = job;
        packet_count = vjob->packet_count;
        batch_size = vjob->batch_size;
        const volatile uint8_t *src = reinterpret_cast<const volatile uint8_t *>(&vjob->cfg);
        uint8_t *dst = reinterpret_cast<uint8_t *>(&cfg);
        for (unsigned b = 0; b < sizeof(CoreConfig); ++b) dst[b] = src[b];
        job_error = batch_size > launch.batch_capacity        ? kPersistentBatchTooLarge
                    : packet_count > launch.results_capacity ? kPersistentTooManyPackets
                                                             : kPersistentOk;
      }
    }
    __syncthreads();
    if (stop) return;

    const uint8_t *host_batch = *reinterpret_cast<const uint8_t *const volatile *>(&job->batch);
    GppResult *host_results = *reinterpret_cast<GppResult *const volatile *>(&job->results);
    const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned nthreads = blocks * blockDim.x;
    if (job_error == kPersistentOk) {
      // Stage the batch in device memory with wide loads that bypass caches
      // (the host rewrote this memory since the last batch).
      const size_t words = (batch_size + sizeof(uint4) - 1) / sizeof(uint4);
      const auto *src = reinterpret_cast<const uint4 *>(host_batch);
      auto *dst = reinterpret_cast<uint4 *>(launch.batch_staging);
      for (size_t w = tid; w < words; w += nthreads) dst[w] = __ldcv(src + w);
      grid_barrier(st, blocks, sense);
      for (uint32_t i = tid; i < packet_count; i += nthreads) {
        const auto *descs =
            reinterpret_cast<const GppPacketDesc *>(launch.batch_staging + sizeof(GppBatchHeader));
        const GppPacketDesc d = descs[i];
        const auto *header = reinterpret_cast<const GppBatchHeader *>(launch.batch_staging);
        process_packet(launch.batch_staging + d.offset, d.caplen, d.wirelen, header->linktype,
                       d.packet_number, d.timestamp_ns, cfg, launch.results_staging[i]);
      }
      grid_barrier(st, blocks, sense);
      const size_t out_words = static_cast<size_t>(packet_count) * sizeof(GppResult) / sizeof(uint4);
      const auto *rsrc = reinterpret_cast<const uint4 *>(launch.results_staging);
      auto *rdst = reinterpret_cast<uint4 *>(host_results);
      for (size_t w = tid; w < out_words; w += nthreads) rdst[w] = rsrc[w];
      __threadfence_system(); // this thread's results reach the host before `done`
    }
    grid_barrier(st, blocks, sense);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      __threadfence_system();
      *reinterpret_cast<volatile int32_t *>(&job->error) = job_error;
      __threadfence_system();
      *reinterpret_cast<volatile uint64_t *>(&job->done) = ticket + 1;
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
