// Community ID v1 against the spec's own tables (baseline-README.md in
// ../shared/data/community-id): default seed, seed 1, and the raw SHA-1
// digests ("no base64").  Records are built by hand here; the captures and
// the JSON baselines are checked end to end by tests/gst/test_community_id.py.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstdio>
#include <string>

#include "community_id.h"

namespace {

GppResult record(uint8_t proto, const char *src, const char *dst, int sport, int dport) {
  GppResult r{};
  const bool v6 = std::string(src).find(':') != std::string::npos;
  r.ip_version = v6 ? 6 : 4;
  inet_pton(v6 ? AF_INET6 : AF_INET, src, r.src);
  inet_pton(v6 ? AF_INET6 : AF_INET, dst, r.dst);
  r.l4_proto = proto;
  r.ip_flags = GPP_IP_HEADER_PARSED;
  if (sport >= 0) {
    r.ip_flags |= GPP_IP_L4_PARSED;
    if (proto == 1 || proto == 58) {
      r.icmp_type = static_cast<uint8_t>(sport); // the tables list ICMP type / code as ports
      r.icmp_code = static_cast<uint8_t>(dport);
    } else {
      r.sport = static_cast<uint16_t>(sport);
      r.dport = static_cast<uint16_t>(dport);
    }
  }
  return r;
}

std::string id(const GppResult &r, uint16_t seed) {
  uint8_t digest[gpp::kCommunityIdDigestBytes];
  if (!gpp::community_id_digest(r, seed, digest)) return "(none)";
  char text[gpp::kCommunityIdTextBytes];
  gpp::community_id_text(digest, text);
  return text;
}

std::string hex_id(const GppResult &r, uint16_t seed) {
  uint8_t digest[gpp::kCommunityIdDigestBytes];
  if (!gpp::community_id_digest(r, seed, digest)) return "(none)";
  std::string out = "1:";
  char byte[3];
  for (uint8_t b : digest) {
    std::snprintf(byte, sizeof byte, "%02x", b);
    out += byte;
  }
  return out;
}

struct Row {
  uint8_t proto;
  const char *src, *dst;
  int sport, dport; // -1: no ports
  const char *deflt, *seed1, *nob64;
};

const char *kV6a = "fe80:0001:0203:0405:0607:0809:0A0B:0C0D";
const char *kV6b = "fe80:1011:1213:1415:1617:1819:1A1B:1C1D";

const Row kRows[] = {
    {6, "1.2.3.4", "5.6.7.8", 1122, 3344, "1:wCb3OG7yAFWelaUydu0D+125CLM=",
     "1:HhA1B+6CoLbiKPEs5nhNYN4XWfk=", "1:c026f7386ef200559e95a53276ed03fb5db908b3"},
    {6, "5.6.7.8", "1.2.3.4", 3344, 1122, "1:wCb3OG7yAFWelaUydu0D+125CLM=",
     "1:HhA1B+6CoLbiKPEs5nhNYN4XWfk=", "1:c026f7386ef200559e95a53276ed03fb5db908b3"},
    {17, "1.2.3.4", "5.6.7.8", 1122, 3344, "1:0Mu9InQx6z4ZiCZM/7HXi2WMhOg=",
     "1:OShq+iKDAMVouh/4bMxB9Sz4amw=", "1:d0cbbd227431eb3e1988264cffb1d78b658c84e8"},
    {17, "5.6.7.8", "1.2.3.4", 3344, 1122, "1:0Mu9InQx6z4ZiCZM/7HXi2WMhOg=",
     "1:OShq+iKDAMVouh/4bMxB9Sz4amw=", "1:d0cbbd227431eb3e1988264cffb1d78b658c84e8"},
    {132, "1.2.3.4", "5.6.7.8", 1122, 3344, "1:EKt4MsxuyaE6mL+hmrEkQ9csDD8=",
     "1:uitchpn5MMGAQKBJh7bIr/bAr7s=", "1:10ab7832cc6ec9a13a98bfa19ab12443d72c0c3f"},
    {132, "5.6.7.8", "1.2.3.4", 3344, 1122, "1:EKt4MsxuyaE6mL+hmrEkQ9csDD8=",
     "1:uitchpn5MMGAQKBJh7bIr/bAr7s=", "1:10ab7832cc6ec9a13a98bfa19ab12443d72c0c3f"},
    {1, "1.2.3.4", "5.6.7.8", 8, 0, "1:crodRHL2FEsHjbv3UkRrfbs4bZ0=",
     "1:9pr4ZGTICiuZoIh90RRYE2RyXpU=", "1:72ba1d4472f6144b078dbbf752446b7dbb386d9d"},
    {1, "5.6.7.8", "1.2.3.4", 0, 0, "1:crodRHL2FEsHjbv3UkRrfbs4bZ0=",
     "1:9pr4ZGTICiuZoIh90RRYE2RyXpU=", "1:72ba1d4472f6144b078dbbf752446b7dbb386d9d"},
    {1, "1.2.3.4", "5.6.7.8", 11, 0, "1:f/YiSyWqczrTgfUCZlBUnvHRcPk=",
     "1:1DD7cWGC/Yg91YGsQeni8du3pIA=", "1:7ff6224b25aa733ad381f5026650549ef1d170f9"},
    {58, kV6a, kV6b, 128, 0, "1:0bf7hyMJUwt3fMED7z8LIfRpBeo=", "1:IO27GQzPuCtNnwFvjWALMHu5tJE=",
     "1:d1b7fb872309530b777cc103ef3f0b21f46905ea"},
    {58, kV6b, kV6a, 129, 0, "1:0bf7hyMJUwt3fMED7z8LIfRpBeo=", "1:IO27GQzPuCtNnwFvjWALMHu5tJE=",
     "1:d1b7fb872309530b777cc103ef3f0b21f46905ea"},
    {58, kV6a, kV6b, 146, 0, "1:fYC8+pz24E+EhANP1EZhpX0Dw10=", "1:Cv4IKJe56BNkF0MBW2YxQ3Nwc3s=",
     "1:7d80bcfa9cf6e04f8484034fd44661a57d03c35d"},
    {46, "1.2.3.4", "5.6.7.8", -1, -1, "1:ikv3kmf89luf73WPz1jOs49S768=",
     "1:/buhqeOmaRCopOZFy9HnoJd5XW8=", "1:8a4bf79267fcf65b9fef758fcf58ceb38f52efaf"},
    {46, "5.6.7.8", "1.2.3.4", -1, -1, "1:ikv3kmf89luf73WPz1jOs49S768=",
     "1:/buhqeOmaRCopOZFy9HnoJd5XW8=", "1:8a4bf79267fcf65b9fef758fcf58ceb38f52efaf"},
    {46, kV6a, kV6b, -1, -1, "1:wQ/2mwrnXP4lmJcHdGL5ePjR+e0=", "1:j6EyyfBzL4vWKHFXgUqb5Az3OxM=",
     nullptr},
    {46, kV6b, kV6a, -1, -1, "1:wQ/2mwrnXP4lmJcHdGL5ePjR+e0=", "1:j6EyyfBzL4vWKHFXgUqb5Az3OxM=",
     nullptr},
};

TEST(CommunityId, SpecTables) {
  for (const Row &row : kRows) {
    const GppResult r = record(row.proto, row.src, row.dst, row.sport, row.dport);
    SCOPED_TRACE(std::string("proto ") + std::to_string(row.proto) + " " + row.src + " -> " +
                 row.dst + " " + std::to_string(row.sport) + "/" + std::to_string(row.dport));
    EXPECT_EQ(row.deflt, id(r, 0));
    EXPECT_EQ(row.seed1, id(r, 1));
    if (row.nob64) {
      EXPECT_EQ(row.nob64, hex_id(r, 0));
    }
  }
}

// SHA-1 itself, on FIPS 180's "abc" and an empty message.
TEST(CommunityId, Sha1) {
  auto sha1_hex = [](const std::string &msg) {
    uint8_t d[20];
    gpp::sha1_short(reinterpret_cast<const uint8_t *>(msg.data()),
                    static_cast<uint32_t>(msg.size()), d);
    std::string out;
    char byte[3];
    for (uint8_t b : d) {
      std::snprintf(byte, sizeof byte, "%02x", b);
      out += byte;
    }
    return out;
  };
  EXPECT_EQ("a9993e364706816aba3e25717850c26c9cd0d89d", sha1_hex("abc"));
  EXPECT_EQ("da39a3ee5e6b4b0d3255bfef95601890afd80709", sha1_hex(""));
  // 55 bytes, the longest one block holds.
  EXPECT_EQ(40u, sha1_hex(std::string(55, 'a')).size());
}

TEST(CommunityId, NoneWithoutAnIpHeader) {
  GppResult r{};
  EXPECT_EQ("(none)", id(r, 0));
}

// Ports that were not read (a non-first fragment) hash like a port-less
// protocol: addresses and protocol only, the same in both directions.
TEST(CommunityId, FragmentWithoutPortsIsPortless) {
  GppResult out = record(17, "10.0.0.1", "10.0.0.2", -1, -1);
  GppResult back = record(17, "10.0.0.2", "10.0.0.1", -1, -1);
  out.ip_flags |= GPP_IP_FRAGMENT;
  back.ip_flags |= GPP_IP_FRAGMENT;
  EXPECT_EQ(id(out, 0), id(back, 0));
  EXPECT_NE(id(out, 0), id(record(17, "10.0.0.1", "10.0.0.2", 0, 0), 0));
}

} // namespace
