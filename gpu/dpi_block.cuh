// The DPI stage run by a whole thread block over records it holds in shared
// memory.  One thread walking a payload byte by byte waits for one dependent
// table load per byte (a 1500-byte payload took ~300 us on the H200 with the
// ET Open 2024 fast patterns); here the block cuts its packets' payloads into chunks,
// as many as it has threads when the payloads are short and never shorter
// than kDpiMinChunk bytes, and each thread walks its chunks from
// kDpiPrefixBytes - 1 bytes before them (dpi.h), so one payload is shared by
// many threads.  Each match is counted by the chunk where the automaton
// reports it, so the sums are dpi_scan()'s byte for byte.
#pragma once

#include "dpi.h"

namespace gpp {

constexpr uint32_t kDpiMinChunk = 8;

template <uint32_t kMaxPackets> struct DpiBlockScratch {
  unsigned long long hits[kMaxPackets];
  uint32_t best[kMaxPackets];               // smallest pattern id, 0xffffffff: none
  uint32_t first_unit[kMaxPackets + 1];     // packet p's chunks: [first_unit[p], first_unit[p+1])
  uint32_t chunk;                           // bytes a chunk
};

// Every thread of the block calls it, after the records are complete and
// visible (__syncthreads).  `payload_of(p)` gives the first payload byte of
// records[p].  Fills dpi_pattern / dpi_hits of records[0..n) (n <=
// kMaxPackets) and ends with a barrier.
template <uint32_t kMaxPackets, typename PayloadOf>
__device__ inline void dpi_apply_block(const uint8_t *blob, GppResult *records, uint32_t n,
                                       PayloadOf payload_of, DpiBlockScratch<kMaxPackets> &sc) {
  if (threadIdx.x == 0) {
    uint32_t total = 0;
    for (uint32_t p = 0; p < n; ++p) total += records[p].payload_length;
    const uint32_t chunk = max(kDpiMinChunk, (total + blockDim.x - 1) / blockDim.x);
    uint32_t units = 0;
    for (uint32_t p = 0; p < n; ++p) {
      sc.first_unit[p] = units;
      units += (records[p].payload_length + chunk - 1) / chunk;
    }
    sc.first_unit[n] = units;
    sc.chunk = chunk;
  }
  for (uint32_t p = threadIdx.x; p < n; p += blockDim.x) {
    sc.hits[p] = 0;
    sc.best[p] = 0xffffffffu;
  }
  __syncthreads();
  const uint32_t chunk = sc.chunk, units = sc.first_unit[n];
  for (uint32_t u = threadIdx.x; u < units; u += blockDim.x) {
    uint32_t lo = 0, hi = n; // the packet whose chunks hold u
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      if (sc.first_unit[mid] <= u) lo = mid;
      else hi = mid;
    }
    const uint32_t len = records[lo].payload_length;
    const uint32_t from = (u - sc.first_unit[lo]) * chunk;
    const uint32_t to = min(len, from + chunk);
    uint32_t hits = 0;
    int32_t best = -1;
    dpi_scan_range(blob, payload_of(lo), len, from, to, hits, best);
    if (hits) atomicAdd(&sc.hits[lo], static_cast<unsigned long long>(hits));
    if (best >= 0) atomicMin(&sc.best[lo], static_cast<uint32_t>(best));
  }
  __syncthreads();
  for (uint32_t p = threadIdx.x; p < n; p += blockDim.x) {
    records[p].dpi_hits = sc.hits[p] < 0xffffffffull ? static_cast<uint32_t>(sc.hits[p]) : 0xffffffffu;
    records[p].dpi_pattern = sc.best[p] == 0xffffffffu ? -1 : static_cast<int32_t>(sc.best[p]);
  }
  __syncthreads();
}

} // namespace gpp
