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
// The automata hold at most the first kDpiPrefixBytes bytes of a pattern.
// The rest of the longer patterns whose prefix ends in a state form that
// state's tail trie: a path-compressed trie of those tails, walked forward
// from where the automaton reports the state, as far as the payload agrees.
// Its cost is the bytes the payload shares with the tails, not the number of
// patterns behind one prefix (ET Open 2024 has 156 behind one; checking them
// one by one made a 1500-byte payload of planted patterns wait ~70 us).
// The prefix bound caps how far a match reaches back from where the
// automaton reports it, so a payload can be cut into chunks walked
// independently (GPU threads share one payload, dpi_block.cuh): a chunk's
// walk starts kDpiPrefixBytes - 1 bytes early and counts only the matches
// that end (as the automaton sees them) inside it.  It also caps the
// automata's depth (fewer states than whole long patterns).
// The set is one flat blob of offsets, copied to the device once.
#pragma once

#include <stdint.h>

#include <gpupacket/packet-result.h>

#include "host_device.h"

namespace gpp {

constexpr uint32_t kDpiBlobMagic = 0x49504450; // "PDPI"
constexpr int kDpiAutomata = 2;                // 0: case-sensitive, 1: nocase
// Longest prefix of a pattern the automata hold; the rest is in tail tries.
constexpr uint32_t kDpiPrefixBytes = 16;

struct DpiAutomaton {
  uint32_t states;           // 0 = no patterns of this kind
  uint32_t classes;          // byte classes: row width of the transition table
  uint32_t next_offset;      // uint16_t or uint32_t[states * classes]: next state | output flag
  uint32_t out_count_offset; // uint32_t[states]: patterns of at most kDpiPrefixBytes ending here
  uint32_t out_min_offset;   // int32_t[states]: smallest of them, -1 if none
  uint32_t tails_offset;     // DpiTailRange[states]: the state's tail trie (its root's children)
  uint32_t entry_bytes;      // 2 or 4: width of a transition
  uint32_t nocase;           // 1: payload letters fold to lower case (the tails are stored so)
  uint8_t byte_class[256];   // payload byte -> class
};

// Nodes [first, first + count) of the blob's tail nodes: children of one
// node (or of a state, the root of its tail trie), sorted by their first byte.
struct DpiTailRange {
  uint32_t first, count;
};

// A tail-trie node: `label_length` bytes (at label_offset in the blob,
// lower-cased in the nocase automaton) past its parent; `out_count` patterns
// end with them, the smallest of those ids is out_min (-1: none).
struct DpiTailNode {
  uint32_t label_offset;
  uint32_t label_length; // >= 1
  DpiTailRange children;
  uint32_t out_count;
  int32_t out_min;
};

constexpr uint32_t kDpiMaxStates16 = 1u << 15; // below this, 16-bit transitions

struct DpiBlobHeader {
  uint32_t magic;
  uint32_t total_size;
  uint32_t pattern_count;
  uint32_t max_pattern_length; // bytes of the longest pattern
  uint64_t generation; // unique per built set: engines upload each once
  uint32_t depth;      // longest prefix in the automata: min(max_pattern_length, kDpiPrefixBytes)
  uint32_t long_count;       // patterns longer than kDpiPrefixBytes
  uint32_t tail_node_count;
  uint32_t tail_nodes_offset; // DpiTailNode[tail_node_count]
  uint32_t tail_keys_offset;  // uint8_t[tail_node_count]: each node's first label byte
  DpiAutomaton automata[kDpiAutomata];
};

// A byte as the nocase automaton sees it: ASCII letters folded to lower
// case (its class map, pattern bytes and tails are folded the same way).
GPP_HOST_DEVICE inline uint8_t dpi_fold(uint8_t c, bool nocase) {
  return nocase && c >= 'A' && c <= 'Z' ? static_cast<uint8_t>(c + ('a' - 'A')) : c;
}

// Adds a count of matches to a saturating hit counter.
GPP_HOST_DEVICE inline void dpi_add_hits(uint32_t &hits, uint32_t n) {
  const uint32_t room = 0xffffffffu - hits;
  hits += n < room ? n : room;
}

// Walks the tail tries from nodes `r` (a state's root children) over
// payload[at, len): counts every node whose whole path the payload holds.
GPP_HOST_DEVICE inline void dpi_walk_tails(const uint8_t *blob, const DpiTailNode *nodes,
                                           const uint8_t *keys, bool nocase, DpiTailRange r,
                                           const uint8_t *payload, uint32_t len, uint32_t at,
                                           uint32_t &hits, int32_t &best) {
  while (r.count && at < len) {
    const uint8_t c = dpi_fold(payload[at], nocase);
    uint32_t lo = r.first, hi = r.first + r.count; // the child whose key is c, if any
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      if (keys[mid] <= c) lo = mid;
      else hi = mid;
    }
    if (keys[lo] != c) return;
    const DpiTailNode node = nodes[lo];
    if (node.label_length > len - at) return;
    const uint8_t *label = blob + node.label_offset;
    for (uint32_t i = 1; i < node.label_length; ++i)
      if (dpi_fold(payload[at + i], nocase) != label[i]) return;
    at += node.label_length;
    if (node.out_count) {
      dpi_add_hits(hits, node.out_count);
      if (best < 0 || node.out_min < best) best = node.out_min;
    }
    r = node.children;
  }
}

// One automaton's walk over a payload.
template <typename Entry> struct DpiWalker {
  static constexpr Entry kOutput = static_cast<Entry>(Entry(1) << (8 * sizeof(Entry) - 1));
  const uint8_t *blob;
  const Entry *next;
  const uint32_t *count;
  const int32_t *min_id;
  const DpiTailRange *tails;
  const DpiTailNode *tail_nodes;
  const uint8_t *tail_keys;
  const uint8_t *byte_class;
  uint32_t classes;
  bool nocase;
  uint32_t s = 0;

  GPP_HOST_DEVICE DpiWalker(const uint8_t *b, const DpiAutomaton &am)
      : blob(b), next(reinterpret_cast<const Entry *>(b + am.next_offset)),
        count(reinterpret_cast<const uint32_t *>(b + am.out_count_offset)),
        min_id(reinterpret_cast<const int32_t *>(b + am.out_min_offset)),
        tails(reinterpret_cast<const DpiTailRange *>(b + am.tails_offset)),
        tail_nodes(reinterpret_cast<const DpiTailNode *>(
            b + reinterpret_cast<const DpiBlobHeader *>(b)->tail_nodes_offset)),
        tail_keys(b + reinterpret_cast<const DpiBlobHeader *>(b)->tail_keys_offset),
        byte_class(am.byte_class), classes(am.classes), nocase(am.nocase != 0) {}

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
    const DpiTailRange r = tails[state];
    if (r.count) dpi_walk_tails(blob, tail_nodes, tail_keys, nocase, r, payload, len, pos + 1, hits, best);
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
