// Flow metering (gpu/flow_table.h through gpu/flow_meter.h) on records built
// by hand: what goes into one flow, who the initiator is, every way a flow
// ends (idle, active, TCP end, end of stream, a full table), time going
// backwards, and that the records do not depend on how many threads counted
// the packets or in which order.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "flow_meter.h"

namespace {

constexpr uint64_t kSec = 1000000000ull;

using gpp::FlowMeter;
using gpp::FlowSettings;

GppResult packet(uint64_t number, uint64_t t_ns, const char *src, const char *dst, uint8_t proto,
                 uint16_t sport, uint16_t dport, uint32_t ip_length = 100, uint8_t tcp_flags = 0) {
  GppResult r{};
  const bool v6 = std::string(src).find(':') != std::string::npos;
  r.packet_number = number;
  r.timestamp_ns = t_ns;
  r.ip_version = v6 ? 6 : 4;
  inet_pton(v6 ? AF_INET6 : AF_INET, src, r.src);
  inet_pton(v6 ? AF_INET6 : AF_INET, dst, r.dst);
  r.l4_proto = proto;
  r.ip_flags = GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED;
  if (proto == 1 || proto == 58) {
    r.icmp_type = static_cast<uint8_t>(sport);
    r.icmp_code = static_cast<uint8_t>(dport);
  } else {
    r.sport = sport;
    r.dport = dport;
  }
  r.tcp_flags = tcp_flags;
  r.ip_length = ip_length;
  r.rss_hash = static_cast<uint32_t>(number * 2654435761u);
  r.acl_rule = -1;
  r.dpi_pattern = -1;
  return r;
}

std::string addr(const GppFlowRecord &f, bool src) {
  char buf[64];
  inet_ntop(f.ip_version == 4 ? AF_INET : AF_INET6, src ? f.src : f.dst, buf, sizeof buf);
  return buf;
}

FlowSettings settings(uint64_t idle_s = 300, uint64_t active_s = 1800) {
  FlowSettings s;
  s.max_flows = 1024;
  s.idle_timeout_ns = idle_s * kSec;
  s.active_timeout_ns = active_s * kSec;
  s.sweep_interval_ns = 0; // check at every sweep
  return s;
}

TEST(Flows, BothDirectionsOneRecordInitiatorFirst) {
  FlowMeter m(settings());
  // 10.0.0.9 starts the conversation although 10.0.0.1 is the lesser address.
  std::vector<GppResult> b = {
      packet(1, 1 * kSec, "10.0.0.9", "10.0.0.1", 6, 40000, 80, 60, 0x02),
      packet(2, 2 * kSec, "10.0.0.1", "10.0.0.9", 6, 80, 40000, 60, 0x12),
      packet(3, 3 * kSec, "10.0.0.9", "10.0.0.1", 6, 40000, 80, 1500, 0x10),
  };
  b[0].acl_rule = 7;
  b[0].acl_action = GPP_ACL_DROP;
  b[2].dpi_scanned = 1;
  b[2].dpi_pattern = 12;
  b[2].dpi_hits = 2;
  m.add(b.data(), static_cast<uint32_t>(b.size()));
  std::vector<GppFlowRecord> out;
  m.sweep(out);
  EXPECT_TRUE(out.empty());
  m.flush(out);
  ASSERT_EQ(1u, out.size());
  const GppFlowRecord &f = out[0];
  EXPECT_EQ("10.0.0.9", addr(f, true));
  EXPECT_EQ("10.0.0.1", addr(f, false));
  EXPECT_EQ(40000, f.sport);
  EXPECT_EQ(80, f.dport);
  EXPECT_EQ(2u, f.packets[0]);
  EXPECT_EQ(1u, f.packets[1]);
  EXPECT_EQ(1560u, f.bytes[0]);
  EXPECT_EQ(60u, f.bytes[1]);
  EXPECT_EQ(0x12, f.tcp_flags[0]);
  EXPECT_EQ(0x12, f.tcp_flags[1]);
  EXPECT_EQ(1 * kSec, f.start_ns);
  EXPECT_EQ(3 * kSec, f.end_ns);
  EXPECT_EQ(1u, f.first_packet);
  EXPECT_EQ(GPP_FLOW_END_FORCED, f.end_reason);
  EXPECT_EQ(7, f.acl_rule);
  EXPECT_EQ(GPP_ACL_DROP, f.acl_action);
  EXPECT_EQ(12, f.dpi_pattern);
  EXPECT_EQ(2u, f.dpi_hits);
  EXPECT_EQ(b[0].rss_hash, f.rss_hash);
  // The flow's Community ID is its packets'.
  uint8_t digest[20];
  ASSERT_TRUE(gpp::community_id_digest(b[1], 0, digest));
  EXPECT_EQ(0, std::memcmp(digest, f.community_id, 20));
  EXPECT_EQ(1u, m.counters().flows_created);
  EXPECT_EQ(0u, m.counters().active_flows);
}

TEST(Flows, KeyedByProtocolPortsAndVlan) {
  FlowMeter m(settings());
  std::vector<GppResult> b = {
      packet(1, kSec, "10.0.0.1", "10.0.0.2", 17, 53, 5353),
      packet(2, kSec, "10.0.0.1", "10.0.0.2", 6, 53, 5353),    // other protocol
      packet(3, kSec, "10.0.0.1", "10.0.0.2", 17, 53, 5354),   // other port
      packet(4, kSec, "10.0.0.1", "10.0.0.2", 17, 53, 5353),   // same as 1, VLAN 10
      packet(5, kSec, "10.0.0.1", "10.0.0.2", 1, 8, 0),        // ICMP echo request
      packet(6, kSec, "10.0.0.2", "10.0.0.1", 1, 0, 0),        // and its reply: a flow of its own
      packet(7, kSec, "2001:db8::1", "2001:db8::2", 17, 53, 5353),
  };
  b[3].vlan_count = 1;
  b[3].vlan_ids[0] = 10;
  GppResult arp{};
  arp.packet_number = 8;
  b.push_back(arp);
  m.add(b.data(), static_cast<uint32_t>(b.size()));
  std::vector<GppFlowRecord> out;
  m.flush(out);
  ASSERT_EQ(7u, out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(i + 1, out[i].first_packet) << "records come out in first-packet order";
    EXPECT_EQ(1u, out[i].packets[0] + out[i].packets[1]);
  }
  EXPECT_EQ(10, out[3].vlan_id);
  EXPECT_EQ(0, out[4].sport);
  EXPECT_EQ(8 << 8, out[4].dport);
  EXPECT_EQ(1u, m.counters().packets_not_ip);
}

// decap=inner: the tunnel id is part of the key.  One inner tuple in two
// VNIs is two flows; without tunnel entries (decap=none) it is one.
TEST(Flows, KeyedByTunnelIdWithDecap) {
  std::vector<GppResult> b = {
      packet(1, kSec, "192.168.0.1", "192.168.0.2", 6, 40000, 80),
      packet(2, kSec, "192.168.0.2", "192.168.0.1", 6, 80, 40000), // the reply, same VNI
      packet(3, kSec, "192.168.0.1", "192.168.0.2", 6, 40000, 80), // another tenant's
  };
  std::vector<GppTunnelInfo> tunnels(3);
  for (GppTunnelInfo &t : tunnels) {
    t.tunnel_count = 1;
    t.tunnel_types[0] = GPP_TUNNEL_VXLAN;
    t.tunnel_id = 100;
  }
  tunnels[2].tunnel_id = 200;
  FlowMeter decap(settings());
  decap.add(b.data(), static_cast<uint32_t>(b.size()), tunnels.data());
  std::vector<GppFlowRecord> out;
  decap.flush(out);
  ASSERT_EQ(2u, out.size());
  EXPECT_EQ(100u, out[0].tunnel_id);
  EXPECT_EQ(1u, out[0].packets[0]);
  EXPECT_EQ(1u, out[0].packets[1]);
  EXPECT_EQ(200u, out[1].tunnel_id);
  FlowMeter plain(settings());
  plain.add(b.data(), static_cast<uint32_t>(b.size()));
  out.clear();
  plain.flush(out);
  ASSERT_EQ(1u, out.size());
  EXPECT_EQ(0u, out[0].tunnel_id);
  EXPECT_EQ(3u, out[0].packets[0] + out[0].packets[1]);
}

TEST(Flows, IdleTimeout) {
  FlowMeter m(settings(/*idle_s=*/30));
  std::vector<GppFlowRecord> out;
  GppResult a = packet(1, 100 * kSec, "10.0.0.1", "10.0.0.2", 17, 1000, 2000);
  m.add(&a, 1);
  m.sweep(out);
  GppResult other = packet(2, 129 * kSec, "10.0.0.3", "10.0.0.4", 17, 1, 2);
  m.add(&other, 1);
  m.sweep(out);
  EXPECT_TRUE(out.empty()) << "29 s idle is not 30";
  GppResult later = packet(3, 130 * kSec, "10.0.0.3", "10.0.0.4", 17, 1, 2);
  m.add(&later, 1);
  m.sweep(out);
  ASSERT_EQ(1u, out.size());
  EXPECT_EQ(GPP_FLOW_END_IDLE, out[0].end_reason);
  EXPECT_EQ(1u, out[0].first_packet);
  // The same 5-tuple again: a new flow.
  GppResult again = packet(4, 131 * kSec, "10.0.0.1", "10.0.0.2", 17, 1000, 2000);
  m.add(&again, 1);
  m.flush(out);
  ASSERT_EQ(3u, out.size());
  EXPECT_EQ(2u, out[1].first_packet);
  EXPECT_EQ(4u, out[2].first_packet);
  EXPECT_EQ(GPP_FLOW_END_FORCED, out[2].end_reason);
}

TEST(Flows, ActiveTimeoutSplitsALongFlow) {
  FlowMeter m(settings(/*idle_s=*/30, /*active_s=*/60));
  std::vector<GppFlowRecord> out;
  uint64_t n = 0;
  for (uint64_t t = 0; t <= 150; t += 10) { // a packet every 10 s for 150 s
    GppResult p = packet(++n, (1000 + t) * kSec, "10.0.0.1", "10.0.0.2", 6, 5000, 22);
    m.add(&p, 1);
    m.sweep(out);
  }
  m.flush(out);
  ASSERT_EQ(3u, out.size());
  EXPECT_EQ(GPP_FLOW_END_ACTIVE, out[0].end_reason);
  EXPECT_EQ(7u, out[0].packets[0]); // t = 0..60
  EXPECT_EQ(GPP_FLOW_END_ACTIVE, out[1].end_reason);
  EXPECT_EQ(GPP_FLOW_END_FORCED, out[2].end_reason);
  uint64_t total = 0;
  for (const auto &f : out) total += f.packets[0] + f.packets[1];
  EXPECT_EQ(n, total) << "no packet lost between the pieces";
}

TEST(Flows, TcpFinEachWayOrRstEndsTheFlow) {
  FlowMeter m(settings());
  std::vector<GppFlowRecord> out;
  std::vector<GppResult> fin = {
      packet(1, kSec, "10.0.0.1", "10.0.0.2", 6, 1111, 80, 60, 0x02),
      packet(2, kSec, "10.0.0.1", "10.0.0.2", 6, 1111, 80, 60, 0x11), // FIN one way only
  };
  m.add(fin.data(), 2);
  m.sweep(out);
  EXPECT_TRUE(out.empty());
  GppResult fin_back = packet(3, kSec, "10.0.0.2", "10.0.0.1", 6, 80, 1111, 60, 0x11);
  GppResult rst = packet(4, kSec, "10.0.0.5", "10.0.0.6", 6, 2222, 443, 40, 0x04);
  m.add(&fin_back, 1);
  m.add(&rst, 1);
  m.sweep(out);
  ASSERT_EQ(2u, out.size());
  EXPECT_EQ(GPP_FLOW_END_OF_FLOW, out[0].end_reason);
  EXPECT_EQ(GPP_FLOW_END_OF_FLOW, out[1].end_reason);
  EXPECT_EQ(0u, m.counters().active_flows);
}

TEST(Flows, TimeGoingBackwards) {
  FlowMeter m(settings(/*idle_s=*/30));
  std::vector<GppFlowRecord> out;
  std::vector<GppResult> b = {
      packet(1, 500 * kSec, "10.0.0.1", "10.0.0.2", 17, 1, 2),
      packet(2, 100 * kSec, "10.0.0.1", "10.0.0.2", 17, 1, 2), // 400 s in the past
  };
  m.add(b.data(), 2);
  m.sweep(out);
  EXPECT_TRUE(out.empty()) << "packet time is the latest seen: nothing went idle";
  m.flush(out);
  ASSERT_EQ(1u, out.size());
  EXPECT_EQ(100 * kSec, out[0].start_ns);
  EXPECT_EQ(500 * kSec, out[0].end_ns);
  EXPECT_EQ(1u, out[0].first_packet) << "the first packet by arrival, not by time";
}

TEST(Flows, FullTableEvictsAndCounts) {
  FlowSettings s = settings();
  s.max_flows = 100; // 256 slots
  FlowMeter m(s);
  std::vector<GppFlowRecord> out;
  std::vector<GppResult> b;
  for (uint32_t i = 0; i < 1000; ++i) {
    char src[32];
    std::snprintf(src, sizeof src, "10.%u.%u.1", i / 250, i % 250);
    b.push_back(packet(i + 1, (1 + i) * 1000000ull, src, "192.0.2.1", 17, 1000, 53));
  }
  m.add(b.data(), static_cast<uint32_t>(b.size()));
  m.sweep(out);
  const auto &c = m.counters();
  EXPECT_GT(c.packets_untracked, 0u) << "1000 flows cannot fit 256 slots";
  EXPECT_EQ(1000u, c.flows_created + c.packets_untracked);
  EXPECT_GT(c.flows_evicted, 0u);
  EXPECT_LE(c.active_flows, 100u);
  for (const auto &f : out) EXPECT_EQ(GPP_FLOW_END_NO_ROOM, f.end_reason);
  m.flush(out);
  uint64_t counted = 0;
  for (const auto &f : out) counted += f.packets[0] + f.packets[1];
  EXPECT_EQ(1000u, counted + c.packets_untracked) << "every packet in a record or counted untracked";
  // Room again after the evictions: a new flow is tracked.
  GppResult fresh = packet(2000, 2 * kSec, "198.51.100.1", "192.0.2.1", 17, 1, 2);
  m.add(&fresh, 1);
  std::vector<GppFlowRecord> last;
  m.flush(last);
  ASSERT_EQ(1u, last.size());
}

TEST(Flows, FullTableEvictsTheFlowsIdleLongest) {
  // 10 flows in a table for 8: the sweep keeps 7 (7/8 of max), ending the 3
  // whose last packet is oldest; of two with the same last packet, the one
  // whose first packet came first goes.
  FlowSettings s = settings();
  s.max_flows = 8;
  FlowMeter m(s);
  std::vector<GppResult> b;
  const uint64_t last_ns[10] = {50, 10, 90, 10, 70, 30, 80, 60, 100, 40};
  for (uint32_t i = 0; i < 10; ++i) {
    char src[32];
    std::snprintf(src, sizeof src, "10.0.0.%u", i + 1);
    b.push_back(packet(i + 1, 1 * kSec, src, "192.0.2.1", 17, 1000, 53));
  }
  for (uint32_t i = 0; i < 10; ++i) {
    char src[32];
    std::snprintf(src, sizeof src, "10.0.0.%u", i + 1);
    b.push_back(packet(11 + i, 2 * kSec + last_ns[i], src, "192.0.2.1", 17, 1000, 53));
  }
  m.add(b.data(), static_cast<uint32_t>(b.size()));
  std::vector<GppFlowRecord> out;
  ASSERT_TRUE(m.sweep(out));
  ASSERT_EQ(3u, out.size());
  // Last packets at 10 (flows 2 and 4, first packets 2 and 4) and 30 (flow 6).
  EXPECT_EQ(2u, out[0].first_packet);
  EXPECT_EQ(4u, out[1].first_packet);
  EXPECT_EQ(6u, out[2].first_packet);
  for (const auto &f : out) EXPECT_EQ(GPP_FLOW_END_NO_ROOM, f.end_reason);
  EXPECT_EQ(3u, m.counters().flows_evicted);
  EXPECT_EQ(7u, m.counters().active_flows);
}

TEST(Flows, MovingTheTableKeepsOpenFlows) {
  // Half the packets, the table moved to a fresh store (a mode switch), the
  // rest: the same records as without the move.
  std::vector<GppResult> b;
  for (uint32_t i = 0; i < 2000; ++i) {
    char src[32];
    std::snprintf(src, sizeof src, "10.1.%u.%u", i % 300 / 250, i % 300 % 250);
    b.push_back(packet(i + 1, (1 + i) * kSec / 100, src, "192.0.2.7", 6, 40000, 443));
  }
  auto records = [&](bool move) {
    FlowMeter m(settings(/*idle_s=*/2));
    std::vector<GppFlowRecord> out;
    m.add(b.data(), 1000);
    EXPECT_TRUE(m.sweep(out));
    if (move) {
      std::string error;
      EXPECT_TRUE(m.move_to(std::unique_ptr<gpp::FlowStore>(new gpp::HostFlowStore(
                                m.store().capacity(), 2)),
                            &error))
          << error;
    }
    m.add(b.data() + 1000, 1000);
    EXPECT_TRUE(m.sweep(out));
    EXPECT_TRUE(m.flush(out));
    return out;
  };
  const auto plain = records(false), moved = records(true);
  ASSERT_EQ(plain.size(), moved.size());
  ASSERT_GT(plain.size(), 300u) << "idle flows ended and started again";
  EXPECT_EQ(0, std::memcmp(plain.data(), moved.data(), plain.size() * sizeof(GppFlowRecord)));
}

TEST(Flows, SameRecordsWhateverTheThreadsAndOrder) {
  // 20,000 packets of 3,000 flows, counted by one thread in order, by eight
  // threads, and by eight threads after a shuffle: identical records.
  std::mt19937 rng(11);
  std::vector<GppResult> b;
  std::vector<bool> drawn(3000);
  for (uint32_t i = 0; i < 20000; ++i) {
    const uint32_t flow = rng() % 3000;
    drawn[flow] = true;
    char a[32], c[32];
    std::snprintf(a, sizeof a, "10.1.%u.%u", flow / 200, flow % 200);
    std::snprintf(c, sizeof c, "172.16.%u.1", flow % 7);
    const bool back = rng() % 2;
    b.push_back(packet(i + 1, (rng() % 1000) * 1000000ull, back ? c : a, back ? a : c, 6,
                       back ? 443 : 30000 + flow % 1000, back ? 30000 + flow % 1000 : 443,
                       40 + rng() % 1400, static_cast<uint8_t>(rng() & 0x1a)));
    // First-packet fields differ on every packet: only the first's may show.
    b.back().rss_hash = rng();
    b.back().acl_rule = static_cast<int32_t>(rng() % 1000);
    b.back().acl_action = static_cast<uint8_t>(1 + rng() % 2);
  }
  auto run = [&](unsigned threads, std::vector<GppResult> packets) {
    FlowSettings s = settings();
    s.max_flows = 8192;
    s.threads = threads;
    FlowMeter m(s);
    std::vector<GppFlowRecord> out;
    m.add(packets.data(), static_cast<uint32_t>(packets.size()));
    m.flush(out);
    return out;
  };
  const auto one = run(1, b);
  ASSERT_EQ(static_cast<size_t>(std::count(drawn.begin(), drawn.end(), true)), one.size());
  const auto eight = run(8, b);
  std::vector<GppResult> shuffled = b;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  const auto mixed = run(8, shuffled);
  ASSERT_EQ(one.size(), eight.size());
  ASSERT_EQ(one.size(), mixed.size());
  EXPECT_EQ(0, std::memcmp(one.data(), eight.data(), one.size() * sizeof(GppFlowRecord)));
  EXPECT_EQ(0, std::memcmp(one.data(), mixed.data(), one.size() * sizeof(GppFlowRecord)));
  for (const GppFlowRecord &f : mixed) {
    const GppResult &first = b[f.first_packet - 1];
    EXPECT_EQ(first.rss_hash, f.rss_hash);
    EXPECT_EQ(first.acl_rule, f.acl_rule);
    EXPECT_EQ(first.acl_action, f.acl_action);
  }
}

} // namespace
