// GPU kernels over packet batches.  Host code calls these launchers; the
// kernels run the same packet core (packet_core.h) as the CPU engine.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "packet_core.h"

namespace gpp {

// Runs the core over every packet of a validated batch that is already in
// device memory; writes results[0..count) in device memory.  Returns the
// launch status (cudaGetLastError after the launch).
[[nodiscard]] cudaError_t launch_process_batch(const uint8_t *batch, uint32_t packet_count,
                                               const CoreConfig &cfg, GppResult *results,
                                               cudaStream_t stream);

// Zero-copy: the batch and the results live in pinned host memory, which the
// kernel reads and writes over PCIe (UVA pointers).  Each block gathers its
// records in shared memory and writes them out in wide, coalesced stores.
[[nodiscard]] cudaError_t launch_process_batch_zerocopy(const uint8_t *host_batch,
                                                        uint32_t packet_count,
                                                        const CoreConfig &cfg,
                                                        GppResult *host_results,
                                                        cudaStream_t stream);

// Arguments of the process kernel as a CUDA graph kernel node holds them; the
// node's parameter array points into this struct, so keep it alive and at a
// fixed address while the graph exists.
struct ProcessKernelArgs {
  const uint8_t *batch = nullptr;
  uint32_t packet_count = 0;
  CoreConfig cfg{};
  GppResult *results = nullptr;
  void *params[4] = {};
};

// Fills `node` to launch the process kernel over args->packet_count packets.
void make_process_kernel_node(ProcessKernelArgs *args, cudaKernelNodeParams *node);

// Loads every kernel of the library now.  CUDA loads modules lazily, and a
// first launch waits for all running kernels — for ever while a persistent
// kernel runs — so engines load theirs up front.
[[nodiscard]] cudaError_t preload_kernels();

// ---- persistent mode ---------------------------------------------------
// The work queue lives in mapped pinned memory: the host fills a job's work,
// then rings its doorbell.  Only one thread (block 0) polls host memory — many
// blocks polling over PCIe collapse latency — and it fans the work out to the
// other blocks through device memory.  Each block then stages its own share
// of packets into device memory, processes them and writes their records to
// the host; the last block to finish (a counter in device memory) sets `done`.
// No grid-wide barrier: a block only ever reads bytes it staged itself, so
// normal L1-cached loads stay coherent.

constexpr unsigned kPersistentMaxSlots = 64;

enum PersistentError : int32_t {
  kPersistentOk = 0,
  kPersistentBatchTooLarge = 1, // batch bytes over the device staging capacity
};

// What the kernel needs of one batch; copied to device memory in 16-byte words.
struct alignas(16) PersistentWork {
  uint32_t packet_count;
  uint32_t linktype;    // the batch header's, so the kernel need not read the header first
  uint64_t batch_size;
  const uint8_t *batch; // pinned host memory (UVA pointer), 16-byte aligned
  GppResult *results;   // pinned host memory (UVA pointer), 16-byte aligned
  CoreConfig cfg;
};
static_assert(sizeof(PersistentWork) % 16 == 0, "copied in 16-byte words");

struct alignas(16) PersistentJob {
  uint64_t doorbell; // host: ticket + 1 once `work` is written
  uint64_t done;     // kernel: ticket + 1 once the results are in host memory
  int32_t error;     // kernel: PersistentError of this job
  PersistentWork work;
};

struct PersistentControl {
  uint32_t stop; // host: 1 = finish and exit
  PersistentJob jobs[kPersistentMaxSlots];
};

// Device-memory state of the kernel (zeroed before launch).
struct PersistentDeviceState {
  unsigned long long generation;         // ticket + 1 of the newest job fanned out
  unsigned stop;                         // the poller saw the host's stop
  unsigned arrived[kPersistentMaxSlots]; // blocks done with the slot's current job
  PersistentWork work[kPersistentMaxSlots];
};

struct PersistentLaunch {
  PersistentControl *control;   // mapped pinned memory (UVA pointer)
  PersistentDeviceState *state; // device memory
  uint8_t *batch_staging;       // device memory, slots x batch_capacity
  uint64_t batch_capacity;      // per slot: jobs of neighbouring slots run concurrently
  unsigned slots;
  unsigned blocks;
  unsigned idle_sleep_ns; // poller back-off while idle; 0 = pure spin
};

// Threads per block of the persistent kernel.
constexpr unsigned kPersistentThreads = 256;

// Largest co-resident grid of the persistent kernel on `device` (cooperative launch limit).
[[nodiscard]] cudaError_t persistent_max_blocks(int device, unsigned *blocks);

// Launches the resident kernel with a cooperative launch: every block must be
// resident at once, since the last block to finish a job answers the host.
[[nodiscard]] cudaError_t launch_persistent(const PersistentLaunch &launch, cudaStream_t stream);

} // namespace gpp
