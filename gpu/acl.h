// ACL classification shared by CPU and GPU: first-match over ClassBench-style
// 5-tuple rules with tuple space search.
//
// Why tuple space search: rules are grouped by their (family, source prefix
// length, destination prefix length) "tuple"; inside a tuple the masked
// address pair is an exact-match hash key.  A lookup probes one hash slot per
// tuple instead of testing every rule, and the number of tuples stays small
// while rule counts grow to 10,000+.  Prefix lengths are coarsened to steps
// of 8 bits (IPv4) or 16 bits (IPv6) — at most 25 / 81 tuples, where exact
// lengths gave ClassBench's 1k sets 84 to 188 — and each rule keeps its exact
// prefixes for the final check.  Tuples are visited in order of their
// smallest rule index, so the search stops as soon as no remaining tuple can
// hold an earlier match.  The whole rule set is one flat blob of offsets (no
// pointers), copied to the device once per rule set.
#pragma once

#include <stdint.h>

#include <gpupacket/packet-result.h>

#include "host_device.h"

namespace gpp {

constexpr uint32_t kAclNoRule = 0xffffffffu;
constexpr uint32_t kAclBlobMagic = 0x4c434150; // "PACL"

struct alignas(16) AclRule {
  uint16_t sport_lo, sport_hi, dport_lo, dport_hi;
  uint8_t proto, proto_mask;
  uint8_t action; // GPP_ACL_ALLOW / GPP_ACL_DROP
  uint8_t src_len, dst_len; // exact prefix lengths (the tuple holds coarsened ones)
  uint8_t reserved[3];
  uint8_t src[16], dst[16]; // prefixes, masked to src_len / dst_len
};

// The tuple prefix length for a rule's exact one.
GPP_HOST_DEVICE inline uint8_t acl_coarse_length(uint8_t len, uint8_t ip_version) {
  const uint8_t step = ip_version == 4 ? 8 : 16;
  return static_cast<uint8_t>(len - len % step);
}

// The blob's structs are 16-byte aligned so a GPU thread reads each in a
// few 16-byte loads rather than field by field.
struct alignas(16) AclTuple {
  uint8_t ip_version; // 4 or 6
  uint8_t src_len, dst_len;
  uint8_t reserved;
  uint32_t min_rule;    // smallest rule index in the tuple: search order and cut-off
  uint32_t slot_offset; // first slot of this tuple's hash table
  uint32_t slot_mask;   // table size - 1 (a power of two)
};

struct alignas(16) AclSlot {
  uint8_t src[16], dst[16]; // masked addresses (IPv4: first 4 bytes)
  uint32_t first;           // into the entries array
  uint32_t count;           // 0 = empty slot
  uint32_t index;           // 0: walk the entries; else 1 + the slot's AclSlotIndex (below)
  uint32_t reserved;
};

// A slot with many rules (wildcard-heavy firewall sets put hundreds behind
// one address pair, differing in ports and protocol) gets bitmaps, so its
// cost does not grow with its length: for each elementary interval of the
// source ports, of the destination ports, and for each protocol value, the
// slot's rules (bit i = the slot's i-th entry) that admit it.  A lookup ANDs
// the three rows and checks the set bits in order (ascending rule indices,
// so the first that also matches the exact prefixes is the slot's first
// match).  Everything is in the blob's index words (uint32_t), at offsets
// relative to them.
constexpr uint32_t kAclIndexMinRules = 32; // shorter slots are walked
struct AclSlotIndex {
  uint32_t words;                      // bitmap words a row: ceil(count / 32)
  uint32_t sport_bounds, sport_count;  // ascending interval starts (the first is 0)
  uint32_t dport_bounds, dport_count;
  uint32_t rows; // sport_count rows, then dport_count rows, then 256 protocol rows
};

static_assert(sizeof(AclRule) == 48 && sizeof(AclTuple) == 16 && sizeof(AclSlot) == 48,
              "blob records are whole 16-byte words");

// The blob: header, then the arrays at the offsets it names (bytes from the
// start of the blob, each 16-byte aligned).
struct AclBlobHeader {
  uint32_t magic;
  uint32_t total_size;
  uint32_t rule_count;
  uint32_t tuple_count;
  uint32_t rules_offset;   // AclRule[rule_count]
  uint32_t tuples_offset;  // AclTuple[tuple_count], sorted by min_rule
  uint32_t slots_offset;   // AclSlot[]
  uint32_t entries_offset; // uint32_t[] rule indices, ascending per slot
  uint64_t generation;     // unique per built rule set: engines upload each once
  // AclRule[] parallel to the entries (entry_rules[i] = rules[entries[i]]):
  // a slot's rules sit side by side, and the loads of an entry's index and
  // of its rule do not wait on each other.
  uint32_t entry_rules_offset;
  uint32_t index_offset; // uint32_t[]: the AclSlotIndex records and their arrays
  // uint8_t[] parallel to the slots: 0 for an empty slot, else acl_slot_tag()
  // of its key's hash.  A probe reads tags until the key's own or an empty
  // one: the tags of a 10k set (tens of KB) stay in L1, its slots (MBs) do
  // not, so the probes that find nothing (most of a packet's) cost an L1 hit
  // instead of an L2 round trip.
  uint32_t tags_offset;
};

// The tuples of a blob (0 for none).
GPP_HOST_DEVICE inline uint32_t acl_tuple_count(const uint8_t *blob) {
  return blob ? reinterpret_cast<const AclBlobHeader *>(blob)->tuple_count : 0;
}

GPP_HOST_DEVICE inline uint32_t acl_load_be32(const uint8_t *p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

// Bits of an IPv4 prefix of `len` bits, as a host-order mask.
GPP_HOST_DEVICE inline uint32_t acl_mask32(uint8_t len) {
  return len == 0 ? 0u : len >= 32 ? 0xffffffffu : ~(0xffffffffu >> len);
}

// IPv4 keys hash as one 64-bit word through the MurmurHash3 finaliser, so
// every key bit reaches the low bits a table index takes (a bare
// multiplicative hash left the source address's high bits out of them: with
// masked prefixes whole tuples collided, 196-slot probe runs on 10k rules);
// IPv6 keys byte by byte.
GPP_HOST_DEVICE inline uint32_t acl_hash32(uint32_t src, uint32_t dst) {
  uint64_t k = (static_cast<uint64_t>(src) << 32) | dst;
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return static_cast<uint32_t>(k);
}

// A slot's tag: the hash's top byte (tables index with its low bits), never 0.
GPP_HOST_DEVICE inline uint8_t acl_slot_tag(uint32_t hash) {
  const uint8_t tag = static_cast<uint8_t>(hash >> 24);
  return tag ? tag : 1;
}

GPP_HOST_DEVICE inline uint8_t acl_load_tag(const uint8_t *tags, uint32_t i) {
#if defined(__CUDA_ARCH__)
  return __ldg(tags + i); // read-only path: the tags stay in L1
#else
  return tags[i];
#endif
}

GPP_HOST_DEVICE inline uint32_t acl_hash(const uint8_t *src, const uint8_t *dst, int addr_len) {
  if (addr_len == 4) return acl_hash32(acl_load_be32(src), acl_load_be32(dst));
  uint32_t h = 2166136261u; // FNV-1a
  for (int i = 0; i < addr_len; ++i) h = (h ^ src[i]) * 16777619u;
  for (int i = 0; i < addr_len; ++i) h = (h ^ dst[i]) * 16777619u;
  return h ^ (h >> 15);
}

GPP_HOST_DEVICE inline void acl_mask(const uint8_t *addr, int len_bits, int addr_len, uint8_t *out) {
  for (int i = 0; i < addr_len; ++i) {
    const int bits = len_bits - 8 * i;
    out[i] = bits >= 8 ? addr[i] : bits <= 0 ? 0 : static_cast<uint8_t>(addr[i] & (0xff00u >> bits));
  }
}

// Whether a rule's ports and protocol admit the packet.
GPP_HOST_DEVICE inline bool acl_ports_match(const AclRule &rule, uint16_t sport, uint16_t dport,
                                       uint8_t proto) {
  return sport >= rule.sport_lo && sport <= rule.sport_hi && dport >= rule.dport_lo &&
         dport <= rule.dport_hi && (proto & rule.proto_mask) == (rule.proto & rule.proto_mask);
}

// What a packet offers the rules besides its addresses.  Packets without
// ports (ICMP, non-first fragments) match with ports 0.
struct AclPorts {
  uint16_t sport, dport;
  uint8_t proto;
};

GPP_HOST_DEVICE inline AclPorts acl_ports(const GppResult &r) {
  const bool has_ports = (r.l4_proto == 6 || r.l4_proto == 17) && (r.ip_flags & GPP_IP_L4_PARSED);
  return {static_cast<uint16_t>(has_ports ? r.sport : 0),
          static_cast<uint16_t>(has_ports ? r.dport : 0), r.l4_proto};
}

// The rules and tuples of a blob.
struct AclView {
  const AclBlobHeader *h;
  const AclRule *rules;
  const AclTuple *tuples;
  const AclSlot *slots;
  const uint32_t *entries;
  const AclRule *entry_rules;
  const uint32_t *index;
  const uint8_t *tags;
  GPP_HOST_DEVICE explicit AclView(const uint8_t *blob)
      : h(reinterpret_cast<const AclBlobHeader *>(blob)),
        rules(reinterpret_cast<const AclRule *>(blob + h->rules_offset)),
        tuples(reinterpret_cast<const AclTuple *>(blob + h->tuples_offset)),
        slots(reinterpret_cast<const AclSlot *>(blob + h->slots_offset)),
        entries(reinterpret_cast<const uint32_t *>(blob + h->entries_offset)),
        entry_rules(reinterpret_cast<const AclRule *>(blob + h->entry_rules_offset)),
        index(reinterpret_cast<const uint32_t *>(blob + h->index_offset)),
        tags(blob + h->tags_offset) {}
};

// The interval of `port` among `count` ascending starts (the first is 0).
GPP_HOST_DEVICE inline uint32_t acl_interval(const uint32_t *bounds, uint32_t count, uint16_t port) {
  uint32_t lo = 0, hi = count;
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    if (bounds[mid] <= port) lo = mid;
    else hi = mid;
  }
  return lo;
}

// An indexed slot's first entry below `bound` that admits the packet:
// `inside(rule)` checks the exact prefixes (the bitmaps cover ports and
// protocol).  Returns the rule index, or `bound`.
template <typename Inside>
GPP_HOST_DEVICE inline uint32_t acl_probe_indexed(const AclView &v, const AclSlot &slot,
                                             const AclPorts &q, uint32_t bound, Inside inside) {
  const uint32_t *base = v.index;
  const AclSlotIndex &x = *reinterpret_cast<const AclSlotIndex *>(base + slot.index - 1);
  const uint32_t is = acl_interval(base + x.sport_bounds, x.sport_count, q.sport);
  const uint32_t id = acl_interval(base + x.dport_bounds, x.dport_count, q.dport);
  const uint32_t *rs = base + x.rows + is * x.words;
  const uint32_t *rd = base + x.rows + (x.sport_count + id) * x.words;
  const uint32_t *rp = base + x.rows + (x.sport_count + x.dport_count + q.proto) * x.words;
  for (uint32_t w = 0; w < x.words; ++w) {
    for (uint32_t m = rs[w] & rd[w] & rp[w]; m; m &= m - 1) {
#if defined(__CUDA_ARCH__)
      const uint32_t pos = 32 * w + (__ffs(m) - 1);
#else
      const uint32_t pos = 32 * w + static_cast<uint32_t>(__builtin_ctz(m));
#endif
      const uint32_t idx = v.entries[slot.first + pos];
      if (idx >= bound) return bound;
      if (inside(v.entry_rules[slot.first + pos])) return idx;
    }
  }
  return bound;
}

// Non-IP packets match nothing.
GPP_HOST_DEVICE inline bool acl_classifiable(const GppResult &r) {
  return (r.ip_flags & GPP_IP_HEADER_PARSED) != 0;
}

// One tuple's part of a search, IPv4: addresses and masks as 32-bit words.
// Returns the first (smallest) rule of the tuple below `bound` that admits
// the packet, or `bound`.
GPP_HOST_DEVICE inline uint32_t acl_probe_v4(const AclView &v, const AclTuple &tuple, uint32_t src,
                                        uint32_t dst, const AclPorts &q, uint32_t bound) {
  const uint32_t ks = src & acl_mask32(tuple.src_len), kd = dst & acl_mask32(tuple.dst_len);
  const uint32_t hash = acl_hash32(ks, kd);
  const uint8_t want = acl_slot_tag(hash);
  for (uint32_t i = hash & tuple.slot_mask;; i = (i + 1) & tuple.slot_mask) {
    const uint8_t tag = acl_load_tag(v.tags, tuple.slot_offset + i);
    if (tag == 0) return bound; // an empty slot ends the run
    if (tag != want) continue;
    const AclSlot slot = v.slots[tuple.slot_offset + i]; // one copy: wide loads
    if (acl_load_be32(slot.src) != ks || acl_load_be32(slot.dst) != kd) continue;
    if (slot.index)
      return acl_probe_indexed(v, slot, q, bound, [src, dst](const AclRule &rule) {
        return (src & acl_mask32(rule.src_len)) == acl_load_be32(rule.src) &&
               (dst & acl_mask32(rule.dst_len)) == acl_load_be32(rule.dst);
      });
    // Ascending rule indices, a few loaded ahead: a slot may hold dozens of
    // rules that differ only in ports, and each load is a memory round trip.
    constexpr uint32_t kAhead = 4;
    for (uint32_t e = 0; e < slot.count; e += kAhead) {
      uint32_t idx[kAhead];
      AclRule rule[kAhead];
      for (uint32_t k = 0; k < kAhead; ++k) {
        if (e + k >= slot.count) break;
        idx[k] = v.entries[slot.first + e + k];
        rule[k] = v.entry_rules[slot.first + e + k];
      }
      for (uint32_t k = 0; k < kAhead && e + k < slot.count; ++k) {
        if (idx[k] >= bound) return bound;
        if (!acl_ports_match(rule[k], q.sport, q.dport, q.proto)) continue;
        // The exact prefixes, finer than the tuple's.
        if ((src & acl_mask32(rule[k].src_len)) != acl_load_be32(rule[k].src) ||
            (dst & acl_mask32(rule[k].dst_len)) != acl_load_be32(rule[k].dst))
          continue;
        return idx[k];
      }
    }
    return bound; // one slot per key
  }
}

GPP_HOST_DEVICE inline uint32_t acl_probe_v6(const AclView &v, const AclTuple &tuple,
                                        const uint8_t *addr_src, const uint8_t *addr_dst,
                                        const AclPorts &q, uint32_t bound) {
  constexpr int addr_len = 16;
  uint8_t src[16], dst[16];
  acl_mask(addr_src, tuple.src_len, addr_len, src);
  acl_mask(addr_dst, tuple.dst_len, addr_len, dst);
  const uint32_t hash = acl_hash(src, dst, addr_len);
  const uint8_t want = acl_slot_tag(hash);
  for (uint32_t i = hash & tuple.slot_mask;; i = (i + 1) & tuple.slot_mask) {
    const uint8_t tag = acl_load_tag(v.tags, tuple.slot_offset + i);
    if (tag == 0) return bound;
    if (tag != want) continue;
    const AclSlot slot = v.slots[tuple.slot_offset + i];
    bool same = true;
    for (int b = 0; b < addr_len && same; ++b) same = slot.src[b] == src[b] && slot.dst[b] == dst[b];
    if (!same) continue;
    // The exact prefixes, finer than the tuple's.
    auto inside = [&](const AclRule &rule) {
      if (rule.src_len == tuple.src_len && rule.dst_len == tuple.dst_len) return true;
      uint8_t a[16], b[16];
      acl_mask(addr_src, rule.src_len, addr_len, a);
      acl_mask(addr_dst, rule.dst_len, addr_len, b);
      for (int k = 0; k < addr_len; ++k)
        if (a[k] != rule.src[k] || b[k] != rule.dst[k]) return false;
      return true;
    };
    if (slot.index) return acl_probe_indexed(v, slot, q, bound, inside);
    for (uint32_t e = 0; e < slot.count; ++e) { // ascending rule indices
      const uint32_t idx = v.entries[slot.first + e];
      if (idx >= bound) return bound;
      const AclRule &rule = v.entry_rules[slot.first + e];
      if (acl_ports_match(rule, q.sport, q.dport, q.proto) && inside(rule)) return idx;
    }
    return bound; // one slot per key
  }
}

// Tuple `t`'s part of the search for a classifiable packet.  The first match
// is the smallest matching rule index over all tuples, so the probes of one
// packet may run in any order, or at once on many GPU threads, and combine
// with min (acl_block.cuh does).
GPP_HOST_DEVICE inline uint32_t acl_probe(const AclView &v, uint32_t t, const GppResult &r,
                                     const AclPorts &q, uint32_t bound) {
  const AclTuple tuple = v.tuples[t];
  if (tuple.min_rule >= bound || tuple.ip_version != r.ip_version) return bound;
  return r.ip_version == 4
             ? acl_probe_v4(v, tuple, acl_load_be32(r.src), acl_load_be32(r.dst), q, bound)
             : acl_probe_v6(v, tuple, r.src, r.dst, q, bound);
}

// First matching rule index for a parsed packet, or kAclNoRule.  Tuples are
// visited in order of their smallest rule, so the search stops at the first
// tuple that cannot hold an earlier match.
GPP_HOST_DEVICE inline uint32_t acl_classify(const uint8_t *blob, const GppResult &r) {
  if (!acl_classifiable(r)) return kAclNoRule;
  const AclView v(blob);
  const AclPorts q = acl_ports(r);
  uint32_t best = kAclNoRule;
  for (uint32_t t = 0; t < v.h->tuple_count && v.tuples[t].min_rule < best; ++t)
    best = acl_probe(v, t, r, q, best);
  return best;
}

// Sets the ACL fields of a record from its first matching rule (kAclNoRule:
// `default_action`).
GPP_HOST_DEVICE inline void acl_set_result(const uint8_t *blob, uint32_t rule, uint8_t default_action,
                                      GppResult &r) {
  if (rule == kAclNoRule) {
    r.acl_rule = -1;
    r.acl_action = default_action;
  } else {
    const auto *h = reinterpret_cast<const AclBlobHeader *>(blob);
    r.acl_rule = static_cast<int32_t>(rule);
    r.acl_action = reinterpret_cast<const AclRule *>(blob + h->rules_offset)[rule].action;
  }
}

// Fills the ACL fields of a parsed record; `default_action` for no match.
GPP_HOST_DEVICE inline void acl_apply(const uint8_t *blob, uint8_t default_action, GppResult &r) {
  acl_set_result(blob, acl_classify(blob, r), default_action, r);
}

} // namespace gpp
