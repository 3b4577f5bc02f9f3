// Multi-pattern payload matching shared by CPU and GPU: Aho-Corasick
// automata whose every transition is found in constant time, with no
// failure-link loops, the same on both processors.  Case-sensitive and
// `nocase` patterns live in two automata; the second's byte classes fold
// upper-case letters onto lower-case ones.  Bytes are read by class: every
// byte that occurs in no pattern shares class 0.
//
// The automata are compact (ET Open 2024's fast patterns: 14 MB, not the 93
// MB of full transition tables, so they stay in the GPU's L2): a transition
// into a state of depth <= 2 depends only on the last two bytes read, so it
// is one entry of a small `pair` table indexed by (previous byte's class,
// byte's class); only the transitions into deeper states, a few percent of
// all, are kept per state, in a hash table of 32-byte buckets (one load
// each).  States are numbered breadth-first, so the states of depth <= 1
// (`shallow`), where walks over real traffic spend most steps, have no deep
// transitions and never probe the hash.  The pair entry does not depend on
// the state, so its load overlaps the probe instead of following it.
//
// Each state records how many patterns end there (its dictionary-suffix
// chain included) and the smallest such pattern id, so overlapping
// occurrences are all counted.  A transition's top bit says whether its
// target state has output, so the common byte reads no output record.
//
// The automata hold at most the first kDpiPrefixBytes bytes of a pattern: a
// longer pattern is a candidate of the state its prefix ends in, and is
// verified against the payload there (its first four further bytes in one
// comparison, which rejects nearly every candidate).  That bounds how far a
// match reaches back from where the automaton reports it, so a payload can be
// cut into chunks walked independently (GPU threads share one payload,
// dpi_block.cuh): a chunk's walk starts kDpiPrefixBytes - 1 bytes early and
// counts only the matches that end (as the automaton sees them) inside it.
// It also caps the automata's depth.  The set is one flat blob of offsets,
// copied to the device once.
#pragma once

#include <stdint.h>

#include <gpupacket/packet-result.h>

#include "host_device.h"

namespace gpp {

constexpr uint32_t kDpiBlobMagic = 0x32504450; // "PDP2": the compact layout
constexpr int kDpiAutomata = 2;                // 0: case-sensitive, 1: nocase
// Longest prefix of a pattern the automata hold; longer patterns are verified.
constexpr uint32_t kDpiPrefixBytes = 16;
// Transitions into states of at most this depth are in the pair table.
constexpr uint32_t kDpiPairDepth = 2;

struct DpiAutomaton {
  uint32_t states;         // 0 = no patterns of this kind
  uint32_t classes;        // byte classes
  uint32_t shallow;        // states [0, shallow) have depth <= 1
  uint32_t pair_offset;    // uint16_t or uint32_t[(classes + 1) * classes]: next | output flag
  uint32_t pair_bytes;     // 2 or 4: width of a pair entry
  uint32_t deep_offset;    // DpiDeepBucket[1 << deep_bits]
  uint32_t deep_bits;
  uint32_t deep_count;     // transitions in the hash
  uint32_t out_offset;     // DpiStateOut[states]
  uint32_t nocase;         // 1 for automaton 1: payload bytes folded to lower case
  uint32_t reserved[2];
  uint8_t byte_class[256]; // payload byte -> class
};

// Pair table row `classes` is used where no byte precedes: the root's row.
// Four transitions of the hash: key = (state << 8 | class) + 1 (0: empty
// slot), next = target state | kDpiDeepOutput.  Bit 31 of key[0] says that
// keys hashed here also live in their second bucket.
struct DpiDeepBucket { // at 32-byte offsets: one sector of the GPU's memory
  uint32_t slot[8]; // key0, next0, key1, next1, ...
};
constexpr uint32_t kDpiDeepOutput = 0x80000000u;
constexpr uint32_t kDpiDeepOverflow = 0x80000000u;

GPP_HOST_DEVICE inline uint32_t dpi_deep_key(uint32_t state, uint32_t cls) {
  return (state << 8 | cls) + 1;
}
// The key's first (which = 0) and second bucket of 1 << bits: MurmurHash3's
// finalizer, two seeds.
GPP_HOST_DEVICE inline uint32_t dpi_deep_bucket(uint32_t key, uint32_t bits, int which) {
  uint32_t h = key ^ (which == 0 ? 0x9e3779b9u : 0x7f4a7c15u);
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h & ((1u << bits) - 1);
}

// A state's output: patterns of at most kDpiPrefixBytes ending here, the
// smallest of them (-1: none), and its longer candidates longs[first, +n).
struct DpiStateOut {
  uint32_t count;
  int32_t min_id;
  uint32_t long_first;
  uint32_t long_count;
};

// A pattern longer than kDpiPrefixBytes: its bytes after the prefix, at
// tail_offset in the blob (lower-cased for nocase), to compare in place; the
// first four of them also in `head` (little-endian, zero-padded).
struct DpiLongPattern {
  int32_t id;
  uint32_t length; // whole pattern
  uint32_t tail_offset;
  uint32_t head;
};

struct DpiBlobHeader {
  uint32_t magic;
  uint32_t total_size;
  uint32_t pattern_count;
  uint32_t max_pattern_length; // bytes of the longest pattern
  uint64_t generation; // unique per built set: engines upload each once
  uint32_t depth;      // longest prefix in the automata: min(max_pattern_length, kDpiPrefixBytes)
  uint32_t long_count;
  uint32_t long_offset; // DpiLongPattern[long_count], by automaton then state
  uint32_t reserved;
  DpiAutomaton automata[kDpiAutomata];
};

GPP_HOST_DEVICE inline uint8_t dpi_fold(uint8_t c) {
  return c >= 'A' && c <= 'Z' ? static_cast<uint8_t>(c + ('a' - 'A')) : c;
}

// Whether the longer pattern `lp`, whose prefix the automaton saw end at
// payload[end], occurs there whole; `head` holds the (folded, if `fold`)
// payload bytes after end, as DpiLongPattern::head.
GPP_HOST_DEVICE inline bool dpi_verify(const uint8_t *blob, const DpiLongPattern &lp, bool fold,
                                       uint32_t head, const uint8_t *payload, uint32_t len,
                                       uint32_t end) {
  const uint32_t start = end + 1 - kDpiPrefixBytes;
  if (lp.length > len - start) return false;
  const uint32_t tail_len = lp.length - kDpiPrefixBytes;
  const uint32_t mask = tail_len >= 4 ? 0xffffffffu : (1u << (8 * tail_len)) - 1;
  if ((head ^ lp.head) & mask) return false;
  const uint8_t *tail = blob + lp.tail_offset;
  const uint8_t *at = payload + end + 1;
  for (uint32_t i = 4; i < tail_len; ++i) {
    const uint8_t c = fold ? dpi_fold(at[i]) : at[i];
    if (c != tail[i]) return false;
  }
  return true;
}

// Adds a count of matches to a saturating hit counter.
GPP_HOST_DEVICE inline void dpi_add_hits(uint32_t &hits, uint32_t n) {
  const uint32_t room = 0xffffffffu - hits;
  hits += n < room ? n : room;
}

// The bytes of a 32-byte bucket or a 16-byte record: one vector load each
// on the GPU (read-only for the kernel's life), a plain copy on the CPU.
template <typename T> GPP_HOST_DEVICE inline T dpi_load(const T *p) {
#if defined(__CUDA_ARCH__)
  static_assert(sizeof(T) % 16 == 0, "whole 16-byte words");
  T v;
  const auto *src = reinterpret_cast<const uint4 *>(p);
  auto *dst = reinterpret_cast<uint4 *>(&v);
#pragma unroll
  for (unsigned k = 0; k < sizeof(T) / 16; ++k) dst[k] = __ldg(src + k);
  return v;
#else
  return *p;
#endif
}

// The target of a deep transition, if `key` is in the hash.
GPP_HOST_DEVICE inline bool dpi_deep_find(const DpiDeepBucket *buckets, uint32_t bits, uint32_t key,
                                          uint32_t &next) {
  for (int which = 0; which < 2; ++which) {
    const DpiDeepBucket b = dpi_load(buckets + dpi_deep_bucket(key, bits, which));
    for (int k = 0; k < 4; ++k)
      if ((b.slot[2 * k] & ~kDpiDeepOverflow) == key) {
        next = b.slot[2 * k + 1];
        return true;
      }
    if (!(b.slot[0] & kDpiDeepOverflow)) return false;
  }
  return false;
}

// One automaton's walk over a payload; `PairEntry` is the pair table's width.
template <typename PairEntry> struct DpiWalker {
  static constexpr PairEntry kPairOutput =
      static_cast<PairEntry>(PairEntry(1) << (8 * sizeof(PairEntry) - 1));
  const uint8_t *blob;
  const PairEntry *pair;
  const DpiDeepBucket *deep;
  const DpiStateOut *out;
  const DpiLongPattern *longs;
  const uint8_t *byte_class;
  uint32_t classes, shallow, deep_bits;
  bool fold;
  uint32_t s = 0, prev; // state, and the previous byte's class (`classes`: none)

  GPP_HOST_DEVICE DpiWalker(const uint8_t *b, const DpiAutomaton &am)
      : blob(b), pair(reinterpret_cast<const PairEntry *>(b + am.pair_offset)),
        deep(reinterpret_cast<const DpiDeepBucket *>(b + am.deep_offset)),
        out(reinterpret_cast<const DpiStateOut *>(b + am.out_offset)),
        longs(reinterpret_cast<const DpiLongPattern *>(
            b + reinterpret_cast<const DpiBlobHeader *>(b)->long_offset)),
        byte_class(am.byte_class), classes(am.classes), shallow(am.shallow),
        deep_bits(am.deep_bits), fold(am.nocase != 0), prev(am.classes) {}

  // Advances over payload[pos]; matches the automaton reports there are
  // counted when `counting`.
  GPP_HOST_DEVICE void step(const uint8_t *payload, uint32_t len, uint32_t pos, bool counting,
                            uint32_t &hits, int32_t &best) {
    const uint32_t cls = byte_class[payload[pos]];
    const PairEntry p = pair[prev * classes + cls]; // loaded whatever the probe finds
    uint32_t e;
    if (s < shallow || !dpi_deep_find(deep, deep_bits, dpi_deep_key(s, cls), e))
      e = static_cast<uint32_t>(p & static_cast<PairEntry>(~kPairOutput)) |
          (p & kPairOutput ? kDpiDeepOutput : 0);
    prev = cls;
    s = e & ~kDpiDeepOutput;
    if ((e & kDpiDeepOutput) && counting) {
      const DpiStateOut o = dpi_load(out + s);
      if (o.count) {
        dpi_add_hits(hits, o.count);
        if (best < 0 || o.min_id < best) best = o.min_id;
      }
      if (o.long_count) {
        uint32_t head = 0; // the payload's next four bytes, as DpiLongPattern::head
        for (uint32_t i = 0; i < 4 && pos + 1 + i < len; ++i) {
          const uint8_t c = fold ? dpi_fold(payload[pos + 1 + i]) : payload[pos + 1 + i];
          head |= static_cast<uint32_t>(c) << (8 * i);
        }
        for (uint32_t k = 0; k < o.long_count; ++k) {
          const DpiLongPattern lp = dpi_load(longs + o.long_first + k);
          if (dpi_verify(blob, lp, fold, head, payload, len, pos)) {
            dpi_add_hits(hits, 1);
            if (best < 0 || lp.id < best) best = lp.id;
          }
        }
      }
    }
  }
};

// Stands in for an automaton without patterns.
struct DpiIdle {
  GPP_HOST_DEVICE DpiIdle(const uint8_t *, const DpiAutomaton &) {}
  GPP_HOST_DEVICE void step(const uint8_t *, uint32_t, uint32_t, bool, uint32_t &, int32_t &) {}
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
}

// Picks the walker of automaton 1 (none, 16- or 32-bit transitions).
template <typename W0>
GPP_HOST_DEVICE inline void dpi_run_with(const uint8_t *blob, const DpiBlobHeader *h,
                                    const uint8_t *payload, uint32_t len, uint32_t from,
                                    uint32_t to, uint32_t &hits, int32_t &best) {
  const DpiAutomaton &am = h->automata[1];
  if (!am.states) dpi_run<W0, DpiIdle>(blob, h, payload, len, from, to, hits, best);
  else if (am.pair_bytes == 2)
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
  else if (am.pair_bytes == 2)
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
