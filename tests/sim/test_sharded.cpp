// The sharded engine (gpu/sharded_engine.h) over simulated devices
// (GPP_SIM_DEVICES=2), in every GPU mode:
//
//   records    every capture and generated traffic, at batch sizes 1, 7, 64,
//              1000 and 4096: byte-identical to mode=cpu, with device-ids
//              0,1 and 0,0 (two shards on one device, as on a one-GPU host);
//   shares     each device's packets add up to the batch's, both devices get
//              some of a many-flow stream, and through the engine one heavy
//              flow, and one flow both ways, go all to one device (the other
//              idle), records still identical;
//   flows      both directions of every flow go to the same device (the
//              symmetric hash): checked packet by packet on generated
//              two-way traffic;
//   failure    a device whose submit fails is named in the error
//              (GPP_SIM_FAULT=submit:2, and submit:2@1: device 1 alone, after
//              device 0 took its share), later batches are refused, idle
//              fails (so the element makes a new engine), and so is a device
//              that does not exist.
//
//   test-sharded PCAP_DIR

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gpupacket/packet-batch.h>
#include <gpupacket/packet-result.h>

#include "../unit/capture_file.h"
#include "batch_builder.h"
#include "engine.h"
#include "packet_core.h"
#include "sharded_engine.h"
#include "traffic_gen.h"

namespace {

int g_failures = 0;

void fail(const std::string &what) {
  std::printf("FAIL %s\n", what.c_str());
  ++g_failures;
}

struct Traffic {
  std::string name;
  uint32_t linktype;
  std::vector<gpptest::CapturedPacket> packets;
};

gpp::CoreConfig config() {
  gpp::CoreConfig cfg{};
  std::memcpy(cfg.rss_key, gpp::kDefaultRssKey, sizeof cfg.rss_key);
  return cfg;
}

// Every packet through `engine` at `batch_size`, slots kept busy; the
// records, or empty with the error in *error.
std::vector<GppResult> run(gpp::Engine &engine, const Traffic &t, uint32_t batch_size,
                           std::string *error) {
  std::vector<GppResult> out(t.packets.size());
  const unsigned slots = engine.slots();
  std::string arena_error;
  // Batches and records in pinned memory of the first device, as the element's pools.
  size_t largest = 0;
  std::vector<std::vector<uint8_t>> batches;
  for (size_t first = 0; first < t.packets.size(); first += batch_size) {
    batches.push_back(
        gpptest::batch_of(t.linktype, t.packets, first, std::min(t.packets.size(), first + batch_size)));
    largest = std::max(largest, batches.back().size());
  }
  auto arena = gpp::make_host_arena(0, slots * (largest + batch_size * sizeof(GppResult) + 8192),
                                    gpp::HostMemoryKind::Default, &arena_error);
  if (!arena) {
    *error = arena_error;
    return {};
  }
  std::vector<uint8_t *> in(slots);
  std::vector<GppResult *> rec(slots);
  for (unsigned k = 0; k < slots; ++k) {
    in[k] = static_cast<uint8_t *>(arena->allocate(largest));
    rec[k] = static_cast<GppResult *>(arena->allocate(batch_size * sizeof(GppResult)));
  }
  size_t submitted = 0, completed = 0;
  const gpp::CoreConfig cfg = config();
  auto finish_one = [&]() {
    if (!engine.wait_oldest(error)) return false;
    const size_t first = completed * batch_size;
    const size_t n = std::min<size_t>(batch_size, t.packets.size() - first);
    std::copy(rec[completed % slots], rec[completed % slots] + n, out.begin() + first);
    ++completed;
    return true;
  };
  for (; submitted < batches.size(); ++submitted) {
    if (submitted - completed == slots && !finish_one()) return {};
    const std::vector<uint8_t> &b = batches[submitted];
    std::memcpy(in[submitted % slots], b.data(), b.size());
    const auto count = reinterpret_cast<const GppBatchHeader *>(b.data())->packet_count;
    if (!engine.submit(in[submitted % slots], b.size(), count, cfg, rec[submitted % slots], error)) {
      // The batches already started still write into the arena: wait for them.
      for (std::string ignored; completed < submitted; ++completed) engine.wait_oldest(&ignored);
      return {};
    }
  }
  while (completed < submitted)
    if (!finish_one()) return {};
  return out;
}

std::vector<GppResult> cpu_records(const Traffic &t) {
  std::vector<GppResult> out(t.packets.size());
  const gpp::CoreConfig cfg = config();
  for (size_t i = 0; i < t.packets.size(); ++i)
    gpp::process_packet(t.packets[i].bytes.data(), static_cast<uint32_t>(t.packets[i].bytes.size()),
                        t.packets[i].wirelen, t.linktype, i + 1, 1000 * i, cfg, out[i]);
  return out;
}

Traffic generated(const char *name, uint32_t flows, size_t packets, uint32_t seed) {
  gpp::TrafficSpec spec;
  spec.profile = gpp::TrafficProfile::Mix;
  spec.flows = flows;
  spec.seed = seed;
  gpp::TrafficGenerator gen(spec);
  Traffic t{name, GPP_LINKTYPE_ETHERNET, {}};
  for (size_t i = 0; i < packets; ++i) {
    const std::vector<uint8_t> &f = gen.next();
    t.packets.push_back({f, static_cast<uint32_t>(f.size())});
  }
  return t;
}

// The same packets with source and destination swapped (addresses and
// ports, IPv4 and IPv6 over Ethernet): the other direction of each flow.
Traffic reversed(const Traffic &t) {
  Traffic r{t.name + " reversed", t.linktype, t.packets};
  const gpp::CoreConfig cfg = config();
  for (auto &p : r.packets) {
    GppResult rec;
    gpp::process_packet(p.bytes.data(), static_cast<uint32_t>(p.bytes.size()), p.wirelen,
                        t.linktype, 1, 0, cfg, rec);
    if (!(rec.ip_flags & GPP_IP_HEADER_PARSED) || rec.vlan_count || rec.mpls_label_count) continue;
    uint8_t *ip = p.bytes.data() + 14;
    const bool v6 = rec.ip_version == 6;
    const size_t alen = v6 ? 16 : 4, at = v6 ? 8 : 12;
    if (p.bytes.size() < 14 + at + 2 * alen) continue;
    std::swap_ranges(ip + at, ip + at + alen, ip + at + alen);
    if ((rec.ip_flags & GPP_IP_L4_PARSED) && (rec.l4_proto == 6 || rec.l4_proto == 17)) {
      // The L4 header: the first place after the IP header holding the
      // record's ports in network order.
      for (size_t off = 14; off + 4 <= p.bytes.size(); ++off) {
        const uint16_t sp = static_cast<uint16_t>(p.bytes[off] << 8 | p.bytes[off + 1]);
        const uint16_t dp = static_cast<uint16_t>(p.bytes[off + 2] << 8 | p.bytes[off + 3]);
        if (off >= 14 + (v6 ? 40u : 20u) && sp == rec.sport && dp == rec.dport) {
          std::swap(p.bytes[off], p.bytes[off + 2]);
          std::swap(p.bytes[off + 1], p.bytes[off + 3]);
          break;
        }
      }
    }
  }
  return r;
}

void check_records(const std::string &ctx, gpp::Engine &engine, const Traffic &t,
                   const std::vector<GppResult> &want, uint32_t batch_size) {
  std::string error;
  const std::vector<GppResult> got = run(engine, t, batch_size, &error);
  if (got.size() != want.size()) {
    fail(ctx + ": " + error);
    return;
  }
  size_t differing = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(GppResult)) != 0 && ++differing <= 3)
      std::printf("  %s: packet %zu differs\n", ctx.c_str(), i + 1);
  if (differing) fail(ctx + ": " + std::to_string(differing) + " records differ from mode=cpu");
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PCAP_DIR\n", argv[0]);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (gpp::gpu_device_count() < 2) {
    std::printf("SKIP: needs two (simulated) devices: GPP_SIM_DEVICES=2\n");
    return 77;
  }
  std::vector<Traffic> traffic;
  {
    for (const std::string &n : gpptest::capture_names(argv[1])) {
      Traffic t{n, 0, {}};
      std::string error;
      if (gpptest::read_pcap(std::string(argv[1]) + "/" + n, &t.linktype, &t.packets, &error))
        traffic.push_back(std::move(t));
    }
  }
  traffic.push_back(generated("generated-5000-flows", 5000, 20000, 3));
  traffic.push_back(generated("generated-one-flow", 1, 6000, 4));
  const std::vector<uint32_t> batch_sizes = {1, 7, 64, 1000, 4096};

  for (const gpp::ModeInfo &m : gpp::kModes) {
    if (!gpp::is_gpu_mode(m.mode)) continue;
    for (const std::vector<int> &ids : {std::vector<int>{0, 1}, std::vector<int>{0, 0}}) {
      gpp::EngineSettings s;
      s.device_ids = ids;
      std::string error;
      if (m.mode == gpp::Mode::Persistent && ids[0] == ids[1]) {
        // Two resident kernels on one device need fewer blocks than SMs each.
        if (gpp::make_engine(m.mode, s, &error) ||
            error.find("persistent-blocks") == std::string::npos)
          fail("persistent device-ids=0,0 without persistent-blocks: not refused (" + error + ")");
        // Nor more blocks in all than the device holds (the simulated one:
        // 132), refused at once with the numbers.
        s.persistent_blocks = 67;
        if (gpp::make_engine(m.mode, s, &error) ||
            error.find("134 resident blocks, more than the 132") == std::string::npos)
          fail("persistent device-ids=0,0 persistent-blocks=67: not refused (" + error + ")");
        s.persistent_blocks = 66;
        if (!gpp::make_engine(m.mode, s, &error))
          fail("persistent device-ids=0,0 persistent-blocks=66: refused (" + error + ")");
        s.persistent_blocks = 8;
      }
      auto engine = gpp::make_engine(m.mode, s, &error);
      const std::string ctx =
          std::string(m.name) + " device-ids=" + std::to_string(ids[0]) + "," + std::to_string(ids[1]);
      if (!engine) {
        fail(ctx + ": " + error);
        continue;
      }
      size_t runs = 0;
      for (const Traffic &t : traffic) {
        const std::vector<GppResult> want = cpu_records(t);
        for (uint32_t bs : batch_sizes) {
          if (bs == 1 && t.packets.size() > 2000) continue; // one packet a batch: the captures suffice
          check_records(ctx + " " + t.name + " batch " + std::to_string(bs), *engine, t, want, bs);
          ++runs;
        }
      }
      // Shares: what each device carried adds up; both carried some.
      const std::vector<gpp::ShardFigures> f = gpp::shard_figures(*engine);
      uint64_t sent = 0, total = 0;
      for (const Traffic &t : traffic)
        for (uint32_t bs : batch_sizes)
          if (!(bs == 1 && t.packets.size() > 2000)) total += t.packets.size();
      for (const auto &x : f) sent += x.packets;
      if (f.size() != 2 || sent != total || f[0].packets == 0 || f[1].packets == 0)
        fail(ctx + ": shares " + (f.size() == 2 ? std::to_string(f[0].packets) + " + " +
                                                      std::to_string(f[1].packets)
                                                : std::string("?")) +
             " of " + std::to_string(total) + " packets");
      std::printf("%s %s: %zu runs identical to mode=cpu; device %d carried %llu packets, "
                  "device %d %llu\n",
                  g_failures ? "...." : "ok  ", ctx.c_str(), runs, f.empty() ? -1 : f[0].device_id,
                  f.empty() ? 0ull : static_cast<unsigned long long>(f[0].packets),
                  f.size() < 2 ? -1 : f[1].device_id,
                  f.size() < 2 ? 0ull : static_cast<unsigned long long>(f[1].packets));
    }
  }

  // Through the engine: one heavy flow, and both directions of one flow,
  // each all on one device (the other idle), records identical.
  {
    const Traffic &one = traffic.back();
    Traffic two_way = reversed(one);
    two_way.name = "one flow both ways";
    for (size_t i = 0; i < one.packets.size(); i += 2) two_way.packets[i] = one.packets[i];
    for (const Traffic *t : {&one, static_cast<const Traffic *>(&two_way)}) {
      gpp::EngineSettings s;
      s.device_ids = {0, 1};
      std::string error;
      auto engine = gpp::make_engine(gpp::Mode::Streams, s, &error);
      if (!engine) {
        fail(t->name + ": " + error);
        continue;
      }
      check_records(t->name, *engine, *t, cpu_records(*t), 64);
      const std::vector<gpp::ShardFigures> f = gpp::shard_figures(*engine);
      const bool one_device = f.size() == 2 && (f[0].packets == 0) != (f[1].packets == 0) &&
                              f[0].packets + f[1].packets == t->packets.size();
      std::printf("%s %s: device 0 carried %llu packets, device 1 %llu\n", one_device ? "ok  " : "FAIL",
                  t->name.c_str(), f.size() == 2 ? static_cast<unsigned long long>(f[0].packets) : 0ull,
                  f.size() == 2 ? static_cast<unsigned long long>(f[1].packets) : 0ull);
      if (!one_device) ++g_failures;
    }
  }

  // Through the engine, 5000 flows one way and then the other way: each
  // device carries exactly as many packets both times (a packet and its
  // reverse go to the same device; a one-way hash would move thousands).
  {
    const Traffic &fwd = traffic[traffic.size() - 2];
    const Traffic back = reversed(fwd);
    uint64_t carried[2][2] = {};
    for (int dir = 0; dir < 2; ++dir) {
      gpp::EngineSettings s;
      s.device_ids = {0, 1};
      std::string error;
      auto engine = gpp::make_engine(gpp::Mode::Streams, s, &error);
      if (!engine) {
        fail("both ways: " + error);
        break;
      }
      check_records(dir ? "5000 flows reversed" : "5000 flows", *engine, dir ? back : fwd,
                    cpu_records(dir ? back : fwd), 4096);
      const std::vector<gpp::ShardFigures> f = gpp::shard_figures(*engine);
      for (size_t k = 0; k < f.size() && k < 2; ++k) carried[dir][k] = f[k].packets;
    }
    const bool same = carried[0][0] == carried[1][0] && carried[0][1] == carried[1][1] &&
                      carried[0][0] && carried[0][1];
    std::printf("%s 5000 flows each way: device 0 carried %llu / %llu packets, device 1 %llu / %llu\n",
                same ? "ok  " : "FAIL", static_cast<unsigned long long>(carried[0][0]),
                static_cast<unsigned long long>(carried[1][0]),
                static_cast<unsigned long long>(carried[0][1]),
                static_cast<unsigned long long>(carried[1][1]));
    if (!same) ++g_failures;
  }

  // One heavy flow: all its packets on one device, the other idle.
  {
    const Traffic &one = traffic.back();
    std::map<uint32_t, size_t> shares;
    gpp::CoreConfig cfg = config();
    cfg.symmetric_rss = true;
    for (size_t i = 0; i < one.packets.size(); ++i) {
      GppResult r;
      gpp::process_packet(one.packets[i].bytes.data(),
                          static_cast<uint32_t>(one.packets[i].bytes.size()),
                          one.packets[i].wirelen, one.linktype, i + 1, 0, cfg, r);
      if (r.ip_flags & GPP_IP_HEADER_PARSED) shares[gpp::shard_of(r, 2)]++;
    }
    if (shares.size() != 1)
      fail("one flow: its packets went to " + std::to_string(shares.size()) + " devices");
    else
      std::printf("ok   one flow: all %zu IP packets on device %u (records checked above)\n",
                  shares.begin()->second, shares.begin()->first);
  }

  // Both directions of each flow on one device.
  {
    const Traffic &fwd = traffic[traffic.size() - 2];
    const Traffic back = reversed(fwd);
    gpp::CoreConfig cfg = config();
    cfg.symmetric_rss = true;
    size_t pairs = 0, split = 0;
    for (size_t i = 0; i < fwd.packets.size(); ++i) {
      GppResult a, b;
      gpp::process_packet(fwd.packets[i].bytes.data(),
                          static_cast<uint32_t>(fwd.packets[i].bytes.size()),
                          fwd.packets[i].wirelen, fwd.linktype, 1, 0, cfg, a);
      gpp::process_packet(back.packets[i].bytes.data(),
                          static_cast<uint32_t>(back.packets[i].bytes.size()),
                          back.packets[i].wirelen, back.linktype, 1, 0, cfg, b);
      if (!(a.ip_flags & GPP_IP_L4_PARSED) || std::memcmp(a.src, b.dst, 16) != 0) continue;
      ++pairs;
      split += gpp::shard_of(a, 2) != gpp::shard_of(b, 2);
    }
    if (pairs < 1000 || split)
      fail("two-way flows: " + std::to_string(split) + " of " + std::to_string(pairs) +
           " packet pairs on different devices");
    else
      std::printf("ok   two-way flows: %zu packet pairs, each direction on the same device\n",
                  pairs);
  }

  // Failures name the device.
  {
    gpp::EngineSettings s;
    s.device_ids = {0, 5};
    std::string error;
    auto engine = gpp::make_engine(gpp::Mode::Streams, s, &error);
    if (engine || error.find("device 5") == std::string::npos)
      fail("device-ids=0,5: " + (engine ? std::string("made an engine") : error));
    else
      std::printf("ok   device-ids=0,5: %s\n", error.c_str());
    // Device 1 fails at the second batch, after device 0 took its share of
    // it: the engine says which, refuses what follows and cannot idle (the
    // element then makes a new one); destroying it is clean (the sanitizer
    // build checks that nothing writes freed memory).
    setenv("GPP_SIM_FAULT", "submit:2@1", 1);
    s.device_ids = {0, 1};
    engine = gpp::make_engine(gpp::Mode::Streams, s, &error);
    unsetenv("GPP_SIM_FAULT");
    {
      const Traffic &t = traffic[traffic.size() - 2];
      std::string why, later, idle_error;
      const bool failed = engine && run(*engine, t, 64, &why).empty();
      const std::vector<uint8_t> b = gpptest::batch_of(t.linktype, t.packets, 0, 8);
      std::vector<GppResult> out(8);
      const bool refused = engine && !engine->submit(b.data(), b.size(), 8, config(), out.data(), &later);
      const bool no_idle = engine && !engine->idle(&idle_error);
      if (!failed || why.find("device 1: simulated fault") == std::string::npos || !refused ||
          later.find("device 1") == std::string::npos || !no_idle)
        fail("device 1 failing: " + why + " | " + later + " | " + idle_error);
      else
        std::printf("ok   device 1 failing mid-batch: %s; then: %s\n", why.c_str(), later.c_str());
      engine.reset();
    }
    setenv("GPP_SIM_FAULT", "submit:2", 1);
    s.device_ids = {0, 1};
    engine = gpp::make_engine(gpp::Mode::Streams, s, &error);
    unsetenv("GPP_SIM_FAULT");
    const Traffic &t = traffic[traffic.size() - 2];
    std::string why;
    const std::vector<GppResult> got = engine ? run(*engine, t, 64, &why) : std::vector<GppResult>{};
    if (!engine || !got.empty() || why.find("device 0: simulated fault") == std::string::npos)
      fail("a failing submit: " + (engine ? why : error));
    else
      std::printf("ok   a failing submit: %s\n", why.c_str());
  }
  std::printf(g_failures ? "%d FAILED\n" : "PASS\n", g_failures);
  return g_failures ? 1 : 0;
}
