// gpupacket-acl-probes: how many tuple probes a packet needs, on the CPU, for
// the bench's realistic 64-byte ACL traffic.  The GPU's ACL stage probes every
// tuple of every packet (acl_block.cuh: one (packet, tuple) probe a thread),
// so its rate follows probes a packet (BENCHMARKS.md, What bounds each figure).  This
// counts what cut-offs would leave: a tuple whose smallest rule index is not
// below the best match found so far cannot hold the first match.
//
//   gpupacket-acl-probes [--packets N] RULES...
//
// For each rule file: the packets' traffic is TrafficSpec{Small, 4096 flows,
// acl_rate 0.5} (as the realistic grid's 64-byte cells: half the headers from
// the set), and for each packet every tuple is probed on its own; then
//   all        every tuple (what the GPU does today);
//   perfect    only the tuples below the packet's first match (a lower bound);
//   phases     tuples probed in phases (boundaries in tuple order, min_rule
//              ascending), a later phase skipping the tuples that cannot beat
//              the best match of the phases before it: what a block could
//              do with a barrier between phases.
// and what those probes of every tuple read, a packet: hash-table tags, slots
// loaded (a tag match), rule entries examined in slots without a bitmap index
// (the GPU loads them four at a time), and slots searched through their index.  A probe is not a unit of cost:
// one that meets an empty tag reads one byte, one that walks a slot's rules
// waits a memory round trip per few rules.  The walked slot that most packets
// visit is named (a catch-all slot just under kAclIndexMinRules rules is
// walked by every packet).  The counting walk's answer is checked against
// gpp::acl_probe()'s for every probe (for a slot with an index it counts the
// search and takes acl_probe()'s answer).
// Exit 0, 1 on a bad rule file, 2 on usage.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "acl_rules.h"
#include "packet_core.h"
#include "traffic_gen.h"

namespace {

// Phase boundaries (tuple indices where a phase ends; the last phase takes
// the rest).
const std::vector<std::vector<uint32_t>> kSchedules = {
    {1}, {2}, {4}, {2, 4}, {2, 6}, {1, 2, 4, 8}};

// What probes read, summed (see the top of this file).
struct ProbeWork {
  uint64_t tags = 0, slots = 0, entries = 0, indexed = 0;
};

// What one IPv4 probe of tuple `t` reads, with no bound (as the GPU's
// block probes): acl.h's acl_probe_v4 step by step.  Returns the rule it finds.
uint32_t counted_probe_v4(const gpp::AclView &v, uint32_t t, const GppResult &r,
                          const gpp::AclPorts &q, ProbeWork &work, std::vector<uint64_t> &walks) {
  const gpp::AclTuple &tuple = v.tuples[t];
  const uint32_t src = gpp::acl_load_be32(r.src), dst = gpp::acl_load_be32(r.dst);
  const uint32_t ks = src & gpp::acl_mask32(tuple.src_len), kd = dst & gpp::acl_mask32(tuple.dst_len);
  const uint32_t hash = gpp::acl_hash32(ks, kd);
  for (uint32_t i = hash & tuple.slot_mask;; i = (i + 1) & tuple.slot_mask) {
    const uint32_t at = tuple.slot_offset + i;
    ++work.tags;
    if (v.tags[at] == 0) return gpp::kAclNoRule;
    if (v.tags[at] != gpp::acl_slot_tag(hash)) continue;
    ++work.slots;
    const gpp::AclSlot &slot = v.slots[at];
    if (gpp::acl_load_be32(slot.src) != ks || gpp::acl_load_be32(slot.dst) != kd) continue;
    if (slot.index) {
      ++work.indexed;
      return gpp::acl_probe(v, t, r, q, gpp::kAclNoRule);
    }
    ++walks[at];
    for (uint32_t e = 0; e < slot.count; ++e) {
      ++work.entries;
      const gpp::AclRule &rule = v.entry_rules[slot.first + e];
      if (gpp::acl_ports_match(rule, q.sport, q.dport, q.proto) &&
          (src & gpp::acl_mask32(rule.src_len)) == gpp::acl_load_be32(rule.src) &&
          (dst & gpp::acl_mask32(rule.dst_len)) == gpp::acl_load_be32(rule.dst))
        return v.entries[slot.first + e];
    }
    return gpp::kAclNoRule;
  }
}

std::string schedule_name(const std::vector<uint32_t> &ends) {
  std::string name;
  uint32_t from = 0;
  for (uint32_t end : ends) {
    name += std::to_string(end - from) + "|";
    from = end;
  }
  return name + "rest";
}

} // namespace

int main(int argc, char **argv) {
  long packets = 200000;
  std::vector<std::string> files;
  bool usage_error = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--packets") && i + 1 < argc) packets = std::atol(argv[++i]);
    else if (argv[i][0] == '-') usage_error = true;
    else files.push_back(argv[i]);
  }
  if (usage_error || files.empty() || packets <= 0) {
    std::fprintf(stderr, "usage: %s [--packets N] RULES...\n", argv[0]);
    return 2;
  }
  for (const std::string &file : files) {
    std::string error;
    const auto set = gpp::load_acl_rules(file, &error);
    if (!set) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    const gpp::AclView v(set->blob.data());
    const uint32_t tuples = v.h->tuple_count;
    gpp::TrafficSpec spec;
    spec.profile = gpp::TrafficProfile::Small;
    spec.flows = 4096;
    spec.acl_rate = 0.5;
    spec.acl = set.get();
    gpp::TrafficGenerator traffic(spec);
    gpp::CoreConfig cfg{};
    std::memcpy(cfg.rss_key, gpp::kDefaultRssKey, sizeof cfg.rss_key);
    cfg.acl = set->blob.data();
    cfg.acl_default_action = GPP_ACL_ALLOW;

    // Each schedule's phase ends within this set's tuples, the last the rest.
    std::vector<std::vector<uint32_t>> phase_ends;
    for (const std::vector<uint32_t> &schedule : kSchedules) {
      std::vector<uint32_t> ends;
      for (uint32_t end : schedule) ends.push_back(end < tuples ? end : tuples);
      ends.push_back(tuples);
      phase_ends.push_back(ends);
    }
    uint64_t classified = 0, all = 0, perfect = 0, ipv4 = 0;
    std::vector<uint64_t> phased(kSchedules.size(), 0);
    std::vector<uint32_t> hit(tuples);
    ProbeWork work;
    // Walks per slot (the slots array ends where the entries begin).
    std::vector<uint64_t> walks((v.h->entries_offset - v.h->slots_offset) / sizeof(gpp::AclSlot), 0);
    for (long i = 0; i < packets; ++i) {
      const std::vector<uint8_t> &frame = traffic.next();
      const uint32_t length = static_cast<uint32_t>(frame.size());
      GppResult r;
      gpp::process_packet(frame.data(), length, length, GPP_LINKTYPE_ETHERNET, i + 1, 0, cfg, r);
      if (!gpp::acl_classifiable(r)) continue;
      ++classified;
      const uint32_t first = r.acl_rule < 0 ? gpp::kAclNoRule : static_cast<uint32_t>(r.acl_rule);
      ipv4 += r.ip_version == 4;
      const gpp::AclPorts q = gpp::acl_ports(r);
      for (uint32_t t = 0; t < tuples; ++t) {
        hit[t] = gpp::acl_probe(v, t, r, q, gpp::kAclNoRule);
        all += 1;
        perfect += v.tuples[t].min_rule <= first;
        if (r.ip_version != 4 || v.tuples[t].ip_version != 4) continue;
        const uint32_t counted = counted_probe_v4(v, t, r, q, work, walks);
        if (counted != hit[t]) {
          std::fprintf(stderr, "%s: packet %ld, tuple %u: the counting walk found rule %u, "
                       "acl_probe %u\n", file.c_str(), i + 1, t, counted, hit[t]);
          return 1;
        }
      }
      for (size_t s = 0; s < kSchedules.size(); ++s) {
        uint32_t best = gpp::kAclNoRule, from = 0;
        for (const uint32_t end : phase_ends[s]) {
          uint32_t phase_best = best;
          for (uint32_t t = from; t < end; ++t) {
            if (v.tuples[t].min_rule >= best) continue; // cannot hold an earlier match
            ++phased[s];
            if (hit[t] < phase_best) phase_best = hit[t];
          }
          best = phase_best;
          from = end > from ? end : from; // ends past the set's tuples all clamp to it
        }
        if (best != first) {
          std::fprintf(stderr, "%s: packet %ld: schedule %s found rule %u, not %u\n",
                       file.c_str(), i + 1, schedule_name(kSchedules[s]).c_str(), best, first);
          return 1;
        }
      }
    }
    const double n = classified ? static_cast<double>(classified) : 1.0;
    std::printf("%s: %u rules, %u tuples, %llu classified packets; probes a packet:\n",
                file.c_str(), v.h->rule_count, tuples, static_cast<unsigned long long>(classified));
    std::printf("  %-16s %6.2f\n  %-16s %6.2f\n", "all", all / n, "perfect cut-off", perfect / n);
    for (size_t s = 0; s < kSchedules.size(); ++s)
      std::printf("  phases %-9s %6.2f\n", schedule_name(kSchedules[s]).c_str(), phased[s] / n);
    bool v4_tuples = false;
    for (uint32_t t = 0; t < tuples; ++t) v4_tuples |= v.tuples[t].ip_version == 4;
    if (ipv4 && v4_tuples) {
      const double n4 = static_cast<double>(ipv4);
      std::printf("  every IPv4 tuple probed, a packet reads: %.2f tags, %.2f slots, %.2f rule "
                  "entries examined, %.2f slots through their index\n",
                  work.tags / n4, work.slots / n4, work.entries / n4, work.indexed / n4);
      const auto most = std::max_element(walks.begin(), walks.end());
      if (most != walks.end() && *most) {
        const gpp::AclSlot &slot = v.slots[most - walks.begin()];
        uint32_t t = 0;
        while (t + 1 < tuples && v.tuples[t + 1].slot_offset <= most - walks.begin()) ++t;
        std::printf("  most walked slot: %u rules (tuple %u, /%u /%u), walked by %.0f %% of "
                    "the packets\n", slot.count, t, v.tuples[t].src_len, v.tuples[t].dst_len,
                    100.0 * *most / n4);
      }
    }
  }
  return 0;
}
