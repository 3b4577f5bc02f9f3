// Multi-pattern payload matching shared by CPU and GPU: Aho-Corasick
// automata compiled to full transition tables, so matching is one table load
// per payload byte with no failure-link loops, the same on both processors.
// Rows are indexed by byte class, not byte: every byte that occurs in no
// pattern shares class 0, which shrinks the tables several-fold (they stay
// in cache).  Case-sensitive and `nocase` patterns live in two automata; the
// second's class map folds upper-case letters onto lower-case ones.  Each
// state records how many patterns end there (its dictionary-suffix chain
// included) and the smallest such pattern id, so overlapping occurrences are
// all counted.  A transition's top bit says whether its target state has
// output, so the common byte costs one table load; transitions are 16 bits
// wide when the automaton has under 32768 states (half the cache footprint).
// The set is one flat blob of offsets, copied to the device once.
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
  uint32_t next_offset;      // uint16_t or uint32_t[states * classes]: next state | output flag
  uint32_t out_count_offset; // uint32_t[states]: patterns ending in this state
  uint32_t out_min_offset;   // int32_t[states]: smallest of them, -1 if none
  uint32_t entry_bytes;      // 2 or 4: width of a transition
  uint8_t byte_class[256];   // payload byte -> class
};

constexpr uint32_t kDpiMaxStates16 = 1u << 15; // below this, 16-bit transitions

struct DpiBlobHeader {
  uint32_t magic;
  uint32_t total_size;
  uint32_t pattern_count;
  uint32_t max_pattern_length; // bytes of the longest pattern
  uint64_t generation; // unique per built set: engines upload each once
  DpiAutomaton automata[kDpiAutomata];
};

// One automaton's walk over a payload.
template <typename Entry> struct DpiWalker {
  static constexpr Entry kOutput = static_cast<Entry>(Entry(1) << (8 * sizeof(Entry) - 1));
  const Entry *next;
  const uint32_t *count;
  const int32_t *min_id;
  const uint8_t *byte_class;
  uint32_t classes;
  uint32_t s = 0;

  GPP_DPI_HD DpiWalker(const uint8_t *blob, const DpiAutomaton &am)
      : next(reinterpret_cast<const Entry *>(blob + am.next_offset)),
        count(reinterpret_cast<const uint32_t *>(blob + am.out_count_offset)),
        min_id(reinterpret_cast<const int32_t *>(blob + am.out_min_offset)),
        byte_class(am.byte_class), classes(am.classes) {}

  // Advances over one byte; matches ending here are counted when `counting`.
  GPP_DPI_HD void step(uint8_t byte, bool counting, uint32_t &hits, int32_t &best) {
    const Entry e = next[s * classes + byte_class[byte]];
    s = e & static_cast<Entry>(~kOutput);
    if ((e & kOutput) && counting) {
      const uint32_t room = 0xffffffffu - hits;
      hits += count[s] < room ? count[s] : room; // saturates
      if (best < 0 || min_id[s] < best) best = min_id[s];
    }
  }
};

// Stands in for an automaton without patterns.
struct DpiIdle {
  GPP_DPI_HD DpiIdle(const uint8_t *, const DpiAutomaton &) {}
  GPP_DPI_HD void step(uint8_t, bool, uint32_t &, int32_t &) {}
};

// Runs both automata over the payload as two halves at once: four
// independent chains of table loads overlap instead of queueing one after
// the other.  The second half starts max_pattern_length - 1 bytes early, from
// the root, and counts only matches ending in its half: every such match
// starts inside its window, and the automaton reports every match that starts
// at or after where it began.  Short payloads run as one half.
template <typename W0, typename W1>
GPP_DPI_HD inline void dpi_run(const uint8_t *blob, const DpiBlobHeader *h, const uint8_t *payload,
                               uint32_t len, uint32_t &hits, int32_t &best) {
  W0 a(blob, h->automata[0]), c(blob, h->automata[0]);
  W1 b(blob, h->automata[1]), d(blob, h->automata[1]);
  const uint32_t lead = h->max_pattern_length ? h->max_pattern_length - 1 : 0;
  const uint32_t mid = len >= 4 * lead + 64 ? len / 2 : len; // a split worth its overlap
  const uint32_t start2 = mid - lead;                        // the second half's window
  const uint32_t steps = mid < len ? len - start2 : mid;     // >= mid
  for (uint32_t k = 0; k < steps; ++k) {
    if (k < mid) {
      a.step(payload[k], true, hits, best);
      b.step(payload[k], true, hits, best);
    }
    if (mid < len) {
      const uint32_t i = start2 + k;
      c.step(payload[i], i >= mid, hits, best);
      d.step(payload[i], i >= mid, hits, best);
    }
  }
}

// Picks the walker of automaton 1 (none, 16- or 32-bit transitions).
template <typename W0>
GPP_DPI_HD inline void dpi_run_with(const uint8_t *blob, const DpiBlobHeader *h,
                                    const uint8_t *payload, uint32_t len, uint32_t &hits,
                                    int32_t &best) {
  const DpiAutomaton &am = h->automata[1];
  if (!am.states) dpi_run<W0, DpiIdle>(blob, h, payload, len, hits, best);
  else if (am.entry_bytes == 2) dpi_run<W0, DpiWalker<uint16_t>>(blob, h, payload, len, hits, best);
  else dpi_run<W0, DpiWalker<uint32_t>>(blob, h, payload, len, hits, best);
}

// Scans `len` payload bytes; fills dpi_pattern (-1 when nothing matched) and
// dpi_hits (all occurrences of all patterns, overlapping ones included,
// saturating at 2^32 - 1).
GPP_DPI_HD inline void dpi_scan(const uint8_t *blob, const uint8_t *payload, uint32_t len,
                                GppResult &r) {
  const auto *h = reinterpret_cast<const DpiBlobHeader *>(blob);
  static_assert(kDpiAutomata == 2, "dpi_run walks two automata");
  int32_t best = -1;
  uint32_t hits = 0;
  const DpiAutomaton &am = h->automata[0];
  if (!am.states) dpi_run_with<DpiIdle>(blob, h, payload, len, hits, best);
  else if (am.entry_bytes == 2) dpi_run_with<DpiWalker<uint16_t>>(blob, h, payload, len, hits, best);
  else dpi_run_with<DpiWalker<uint32_t>>(blob, h, payload, len, hits, best);
  r.dpi_pattern = best;
  r.dpi_hits = hits;
}

} // namespace gpp
