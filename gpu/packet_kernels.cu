#include "packet_kernels.h"

#include <gpupacket/packet-batch.h>

namespace gpp {
namespace {

constexpr int kThreadsPerBlock = 128;

// One thread per packet: packets are independent and most are short, so this
// keeps every lane busy without cross-thread work.
__global__ void process_batch_kernel(const uint8_t *batch, uint32_t packet_count,
                                     CoreConfig cfg, GppResult *results) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= packet_count) return;
  const auto *header = reinterpret_cast<const GppBatchHeader *>(batch);
  const auto *descs = reinterpret_cast<const GppPacketDesc *>(batch + sizeof(GppBatchHeader));
  const GppPacketDesc d = descs[i];
  process_packet(batch + d.offset, d.caplen, d.wirelen, header->linktype, d.packet_number,
                 d.timestamp_ns, cfg, results[i]);
}

} // namespace

cudaError_t launch_process_batch(const uint8_t *batch, uint32_t packet_count,
                                 const CoreConfig &cfg, GppResult *results,
                                 cudaStream_t stream) {
  if (packet_count == 0) return cudaSuccess;
  const unsigned blocks = (packet_count + kThreadsPerBlock - 1) / kThreadsPerBlock;
  process_batch_kernel<<<blocks, kThreadsPerBlock, 0, stream>>>(batch, packet_count, cfg,
                                                                 results);
  return cudaGetLastError();
}

} // namespace gpp
