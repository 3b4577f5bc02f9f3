// Reading a capture file for the tests that compare records packet by packet
// (tests/gpu, tests/sim, tests/unit): every packet's captured bytes and wire
// length, and the file's link type as a LINKTYPE_ value (the batch format's;
// gpu/pcap_linktype.h maps libpcap's DLT_).  Header-only; needs libpcap.
#pragma once

#include <dirent.h>
#include <pcap/pcap.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "batch_builder.h"
#include "pcap_linktype.h"

namespace gpptest {

struct CapturedPacket {
  std::vector<uint8_t> bytes; // the captured bytes (caplen)
  uint32_t wirelen;
};

// The capture files in `dir` (names holding ".pcap"), sorted.
inline std::vector<std::string> capture_names(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (std::strstr(e->d_name, ".pcap")) names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// False, with libpcap's reason in *error, when the file cannot be opened.
inline bool read_pcap(const std::string &path, uint32_t *linktype,
                      std::vector<CapturedPacket> *packets, std::string *error) {
  char errbuf[PCAP_ERRBUF_SIZE];
  pcap_t *p = pcap_open_offline(path.c_str(), errbuf);
  if (!p) {
    *error = errbuf;
    return false;
  }
  *linktype = gpp::linktype_of(p);
  pcap_pkthdr *h;
  const u_char *data;
  while (pcap_next_ex(p, &h, &data) == 1)
    packets->push_back({std::vector<uint8_t>(data, data + h->caplen), h->len});
  pcap_close(p);
  return true;
}

// Packets [first, last) as one batch: packet i numbered i + 1, captured at
// 1000 * i ns (so that the records do not depend on how a run is batched).
inline std::vector<uint8_t> batch_of(uint32_t linktype, const std::vector<CapturedPacket> &packets,
                                     size_t first, size_t last) {
  gpp::BatchBuilder builder;
  builder.reset(linktype);
  for (size_t i = first; i < last; ++i)
    builder.add(packets[i].bytes.data(), static_cast<uint32_t>(packets[i].bytes.size()),
                packets[i].wirelen, 1000 * i, i + 1);
  return builder.finish();
}

} // namespace gpptest
