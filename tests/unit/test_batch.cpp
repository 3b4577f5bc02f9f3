// The batch format (<gpupacket/packet-batch.h>), gpp::BatchBuilder, and the
// CPU engine: validation of good and corrupted batches, and multi-threaded
// results byte-identical to a plain loop over the core.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <functional>

#include "batch_builder.h"
#include "core_harness.h"
#include "cpu_engine.h"

using namespace gpptest;

namespace {

struct Input {
  Bytes bytes;
  uint32_t wirelen;
  uint64_t timestamp_ns;
  uint64_t packet_number;
};

// A deterministic mix of everything the core knows, clean and broken, with
// addresses and ports varying per packet.
Bytes mixed_packet(uint32_t i) {
  const uint8_t a = static_cast<uint8_t>(i), b = static_cast<uint8_t>(i >> 8);
  Ipv4Spec ip4;
  ip4.src = {10, b, a, 1};
  ip4.dst = {192, 168, a, static_cast<uint8_t>(b + 2)};
  Ipv6Spec ip6;
  ip6.src[15] = a;
  ip6.src[14] = b;
  ip6.dst[13] = a;
  TcpSpec t;
  t.sport = static_cast<uint16_t>(1024 + i * 7);
  t.dport = static_cast<uint16_t>(i % 3 ? 443 : 80);
  t.flags = static_cast<uint8_t>(i);
  t.payload = pattern_bytes(i % 97, a);
  const Bytes payload = pattern_bytes(i % 61, b);
  switch (i % 12) {
  case 0: return eth_ipv4(ip4, tcp(t));
  case 1: ip4.proto = kUdp; return eth_ipv4(ip4, udp(t.sport, 53, payload));
  case 2: return eth_ipv6(ip6, tcp(t));
  case 3: ip4.proto = kIcmp; return eth_ipv4(ip4, icmp(8, 0, payload));
  case 4:
    return ethernet(kEthIpv4, ipv4(ip4, tcp(t)),
                    {{kEthQinQ, static_cast<uint16_t>(i & 0xfff)}, {kEthVlan, 7}});
  case 5:
    ip4.more_fragments = true;
    ip4.frag_offset_bytes = (i % 2) * 1480;
    return eth_ipv4(ip4, tcp(t));
  case 6:
    ip6.proto = kUdp;
    ip6.exts = {hop_by_hop(8), fragment_header((i % 2) * 8, true), dest_options(16)};
    return eth_ipv6(ip6, udp(t.sport, t.dport, payload));
  case 7: return mpls_ethernet({i & 0xfffff, 3}, ipv4(ip4, tcp(t)));
  case 8: ip4.l4_checksum = L4Checksum::Corrupt; return eth_ipv4(ip4, tcp(t));
  case 9: ip4.ihl_words = 3; return eth_ipv4(ip4, tcp(t));
  case 10: return ethernet(kEthArp, pattern_bytes(28, a));
  default: ip6.proto = kIcmpv6; return eth_ipv6(ip6, icmp(128, 0, payload));
  }
}

std::vector<Input> mixed_inputs(uint32_t count) {
  std::vector<Input> in;
  in.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    Input p;
    p.bytes = mixed_packet(i);
    p.wirelen = static_cast<uint32_t>(p.bytes.size());
    if (i % 17 == 0) p.bytes.resize(p.bytes.size() * 2 / 3); // snap length cut
    if (i % 29 == 0) p.bytes.resize(i % 14);                 // cut inside Ethernet
    p.timestamp_ns = 1700000000000000000ull + i * 1234567ull + (i % 5);
    p.packet_number = 1000 + 3ull * i; // not 1-based and not dense: must come from the descriptor
    in.push_back(std::move(p));
  }
  return in;
}

std::vector<uint8_t> build_batch(uint32_t linktype, const std::vector<Input> &in) {
  gpp::BatchBuilder builder;
  builder.reset(linktype);
  for (const Input &p : in)
    builder.add(p.bytes.data(), static_cast<uint32_t>(p.bytes.size()), p.wirelen, p.timestamp_ns,
                p.packet_number);
  return builder.finish();
}

std::string validate(const std::vector<uint8_t> &batch, size_t size) {
  char err[256] = "";
  const int ok = gpp_batch_validate(batch.data(), size, err, sizeof err);
  if (ok && err[0] != '\0') return "valid, but with a message: " + std::string(err);
  return ok ? "" : (err[0] ? std::string(err) : "invalid without a message");
}

GppBatchHeader *header_of(std::vector<uint8_t> &batch) {
  return reinterpret_cast<GppBatchHeader *>(batch.data());
}

GppPacketDesc *descs_of(std::vector<uint8_t> &batch) {
  return reinterpret_cast<GppPacketDesc *>(batch.data() + sizeof(GppBatchHeader));
}

std::vector<GppResult> filled_results(size_t n, uint8_t fill) {
  std::vector<GppResult> r(n);
  std::memset(r.data(), fill, n * sizeof(GppResult));
  return r;
}

} // namespace

// ---- Batch builder -----------------------------------------------------------

TEST(BatchBuilder, OutputValidatesAndHoldsThePackets) {
  std::vector<Input> in = mixed_inputs(40);
  in.push_back({{}, 60, 5, 77}); // an empty capture is legal
  const std::vector<uint8_t> batch = build_batch(GPP_LINKTYPE_ETHERNET, in);
  ASSERT_EQ("", validate(batch, batch.size()));

  const auto *h = reinterpret_cast<const GppBatchHeader *>(batch.data());
  EXPECT_EQ(GPP_BATCH_MAGIC, h->magic);
  EXPECT_EQ(GPP_BATCH_VERSION, h->version);
  EXPECT_EQ(sizeof(GppBatchHeader), h->header_size);
  EXPECT_EQ(in.size(), h->packet_count);
  EXPECT_EQ(GPP_LINKTYPE_ETHERNET, h->linktype);
  EXPECT_EQ(batch.size(), h->total_size);
  EXPECT_EQ(0u, h->reserved);
  const size_t data_start = gpp_batch_data_start(h->packet_count);
  EXPECT_EQ(0u, data_start % GPP_PACKET_ALIGN);

  const GppPacketDesc *d = gpp_batch_descs(batch.data());
  for (size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE("packet " + std::to_string(i));
    EXPECT_GE(d[i].offset, data_start);
    EXPECT_EQ(0u, d[i].offset % GPP_PACKET_ALIGN);
    EXPECT_EQ(in[i].bytes.size(), d[i].caplen);
    EXPECT_EQ(in[i].wirelen, d[i].wirelen);
    EXPECT_EQ(in[i].timestamp_ns, d[i].timestamp_ns);
    EXPECT_EQ(in[i].packet_number, d[i].packet_number);
    EXPECT_EQ(0u, d[i].reserved);
    if (i > 0) {
      EXPECT_GE(d[i].offset, d[i - 1].offset + d[i - 1].caplen); // no overlap
    }
    EXPECT_TRUE(std::equal(in[i].bytes.begin(), in[i].bytes.end(), batch.begin() + d[i].offset));
  }
}

// A share of a batch (several GPUs): the picked packets, in the picks'
// order, each with its descriptor, in a batch that validates and is exactly
// what building those packets afresh gives.
TEST(BatchBuilder, SubsetIsTheBatchOfThePickedPackets) {
  std::vector<Input> in = mixed_inputs(40);
  in.push_back({{}, 60, 5, 77});
  const std::vector<uint8_t> batch = build_batch(GPP_LINKTYPE_LINUX_SLL, in);
  for (const std::vector<uint32_t> &picks :
       {std::vector<uint32_t>{}, std::vector<uint32_t>{3}, std::vector<uint32_t>{0, 2, 5, 40, 39},
        std::vector<uint32_t>{40, 1, 1}}) {
    SCOPED_TRACE("picks " + std::to_string(picks.size()));
    const auto n = static_cast<uint32_t>(picks.size());
    const size_t size = gpp::BatchBuilder::subset_size(batch.data(), picks.data(), n);
    std::vector<uint8_t> sub(size + 64, 0xee); // bytes past the end stay as they were
    gpp::BatchBuilder::write_subset(batch.data(), picks.data(), n, sub.data());
    EXPECT_EQ("", validate(sub, size));
    std::vector<Input> picked;
    for (uint32_t p : picks) picked.push_back(in[p]);
    EXPECT_EQ(build_batch(GPP_LINKTYPE_LINUX_SLL, picked),
              std::vector<uint8_t>(sub.begin(), sub.begin() + size));
    EXPECT_TRUE(std::all_of(sub.begin() + size, sub.end(), [](uint8_t b) { return b == 0xee; }));
  }
}

TEST(BatchBuilder, EmptyBatchValidates) {
  gpp::BatchBuilder builder;
  builder.reset(GPP_LINKTYPE_RAW);
  const std::vector<uint8_t> batch = builder.finish();
  EXPECT_EQ(sizeof(GppBatchHeader), batch.size());
  EXPECT_EQ("", validate(batch, batch.size()));
  EXPECT_EQ(0u, builder.packet_count());
}

TEST(BatchBuilder, ResetStartsAFreshBatch) {
  gpp::BatchBuilder builder;
  builder.reset(GPP_LINKTYPE_ETHERNET);
  const Bytes p = pattern_bytes(50);
  builder.add(p.data(), 50, 50, 1, 1);
  builder.reset(GPP_LINKTYPE_LINUX_SLL);
  builder.add(p.data(), 20, 50, 2, 9);
  const std::vector<uint8_t> batch = builder.finish();
  ASSERT_EQ("", validate(batch, batch.size()));
  const auto *h = reinterpret_cast<const GppBatchHeader *>(batch.data());
  EXPECT_EQ(1u, h->packet_count);
  EXPECT_EQ(GPP_LINKTYPE_LINUX_SLL, h->linktype);
  EXPECT_EQ(9u, gpp_batch_descs(batch.data())[0].packet_number);
}

TEST(BatchBuilder, WireLengthBelowCaptureLengthIsRaised) {
  gpp::BatchBuilder builder;
  builder.reset(GPP_LINKTYPE_ETHERNET);
  const Bytes p = pattern_bytes(64);
  builder.add(p.data(), 64, 10, 0, 1);
  const std::vector<uint8_t> batch = builder.finish();
  EXPECT_EQ("", validate(batch, batch.size()));
  EXPECT_EQ(64u, gpp_batch_descs(batch.data())[0].wirelen);
}

// ---- Validation of corrupted batches -------------------------------------------------

class CorruptBatch : public ::testing::Test {
protected:
  void SetUp() override {
    good_ = build_batch(GPP_LINKTYPE_ETHERNET, mixed_inputs(5));
    ASSERT_EQ("", validate(good_, good_.size()));
  }
  // Corrupts a copy of the good batch; expects a rejection with a message.
  void expect_rejected(const char *what, const std::function<void(std::vector<uint8_t> &)> &damage,
                       long size_change = 0) {
    std::vector<uint8_t> bad = good_;
    damage(bad);
    const std::string msg = validate(bad, static_cast<size_t>(long(bad.size()) + size_change));
    EXPECT_NE("", msg) << what << ": accepted";
    EXPECT_EQ(std::string::npos, msg.find("without a message")) << what;
    EXPECT_EQ(std::string::npos, msg.find("valid, but")) << what;
  }
  std::vector<uint8_t> good_;
};

TEST_F(CorruptBatch, SmallerThanTheHeader) {
  for (size_t size : {0ul, 1ul, sizeof(GppBatchHeader) - 1}) {
    const std::string msg = validate(good_, size);
    EXPECT_NE("", msg) << size;
  }
}

TEST_F(CorruptBatch, BadMagic) {
  expect_rejected("magic", [](auto &b) { header_of(b)->magic = 0x47505042u; });
}

TEST_F(CorruptBatch, WrongVersion) {
  expect_rejected("version 2", [](auto &b) { header_of(b)->version = 2; });
  expect_rejected("version 0", [](auto &b) { header_of(b)->version = 0; });
}

TEST_F(CorruptBatch, WrongHeaderSize) {
  expect_rejected("header size", [](auto &b) { header_of(b)->header_size = 48; });
}

TEST_F(CorruptBatch, TotalSizeMismatch) {
  expect_rejected("total_size + 16", [](auto &b) { header_of(b)->total_size += 16; });
  expect_rejected("total_size - 16", [](auto &b) { header_of(b)->total_size -= 16; });
  expect_rejected("buffer shorter than total_size", [](auto &) {}, -16);
}

TEST_F(CorruptBatch, DescriptorOffsetOutsideTheBuffer) {
  expect_rejected("offset at the end", [](auto &b) { descs_of(b)[2].offset = uint32_t(b.size()); });
  expect_rejected("offset far past the end", [](auto &b) { descs_of(b)[4].offset = 0xfffffff0u; });
  expect_rejected("bytes run past the end", [](auto &b) {
    GppPacketDesc &d = descs_of(b)[4];
    d.caplen = uint32_t(b.size()) - d.offset + 1;
    d.wirelen = d.caplen;
  });
  expect_rejected("offset inside the header", [](auto &b) { descs_of(b)[0].offset = 0; });
  expect_rejected("offset inside the descriptors",
                  [](auto &b) { descs_of(b)[1].offset = sizeof(GppBatchHeader) + 16; });
}

TEST_F(CorruptBatch, MisalignedOffset) {
  expect_rejected("offset + 1", [](auto &b) { descs_of(b)[1].offset += 1; });
  expect_rejected("offset + 8", [](auto &b) {
    GppPacketDesc &d = descs_of(b)[0];
    d.offset += 8;
    d.caplen = 4;
  });
}

TEST_F(CorruptBatch, CaplenAboveWirelen) {
  expect_rejected("caplen > wirelen", [](auto &b) {
    GppPacketDesc &d = descs_of(b)[3];
    d.wirelen = d.caplen - 1;
  });
}

TEST_F(CorruptBatch, PacketCountTooLargeForTheSize) {
  expect_rejected("count 0xffffffff", [](auto &b) { header_of(b)->packet_count = 0xffffffffu; });
  expect_rejected("count just too large", [](auto &b) {
    header_of(b)->packet_count =
        uint32_t((b.size() - sizeof(GppBatchHeader)) / sizeof(GppPacketDesc) + 1);
  });
}

TEST_F(CorruptBatch, TinyErrorBufferStillGetsATerminatedMessage) {
  std::vector<uint8_t> bad = good_;
  header_of(bad)->magic = 0;
  char err[8];
  std::memset(err, 'x', sizeof err);
  EXPECT_EQ(0, gpp_batch_validate(bad.data(), bad.size(), err, sizeof err));
  EXPECT_NE(nullptr, std::memchr(err, '\0', sizeof err));
  EXPECT_NE('\0', err[0]);
}

// ---- CPU engine --------------------------------------------------------------------

class CpuEngineTest : public ::testing::Test {
protected:
  static constexpr uint32_t kPackets = 5003; // not a multiple of any thread count
  void SetUp() override {
    inputs_ = mixed_inputs(kPackets);
    batch_ = build_batch(GPP_LINKTYPE_ETHERNET, inputs_);
    ASSERT_EQ("", validate(batch_, batch_.size()));
    reference_ = filled_results(kPackets, 0xaa);
    gpp::process_batch_range(batch_.data(), cfg_, reference_.data(), 0, kPackets);
  }
  gpp::CoreConfig cfg_ = make_config(true, false);
  std::vector<Input> inputs_;
  std::vector<uint8_t> batch_;
  std::vector<GppResult> reference_;
};

TEST_F(CpuEngineTest, RangeMatchesPacketByPacketCore) {
  for (uint32_t i = 0; i < kPackets; ++i) {
    const Input &p = inputs_[i];
    const GppResult one = run_core(p.bytes, static_cast<uint32_t>(p.bytes.size()), p.wirelen,
                                   GPP_LINKTYPE_ETHERNET, cfg_, p.packet_number, p.timestamp_ns);
    ASSERT_EQ(0, std::memcmp(&one, &reference_[i], sizeof one)) << "packet " << i;
    ASSERT_EQ("", record_violations(reference_[i], static_cast<uint32_t>(p.bytes.size()),
                                    p.wirelen))
        << "packet " << i;
  }
}

TEST_F(CpuEngineTest, RecordsCarryDescriptorNumbersAndTimestamps) {
  const GppPacketDesc *d = gpp_batch_descs(batch_.data());
  for (uint32_t i = 0; i < kPackets; ++i) {
    ASSERT_EQ(d[i].packet_number, reference_[i].packet_number) << i;
    ASSERT_EQ(1000 + 3ull * i, reference_[i].packet_number) << i;
    ASSERT_EQ(d[i].timestamp_ns, reference_[i].timestamp_ns) << i;
    ASSERT_EQ(d[i].caplen, reference_[i].caplen) << i;
    ASSERT_EQ(d[i].wirelen, reference_[i].wirelen) << i;
  }
  // The mix really exercises the core: clean and flagged packets, both IP versions.
  int clean = 0, flagged = 0, v4 = 0, v6 = 0;
  for (const GppResult &r : reference_) {
    (r.status ? flagged : clean)++;
    v4 += r.ip_version == 4;
    v6 += r.ip_version == 6;
  }
  EXPECT_GT(clean, 1000);
  EXPECT_GT(flagged, 500);
  EXPECT_GT(v4, 1000);
  EXPECT_GT(v6, 1000);
}

TEST_F(CpuEngineTest, SplitRangesMatchOneRange) {
  std::vector<GppResult> split = filled_results(kPackets, 0x11);
  const uint32_t cuts[] = {0, 1, 700, 2501, 5002, kPackets};
  for (size_t i = 0; i + 1 < sizeof cuts / sizeof cuts[0]; ++i)
    gpp::process_batch_range(batch_.data(), cfg_, split.data(), cuts[i], cuts[i + 1]);
  EXPECT_EQ(0, std::memcmp(split.data(), reference_.data(), kPackets * sizeof(GppResult)));
}

TEST_F(CpuEngineTest, OneThreadIsByteIdentical) {
  gpp::CpuEngine engine(1);
  EXPECT_EQ(1u, engine.threads());
  std::vector<GppResult> out = filled_results(kPackets, 0x55);
  engine.process(batch_.data(), cfg_, out.data());
  EXPECT_EQ(0, std::memcmp(out.data(), reference_.data(), kPackets * sizeof(GppResult)));
}

TEST_F(CpuEngineTest, FourThreadsAreByteIdentical) {
  gpp::CpuEngine engine(4);
  EXPECT_EQ(4u, engine.threads());
  for (int round = 0; round < 3; ++round) { // the pool is reused batch after batch
    std::vector<GppResult> out = filled_results(kPackets, static_cast<uint8_t>(0x55 + round));
    engine.process(batch_.data(), cfg_, out.data());
    ASSERT_EQ(0, std::memcmp(out.data(), reference_.data(), kPackets * sizeof(GppResult)))
        << "round " << round;
  }
}

TEST_F(CpuEngineTest, FourThreadsOnSmallAndOtherBatches) {
  gpp::CpuEngine engine(4);
  // Below kMinPacketsPerThread: runs inline, same answer.
  const std::vector<Input> few = mixed_inputs(37);
  const std::vector<uint8_t> small = build_batch(GPP_LINKTYPE_ETHERNET, few);
  std::vector<GppResult> want = filled_results(few.size(), 0);
  std::vector<GppResult> got = filled_results(few.size(), 0xff);
  gpp::process_batch_range(small.data(), cfg_, want.data(), 0, uint32_t(few.size()));
  engine.process(small.data(), cfg_, got.data());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), few.size() * sizeof(GppResult)));

  // Symmetric RSS without checksum verification: the config reaches every thread.
  const gpp::CoreConfig sym = make_config(false, true);
  std::vector<GppResult> ref_sym = filled_results(kPackets, 0);
  std::vector<GppResult> out_sym = filled_results(kPackets, 0x77);
  gpp::process_batch_range(batch_.data(), sym, ref_sym.data(), 0, kPackets);
  engine.process(batch_.data(), sym, out_sym.data());
  EXPECT_EQ(0, std::memcmp(out_sym.data(), ref_sym.data(), kPackets * sizeof(GppResult)));
  EXPECT_NE(0, std::memcmp(out_sym.data(), reference_.data(), kPackets * sizeof(GppResult)));

  // An empty batch writes nothing and returns.
  gpp::BatchBuilder builder;
  builder.reset(GPP_LINKTYPE_ETHERNET);
  const std::vector<uint8_t> empty = builder.finish();
  GppResult untouched;
  std::memset(&untouched, 0x3c, sizeof untouched);
  GppResult copy = untouched;
  engine.process(empty.data(), cfg_, &copy);
  EXPECT_EQ(0, std::memcmp(&copy, &untouched, sizeof copy));
}

TEST_F(CpuEngineTest, BatchLinkTypeIsUsed) {
  // The same IP packets in a raw-IP batch parse with l3_offset 0.
  std::vector<Input> raw;
  for (uint32_t i = 0; i < 2000; ++i) {
    Ipv4Spec ip;
    ip.src = {10, 0, uint8_t(i >> 8), uint8_t(i)};
    ip.proto = kUdp;
    raw.push_back({ipv4(ip, udp(uint16_t(i), 9, pattern_bytes(i % 20))), 0, i, i + 1});
    raw.back().wirelen = uint32_t(raw.back().bytes.size());
  }
  const std::vector<uint8_t> batch = build_batch(GPP_LINKTYPE_RAW, raw);
  ASSERT_EQ("", validate(batch, batch.size()));
  gpp::CpuEngine engine(4);
  std::vector<GppResult> out = filled_results(raw.size(), 0);
  engine.process(batch.data(), cfg_, out.data());
  for (uint32_t i = 0; i < raw.size(); ++i) {
    ASSERT_EQ(0u, out[i].status) << i;
    ASSERT_EQ(0, out[i].l3_offset) << i;
    ASSERT_EQ(uint16_t(i), out[i].sport) << i;
    ASSERT_EQ(i + 1, out[i].packet_number) << i;
  }
}

TEST(CpuEngine, ZeroThreadsMeansOnePerCore) {
  gpp::CpuEngine engine(0);
  EXPECT_EQ(std::max(1u, std::thread::hardware_concurrency()), engine.threads());
}
