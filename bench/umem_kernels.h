// The read kernel of gpupacket-umem-bench: each packet of a batch read by a
// group of threads with 16-byte loads, wherever its bytes are (packets in
// place in a UMEM area, or a contiguous packet-batch), one 32-bit answer a
// packet.  The work is deliberately light (an XOR fold) so the figures are
// those of the memory path.  Host code sees no CUDA C++ here.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace gppbench {

// A packet in a UMEM area, laid out as struct xdp_desc (linux/if_xdp.h): what
// the RX ring gives the capture thread, so the thread can hand descriptors to
// the GPU without repacking them.  `addr` is the first byte's offset from the
// start of the area.
struct UmemDesc {
  uint64_t addr;
  uint32_t len;
  uint32_t options;
};
static_assert(sizeof(UmemDesc) == 16, "struct xdp_desc is 16 bytes");

// How much of each packet the kernel reads.
enum class ReadSpan {
  Headers, // the first kHeaderBytes (what parse + RSS needs); 8 threads a packet
  Whole,   // every byte (what DPI needs); a warp a packet
};
constexpr uint32_t kHeaderBytes = 128;

// Bytes of a packet of `len` bytes that `span` reads.
inline uint32_t span_bytes(ReadSpan span, uint32_t len) {
  return span == ReadSpan::Headers && len > kHeaderBytes ? kHeaderBytes : len;
}

// The answer for a packet: the XOR of its first `n` bytes, byte i shifted
// left by 8 * (i % 4) (the XOR of its little-endian 32-bit words, a short
// last word zero-filled).  The host's reference; the kernel folds 16-byte
// loads to the same value.
inline uint32_t xor_fold(const uint8_t *p, uint32_t n) {
  uint32_t x = 0;
  for (uint32_t i = 0; i < n; ++i) x ^= uint32_t(p[i]) << (8 * (i % 4));
  return x;
}

// results[i] = xor_fold of span_bytes(span, descs[i].len) bytes at
// area + descs[i].addr, for i < count.  `area` and `descs` are device
// pointers (here: of mapped host memory); every packet starts 16-byte aligned.
[[nodiscard]] cudaError_t launch_read_umem(const uint8_t *area, const UmemDesc *descs,
                                           uint32_t count, ReadSpan span, uint32_t *results,
                                           cudaStream_t stream);

// The same over a contiguous batch (<gpupacket/packet-batch.h>) of `count`
// packets at `batch` (a device pointer: device memory or mapped host memory),
// descriptors and packets read where the batch holds them.
[[nodiscard]] cudaError_t launch_read_batch(const void *batch, uint32_t count, ReadSpan span,
                                            uint32_t *results, cudaStream_t stream);

} // namespace gppbench
