// Prints the tunnel walk's record of every packet of a capture, one line a
// packet, for tunnels_vs_tshark.py:
//   tunnel-records CAPTURE
//   number <TAB> ip_version <TAB> src <TAB> dst <TAB> l4_proto <TAB> sport
//   <TAB> dport <TAB> status names (;) <TAB> tunnel names (:)
// Addresses and ports are empty where the record holds none (ports: TCP and
// UDP only, as tshark's tcp/udp fields).  The walk runs with decap on and
// VXLAN on its IANA port, the ports tshark decodes VXLAN on.
#include <arpa/inet.h>

#include <cstdio>
#include <string>
#include <vector>

#include "capture_file.h"
#include "packet_core.h"

namespace {

std::string address(const uint8_t *bytes, uint8_t ip_version) {
  char text[INET6_ADDRSTRLEN];
  return inet_ntop(ip_version == 4 ? AF_INET : AF_INET6, bytes, text, sizeof text) ? text : "?";
}

std::string status_names(uint32_t status) {
  std::string out;
#define GPP_STATUS_NAME_(flag, bit, name, meaning) \
  if (status & GPP_STATUS_##flag) out += std::string(out.empty() ? "" : ";") + name;
  GPP_STATUS_FLAGS(GPP_STATUS_NAME_)
#undef GPP_STATUS_NAME_
  return out;
}

std::string tunnel_names(const GppTunnelInfo &t) {
  std::string out;
  for (int i = 0; i < t.tunnel_count; ++i) {
    out += i ? ":" : "";
#define GPP_TUNNEL_NAME_(type, value, name, meaning) \
  if (t.tunnel_types[i] == GPP_TUNNEL_##type) out += name;
    GPP_TUNNEL_TYPES(GPP_TUNNEL_NAME_)
#undef GPP_TUNNEL_NAME_
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CAPTURE\n", argv[0]);
    return 2;
  }
  uint32_t linktype = 0;
  std::vector<gpptest::CapturedPacket> packets;
  std::string error;
  if (!gpptest::read_pcap(argv[1], &linktype, &packets, &error)) {
    std::fprintf(stderr, "%s: %s\n", argv[1], error.c_str());
    return 1;
  }
  gpp::CoreConfig cfg{};
  std::copy(gpp::kDefaultRssKey, gpp::kDefaultRssKey + gpp::kRssKeySize, cfg.rss_key);
  cfg.decap = 1;
  cfg.vxlan_ports[0] = gpp::kVxlanPort;
  for (size_t i = 0; i < packets.size(); ++i) {
    const gpptest::CapturedPacket &p = packets[i];
    GppResult r;
    GppTunnelInfo t;
    gpp::process_packet(p.bytes.data(), static_cast<uint32_t>(p.bytes.size()), p.wirelen, linktype,
                        i + 1, 0, cfg, r, gpp::ClassifyStages::kInline, nullptr, &t);
    const bool header = r.ip_flags & GPP_IP_HEADER_PARSED;
    const bool ports = (r.ip_flags & GPP_IP_L4_PARSED) && (r.l4_proto == 6 || r.l4_proto == 17);
    std::printf("%zu\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i + 1,
                r.ip_version ? std::to_string(r.ip_version).c_str() : "",
                header ? address(r.src, r.ip_version).c_str() : "",
                header ? address(r.dst, r.ip_version).c_str() : "",
                header ? std::to_string(r.l4_proto).c_str() : "",
                ports ? std::to_string(r.sport).c_str() : "", ports ? std::to_string(r.dport).c_str() : "",
                status_names(r.status).c_str(), tunnel_names(t).c_str());
  }
  return 0;
}
