// GPU kernels over packet batches.  Host code calls these launchers; the
// kernels run the same packet core (packet_core.h) as the CPU engine.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "flow_table.h"
#include "packet_core.h"

namespace gpp {

// Runs the core over every packet of a validated batch that is already in
// device memory; writes results[0..count) in device memory, and with a flow
// table in `flows` counts each packet into it.  Returns the launch status
// (cudaGetLastError after the launch).
// `acl_tuples`: the tuple count of cfg.acl's set (its blob header, which
// `cfg` may point to on the device), which sets how many packets a block takes.
[[nodiscard]] cudaError_t launch_process_batch(const uint8_t *batch, uint32_t packet_count,
                                               const CoreConfig &cfg, uint32_t acl_tuples,
                                               GppResult *results, cudaStream_t stream,
                                               const FlowDeviceTarget &flows = {});

// Zero-copy: the batch and the results live in pinned host memory, which the
// kernel reads and writes over PCIe (UVA pointers).  Each block gathers its
// records in shared memory and writes them out in wide, coalesced stores;
// with `host_results` null it writes none (flows only: the table is the output).
[[nodiscard]] cudaError_t launch_process_batch_zerocopy(const uint8_t *host_batch,
                                                        uint32_t packet_count,
                                                        const CoreConfig &cfg, uint32_t acl_tuples,
                                                        GppResult *host_results,
                                                        cudaStream_t stream,
                                                        const FlowDeviceTarget &flows = {});

#ifdef __CUDACC__
// A packet's GppTunnelInfo into the tunnel plane in three 16-byte stores
// (the plane and its 48-byte entries are 16-byte aligned): over PCIe in
// zero-copy mode, whole lines rather than field-sized writes.
__device__ __forceinline__ void store_tunnel_info(GppTunnelInfo *dst, const GppTunnelInfo &t) {
  static_assert(sizeof(GppTunnelInfo) == 3 * sizeof(uint4), "three 16-byte words");
  uint4 w[3];
  memcpy(w, &t, sizeof t);
  auto *d = reinterpret_cast<uint4 *>(dst);
  d[0] = w[0];
  d[1] = w[1];
  d[2] = w[2];
}
#endif

// Arguments of the process kernel as a CUDA graph kernel node holds them; the
// node's parameter array points into this struct, so keep it alive and at a
// fixed address while the graph exists.
struct ProcessKernelArgs {
  const uint8_t *batch = nullptr;
  uint32_t packet_count = 0;
  CoreConfig cfg{};
  GppResult *results = nullptr;
  FlowDeviceTarget flows{};
  uint32_t acl_tuples = 0;      // as launch_process_batch's
  uint32_t packets_per_block = 0; // set by make_process_kernel_node
  void *params[6] = {};
};

// Fills `node` to launch the process kernel over args->packet_count packets.
void make_process_kernel_node(ProcessKernelArgs *args, cudaKernelNodeParams *node);

// Loads every kernel of the library now.  CUDA loads modules lazily, and a
// first launch waits for all running kernels — for ever while a persistent
// kernel runs — so engines load theirs up front.
[[nodiscard]] cudaError_t preload_kernels();

// ---- persistent mode ---------------------------------------------------
// The work queue lives in mapped pinned memory, one job per slot.  A job is
// two 16-byte words, each stored by the host in one instruction and each
// tagged with the job's ticket, so the kernel's polling warp learns that a
// job is there and what it is in a single read over PCIe.  The host stops
// the kernel with a job too (kPersistentStopJob), so nothing else needs
// polling.  The core
// settings and the device copies of the rule sets are kernel parameters: the
// engine restarts the kernel (between batches) when they change, which is
// rare, and a fresh launch also starts with clean L1 caches.
//
// A job of at most one block's share of packets (kPersistentThreads; with an
// ACL, persistent_acl_chunk_packets) is done by block 0 alone, which answers
// the host itself.  A larger one is fanned out to the other blocks
// through device memory, and the last block to finish (a counter in device
// memory) answers.  A fanned-out job of at most 128 KB is first copied whole
// into device memory by block 0, which then announces it with a release
// store; the other blocks read it after their acquire (which also empties
// their L1: keep it, plain loads of the copy rely on it).  Larger ones: each
// block stages only its own packets.

constexpr unsigned kPersistentMaxSlots = 64;

enum PersistentError : int32_t {
  kPersistentOk = 0,
  kPersistentBatchTooLarge = 1, // batch bytes over the device staging capacity
};

// The host stores each word with one 16-byte store (x86 with AVX makes those
// atomic); the kernel reads each with one 16-byte load.
struct alignas(16) PersistentJobHead {
  uint32_t tag; // low 32 bits of ticket + 1
  uint32_t packet_count;
  uint32_t batch_size;
  uint32_t linktype; // the batch header's, so the kernel need not read the header first
};
struct alignas(16) PersistentJobBuffers {
  // Pinned host memory (UVA pointers, 16-byte aligned, below 2^48), each
  // carrying the low 16 bits of ticket + 1 in its top 16 bits.
  uint64_t batch;
  uint64_t results;
};
struct alignas(16) PersistentAnswer {
  uint64_t done;      // ticket + 1 once the results are in host memory
  int32_t error;      // PersistentError
  uint32_t device_ns; // GPU time of the job: block 0 saw it -> answer written (%globaltimer, saturating)
};

constexpr unsigned kPersistentTagShift = 48;

// PersistentJobHead::packet_count of the job that stops the kernel.  It is
// posted at the next ticket without taking it: a new launch retags that
// slot's words as an older ticket's and starts at the same ticket.
constexpr uint32_t kPersistentStopJob = UINT32_MAX;

// Where a job's GPU time went (diagnostics, beside the answer): for each
// phase the latest block's end of it, in ns after block 0 saw the job.
constexpr int kPersistentPhases = 4;
struct alignas(16) PersistentPhases {
  uint32_t ns[kPersistentPhases]; // woken (saw the job), staged, classified, written (record stores issued)
};

// A small batch rides in its job as well: the host copies it into the
// job's inline words, 12 of its bytes and a tag in each 16-byte word, and
// the polling warp reads them in the same round as the job's two words, so
// the kernel has the batch without a second PCIe round trip to fetch it
// (a one-packet job 7.4 -> 6.1-6.2 us p50 on the host clock, H100, BENCHMARKS.md).
// A job of at most kPersistentInlineBytes comes so, always; the kernel reads
// the words only after a job that came so too (a round that reads them is
// slower), and may still read the batch from `batch` (after a larger job, or
// when it fans the job out over blocks).  Each word is stored and
// loaded in one 16-byte access, as the job's words; its tag says which job
// wrote it (never 0), and the kernel clears the words of a job it took
// before answering it, so a word's tag is either 0 or that of the job now
// in the slot: a word read before it landed shows 0 and is read again.
constexpr unsigned kPersistentInlineWordsPerLane = 2; // of the polling warp's 32 lanes
constexpr unsigned kPersistentInlineWords = 32 * kPersistentInlineWordsPerLane;
constexpr unsigned kPersistentInlineWordBytes = 12;
constexpr uint32_t kPersistentInlineBytes = kPersistentInlineWords * kPersistentInlineWordBytes;
constexpr uint32_t persistent_inline_tag(uint64_t ticket) {
  return 0x80000000u | (static_cast<uint32_t>(ticket + 1) & 0x7fffffffu);
}
// Inline words a job of `batch_size` bytes fills (0: it does not come inline).
constexpr uint32_t persistent_inline_words(uint32_t batch_size) {
  return batch_size <= kPersistentInlineBytes
             ? (batch_size + kPersistentInlineWordBytes - 1) / kPersistentInlineWordBytes
             : 0;
}
static_assert(persistent_inline_words(0) == 0 && persistent_inline_words(13) == 2 &&
                  persistent_inline_words(kPersistentInlineBytes) == kPersistentInlineWords &&
                  persistent_inline_words(kPersistentInlineBytes + 1) == 0,
              "a job comes inline whole or not at all");
static_assert(persistent_inline_tag(0) != 0 && persistent_inline_tag(0x7fffffffu) != 0 &&
                  persistent_inline_tag(0) != persistent_inline_tag(1),
              "an inline word's tag is never that of a cleared word");

struct alignas(128) PersistentJob { // one cache line for the host's writes...
  PersistentJobHead head;
  PersistentJobBuffers buffers;
  alignas(128) PersistentAnswer answer; // ...another for the kernel's
  PersistentPhases phases;              // written before the answer
  // x, y, z: bytes [12 i, 12 i + 12) of the batch; w: persistent_inline_tag, or 0 once taken.
  alignas(128) uint4 inline_words[kPersistentInlineWords];
};

struct PersistentControl {
  PersistentJob jobs[kPersistentMaxSlots];
};

// What block 0 tells the others about a job, in device memory.
struct PersistentFanout {
  unsigned long long announce;   // (ticket + 1) << 1 | 1 when the job is fanned out
  unsigned arrived;              // blocks done with a fanned-out job
  unsigned reserved;
  PersistentJobHead head;
  PersistentJobBuffers buffers;
  unsigned long long start_ns; // %globaltimer when block 0 saw the job
  unsigned phase_max[kPersistentPhases]; // PersistentPhases, max over the blocks so far
};

// Device-memory state of the kernel (zeroed before each launch).
struct PersistentDeviceState {
  unsigned stop; // block 0 saw the host's stop
  PersistentFanout slots[kPersistentMaxSlots];
};

struct PersistentLaunch {
  PersistentControl *control;   // mapped pinned memory (UVA pointer)
  PersistentDeviceState *state; // device memory
  uint8_t *batch_staging;       // device memory, slots x batch_capacity
  uint64_t batch_capacity;      // per slot: jobs of neighbouring slots run concurrently
  uint64_t first_ticket;        // the engine's next ticket when launched
  unsigned slots;
  unsigned blocks;
  unsigned idle_sleep_ns; // poller back-off while idle; 0 = pure spin
  unsigned acl_chunk_packets; // packets per block's share of a job when cfg.acl is set
  CoreConfig cfg;         // for every job of this launch
  FlowDeviceTarget flows; // a flow table each job's packets count into, or none
};

// Threads per block of the persistent kernel.
constexpr unsigned kPersistentThreads = 256;

// Packets per block when an ACL of `tuples` tuples is set: as many as give
// each thread at most one (packet, tuple) probe, between `least` and `most`,
// so a batch's probes spread over more blocks and each thread waits out one
// probe's chain of memory loads, not several (H200, 64 packets, ClassBench
// 1k rules: 16 packets a persistent block answered in about half the time of
// 256).  Not rounded to a power of two: ipc1_10k's 25 tuples fill 125 of 128
// threads with 5 packets, where 4 left 28 idle and made a quarter more blocks.
constexpr unsigned acl_block_packets(uint32_t tuples, unsigned threads, unsigned most,
                                     unsigned least) {
  const unsigned fit = tuples ? threads / tuples : most;
  return fit > most ? most : fit < least ? least : fit;
}
static_assert(acl_block_packets(25, 128, 32, 4) == 5 && acl_block_packets(16, 128, 32, 4) == 8 &&
                  acl_block_packets(200, 128, 32, 4) == 4 && acl_block_packets(1, 128, 32, 4) == 32,
              "one probe a thread, within the bounds");

// A persistent job's: at least 16, so large batches keep enough threads parsing.
constexpr unsigned persistent_acl_chunk_packets(uint32_t tuples) {
  return acl_block_packets(tuples, kPersistentThreads, kPersistentThreads, 16);
}

// Largest co-resident grid of the persistent kernel on `device` (cooperative launch limit).
[[nodiscard]] cudaError_t persistent_max_blocks(int device, unsigned *blocks);

// Launches the resident kernel with a cooperative launch: every block must be
// resident at once, since the last block to finish a job answers the host.
[[nodiscard]] cudaError_t launch_persistent(const PersistentLaunch &launch, cudaStream_t stream);

} // namespace gpp
