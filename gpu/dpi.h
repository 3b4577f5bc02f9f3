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
//
// The automata hold at most the first kDpiPrefixBytes bytes of a pattern: a
// longer pattern is a candidate of the state its prefix ends in, and is
// verified byte by byte against the payload there.  That bounds how far a
// match reaches back from where the automaton reports it, so a payload can be
// cut into chunks walked independently (GPU threads share one payload,
// dpi_block.cuh): a chunk's walk starts kDpiPrefixBytes - 1 bytes early and
// counts only the matches that end (as the automaton sees them) inside it.
// It also caps the automata's depth (fewer states than whole long patterns).
// The set is one flat blob of offsets, copied to the device once.
#pragma once

#include <stdint.h>

#include <gpupacket/packet-result.h>

#include "host_device.h"

namespace gpp {

constexpr uint32_t kDpiBlobMagic = 0x49504450; // "PDPI"
constexpr int kDpiAutomata = 2;                // 0: case-sensitive, 1: nocase
// Longest prefix of a pattern the automata hold; longer patterns are verified.
constexpr uint32_t kDpiPrefixBytes = 16;

struct DpiAutomaton {
  uint32_t states;           // 0 = no patterns of this kind
  uint32_t classes;          // byte classes: row width of the transition table
  uint32_t next_offset;      // uint16_t or uint32_t[states * classes]: next state | output flag
  uint32_t out_count_offset; // uint32_t[states]: patterns of at most kDpiPrefixBytes ending here
  uint32_t out_min_offset;   // int32_t[states]: smallest of them, -1 if none
  uint32_t candidates_offset; // DpiCandidates[states]: longer patterns whose prefix ends here
  uint32_t entry_bytes;      // 2 or 4: width of a transition
  uint32_t reserved;
  uint8_t byte_class[256];   // payload byte -> class
};

// A state's longer patterns: long_ids[first .. first + count) (DpiBlobHeader).
struct DpiCandidates {
  uint32_t first, count;
};

// A pattern longer than kDpiPrefixBytes: its bytes after the prefix, at
// tail_offset in the blob (lower-cased for nocase), to compare in place.
struct DpiLongPattern {
  int32_t id;
  uint32_t length;      // whole pattern
  uint32_t tail_offset; // bytes [kDpiPrefixBytes, length) of the pattern
  uint32_t nocase;
};

constexpr uint32_t kDpiMaxStates16 = 1u << 15; // below this, 16-bit transitions

struct DpiBlobHeader {
  uint32_t magic;
  uint32_t total_size;
  uint32_t pattern_count;
  uint32_t max_pattern_length; // bytes of the longest pattern
  uint64_t generation; // unique per built set: engines upload each once
  uint32_t depth;      // longest prefix in the automata: min(max_pattern_length, kDpiPrefixBytes)
  uint32_t long_count;
  uint32_t long_offset;    // DpiLongPattern[long_count]
  uint32_t long_ids_offset; // uint32_t[]: indices into the long patterns, per state
  DpiAutomaton automata[kDpiAutomata];
};

// Whether the longer pattern `lp`, whose prefix the automaton saw end at
// payload[end], occurs there whole.
GPP_HOST_DEVICE inline bool dpi_verify(const uint8_t *blob, const DpiLongPattern &lp,
                                  const uint8_t *payload, uint32_t len, uint32_t end) {
  const uint32_t start = end + 1 - kDpiPrefixBytes;
  if (lp.length > len - start) return false;
  const uint8_t *tail = blob + lp.tail_offset;
  const uint8_t *at = payload + start + kDpiPrefixBytes;
  for (uint32_t i = 0; i < lp.length - kDpiPrefixBytes; ++i) {
    uint8_t c = at[i];
    if (lp.nocase && c >= 'A' && c <= 'Z') c = static_cast<uint8_t>(c + ('a' - 'A'));
    if (c != tail[i]) return false;
  }
  return true;
}

// Adds a count of matches to a saturating hit counter.
GPP_HOST_DEVICE inline void dpi_add_hits(uint32_t &hits, uint32_t n) {
  const uint32_t room = 0xffffffffu - hits;
  hits += n < room ? n : room;
}

// One automaton's walk over a payload.
template <typename Entry> struct DpiWalker {
  static constexpr Entry kOutput = static_cast<Entry>(Entry(1) << (8 * sizeof(Entry) - 1));
  const uint8_t *blob;
  const Entry *next;
  const uint32_t *count;
  const int32_t *min_id;
  const DpiCandidates *candidates;
  const uint32_t *long_ids;
  const DpiLongPattern *longs;
  const uint8_t *byte_class;
  uint32_t classes;
  uint32_t s = 0;

  GPP_HOST_DEVICE DpiWalker(const uint8_t *b, const DpiAutomaton &am)
      : blob(b), next(reinterpret_cast<const Entry *>(b + am.next_offset)),
        count(reinterpret_cast<const uint32_t *>(b + am.out_count_offset)),
        min_id(reinterpret_cast<const int32_t *>(b + am.out_min_offset)),
        candidates(reinterpret_cast<const DpiCandidates *>(b + am.candidates_offset)),
        long_ids(reinterpret_cast<const uint32_t *>(
            b + reinterpret_cast<const DpiBlobHeader *>(b)->long_ids_offset)),
        longs(reinterpret_cast<const DpiLongPattern *>(
            b + reinterpret_cast<const DpiBlobHeader *>(b)->long_offset)),
        byte_class(am.byte_class), classes(am.classes) {}

  // The output of a state reached at payload[pos] is read one step later
  // (report() at the next step, or finish()): its loads then overlap that
  // step's table load instead of adding to the chain of dependent loads
  // every byte waits for.  Likewise the next byte's class is read ahead.
  static constexpr uint32_t kNoPending = 0xffffffffu;
  uint32_t pending = kNoPending, pending_pos = 0;
  uint32_t ahead_pos = 0xffffffffu, ahead_class = 0;

  GPP_HOST_DEVICE void report(const uint8_t *payload, uint32_t len, uint32_t state, uint32_t pos,
                              uint32_t &hits, int32_t &best) const {
    const uint32_t n = count[state];
    if (n) {
      dpi_add_hits(hits, n);
      if (best < 0 || min_id[state] < best) best = min_id[state];
    }
    const DpiCandidates c = candidates[state];
    for (uint32_t k = 0; k < c.count; ++k) {
      const DpiLongPattern &lp = longs[long_ids[c.first + k]];
      if (dpi_verify(blob, lp, payload, len, pos)) {
        dpi_add_hits(hits, 1);
        if (best < 0 || lp.id < best) best = lp.id;
      }
    }
  }

  // Advances over payload[pos]; matches the automaton reports there are
  // counted when `counting` (by the next step or finish()).
  GPP_HOST_DEVICE void step(const uint8_t *payload, uint32_t len, uint32_t pos, bool counting,
                            uint32_t &hits, int32_t &best) {
    const uint32_t cls = ahead_pos == pos ? ahead_class : byte_class[payload[pos]];
    const Entry e = next[s * classes + cls];
    if (pos + 1 < len) {
      ahead_pos = pos + 1;
      ahead_class = byte_class[payload[pos + 1]];
    }
    if (pending != kNoPending) {
      report(payload, len, pending, pending_pos, hits, best);
      pending = kNoPending;
    }
    s = e & static_cast<Entry>(~kOutput);
    if ((e & kOutput) && counting) {
      pending = s;
      pending_pos = pos;
    }
  }
  // Counts the output of the last step.
  GPP_HOST_DEVICE void finish(const uint8_t *payload, uint32_t len, uint32_t &hits, int32_t &best) {
    if (pending != kNoPending) report(payload, len, pending, pending_pos, hits, best);
    pending = kNoPending;
  }
};

// Stands in for an automaton without patterns.
struct DpiIdle {
  GPP_HOST_DEVICE DpiIdle(const uint8_t *, const DpiAutomaton &) {}
  GPP_HOST_DEVICE void step(const uint8_t *, uint32_t, uint32_t, bool, uint32_t &, int32_t &) {}
  GPP_HOST_DEVICE void finish(const uint8_t *, uint32_t, uint32_t &, int32_t &) {}
};

// Runs both automata over payload[from, to) of a `len`-byte payload as two
// halves at once: four independent chains of table loads overlap instead of
// queueing one after the other.  Each half's walk starts depth - 1 bytes
// before it, from the root, and counts only matches the automaton reports
// inside the half: every such match starts inside that window, and the
// automaton reports every match that starts at or after where it began.  A
// short range runs as one half.  Matches are counted where the automaton
// reports them, so any cut of a payload into ranges counts each once.
template <typename W0, typename W1>
GPP_HOST_DEVICE inline void dpi_run(const uint8_t *blob, const DpiBlobHeader *h, const uint8_t *payload,
                               uint32_t len, uint32_t from, uint32_t to, uint32_t &hits,
                               int32_t &best) {
  W0 a(blob, h->automata[0]), c(blob, h->automata[0]);
  W1 b(blob, h->automata[1]), d(blob, h->automata[1]);
  const uint32_t lead = h->depth ? h->depth - 1 : 0;
  const uint32_t span = to - from;
  const uint32_t mid = span >= 4 * lead + 64 ? from + span / 2 : to; // a split worth its overlap
  const uint32_t start1 = from > lead ? from - lead : 0;
  const uint32_t start2 = mid - lead; // mid >= lead when split
  const uint32_t steps1 = mid - start1, steps2 = mid < to ? to - start2 : 0;
  const uint32_t steps = steps1 > steps2 ? steps1 : steps2;
  for (uint32_t k = 0; k < steps; ++k) {
    if (k < steps1) {
      const uint32_t i = start1 + k;
      a.step(payload, len, i, i >= from, hits, best);
      b.step(payload, len, i, i >= from, hits, best);
    }
    if (k < steps2) {
      const uint32_t i = start2 + k;
      c.step(payload, len, i, i >= mid, hits, best);
      d.step(payload, len, i, i >= mid, hits, best);
    }
  }
  a.finish(payload, len, hits, best);
  b.finish(payload, len, hits, best);
  c.finish(payload, len, hits, best);
  d.finish(payload, len, hits, best);
}

// Picks the walker of automaton 1 (none, 16- or 32-bit transitions).
template <typename W0>
GPP_HOST_DEVICE inline void dpi_run_with(const uint8_t *blob, const DpiBlobHeader *h,
                                    const uint8_t *payload, uint32_t len, uint32_t from,
                                    uint32_t to, uint32_t &hits, int32_t &best) {
  const DpiAutomaton &am = h->automata[1];
  if (!am.states) dpi_run<W0, DpiIdle>(blob, h, payload, len, from, to, hits, best);
  else if (am.entry_bytes == 2)
    dpi_run<W0, DpiWalker<uint16_t>>(blob, h, payload, len, from, to, hits, best);
  else dpi_run<W0, DpiWalker<uint32_t>>(blob, h, payload, len, from, to, hits, best);
}

// The matches the automata report in payload[from, to) of a `len`-byte
// payload: added to `hits` (saturating), the smallest pattern id into `best`.
GPP_HOST_DEVICE inline void dpi_scan_range(const uint8_t *blob, const uint8_t *payload, uint32_t len,
                                      uint32_t from, uint32_t to, uint32_t &hits, int32_t &best) {
  const auto *h = reinterpret_cast<const DpiBlobHeader *>(blob);
  static_assert(kDpiAutomata == 2, "dpi_run walks two automata");
  const DpiAutomaton &am = h->automata[0];
  if (!am.states) dpi_run_with<DpiIdle>(blob, h, payload, len, from, to, hits, best);
  else if (am.entry_bytes == 2)
    dpi_run_with<DpiWalker<uint16_t>>(blob, h, payload, len, from, to, hits, best);
  else dpi_run_with<DpiWalker<uint32_t>>(blob, h, payload, len, from, to, hits, best);
}

// Scans `len` payload bytes; fills dpi_pattern (-1 when nothing matched) and
// dpi_hits (all occurrences of all patterns, overlapping ones included,
// saturating at 2^32 - 1).
GPP_HOST_DEVICE inline void dpi_scan(const uint8_t *blob, const uint8_t *payload, uint32_t len,
                                GppResult &r) {
  int32_t best = -1;
  uint32_t hits = 0;
  dpi_scan_range(blob, payload, len, 0, len, hits, best);
  r.dpi_pattern = best;
  r.dpi_hits = hits;
}

} // namespace gpp
