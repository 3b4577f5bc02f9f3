// The persistent kernel: one resident grid that serves every batch of a
// PersistentEngine (see packet_kernels.h for the protocol).
#include "packet_kernels.h"

#include <cstddef>

#include <gpupacket/packet-batch.h>

#include "acl_block.cuh"
#include "dpi_block.cuh"
#include "flow_device.cuh"

namespace gpp {
namespace {

// Packets are staged in shared memory when a block's share fits: the core's
// loads are many and dependent, and shared memory answers them several times
// faster than L2 would.  A batch this small (and of at most one block's
// packets) is staged whole in one round of loads; otherwise a block reads its
// descriptors first, then only the bytes of its packets (into device memory
// when they do not fit).
constexpr unsigned kSharedStageBytes = 64 << 10;
constexpr unsigned kDynamicSharedBytes = kSharedStageBytes + sizeof(detail::RssTable);
// 16-byte loads each thread keeps in flight while staging: a PCIe read takes
// about a microsecond, so loads must overlap rather than queue.
constexpr unsigned kLoadsInFlight = 8;
// A job fanned out over blocks and at most this large is copied whole to
// the slot's device staging by block 0 before it announces the job; the
// other blocks read it there.  Measured on
// the H200 (2026-12-03, per-phase GPU times of gpupacket-bench): with each
// block reading its own packets from host memory, the last of 64 blocks had
// its packet after 19-21 us (64 x 64 B or 64 x 1500 B); block 0 alone
// copies 6 KB in ~2 us and 96 KB in ~8.5 us, and the others then have it
// from L2 at once (the last had it after 4.5 and 11 us).
constexpr uint32_t kSoloStageBytes = 128 << 10;
// ...and only when each block's share is small: a few blocks each reading a
// large share have it sooner themselves (1024 x 64 B, 24.5 KB a block over 4
// blocks: through block 0 the job took 24.8-26.2 instead of 21.6-22.2 us p50
// on the H200, BENCHMARKS.md), while 64 x 64 B with ACL (1.5 KB a block over
// 4) gains 2 us.  A block reads chunks c, c + gridDim.x, ...: its share is
// the batch over min(chunks, gridDim.x).
constexpr uint32_t kSoloStageMaxShare = 8 << 10;
constexpr uint64_t kPointerMask = (uint64_t{1} << kPersistentTagShift) - 1;

__device__ __forceinline__ uint4 load_volatile_v4(const void *p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ void store_release_sys_v4(void *p, uint4 v) {
  asm volatile("st.release.sys.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}
// Release-only and acquire-only fences (PTX 8.6, sm_90): a release fence
// keeps L1; older toolkits and GPUs get the acquire-release fence, which
// also empties it.
#if __CUDA_ARCH__ >= 900 && (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8))
#define GPP_ONE_WAY_FENCES 1
#else
#define GPP_ONE_WAY_FENCES 0
#endif
// Orders this thread's earlier stores before its later ones, system-wide.
__device__ __forceinline__ void fence_release_sys() {
#if GPP_ONE_WAY_FENCES
  asm volatile("fence.release.sys;" ::: "memory");
#else
  asm volatile("fence.acq_rel.sys;" ::: "memory");
#endif
}
__device__ __forceinline__ unsigned long long load_relaxed_gpu(const unsigned long long *p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release_gpu(unsigned long long *p, unsigned long long v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// With a strong load before it that read a release store's value, orders
// that store's earlier writes before this thread's later loads (PTX's
// acquire pattern).
__device__ __forceinline__ void fence_acquire_gpu() {
#if GPP_ONE_WAY_FENCES
  asm volatile("fence.acquire.gpu;" ::: "memory");
#else
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
#endif
}
__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
template <typename T> __device__ __forceinline__ T load_volatile(const T *p) {
  return *reinterpret_cast<const volatile T *>(p);
}

// Where a batch is read from: host memory the host rewrote since (never a
// cached copy), or the slot's device staging that block 0 filled for this
// job (written by another SM: from L2, not L1).
enum class From { Host, Staging };
template <From kFrom> __device__ __forceinline__ uint4 load_batch_word(const uint4 *p) {
  return kFrom == From::Host ? __ldcv(p) : __ldcg(p);
}

// Copies bytes [lo, hi) of a batch, widened to 16-byte words, to
// dst[0...]; the whole block calls it.  Not inlined: inlined at its call
// sites, staging a 64 x 64-byte batch took 3.5 us instead of 2.2 (H200,
// A/B builds, 2026-12-03).  (Twice the loads in flight copied 96 KB 2.5 us
// sooner, but made the kernel spill.)
template <From kFrom>
__device__ __noinline__ void stage(const uint8_t *batch, uint8_t *dst_bytes, uint64_t lo,
                                   uint64_t hi) {
  const auto *src = reinterpret_cast<const uint4 *>(batch);
  auto *dst = reinterpret_cast<uint4 *>(dst_bytes);
  const uint64_t first = lo / sizeof(uint4);
  const uint64_t end = (hi + sizeof(uint4) - 1) / sizeof(uint4);
  for (uint64_t base = first + threadIdx.x; base < end; base += blockDim.x * kLoadsInFlight) {
    uint4 words[kLoadsInFlight];
#pragma unroll
    for (unsigned k = 0; k < kLoadsInFlight; ++k) {
      const uint64_t w = base + k * blockDim.x;
      if (w < end) words[k] = load_batch_word<kFrom>(src + w);
    }
#pragma unroll
    for (unsigned k = 0; k < kLoadsInFlight; ++k) {
      const uint64_t w = base + k * blockDim.x;
      if (w < end) dst[w - first] = words[k];
    }
  }
}

// A block's packets lie far apart when their span holds more than twice
// their bytes (a batch whose packets are frames of an AF_XDP UMEM, read in
// place): staging the span would carry its gaps over PCIe too, so each
// packet is staged by itself instead.
__device__ __forceinline__ bool sparse_span(uint64_t span, uint64_t packet_bytes) {
  return span > 2 * packet_bytes + 4096;
}

// Copies the packets descs[0, n) of a batch, each widened to 16-byte words,
// to the same offsets of `dst_batch` (a batch-sized image); the whole block
// calls it, a thread a packet, kLoadsInFlight loads at a time: a 64-byte
// packet's words are then one PCIe round trip, for every packet at once.
__device__ __noinline__ void stage_packets(const uint8_t *batch, uint8_t *dst_batch,
                                           const GppPacketDesc *descs, uint32_t n) {
  const auto *src = reinterpret_cast<const uint4 *>(batch);
  auto *dst = reinterpret_cast<uint4 *>(dst_batch);
  for (uint32_t p = threadIdx.x; p < n; p += blockDim.x) {
    const uint64_t first = descs[p].offset / sizeof(uint4);
    const uint64_t end = (uint64_t{descs[p].offset} + descs[p].caplen + sizeof(uint4) - 1) /
                         sizeof(uint4);
    for (uint64_t base = first; base < end; base += kLoadsInFlight) {
      uint4 words[kLoadsInFlight];
#pragma unroll
      for (unsigned k = 0; k < kLoadsInFlight; ++k)
        if (base + k < end) words[k] = load_batch_word<From::Host>(src + base + k);
#pragma unroll
      for (unsigned k = 0; k < kLoadsInFlight; ++k)
        if (base + k < end) dst[base + k] = words[k];
    }
  }
}

struct Job {
  PersistentJobHead head;
  const uint8_t *batch;
  GppResult *results;
  unsigned long long start_ns; // block 0's %globaltimer when it saw the job
  bool staged;                 // block 0: the batch came inline, whole in the stage already
};

enum class Next { Process, Skip, Stop };

// Block 0: polls the job until both its words carry this ticket.  Lanes 0
// and 1 read them in one instruction: one 32-byte read over PCIe per round
// (separate reads of one line, and of a separate stop flag, measured slower).
// With `read_inline` (the job before came inline), every lane reads the
// job's inline words in the same round: a small job's batch is then in
// `stage` without another round trip (PersistentJob).  Not otherwise: the
// wider read made each round, and so a large job's, about 0.4 us slower
// (H100, 2026-12-07); a small job after a large one is staged from `batch`.
// No acquire follows the poll: the batch it announces is read with .cv loads
// (straight from host memory) issued only after the poll saw the job, which
// orders them in practice.  The PTX model would want a system-scope acquire
// here; left out, untried, because acquires empty the SM's L1 (the ACL and
// DPI tables a one-packet job reads), as the full fence at the answer did
// (about +2 us for one packet).
__device__ Next poll_host(const PersistentLaunch &launch, uint64_t ticket, Job &job, uint8_t *stage,
                          bool read_inline) {
  __shared__ int stop;
  const unsigned slot = ticket % launch.slots;
  if (threadIdx.x < 32) {
    const unsigned lane = threadIdx.x;
    static_assert(offsetof(PersistentJob, buffers) == sizeof(PersistentJobHead),
                  "the job's two words are one 32-byte read");
    const auto *words = reinterpret_cast<const uint4 *>(&launch.control->jobs[slot]);
    uint4 *inline_words = launch.control->jobs[slot].inline_words;
    const uint32_t tag32 = static_cast<uint32_t>(ticket + 1);
    const uint32_t tag16 = static_cast<uint32_t>(ticket + 1) & 0xffffu;
    const uint32_t inline_tag = persistent_inline_tag(ticket);
    constexpr unsigned K = kPersistentInlineWordsPerLane;
    uint4 w = {};
    uint4 iw[K] = {};
    uint32_t inline_count = 0;
    bool staged = false;
    for (;;) {
      if (lane < 2) w = load_volatile_v4(words + lane);
      if (read_inline) {
#pragma unroll
        for (unsigned k = 0; k < K; ++k) iw[k] = load_volatile_v4(inline_words + lane + 32 * k);
      }
      const bool fresh = lane == 0   ? w.x == tag32
                         : lane == 1 ? (w.y >> 16) == tag16 && (w.w >> 16) == tag16
                                     : true;
      if (__all_sync(0xffffffffu, fresh)) {
        // The job is there; are its inline words?  (Read in the same round,
        // they may have been read before they landed: then read again.)
        inline_count = persistent_inline_words(__shfl_sync(0xffffffffu, w.z, 0)); // batch_size
        if (!read_inline || inline_count == 0) break;
        bool landed = true;
#pragma unroll
        for (unsigned k = 0; k < K; ++k)
          if (lane + 32 * k < inline_count && iw[k].w != inline_tag) landed = false;
        staged = __all_sync(0xffffffffu, landed);
        if (staged) break;
        continue;
      }
      if (launch.idle_sleep_ns) __nanosleep(launch.idle_sleep_ns);
    }
    // The batch into the stage, and the job's words cleared for the slot's
    // next job whether read or not (ordered before the answer, as the
    // records are).
    auto *stage32 = reinterpret_cast<uint32_t *>(stage);
#pragma unroll
    for (unsigned k = 0; k < K; ++k) {
      const unsigned i = lane + 32 * k;
      if (i < inline_count) {
        if (staged) {
          stage32[3 * i] = iw[k].x;
          stage32[3 * i + 1] = iw[k].y;
          stage32[3 * i + 2] = iw[k].z;
        }
        inline_words[i] = make_uint4(0, 0, 0, 0);
      }
    }
    if (lane == 0) {
      job.head = {w.x, w.y, w.z, w.w};
      job.staged = staged;
      stop = job.head.packet_count == kPersistentStopJob;
    } else if (lane == 1) {
      job.batch = reinterpret_cast<const uint8_t *>(
          ((static_cast<uint64_t>(w.y) << 32) | w.x) & kPointerMask);
      job.results = reinterpret_cast<GppResult *>(
          ((static_cast<uint64_t>(w.w) << 32) | w.z) & kPointerMask);
    }
  }
  __syncthreads();
  if (stop) {
    if (threadIdx.x == 0) atomicExch(&launch.state->stop, 1u);
    return Next::Stop;
  }
  return Next::Process;
}

// Other blocks: wait until block 0 has taken job `ticket`; process it only if
// it was fanned out.  A job done by block 0 alone may already be superseded
// in its slot: a fanned-out one cannot, since it waits for every block.
// The poll is a relaxed load, and one acquire fence follows only the announce
// of a job to process (block 0 publishes it with a release store), where
// every poll was an acquire.  Acquires and full fences empty the SM's L1
// (the ACL tags, the DPI rows); on the H200, polls with no acquire at all and
// the release fences at the arrival below took 64 x 64B jobs with acl1_10k
// + ET Open 2024 from 36.6-39.6 to 33.3-33.7 us p50 GPU-side (2026-12-03).
__device__ Next wait_fanout(const PersistentLaunch &launch, uint64_t ticket, Job &job) {
  __shared__ int next;
  PersistentFanout *fan = &launch.state->slots[ticket % launch.slots];
  if (threadIdx.x == 0) {
    int n;
    for (;;) {
      const unsigned long long a = load_relaxed_gpu(&fan->announce);
      if ((a >> 1) >= ticket + 1) {
        n = ((a >> 1) == ticket + 1 && (a & 1)) ? 0 : 1;
        break;
      }
      if (load_volatile(&launch.state->stop)) {
        n = 2;
        break;
      }
      // Idle blocks poll gently: many SMs hammering one L2 line slow block 0's
      // own memory traffic (measured: 6.3 -> 10.3 us for a 1-packet job).
      __nanosleep(200);
    }
    if (n == 0) { // written by block 0, another SM: bypass L1
      fence_acquire_gpu();
      const uint4 h = __ldcg(reinterpret_cast<const uint4 *>(&fan->head));
      const uint4 b = __ldcg(reinterpret_cast<const uint4 *>(&fan->buffers));
      job.head = {h.x, h.y, h.z, h.w};
      job.batch = reinterpret_cast<const uint8_t *>((static_cast<uint64_t>(b.y) << 32) | b.x);
      job.results = reinterpret_cast<GppResult *>((static_cast<uint64_t>(b.w) << 32) | b.z);
      job.start_ns = __ldcg(&fan->start_ns);
      job.staged = false;
    }
    next = n;
  }
  __syncthreads();
  const int n = next;
  // A skipped job loops straight back here: thread 0 must not rewrite `next`
  // before every thread has read it (racecheck found exactly that).
  __syncthreads();
  return n == 0 ? Next::Process : n == 1 ? Next::Skip : Next::Stop;
}

// Built for one resident block per SM (the element's default grid), so the
// compiler may use every register a thread can have: 236 and no spills
// (nvcc 13.0), where it had chosen 128 and spilled 608 bytes (1 x pcap-1500B with ET Open
// 2024: p99 24-27 -> 22 us on the H200, 2026-12-03).
// kDecap: with cfg.decap, the tunnel walk and the tunnel plane (a build of
// its own, as packet_kernels.cu's).
template <bool kDecap>
__global__ void __launch_bounds__(kPersistentThreads, 1)
    persistent_kernel(const __grid_constant__ PersistentLaunch launch) {
  __shared__ Job job;
  __shared__ GppPacketDesc descs[kPersistentThreads];
  __shared__ GppResult records[kPersistentThreads];
  __shared__ uint32_t acl_best[kPersistentThreads];
  __shared__ DpiBlockScratch<kPersistentThreads> dpi_scratch;
  __shared__ unsigned span_lo, span_hi, span_bytes;
  extern __shared__ uint4 dynamic_shared[]; // kDynamicSharedBytes: stage, then the RSS table
  uint8_t *shared_stage = reinterpret_cast<uint8_t *>(dynamic_shared);
  const unsigned tid = threadIdx.x;
  constexpr unsigned T = kPersistentThreads;
  // Each block's own Toeplitz table of the launch's key (the key is fixed
  // for a launch): four shared-memory loads per input word.
  auto *rss_table = reinterpret_cast<detail::RssTable *>(shared_stage + kSharedStageBytes);
  rss_table->fill(launch.cfg.rss_key, tid, T);
  __syncthreads();

  bool read_inline = true; // block 0: the job before came inline (poll_host)
  for (uint64_t ticket = launch.first_ticket;; ++ticket) {
    const unsigned slot = ticket % launch.slots;
    PersistentFanout *fan = &launch.state->slots[slot];
    const Next next = blockIdx.x == 0 ? poll_host(launch, ticket, job, shared_stage, read_inline)
                                      : wait_fanout(launch, ticket, job);
    // (Not in the other blocks: a skipped job's head may be rewritten at once.)
    if (blockIdx.x == 0) read_inline = persistent_inline_words(job.head.batch_size) > 0;
    if (next == Next::Stop) return;
    if (next == Next::Skip) continue;
    if (blockIdx.x == 0 && tid == 0) job.start_ns = global_timer_ns();
    // This block's ends of the phases (PersistentPhases), thread 0's clock.
    uint32_t phase[kPersistentPhases] = {};
    auto mark = [&](int k) {
      if (tid == 0) phase[k] = static_cast<uint32_t>(min(global_timer_ns() - job.start_ns, 0xffffffffull));
    };
    mark(0);
    const bool fits = job.head.batch_size <= launch.batch_capacity;
    const uint32_t count = fits ? job.head.packet_count : 0;
    // Packets per chunk: with an ACL fewer than threads, so the ACL probes of
    // a small batch spread over several blocks (packet_kernels.h); with DPI
    // just enough that the batch spreads over every block, whose threads
    // then share the payloads (dpi_block.cuh); with a flow table a batch
    // larger than a block spreads over every block too (each packet's
    // update is a chain of loads and atomics on a random slot: more blocks
    // wait out more chains at once), a smaller one stays on block 0.
    const uint32_t spread = min(T, max(32u, (count + gridDim.x - 1) / gridDim.x));
    const uint32_t P = launch.cfg.dpi ? min(T, max(1u, (count + gridDim.x - 1) / gridDim.x))
                       : launch.cfg.acl                          ? launch.acl_chunk_packets
                       : launch.flows.table.slots && count > T ? spread
                                                                : T;
    const uint32_t chunks = (count + P - 1) / P;
    const bool fanned_out = chunks > 1;
    uint8_t *staging = launch.batch_staging + slot * launch.batch_capacity;
    // (A single block would only copy it twice.)
    const bool staged_by_0 = fanned_out && gridDim.x > 1 &&
                             job.head.batch_size <= kSoloStageBytes &&
                             job.head.batch_size <= min(chunks, gridDim.x) * kSoloStageMaxShare;
    if (blockIdx.x == 0 && staged_by_0) {
      if (job.staged) { // the inline copy: in shared memory already
        const auto *src = reinterpret_cast<const uint32_t *>(shared_stage);
        auto *dst = reinterpret_cast<uint32_t *>(staging);
        const uint32_t n = 3 * persistent_inline_words(job.head.batch_size);
        for (uint32_t i = tid; i < n; i += T) dst[i] = src[i];
      } else {
        stage<From::Host>(job.batch, staging, 0, job.head.batch_size);
      }
      __syncthreads(); // every thread's copy before thread 0's release below
    }
    if (blockIdx.x == 0 && tid == 0 && fanned_out) {
      fan->head = job.head;
      fan->buffers = {reinterpret_cast<uint64_t>(job.batch),
                      reinterpret_cast<uint64_t>(job.results)};
      fan->start_ns = job.start_ns;
      store_release_gpu(&fan->announce, ((ticket + 1) << 1) | 1); // the job before it
    }
    const bool whole = chunks == 1 && job.head.batch_size <= kSharedStageBytes;
    const uint8_t *batch = staged_by_0 ? staging : job.batch;
    const auto *batch_descs = reinterpret_cast<const uint4 *>(batch + sizeof(GppBatchHeader));

    // Chunk c (packets [c*P, c*P+P)) belongs to block c mod gridDim.x.
    for (uint32_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
      const uint32_t first = chunk * P;
      const uint32_t n = min(P, count - first);
      // Packet bytes at offset o of the batch are at stage_base + (o - stage_lo).
      uint8_t *stage_base = shared_stage;
      uint32_t stage_lo = 0;
      if (whole) {
        if (!job.staged) stage<From::Host>(job.batch, shared_stage, 0, job.head.batch_size);
        __syncthreads();
        if (tid < n)
          descs[tid] =
              reinterpret_cast<const GppPacketDesc *>(shared_stage + sizeof(GppBatchHeader))[tid];
      } else {
        if (tid == 0) {
          span_lo = UINT32_MAX;
          span_hi = 0;
          span_bytes = 0;
        }
        __syncthreads();
        if (tid < n) {
          static_assert(sizeof(GppPacketDesc) == 2 * sizeof(uint4), "two words per descriptor");
          const uint4 *src = batch_descs + 2 * static_cast<uint64_t>(first + tid);
          auto *dst = reinterpret_cast<uint4 *>(&descs[tid]);
          const uint4 a = staged_by_0 ? __ldcg(src) : __ldcv(src);
          const uint4 b = staged_by_0 ? __ldcg(src + 1) : __ldcv(src + 1);
          dst[0] = a;
          dst[1] = b;
          atomicMin(&span_lo, descs[tid].offset);
          atomicMax(&span_hi, descs[tid].offset + descs[tid].caplen);
          atomicAdd(&span_bytes, (descs[tid].caplen + 15u) & ~15u);
        }
        __syncthreads();
        stage_lo = span_lo & ~15u;
        if (span_hi > span_lo) {
          if (span_hi - stage_lo > kSharedStageBytes) {
            stage_base = staging + stage_lo; // same offsets as the batch
            if (!staged_by_0) { // else block 0 put the whole batch there
              if (sparse_span(span_hi - stage_lo, span_bytes))
                stage_packets(job.batch, staging, descs, n);
              else
                stage<From::Host>(job.batch, stage_base, stage_lo, span_hi);
            }
          } else if (staged_by_0) {
            stage<From::Staging>(staging, shared_stage, stage_lo, span_hi);
          } else {
            stage<From::Host>(job.batch, shared_stage, stage_lo, span_hi);
          }
        }
      }
      __syncthreads();
      mark(1);
      GppTunnelInfo t; // this thread's packet's, kept for its flow below
      if (tid < n) {
        const GppPacketDesc d = descs[tid];
        GppResult r; // built in registers, stored once (see packet_kernels.cu)
        process_packet(stage_base + (d.offset - stage_lo), d.caplen, d.wirelen, job.head.linktype,
                       d.packet_number, d.timestamp_ns, launch.cfg, r, ClassifyStages::kDeferred,
                       rss_table, kDecap ? &t : nullptr);
        records[tid] = r;
        // Ordered before the block's arrival (and the answer) by the barrier below.
        if (kDecap) store_tunnel_info(tunnel_plane(job.results, count) + first + tid, t);
      }
      __syncthreads();
      if (launch.cfg.acl)
        acl_apply_block(launch.cfg.acl, launch.cfg.acl_default_action, records, n, acl_best);
      if (launch.cfg.dpi)
        dpi_apply_block(launch.cfg.dpi, records, n,
                        [&](uint32_t p) {
                          return stage_base + (descs[p].offset - stage_lo) + records[p].payload_offset;
                        },
                        dpi_scratch);
      mark(2);
      // Counted before the block's arrival below: answered jobs are counted.
      if (launch.flows.table.slots && tid < n)
        flow_count_packet(launch.flows, records[tid], kDecap ? t.tunnel_id : 0);
      // Whole records leave in 16-byte stores: PCIe sees full lines, not fields.
      const unsigned words = n * sizeof(GppResult) / sizeof(uint4);
      const auto *rsrc = reinterpret_cast<const uint4 *>(records);
      auto *rdst = reinterpret_cast<uint4 *>(job.results + first);
      for (unsigned w = tid; w < words; w += T) rdst[w] = rsrc[w];
      __syncthreads(); // records and descs are reused by the next chunk
    }
    if (!fanned_out && blockIdx.x != 0) continue;
    __syncthreads();
    mark(3);
    if (tid == 0) {
      bool last = true;
      if (fanned_out) {
        for (int k = 0; k < kPersistentPhases; ++k) atomicMax(&fan->phase_max[k], phase[k]);
        // This block's records (ordered before the fence by the barrier)
        // before its arrival; the last block to arrive then sees them all.
        // A release fence: a full one (__threadfence_system) also empties
        // L1, as above.  (A block without a chunk orders its reads of the
        // job before the arrival that lets the slot be reused.)
        fence_release_sys();
        last = atomicAdd(&fan->arrived, 1u) == gridDim.x - 1;
        if (last) {
          // Acquire: the other blocks' fenced records are then ordered before
          // this block's release of the answer.
          asm volatile("fence.acq_rel.gpu;" ::: "memory");
          atomicExch(&fan->arrived, 0u); // before the answer frees the slot
          for (int k = 0; k < kPersistentPhases; ++k) phase[k] = atomicExch(&fan->phase_max[k], 0u);
        }
      }
      if (last) {
        // Block 0's, published before its announce, which this block acquired.
        const unsigned long long took = global_timer_ns() - job.start_ns;
        // A release store orders the records before the answer (the barrier
        // above made every thread's stores this thread's): cheaper than a
        // fence and a plain store.  The fence after it only pushes the answer
        // out at once: without it the answer at times lingered on the GPU
        // (+0.7 us p50, +2.5 us p99 for a 64-packet job).  A release fence,
        // not __threadfence_system: that one also emptied L1, and the next
        // job's ACL and DPI tables with it (about +2 us for one packet).
        // Measured on an H200, A/B runs of gpupacket-bench.
        *reinterpret_cast<uint4 *>(&launch.control->jobs[slot].phases) =
            make_uint4(phase[0], phase[1], phase[2], phase[3]); // ordered by the release below
        store_release_sys_v4(&launch.control->jobs[slot].answer,
                             make_uint4(static_cast<uint32_t>(ticket + 1),
                                        static_cast<uint32_t>((ticket + 1) >> 32),
                                        static_cast<uint32_t>(fits ? kPersistentOk
                                                                   : kPersistentBatchTooLarge),
                                        static_cast<uint32_t>(min(took, 0xffffffffull))));
        fence_release_sys();
      }
      // The other blocks skip a job block 0 did alone; tell them after answering.
      if (!fanned_out) atomicExch(&fan->announce, (ticket + 1) << 1);
    }
  }
}

} // namespace

cudaError_t persistent_max_blocks(int device, unsigned *blocks) {
  int per_sm = 0, sms = 0;
  // Both builds (with and without the tunnel walk): the fewer blocks.
  for (auto kernel : {persistent_kernel<false>, persistent_kernel<true>}) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         kDynamicSharedBytes);
    if (e != cudaSuccess) return e;
    int n = 0;
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kPersistentThreads,
                                                      kDynamicSharedBytes);
    if (e != cudaSuccess) return e;
    per_sm = per_sm == 0 || n < per_sm ? n : per_sm;
  }
  cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return e;
  *blocks = static_cast<unsigned>(per_sm * sms);
  return cudaSuccess;
}

cudaError_t launch_persistent(const PersistentLaunch &launch, cudaStream_t stream) {
  PersistentLaunch args = launch;
  void *params[] = {&args};
  void *kernel = launch.cfg.decap ? reinterpret_cast<void *>(persistent_kernel<true>)
                                  : reinterpret_cast<void *>(persistent_kernel<false>);
  cudaError_t e = cudaLaunchCooperativeKernel(kernel,
                                              dim3(launch.blocks), dim3(kPersistentThreads),
                                              params, kDynamicSharedBytes, stream);
  if (e != cudaSuccess) return e;
  return cudaGetLastError();
}

} // namespace gpp
