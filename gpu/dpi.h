// Multi-pattern payload matching shared by CPU and GPU: Aho-Corasick
// automata compiled to full transition tables, so matching is one table load
// per payload byte with no failure-link loops, the same on both processors.
// Rows are indexed by byte class, not byte: every byte that occurs in no
// pattern shares class 0, which shrinks the tables several-fold (they stay
// in cache).  Case-sensitive and `nocase` patterns live in two automata; the
// second's class map folds upper-case letters onto lower-case ones.  Each
// state records how many patterns end there (its dictionary-suffix chain
// included) and the smallest such pattern id, so overlapping occurrences are
// all counted.  The set is one flat blob of offsets, copied to the device once.
#pragma once

#include <stdint.h>

#include <gpupacket/packet-result.h>

#if defined(__CUDACC__)
#define GPP_DPI_HD __host__ __device__
#else
#define GPP_DPI_HD
#endif

namespace gpp {

constexpr uint32_t kDpiBlobMagic = 0x49504450; // "PDPI"
constexpr int kDpiAutomata = 2;                // 0: case-sensitive, 1: nocase

struct DpiAutomaton {
  uint32_t states;           // 0 = no patterns of this kind
  uint32_t classes;          // byte classes: row width of the transition table
  uint32_t next_offset;      // uint32_t[states * classes]
  uint32_t out_count_offset; // uint32_t[states]: patterns ending in this state
  uint32_t out_min_offset;   // int32_t[states]: smallest of them, -1 if none
  uint32_t reserved;
  uint8_t byte_class[256];   // payload byte -> class
};

struct DpiBlobHeader {
  uint32_t magic;
  uint32_t total_size;
  uint32_t pattern_count;
  uint32_t reserved0;
  uint64_t generation; // unique per built set: engines upload each once
  DpiAutomaton automata[kDpiAutomata];
};

// Scans `len` payload bytes; fills dpi_pattern (-1 when nothing matched) and
// dpi_hits (all occurrences of all patterns, overlapping ones included,
// saturating at 2^32 - 1).
GPP_DPI_HD inline void dpi_scan(const uint8_t *blob, const uint8_t *payload, uint32_t len,
                                GppResult &r) {
  const auto *h = reinterpret_cast<const DpiBlobHeader *>(blob);
  int32_t best = -1;
  uint32_t hits = 0;
  for (int a = 0; a < kDpiAutomata; ++a) {
    const DpiAutomaton &am = h->automata[a];
    if (am.states == 0) continue;
    const auto *next = reinterpret_cast<const uint32_t *>(blob + am.next_offset);
    const auto *count = reinterpret_cast<const uint32_t *>(blob + am.out_count_offset);
    const auto *min_id = reinterpret_cast<const int32_t *>(blob + am.out_min_offset);
    uint32_t s = 0;
    for (uint32_t i = 0; i < len; ++i) {
      s = next[s * am.classes + am.byte_class[payload[i]]];
      if (count[s]) {
        const uint32_t room = 0xffffffffu - hits;
        hits += count[s] < room ? count[s] : room; // saturates
        if (best < 0 || min_id[s] < best) best = min_id[s];
      }
    }
  }
  r.dpi_pattern = best;
  r.dpi_hits = hits;
}

} // namespace gpp
