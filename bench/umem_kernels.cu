#include "umem_kernels.h"

#include <gpupacket/packet-batch.h>

namespace gppbench {

namespace {

constexpr unsigned kThreads = 256;

// Where a packet is and how long, from either kind of descriptor; only the
// two fields are loaded.
struct UmemLocator {
  const UmemDesc *descs;
  __device__ uint64_t offset(uint32_t i) const { return descs[i].addr; }
  __device__ uint32_t length(uint32_t i) const { return descs[i].len; }
};

struct BatchLocator {
  const GppPacketDesc *descs;
  __device__ uint64_t offset(uint32_t i) const { return descs[i].offset; }
  __device__ uint32_t length(uint32_t i) const { return descs[i].caplen; }
};

// A group of `Lanes` consecutive threads per packet: lane k loads the 16-byte
// chunks k, k + Lanes, ... so that each load instruction of a warp reads
// whole 128-byte lines of a few packets; the lane after the last whole chunk
// reads the tail in words, then bytes, and never past the packet's end.
// Every lane of a group loads the same descriptor fields (one request).
template <uint32_t Lanes, uint32_t MaxBytes, typename Locator>
__global__ void read_packets(const uint8_t *base, Locator where, uint32_t count,
                             uint32_t *results) {
  static_assert(Lanes && Lanes <= 32 && (Lanes & (Lanes - 1)) == 0, "a power-of-two group");
  const uint32_t thread = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t packet = thread / Lanes;
  // Groups leave whole (kThreads is a multiple of Lanes), so the shuffles
  // below see every lane of their group.
  if (packet >= count) return;
  const uint32_t lane = thread % Lanes;
  const uint8_t *p = base + where.offset(packet);
  uint32_t n = where.length(packet);
  if (MaxBytes && n > MaxBytes) n = MaxBytes;
  const uint32_t chunks = n / 16;
  uint32_t x = 0;
  for (uint32_t c = lane; c < chunks; c += Lanes) {
    const uint4 v = reinterpret_cast<const uint4 *>(p)[c];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (lane == chunks % Lanes) {
    uint32_t at = chunks * 16;
    for (; at + 4 <= n; at += 4) x ^= *reinterpret_cast<const uint32_t *>(p + at);
    for (; at < n; ++at) x ^= uint32_t(p[at]) << (8 * (at % 4));
  }
  const unsigned group_mask =
      Lanes == 32 ? 0xffffffffu : ((1u << Lanes) - 1) << (threadIdx.x % 32 / Lanes * Lanes);
  for (uint32_t s = Lanes / 2; s; s >>= 1) x ^= __shfl_xor_sync(group_mask, x, s, Lanes);
  if (lane == 0) results[packet] = x;
}

template <typename Locator>
cudaError_t launch(const uint8_t *base, Locator where, uint32_t count, ReadSpan span,
                   uint32_t *results, cudaStream_t stream) {
  if (!count) return cudaSuccess;
  const uint32_t lanes = span == ReadSpan::Headers ? 8 : 32;
  const uint32_t blocks = static_cast<uint32_t>((uint64_t(count) * lanes + kThreads - 1) / kThreads);
  if (span == ReadSpan::Headers)
    read_packets<8, kHeaderBytes><<<blocks, kThreads, 0, stream>>>(base, where, count, results);
  else
    read_packets<32, 0><<<blocks, kThreads, 0, stream>>>(base, where, count, results);
  return cudaGetLastError();
}

} // namespace

cudaError_t launch_read_umem(const uint8_t *area, const UmemDesc *descs, uint32_t count,
                             ReadSpan span, uint32_t *results, cudaStream_t stream) {
  return launch(area, UmemLocator{descs}, count, span, results, stream);
}

cudaError_t launch_read_batch(const void *batch, uint32_t count, ReadSpan span,
                              uint32_t *results, cudaStream_t stream) {
  const auto *base = static_cast<const uint8_t *>(batch);
  return launch(base, BatchLocator{reinterpret_cast<const GppPacketDesc *>(base + sizeof(GppBatchHeader))},
                count, span, results, stream);
}

} // namespace gppbench
