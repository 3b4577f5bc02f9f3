// The flow table, shared by CPU and GPU code: an open-addressing hash table
// of flows (gpupacket/flow-record.h says what a flow is) that many threads
// update at once, one packet each, and a sweep between batches that ends
// flows (timeouts, TCP ends, end of stream) and turns them into records.
//
// Why the records do not depend on which thread ran first: every per-packet
// update is commutative — counters are atomic adds, the time span atomic
// min / max, TCP flags atomic or, the DPI pattern an atomic min — and the
// flow's first packet is the one with the lowest packet number (an atomic
// min over (number, direction)).  A packet whose atomic min lowered that
// word writes the first-packet fields (RSS hash, ACL verdict) under the
// slot's lock if it is still the lowest then; the lowest packet always
// does, after any packet it displaced, so the fields are its own whatever
// the order — and one pass does it all, so batches on different GPU streams
// may update the table at the same time.  A slot is
// claimed with a compare-and-swap; a thread that finds one being claimed
// waits for its key.  Slots of ended flows become tombstones, never reused
// while threads insert (two threads could otherwise claim two slots for one
// key); the sweep rebuilds the table when tombstones pile up.
#pragma once

#include <stdint.h>

#include <gpupacket/flow-record.h>
#include <gpupacket/packet-result.h>

#include "community_id.h"
#include "host_device.h"
#include "packet_core.h"

namespace gpp {

// ---- atomics on plain memory: CUDA's on the GPU, GCC's builtins on the host

GPP_HOST_DEVICE inline void flow_atomic_add(uint64_t *p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  atomicAdd(reinterpret_cast<unsigned long long *>(p), static_cast<unsigned long long>(v));
#else
  __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

GPP_HOST_DEVICE inline void flow_atomic_add(uint32_t *p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  atomicAdd(p, v);
#else
  __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

GPP_HOST_DEVICE inline void flow_atomic_or(uint32_t *p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  atomicOr(p, v);
#else
  __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
#endif
}

// Returns the value before: above v when v became the minimum.
GPP_HOST_DEVICE inline uint64_t flow_atomic_min(uint64_t *p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  return atomicMin(reinterpret_cast<unsigned long long *>(p), static_cast<unsigned long long>(v));
#else
  uint64_t seen = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v < seen && !__atomic_compare_exchange_n(p, &seen, v, true, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED)) {
  }
  return seen;
#endif
}

GPP_HOST_DEVICE inline void flow_atomic_max(uint64_t *p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  atomicMax(reinterpret_cast<unsigned long long *>(p), static_cast<unsigned long long>(v));
#else
  uint64_t seen = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v > seen && !__atomic_compare_exchange_n(p, &seen, v, true, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED)) {
  }
#endif
}

GPP_HOST_DEVICE inline void flow_atomic_min(uint32_t *p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  atomicMin(p, v);
#else
  uint32_t seen = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v < seen && !__atomic_compare_exchange_n(p, &seen, v, true, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED)) {
  }
#endif
}

// Claims an empty slot: true when this thread did.
GPP_HOST_DEVICE inline bool flow_claim(uint32_t *state, uint32_t empty, uint32_t busy) {
#if defined(__CUDA_ARCH__)
  return atomicCAS(state, empty, busy) == empty;
#else
  return __atomic_compare_exchange_n(state, &empty, busy, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE);
#endif
}

GPP_HOST_DEVICE inline uint32_t flow_load_state(const uint32_t *state) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const volatile uint32_t *>(state);
#else
  return __atomic_load_n(state, __ATOMIC_ACQUIRE);
#endif
}

// A word another thread may have just written (a slot's hash and key, seen
// after its state said live): on the GPU past L1, which is not coherent
// between multiprocessors.
GPP_HOST_DEVICE inline uint32_t flow_load_fresh(const uint32_t *p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  return *p;
#endif
}

// A 64-bit word other threads may be lowering (a slot's first packet),
// read fresh.
GPP_HOST_DEVICE inline uint64_t flow_load_fresh(const uint64_t *p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(reinterpret_cast<const unsigned long long *>(p));
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

// A bit of a word that other bits of which threads set with atomic or
// (a slot's TCP flags) serves as a lock: what one holder wrote, the next
// holder's writes follow.
// On the GPU two lanes of one warp may contend: that needs independent
// thread scheduling (sm_70 on), or the spinning lane starves the holder.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
#error "the flow table's slot lock needs sm_70 or later (gpu_arch)"
#endif
GPP_HOST_DEVICE inline void flow_lock(uint32_t *word, uint32_t bit) {
#if defined(__CUDA_ARCH__)
  while (atomicOr(word, bit) & bit) {
  }
  __threadfence();
#else
  while (__atomic_fetch_or(word, bit, __ATOMIC_ACQUIRE) & bit) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause(); // the holder writes three words: a short wait
#endif
  }
#endif
}

GPP_HOST_DEVICE inline void flow_unlock(uint32_t *word, uint32_t bit) {
#if defined(__CUDA_ARCH__)
  __threadfence();
  atomicAnd(word, ~bit);
#else
  __atomic_fetch_and(word, ~bit, __ATOMIC_RELEASE);
#endif
}

// Publishes a slot's key: everything written before is seen by whoever sees
// the new state.
GPP_HOST_DEVICE inline void flow_publish_state(uint32_t *state, uint32_t value) {
#if defined(__CUDA_ARCH__)
  __threadfence();
  *reinterpret_cast<volatile uint32_t *>(state) = value;
#else
  __atomic_store_n(state, value, __ATOMIC_RELEASE);
#endif
}

// ---- keys -----------------------------------------------------------------

// A flow's identity, endpoints in a fixed order (the lesser (address, port)
// first), so both directions find the same slot.
struct FlowKey {
  uint8_t a[16], b[16]; // IPv4: first 4 bytes, the rest 0
  uint16_t port_a, port_b;
  uint16_t vlan_id;
  uint8_t ip_version, l4_proto;
  uint32_t tunnel_id; // decap=inner: GppTunnelInfo.tunnel_id; else 0
};
constexpr int kFlowKeyWords = 11;
static_assert(sizeof(FlowKey) == 4 * kFlowKeyWords, "FlowKey packs into 44 bytes");

// Whether a slot's key (read fresh: another thread may have just written it)
// is `key`.
GPP_HOST_DEVICE inline bool flow_slot_key_equal(const FlowKey &slot_key, const FlowKey &key) {
  const uint32_t *p = reinterpret_cast<const uint32_t *>(&slot_key);
  const uint32_t *q = reinterpret_cast<const uint32_t *>(&key);
  uint32_t diff = 0;
  for (int i = 0; i < kFlowKeyWords; ++i) diff |= flow_load_fresh(p + i) ^ q[i];
  return diff == 0;
}

GPP_HOST_DEVICE inline uint32_t flow_key_hash(const FlowKey &k) {
  const uint32_t *w = reinterpret_cast<const uint32_t *>(&k);
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < kFlowKeyWords; ++i) {
    h ^= w[i];
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
  }
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return static_cast<uint32_t>(h);
}

// The packet's flow key and direction (0: from key.a to key.b); false for
// packets no flow counts (no IP header parsed).  The endpoints: TCP, UDP and
// SCTP ports where they were read (a non-first fragment has none: its flow
// is port-less); ICMP / ICMPv6: 0 and type << 8 | code.  `tunnel_id`: the
// packet's (decap=inner), else 0.
GPP_HOST_DEVICE inline bool flow_key_of(const GppResult &r, uint32_t tunnel_id, FlowKey &key,
                                        int &dir) {
  if (!(r.ip_flags & GPP_IP_HEADER_PARSED) || (r.ip_version != 4 && r.ip_version != 6))
    return false;
  const int addr_len = r.ip_version == 4 ? 4 : 16;
  const bool l4 = (r.ip_flags & GPP_IP_L4_PARSED) != 0;
  const uint8_t p = r.l4_proto;
  uint16_t sport = 0, dport = 0;
  if (l4 && (p == 6 || p == 17 || p == 132)) {
    sport = r.sport;
    dport = r.dport;
  } else if (l4 && (p == 1 || p == 58)) {
    dport = static_cast<uint16_t>((r.icmp_type << 8) | r.icmp_code);
  }
  const uint8_t *a = r.src, *b = r.dst;
  uint16_t pa = sport, pb = dport;
  detail::order_endpoints(a, pa, b, pb, addr_len);
  dir = a == r.src ? 0 : 1;
  for (int i = 0; i < 16; ++i) {
    key.a[i] = i < addr_len ? a[i] : 0;
    key.b[i] = i < addr_len ? b[i] : 0;
  }
  key.port_a = pa;
  key.port_b = pb;
  key.vlan_id = r.vlan_count ? static_cast<uint16_t>(r.vlan_ids[0] & 0x0fff) : 0;
  key.ip_version = r.ip_version;
  key.l4_proto = p;
  key.tunnel_id = tunnel_id;
  return true;
}

// ---- slots ----------------------------------------------------------------

enum : uint32_t { kFlowEmpty = 0, kFlowClaimed = 1, kFlowLive = 2, kFlowDead = 3 };
constexpr uint32_t kFlowNoPattern = 0xffffffffu;
// Slots a packet probes for its flow before it counts as untracked.
constexpr uint32_t kFlowMaxProbe = 64;

// 128 bytes: a slot is one cache line of a GPU (and two of a CPU) when the
// table is aligned.  The key's hash is not kept (the tunnel id took its
// room): a probe compares the key, 11 words of one line.
struct alignas(16) FlowSlot {
  uint32_t state; // kFlow*
  FlowKey key;
  uint64_t first;            // (packet number << 1) | direction of the first packet: atomic min
  uint64_t start_ns, end_ns; // atomic min / max
  uint64_t packets[2];       // by key direction: [0] from a to b
  uint64_t bytes[2];
  // Bits 0-7 from a to b, 8-15 back: atomic or.  Bit 31 (kFlowFieldsLock)
  // is held while a packet writes the first-packet fields.
  uint32_t tcp_flags;
  uint32_t dpi_pattern;      // atomic min, kFlowNoPattern = none
  uint32_t dpi_hits;         // atomic add
  // The first packet's (flow_update).
  uint32_t rss_hash;
  int32_t acl_rule;
  uint8_t acl_action;
  uint8_t reserved[3];
};
static_assert(sizeof(FlowSlot) == 128, "a flow slot is 128 bytes");

constexpr uint32_t kFlowFieldsLock = 1u << 31;

struct FlowTableView {
  FlowSlot *slots;
  uint32_t capacity; // a power of two
};

// Per-outcome packet counts (FlowUpdate order), as a GPU kernel keeps them.
struct FlowLaunchCounts {
  uint32_t not_ip, counted, created, no_room;
};

// What a batch's GPU kernel needs to count its packets into a device table
// (flow_device.cuh); slots null: no table.
struct FlowDeviceTarget {
  FlowTableView table;
  FlowLaunchCounts *counts;
};

// What flow_update did with a packet.
enum FlowUpdate : int { kFlowNotIp = 0, kFlowCounted = 1, kFlowNew = 2, kFlowNoRoom = 3 };

// Counts one parsed packet into its flow, creating the flow if needed.  Any
// number of threads may update at once, in any order.
GPP_HOST_DEVICE inline FlowUpdate flow_update(const FlowTableView &t, const GppResult &r,
                                               uint32_t tunnel_id = 0) {
  FlowKey key;
  int dir = 0;
  if (!flow_key_of(r, tunnel_id, key, dir)) return kFlowNotIp;
  const uint32_t hash = flow_key_hash(key);
  const uint32_t mask = t.capacity - 1;
  FlowUpdate outcome = kFlowCounted;
  FlowSlot *slot = nullptr;
  for (uint32_t probe = 0; probe < kFlowMaxProbe && !slot; ++probe) {
    FlowSlot &s = t.slots[(hash + probe) & mask];
    uint32_t state = flow_load_state(&s.state);
    if (state == kFlowEmpty) {
      if (flow_claim(&s.state, kFlowEmpty, kFlowClaimed)) {
        s.key = key;
        s.first = ~0ull;
        s.start_ns = ~0ull;
        s.end_ns = 0;
        s.packets[0] = s.packets[1] = 0;
        s.bytes[0] = s.bytes[1] = 0;
        s.tcp_flags = 0;
        s.dpi_pattern = kFlowNoPattern;
        s.dpi_hits = 0;
        s.rss_hash = 0;
        s.acl_rule = -1;
        s.acl_action = 0;
        flow_publish_state(&s.state, kFlowLive);
        slot = &s;
        outcome = kFlowNew;
        break;
      }
      state = flow_load_state(&s.state); // another thread claimed it first
    }
    while (state == kFlowClaimed) state = flow_load_state(&s.state); // its key is on the way
    if (state == kFlowLive && flow_slot_key_equal(s.key, key))
      slot = &s;
  }
  if (!slot) return kFlowNoRoom;
  const uint64_t mine = (r.packet_number << 1) | static_cast<uint64_t>(dir);
  if (flow_atomic_min(&slot->first, mine) > mine) {
    // The first packet so far: its fields, unless a lower one came since.
    flow_lock(&slot->tcp_flags, kFlowFieldsLock);
    if (flow_load_fresh(&slot->first) == mine) {
      slot->rss_hash = r.rss_hash;
      slot->acl_rule = r.acl_action ? r.acl_rule : -1;
      slot->acl_action = r.acl_action;
    }
    flow_unlock(&slot->tcp_flags, kFlowFieldsLock);
  }
  flow_atomic_min(&slot->start_ns, r.timestamp_ns);
  flow_atomic_max(&slot->end_ns, r.timestamp_ns);
  flow_atomic_add(&slot->packets[dir], 1);
  flow_atomic_add(&slot->bytes[dir], r.ip_length);
  if (r.l4_proto == 6 && (r.ip_flags & GPP_IP_L4_PARSED))
    flow_atomic_or(&slot->tcp_flags, static_cast<uint32_t>(r.tcp_flags) << (8 * dir));
  if (r.dpi_scanned) {
    if (r.dpi_pattern >= 0) flow_atomic_min(&slot->dpi_pattern, static_cast<uint32_t>(r.dpi_pattern));
    if (r.dpi_hits) flow_atomic_add(&slot->dpi_hits, r.dpi_hits);
  }
  return outcome;
}

// ---- ending flows -----------------------------------------------------------

struct FlowTimeouts {
  uint64_t idle_ns;   // no packet for this long: the flow ends
  uint64_t active_ns; // a flow this long is written out (and starts afresh)
};

// Why a live flow ends at `now` (the latest packet time seen), or 0.
GPP_HOST_DEVICE inline uint8_t flow_end_reason(const FlowSlot &s, uint64_t now,
                                               const FlowTimeouts &timeouts) {
  if (s.key.l4_proto == 6) {
    constexpr uint32_t kFin = 0x01, kRst = 0x04;
    const uint32_t f = s.tcp_flags;
    if ((f & kRst) || (f & (kRst << 8)) || ((f & kFin) && (f & (kFin << 8))))
      return GPP_FLOW_END_OF_FLOW;
  }
  if (now >= s.end_ns && now - s.end_ns >= timeouts.idle_ns) return GPP_FLOW_END_IDLE;
  if (now >= s.start_ns && now - s.start_ns >= timeouts.active_ns) return GPP_FLOW_END_ACTIVE;
  return 0;
}

// Where a flow stands in line for eviction: the flow idle longest first
// (its last packet), then the one whose first packet came first.  A total
// order (a packet belongs to one flow), so the flows a full table evicts do
// not depend on where in the table they sit, or on which thread was first.
struct FlowAge {
  uint64_t end_ns, first;
};

GPP_HOST_DEVICE inline bool flow_age_at_most(const FlowAge &a, const FlowAge &b) {
  return a.end_ns < b.end_ns || (a.end_ns == b.end_ns && a.first <= b.first);
}

// Which flows a sweep ends: those whose time has come, all of them (end of
// stream), or the oldest up to a cut-off age (a full table).  Plain data, so
// the host's loop and a GPU kernel read the same rule.
struct FlowEndRule {
  enum Kind : uint32_t { kTimedOut = 0, kAll = 1, kOldest = 2 };
  Kind kind;
  uint64_t now;          // kTimedOut: the latest packet time seen
  FlowTimeouts timeouts; // kTimedOut
  FlowAge cutoff;        // kOldest: flows of this age or older end
};

// Why `rule` ends a live flow, or 0.
GPP_HOST_DEVICE inline uint8_t flow_end_reason(const FlowSlot &s, const FlowEndRule &rule) {
  switch (rule.kind) {
    case FlowEndRule::kTimedOut: return flow_end_reason(s, rule.now, rule.timeouts);
    case FlowEndRule::kAll: return GPP_FLOW_END_FORCED;
    case FlowEndRule::kOldest:
      return flow_age_at_most(FlowAge{s.end_ns, s.first}, rule.cutoff) ? GPP_FLOW_END_NO_ROOM : 0;
  }
  return 0;
}

// Puts a live flow into a fresh table (a rebuild drops tombstones): the
// first free slot from its hash on.  Keys are unique, so there is nothing
// to compare; any number of threads may insert at once.
GPP_HOST_DEVICE inline void flow_reinsert(const FlowTableView &t, const FlowSlot &flow) {
  const uint32_t mask = t.capacity - 1;
  const uint32_t hash = flow_key_hash(flow.key);
  for (uint32_t probe = 0; probe < t.capacity; ++probe) {
    FlowSlot &d = t.slots[(hash + probe) & mask];
    if (flow_claim(&d.state, kFlowEmpty, kFlowClaimed)) {
      d = flow;
      d.state = kFlowClaimed;
      flow_publish_state(&d.state, kFlowLive);
      return;
    }
  }
}

// The record of a flow ending for `reason`, Community ID with `seed`.
GPP_HOST_DEVICE inline void flow_record(const FlowSlot &s, uint8_t reason, uint16_t seed,
                                        GppFlowRecord &rec) {
  const int init = static_cast<int>(s.first & 1); // the first packet's direction
  const FlowKey &k = s.key;
  rec.start_ns = s.start_ns;
  rec.end_ns = s.end_ns;
  rec.first_packet = s.first >> 1;
  rec.packets[0] = s.packets[init];
  rec.packets[1] = s.packets[init ^ 1];
  rec.bytes[0] = s.bytes[init];
  rec.bytes[1] = s.bytes[init ^ 1];
  const uint8_t *src = init ? k.b : k.a, *dst = init ? k.a : k.b;
  for (int i = 0; i < 16; ++i) {
    rec.src[i] = src[i];
    rec.dst[i] = dst[i];
  }
  rec.sport = init ? k.port_b : k.port_a;
  rec.dport = init ? k.port_a : k.port_b;
  rec.vlan_id = k.vlan_id;
  rec.tunnel_id = k.tunnel_id;
  rec.ip_version = k.ip_version;
  rec.l4_proto = k.l4_proto;
  rec.tcp_flags[0] = static_cast<uint8_t>(s.tcp_flags >> (8 * init));
  rec.tcp_flags[1] = static_cast<uint8_t>(s.tcp_flags >> (8 * (init ^ 1)));
  rec.end_reason = reason;
  rec.acl_action = s.acl_action;
  rec.acl_rule = s.acl_rule;
  rec.dpi_pattern = s.dpi_pattern == kFlowNoPattern ? -1 : static_cast<int32_t>(s.dpi_pattern);
  rec.dpi_hits = s.dpi_hits;
  rec.rss_hash = s.rss_hash;
  for (size_t i = 0; i < sizeof rec.reserved; ++i) rec.reserved[i] = 0;
  // The Community ID of the initiator's direction (either gives the same,
  // except for one-way ICMP types).
  GppResult r{};
  r.ip_version = k.ip_version;
  r.l4_proto = k.l4_proto;
  r.ip_flags = GPP_IP_HEADER_PARSED;
  for (int i = 0; i < 16; ++i) {
    r.src[i] = rec.src[i];
    r.dst[i] = rec.dst[i];
  }
  const bool ports = k.l4_proto == 6 || k.l4_proto == 17 || k.l4_proto == 132;
  const bool icmp = k.l4_proto == 1 || k.l4_proto == 58;
  if ((ports && (rec.sport || rec.dport)) || icmp) r.ip_flags |= GPP_IP_L4_PARSED;
  r.sport = rec.sport;
  r.dport = rec.dport;
  r.icmp_type = static_cast<uint8_t>(rec.dport >> 8);
  r.icmp_code = static_cast<uint8_t>(rec.dport);
  community_id_digest(r, seed, rec.community_id);
}

} // namespace gpp
