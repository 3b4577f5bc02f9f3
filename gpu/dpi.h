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
// verified byte by byte against the payload there.  That caps the automata's
// depth (fewer states than whole long patterns) and bounds how far past its
// start a match is reported, so a payload can be cut into chunks walked
// independently (GPU threads share one payload, dpi_block.cuh).  A chunk
// counts the matches that start inside it: its walk starts at the root at
// the chunk's first byte (the automaton then reports exactly the matches
// starting there or later) and runs on past its end only while the state's
// depth says a match that started inside the chunk may still be reported,
// usually a byte or two (the depth of a state is known from its number:
// states are numbered breadth-first).  Past the end, a state's outputs are
// counted one by one along its chain of suffixes, only those long enough to
// have started inside the chunk.
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
// dpi_run walks a range of at least twice this as two halves at once.
constexpr uint32_t kDpiMinHalf = 32;

struct DpiAutomaton {
  uint32_t states;           // 0 = no patterns of this kind
  uint32_t classes;          // byte classes: row width of the transition table
  uint32_t next_offset;      // uint16_t or uint32_t[states * classes]: next state | output flag
  uint32_t out_count_offset; // uint32_t[states]: patterns of at most kDpiPrefixBytes ending here
  uint32_t out_min_offset;   // int32_t[states]: smallest of them, -1 if none
  uint32_t candidates_offset; // DpiCandidates[states]: longer patterns whose prefix ends here
  uint32_t entry_bytes;      // 2 or 4: width of a transition
  uint32_t own_offset;       // DpiOwnOutput[states]: each state's own patterns and suffix link
  // States are numbered breadth-first: depth_start[d] is the first state of
  // depth d or more (`states` past the deepest).
  uint32_t depth_start[kDpiPrefixBytes + 2];
  uint8_t byte_class[256];   // payload byte -> class
};

// The patterns of at most kDpiPrefixBytes whose bytes are exactly a state's
// string (the state's outputs are these, then its link's, and so on).
struct DpiOwnOutput {
  uint32_t count;
  int32_t min_id; // -1 if none
  uint32_t link;  // the longest proper suffix state with patterns of its own; 0 (the root): none
  uint32_t reserved;
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

// One automaton's walk over the chunk [from, to) of a payload (the top of
// dpi.h says how a chunk counts the matches that start inside it).
template <typename Entry> struct DpiWalker {
  static constexpr Entry kOutput = static_cast<Entry>(Entry(1) << (8 * sizeof(Entry) - 1));
  const uint8_t *blob;
  const Entry *next;
  const uint32_t *count;
  const int32_t *min_id;
  const DpiCandidates *candidates;
  const DpiOwnOutput *own;
  const uint32_t *depth_start;
  const uint32_t *long_ids;
  const DpiLongPattern *longs;
  const uint8_t *byte_class;
  uint32_t classes;
  uint32_t s = 0;
  uint32_t pos, to, len;
  bool active;

  GPP_HOST_DEVICE DpiWalker(const uint8_t *b, const DpiAutomaton &am, uint32_t chunk_from,
                            uint32_t chunk_to, uint32_t payload_len)
      : blob(b), next(reinterpret_cast<const Entry *>(b + am.next_offset)),
        count(reinterpret_cast<const uint32_t *>(b + am.out_count_offset)),
        min_id(reinterpret_cast<const int32_t *>(b + am.out_min_offset)),
        candidates(reinterpret_cast<const DpiCandidates *>(b + am.candidates_offset)),
        own(reinterpret_cast<const DpiOwnOutput *>(b + am.own_offset)), depth_start(am.depth_start),
        long_ids(reinterpret_cast<const uint32_t *>(
            b + reinterpret_cast<const DpiBlobHeader *>(b)->long_ids_offset)),
        longs(reinterpret_cast<const DpiLongPattern *>(
            b + reinterpret_cast<const DpiBlobHeader *>(b)->long_offset)),
        byte_class(am.byte_class), classes(am.classes), pos(chunk_from), to(chunk_to),
        len(payload_len), active(chunk_from < chunk_to) {}

  // The output of a state reached at payload[pos] is read one step later
  // (report() at the next step, or finish()): its loads then overlap that
  // step's table load instead of adding to the chain of dependent loads
  // every byte waits for.  Likewise the next byte's class is read ahead.
  static constexpr uint32_t kNoPending = 0xffffffffu;
  uint32_t pending = kNoPending, pending_pos = 0;
  uint32_t ahead_pos = 0xffffffffu, ahead_class = 0;

  GPP_HOST_DEVICE void count_long(const uint8_t *payload, uint32_t state, uint32_t at,
                                  uint32_t &hits, int32_t &best) const {
    const DpiCandidates c = candidates[state];
    for (uint32_t k = 0; k < c.count; ++k) {
      const DpiLongPattern &lp = longs[long_ids[c.first + k]];
      if (dpi_verify(blob, lp, payload, len, at)) {
        dpi_add_hits(hits, 1);
        if (best < 0 || lp.id < best) best = lp.id;
      }
    }
  }

  // The matches reported at payload[at] in `state` that started inside the
  // chunk.
  GPP_HOST_DEVICE void report(const uint8_t *payload, uint32_t state, uint32_t at, uint32_t &hits,
                              int32_t &best) const {
    if (at < to) { // inside: all of them (the walk began at the chunk's start)
      const uint32_t n = count[state];
      if (n) {
        dpi_add_hits(hits, n);
        if (best < 0 || min_id[state] < best) best = min_id[state];
      }
      count_long(payload, state, at, hits, best);
      return;
    }
    // Past the end: those longer than the bytes walked past it.
    const uint32_t past = at - to + 1;
    const uint32_t longer = depth_start[past + 1]; // first state deeper than `past`
    for (uint32_t t = own[state].count ? state : own[state].link; t >= longer && t != 0;
         t = own[t].link) {
      const DpiOwnOutput o = own[t];
      dpi_add_hits(hits, o.count);
      if (best < 0 || o.min_id < best) best = o.min_id;
    }
    if (kDpiPrefixBytes > past) count_long(payload, state, at, hits, best);
  }

  // Advances over payload[pos]; then stays active while a match that started
  // inside the chunk may still be reported.
  GPP_HOST_DEVICE void step(const uint8_t *payload, uint32_t &hits, int32_t &best) {
    const uint32_t cls = ahead_pos == pos ? ahead_class : byte_class[payload[pos]];
    const Entry e = next[s * classes + cls];
    if (pos + 1 < len) {
      ahead_pos = pos + 1;
      ahead_class = byte_class[payload[pos + 1]];
    }
    if (pending != kNoPending) {
      report(payload, pending, pending_pos, hits, best);
      pending = kNoPending;
    }
    s = e & static_cast<Entry>(~kOutput);
    if (e & kOutput) {
      pending = s;
      pending_pos = pos;
    }
    ++pos;
    // Past the end, a match that started inside is at least pos - to + 1
    // bytes long, and the next state is at most one deeper than this one.
    active = pos < len && (pos < to || (pos - to < kDpiPrefixBytes && s >= depth_start[pos - to + 1]));
  }
  // Counts the output of the last step.
  GPP_HOST_DEVICE void finish(const uint8_t *payload, uint32_t &hits, int32_t &best) {
    if (pending != kNoPending) report(payload, pending, pending_pos, hits, best);
    pending = kNoPending;
  }
};

// Stands in for an automaton without patterns.
struct DpiIdle {
  static constexpr bool active = false;
  GPP_HOST_DEVICE DpiIdle(const uint8_t *, const DpiAutomaton &, uint32_t, uint32_t, uint32_t) {}
  GPP_HOST_DEVICE void step(const uint8_t *, uint32_t &, int32_t &) {}
  GPP_HOST_DEVICE void finish(const uint8_t *, uint32_t &, int32_t &) {}
};

// Runs both automata over the chunk [from, to) of a `len`-byte payload as
// two halves at once: four independent chains of table loads overlap
// instead of queueing one after the other.  Halves are chunks like any
// other, so a split costs only the first half's few steps past its end; a
// short range runs as one.
template <typename W0, typename W1>
GPP_HOST_DEVICE inline void dpi_run(const uint8_t *blob, const DpiBlobHeader *h, const uint8_t *payload,
                               uint32_t len, uint32_t from, uint32_t to, uint32_t &hits,
                               int32_t &best) {
  const uint32_t mid = to - from >= 2 * kDpiMinHalf ? from + (to - from) / 2 : to;
  W0 a(blob, h->automata[0], from, mid, len), c(blob, h->automata[0], mid, to, len);
  W1 b(blob, h->automata[1], from, mid, len), d(blob, h->automata[1], mid, to, len);
  while (a.active || b.active || c.active || d.active) {
    if (a.active) a.step(payload, hits, best);
    if (b.active) b.step(payload, hits, best);
    if (c.active) c.step(payload, hits, best);
    if (d.active) d.step(payload, hits, best);
  }
  a.finish(payload, hits, best);
  b.finish(payload, hits, best);
  c.finish(payload, hits, best);
  d.finish(payload, hits, best);
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

// The matches that start in payload[from, to) of a `len`-byte payload:
// added to `hits` (saturating), the smallest pattern id into `best`.  Any
// cut of a payload into ranges counts each match once.
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
