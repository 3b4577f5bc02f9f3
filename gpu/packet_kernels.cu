#include "packet_kernels.h"

#include <gpupacket/packet-batch.h>

#include "acl_block.cuh"
#include "dpi_block.cuh"
#include "flow_device.cuh"

namespace gpp {
namespace {

constexpr int kThreadsPerBlock = 128;
// With an ACL and no DPI, a block takes fewer packets than it has threads:
// a warp or less parses them, then all four share their ACL probes
// (acl_block.cuh), which spreads a batch's probes over every SM (H200:
// 64-byte packets with ClassBench 1k rules, 136 -> 225 Mpps at 32 packets a
// block).  With a 10k set's 20-odd tuples 32 packets gave each thread six
// probes one after another and one block an SM at 4096 packets: about one
// probe a thread instead (acl_block_packets), at least 4 packets.  With DPI
// the payload walks dominate and want every warp (measured: IMIX with the
// full workload fell from 91 to 35 Mpps at 16384 packets with one parsing
// warp a block).
constexpr unsigned kAclMostPacketsPerBlock = 32, kAclLeastPacketsPerBlock = 4;

// With DPI a block's threads share its packets' payloads (dpi_block.cuh), so
// a block takes just enough packets that a batch spreads over ~1024 blocks,
// enough chains of table loads in flight to fill the GPU: one packet a block
// up to 1024 packets (a 1500-byte payload walked by ~90 threads), 4 at 4096.
__host__ __device__ __forceinline__ uint32_t dpi_packets_per_block(uint32_t packet_count) {
  const uint32_t per = (packet_count + 1023) / 1024;
  return per < 1 ? 1 : per > kThreadsPerBlock ? kThreadsPerBlock : per;
}

// kDecap: walk into tunnels (cfg.decap) and write each packet's
// GppTunnelInfo to the plane after the records; a build of its own, so
// that without it the kernels stay as they were.
template <bool kDecap>
__device__ __forceinline__ void process_one(const uint8_t *batch, uint32_t packet_count, uint32_t i,
                                            const CoreConfig &cfg, GppResult *results,
                                            ClassifyStages stages, const FlowDeviceTarget &flows) {
  const auto *header = reinterpret_cast<const GppBatchHeader *>(batch);
  const auto *descs = reinterpret_cast<const GppPacketDesc *>(batch + sizeof(GppBatchHeader));
  const GppPacketDesc d = descs[i];
  // The core updates its record field by field: build it in registers and
  // store it once, rather than read-modify-write memory at every step.
  GppResult r;
  GppTunnelInfo t;
  process_packet(batch + d.offset, d.caplen, d.wirelen, header->linktype, d.packet_number,
                 d.timestamp_ns, cfg, r, stages, nullptr, kDecap ? &t : nullptr);
  results[i] = r;
  if (kDecap) store_tunnel_info(tunnel_plane(results, packet_count) + i, t);
  if (flows.table.slots) flow_count_packet(flows, r, kDecap ? t.tunnel_id : 0);
}

// Chosen on the host: the kernels get it as an argument.
uint32_t packets_per_block(const CoreConfig &cfg, uint32_t acl_tuples, uint32_t packet_count) {
  if (cfg.dpi) return dpi_packets_per_block(packet_count);
  return cfg.acl ? acl_block_packets(acl_tuples, kThreadsPerBlock, kAclMostPacketsPerBlock,
                                     kAclLeastPacketsPerBlock)
                 : kThreadsPerBlock;
}

// Zero-copy: bytes a block copies from mapped host memory to shared memory
// before it parses and scans its packets, when they fit.  The DPI walks read
// each payload byte several times (chunks overlap) and one at a time: over
// PCIe each such read costs a round trip (1500-byte packets with ET Open
// 2024: 6.6 -> 5.5 Mpps once walks shared payloads).  Wide, coalesced loads
// of the whole span cost one.
constexpr uint32_t kZeroCopyStageBytes = 16 << 10;

// Records are built in shared memory, get the block-wide ACL and DPI stages,
// and leave in 16-byte stores (over PCIe in zero-copy mode: full-line writes
// instead of field-sized ones).  kStage: copy the block's packets to shared
// memory first (zero-copy).
template <bool kStage, bool kDecap>
__device__ __forceinline__ void process_block_staged(const uint8_t *batch, uint32_t packet_count,
                                                     uint32_t per_block, const CoreConfig &cfg,
                                                     GppResult *results,
                                                     const FlowDeviceTarget &flows) {
  __shared__ GppResult records[kThreadsPerBlock];
  __shared__ uint32_t acl_best[kThreadsPerBlock];
  __shared__ DpiBlockScratch<kThreadsPerBlock> dpi_scratch;
  __shared__ GppPacketDesc descs[kThreadsPerBlock];
  __shared__ uint32_t span_lo, span_hi;
  __shared__ uint4 stage_words[kStage ? kZeroCopyStageBytes / sizeof(uint4) : 1];
  // The block's tunnel entries, written out like its records (3 words each).
  __shared__ uint4 tunnel_words[kDecap ? kThreadsPerBlock * 3 : 1];
  const uint32_t first = blockIdx.x * per_block;
  const uint32_t n = min(per_block, packet_count - first);
  const auto *batch_descs = reinterpret_cast<const GppPacketDesc *>(batch + sizeof(GppBatchHeader));
  const uint32_t linktype = reinterpret_cast<const GppBatchHeader *>(batch)->linktype;
  if (threadIdx.x == 0) {
    span_lo = UINT32_MAX;
    span_hi = 0;
  }
  __syncthreads();
  if (threadIdx.x < n) {
    descs[threadIdx.x] = batch_descs[first + threadIdx.x];
    if (kStage) {
      atomicMin(&span_lo, descs[threadIdx.x].offset);
      atomicMax(&span_hi, descs[threadIdx.x].offset + descs[threadIdx.x].caplen);
    }
  }
  __syncthreads();
  // Packet bytes at batch offset o are at base + o.
  const uint8_t *base = batch;
  const uint32_t lo_word = span_lo / sizeof(uint4);
  const uint32_t end_word = (span_hi + sizeof(uint4) - 1) / sizeof(uint4); // batches end 16-byte aligned
  if (kStage && span_hi > span_lo && (end_word - lo_word) * sizeof(uint4) <= kZeroCopyStageBytes) {
    const auto *src = reinterpret_cast<const uint4 *>(batch);
    for (uint32_t w = lo_word + threadIdx.x; w < end_word; w += blockDim.x)
      stage_words[w - lo_word] = src[w];
    __syncthreads();
    base = reinterpret_cast<const uint8_t *>(stage_words) - lo_word * sizeof(uint4);
  }
  GppTunnelInfo t; // this thread's packet's, kept for its flow below
  if (threadIdx.x < n) {
    const GppPacketDesc d = descs[threadIdx.x];
    // The core updates its record field by field: build it in registers and
    // store it once, rather than read-modify-write memory at every step.
    GppResult r;
    process_packet(base + d.offset, d.caplen, d.wirelen, linktype, d.packet_number,
                   d.timestamp_ns, cfg, r, ClassifyStages::kDeferred, nullptr, kDecap ? &t : nullptr);
    records[threadIdx.x] = r;
    if (kDecap) store_tunnel_info(reinterpret_cast<GppTunnelInfo *>(tunnel_words) + threadIdx.x, t);
  }
  __syncthreads();
  if (cfg.acl) acl_apply_block(cfg.acl, cfg.acl_default_action, records, n, acl_best);
  if (cfg.dpi)
    dpi_apply_block(cfg.dpi, records, n,
                    [&](uint32_t p) { return base + descs[p].offset + records[p].payload_offset; },
                    dpi_scratch);
  // Each record is final here (the block's stages are done).
  if (flows.table.slots && threadIdx.x < n)
    flow_count_packet(flows, records[threadIdx.x], kDecap ? t.tunnel_id : 0);
  if (!results) return; // zero-copy flows only: the records stay here
  const uint32_t words = n * sizeof(GppResult) / sizeof(uint4);
  const auto *src = reinterpret_cast<const uint4 *>(records);
  auto *dst = reinterpret_cast<uint4 *>(results + first);
  for (uint32_t w = threadIdx.x; w < words; w += blockDim.x) dst[w] = src[w];
  if (kDecap) { // the plane's entries of this block's packets, likewise
    auto *tdst = reinterpret_cast<uint4 *>(tunnel_plane(results, packet_count) + first);
    for (uint32_t w = threadIdx.x; w < n * 3; w += blockDim.x) tdst[w] = tunnel_words[w];
  }
}

// Resident blocks per SM each kernel is built for (__launch_bounds__).  The
// core needs 159 registers a thread left to itself: 3 blocks (12 warps) an
// SM, too few to wait out the ACL probes' and DPI walks' chains of memory
// loads.  Capping registers spills some of the parse to L1 but keeps more
// chains in flight.  Measured on the H200 (gpupacket-bench --quick --grid
// realistic, 2026-12-03, A/B of builds capped at 1, 4 and 6 blocks, two
// rounds): 4096 x pcap-1500B with ET Open 2024, `streams` 68.5 % of pinned
// H2D uncapped, 86.6 % at 4, 98.5-99.0 % at 6; 64-byte ACL at 4096 (acl1 /
// fw1 / ipc1 10k, % of parse + RSS) 84.7 / 86.8 / 70.0 uncapped, 98.0-98.6 /
// 98.0-99.0 / 82.9-83.4 at 4, 80.4 / 96.2 / 78.1 at 6; parse + RSS alone
// unchanged (269-271 Mpps).  So DPI launches take the 6-block build, the
// others the 4-block one.
constexpr int kDpiMinBlocks = 6, kMinBlocks = 4;

// One thread per packet: packets are independent and most are short, so this
// keeps every lane busy without cross-thread work.  Only the ACL stage is
// shared by the block.
// With a flow table, each thread then counts its packet into it.
template <int kBlocks, bool kDecap>
__global__ void __launch_bounds__(kThreadsPerBlock, kBlocks)
    process_batch_kernel(const uint8_t *batch, uint32_t packet_count, CoreConfig cfg,
                         GppResult *results, FlowDeviceTarget flows, uint32_t per_block) {
  if (cfg.acl || cfg.dpi) {
    process_block_staged<false, kDecap>(batch, packet_count, per_block, cfg, results, flows);
    return;
  }
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < packet_count)
    process_one<kDecap>(batch, packet_count, i, cfg, results, ClassifyStages::kInline, flows);
}

// Zero-copy: the batch and the results are in mapped host memory.
template <int kBlocks, bool kDecap>
__global__ void __launch_bounds__(kThreadsPerBlock, kBlocks)
    process_batch_zerocopy_kernel(const uint8_t *batch, uint32_t packet_count, CoreConfig cfg,
                                  GppResult *results, FlowDeviceTarget flows, uint32_t per_block) {
  process_block_staged<true, kDecap>(batch, packet_count, per_block, cfg, results, flows);
}

using ProcessKernel = void (*)(const uint8_t *, uint32_t, CoreConfig, GppResult *,
                               FlowDeviceTarget, uint32_t);

ProcessKernel process_kernel_for(const CoreConfig &cfg) {
  if (cfg.decap)
    return cfg.dpi ? process_batch_kernel<kDpiMinBlocks, true> : process_batch_kernel<kMinBlocks, true>;
  return cfg.dpi ? process_batch_kernel<kDpiMinBlocks, false> : process_batch_kernel<kMinBlocks, false>;
}
ProcessKernel zerocopy_kernel_for(const CoreConfig &cfg) {
  if (cfg.decap)
    return cfg.dpi ? process_batch_zerocopy_kernel<kDpiMinBlocks, true>
                   : process_batch_zerocopy_kernel<kMinBlocks, true>;
  return cfg.dpi ? process_batch_zerocopy_kernel<kDpiMinBlocks, false>
                 : process_batch_zerocopy_kernel<kMinBlocks, false>;
}

unsigned blocks_for(uint32_t packet_count, uint32_t per_block) {
  return (packet_count + per_block - 1) / per_block;
}

} // namespace

cudaError_t launch_process_batch(const uint8_t *batch, uint32_t packet_count,
                                 const CoreConfig &cfg, uint32_t acl_tuples, GppResult *results,
                                 cudaStream_t stream, const FlowDeviceTarget &flows) {
  if (packet_count == 0) return cudaSuccess;
  const uint32_t per_block = packets_per_block(cfg, acl_tuples, packet_count);
  process_kernel_for(cfg)<<<blocks_for(packet_count, per_block), kThreadsPerBlock, 0, stream>>>(
      batch, packet_count, cfg, results, flows, per_block);
  return cudaGetLastError();
}

cudaError_t launch_process_batch_zerocopy(const uint8_t *host_batch, uint32_t packet_count,
                                          const CoreConfig &cfg, uint32_t acl_tuples,
                                          GppResult *host_results, cudaStream_t stream,
                                          const FlowDeviceTarget &flows) {
  if (packet_count == 0) return cudaSuccess;
  const uint32_t per_block = packets_per_block(cfg, acl_tuples, packet_count);
  zerocopy_kernel_for(cfg)<<<blocks_for(packet_count, per_block), kThreadsPerBlock, 0, stream>>>(
      host_batch, packet_count, cfg, host_results, flows, per_block);
  return cudaGetLastError();
}

cudaError_t preload_kernels() {
  cudaFuncAttributes attributes;
  for (bool decap : {false, true})
    for (bool dpi : {false, true}) {
      CoreConfig cfg{};
      cfg.decap = decap;
      cfg.dpi = dpi ? reinterpret_cast<const uint8_t *>(&attributes) : nullptr; // only tested for null
      for (ProcessKernel kernel : {process_kernel_for(cfg), zerocopy_kernel_for(cfg)}) {
        const cudaError_t e = cudaFuncGetAttributes(&attributes, reinterpret_cast<const void *>(kernel));
        if (e != cudaSuccess) return e;
      }
    }
  int device = 0;
  const cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  unsigned blocks; // persistent_max_blocks queries (and so loads) the persistent kernel
  return persistent_max_blocks(device, &blocks);
}

void make_process_kernel_node(ProcessKernelArgs *args, cudaKernelNodeParams *node) {
  args->params[0] = &args->batch;
  args->params[1] = &args->packet_count;
  args->params[2] = &args->cfg;
  args->params[3] = &args->results;
  args->params[4] = &args->flows;
  args->params[5] = &args->packets_per_block;
  const uint32_t count = args->packet_count > 0 ? args->packet_count : 1;
  args->packets_per_block = packets_per_block(args->cfg, args->acl_tuples, count);
  *node = cudaKernelNodeParams{};
  node->func = reinterpret_cast<void *>(process_kernel_for(args->cfg));
  node->gridDim = dim3(blocks_for(count, args->packets_per_block));
  node->blockDim = dim3(kThreadsPerBlock);
  node->sharedMemBytes = 0;
  node->kernelParams = args->params;
  node->extra = nullptr;
}

} // namespace gpp
