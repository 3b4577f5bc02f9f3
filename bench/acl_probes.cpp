// gpupacket-acl-probes: how many tuple probes a packet needs, on the CPU, for
// the bench's realistic 64-byte ACL traffic.  The GPU's ACL stage probes every
// tuple of every packet (acl_block.cuh: one (packet, tuple) probe a thread),
// so its rate follows probes a packet (BENCHMARKS.md, fifth session).  This
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
// Exit 0, 1 on a bad rule file, 2 on usage.
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
    uint64_t classified = 0, all = 0, perfect = 0;
    std::vector<uint64_t> phased(kSchedules.size(), 0);
    std::vector<uint32_t> hit(tuples);
    for (long i = 0; i < packets; ++i) {
      const std::vector<uint8_t> &frame = traffic.next();
      const uint32_t length = static_cast<uint32_t>(frame.size());
      GppResult r;
      gpp::process_packet(frame.data(), length, length, GPP_LINKTYPE_ETHERNET, i + 1, 0, cfg, r);
      if (!gpp::acl_classifiable(r)) continue;
      ++classified;
      const uint32_t first = r.acl_rule < 0 ? gpp::kAclNoRule : static_cast<uint32_t>(r.acl_rule);
      for (uint32_t t = 0; t < tuples; ++t) {
        hit[t] = gpp::acl_probe(v, t, r, gpp::acl_ports(r), gpp::kAclNoRule);
        all += 1;
        perfect += v.tuples[t].min_rule <= first;
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
  }
  return 0;
}
