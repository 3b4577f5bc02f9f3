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
// The work queue lives in mapped pinned memory: the host fills a job, then
// rings its doorbell; the resident kernel stages the batch into device
// memory, processes it, writes the results back and sets `done`.  Only one
// thread polls host memory; it fans the job out to the other blocks through
// device memory, because many blocks polling over PCIe collapse latency.

constexpr unsigned kPersistentMaxSlots = 64;

enum PersistentError : int32_t {
  kPersistentOk = 0,
  kPersistentBatchTooLarge = 1,   // batch bytes over the device staging capacity
  kPersistentTooManyPackets = 2,  // packets over the results staging capacity
};

struct PersistentJob {
  uint64_t doorbell;  // host: ticket + 1 once the job fields are written
  uint64_t done;      // kernel: ticket + 1 once the results are in host memory
  int32_t error;      // kernel: PersistentError of this job
  uint32_t packet_count;
  uint64_t batch_size;
  const uint8_t *batch; // pinned host memory (UVA pointer)
  GppResult *results;   // pinned host memory (UVA pointer)
  CoreConfig cfg;
};

struct PersistentControl {
  uint32_t stop; // host: 1 = finish and exit
  uint32_t slots;
  PersistentJob jobs[kPersistentMaxSlots];
};

// Device-memory state of the kernel (zeroed before launch).
struct PersistentDeviceState {
  unsigned long long generation; // ticket + 1 of the job being worked on
  unsigned stop;
  unsigned barrier_count;
  unsigned barrier_sense;
};

struct PersistentLaunch {
  PersistentControl *control;       // mapped pinned memory (UVA pointer)
  PersistentDeviceState *state;     // device memory
  uint8_t *batch_staging;           // device memory
  uint64_t batch_capacity;
  GppResult *results_staging;       // device memory
  uint32_t results_capacity;        // packets
  unsigned blocks;
  unsigned idle_sleep_ns;           // poller back-off while idle; 0 = pure spin
};

// Threads per block of the persistent kernel.
constexpr unsigned kPersistentThreads = 256;

// Largest co-resident grid of the persistent kernel on `device` (cooperative launch limit).
[[nodiscard]] cudaError_t persistent_max_blocks(int device, unsigned *blocks);

// Launches the resident kernel with a cooperative launch (all blocks must be
// co-resident for its grid barriers).
[[nodiscard]] cudaError_t launch_persistent(const PersistentLaunch &launch, cudaStream_t stream);

} // namespace gpp
