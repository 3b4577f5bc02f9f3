#include "xdp_send_frames.h"

#include <pcap/pcap.h>

#include <algorithm>
#include <cstring>

namespace gppbench {

bool load_send_frames(const std::string &file, SendFrames *out, std::string *error) {
  char err[PCAP_ERRBUF_SIZE] = "";
  pcap_t *p = pcap_open_offline(file.c_str(), err);
  if (!p) {
    *error = "cannot read " + file + ": " + err;
    return false;
  }
  if (const int link = pcap_datalink(p); link != DLT_EN10MB) {
    pcap_close(p);
    *error = file + ": not an Ethernet capture (link type " + std::to_string(link) + ")";
    return false;
  }
  SendFrames &f = *out;
  std::vector<std::vector<u_char>> copies;
  pcap_pkthdr *h;
  const u_char *data;
  int rc;
  uint32_t longest = 0;
  while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
    if (h->caplen > SendFrames::kPage) {
      ++f.skipped_long; // longer than a UMEM chunk may be
      continue;
    }
    copies.emplace_back(data, data + h->caplen);
    longest = std::max(longest, h->caplen);
  }
  if (rc == -1) {
    *error = file + ": " + pcap_geterr(p);
    pcap_close(p);
    return false;
  }
  pcap_close(p);
  if (copies.empty()) {
    *error = file + ": no frame of at most " + std::to_string(SendFrames::kPage) + " bytes";
    return false;
  }
  f.chunk_size = longest > 2048 ? 4096 : 2048;
  uint64_t at = 0;
  for (const auto &c : copies) {
    if (at / SendFrames::kPage != (at + c.size() - 1) / SendFrames::kPage)
      at = (at / SendFrames::kPage + 1) * SendFrames::kPage;
    f.frames.push_back({at, static_cast<uint32_t>(c.size())});
    at = (at + c.size() + SendFrames::kAlign - 1) / SendFrames::kAlign * SendFrames::kAlign;
  }
  const uint64_t pages = (at + SendFrames::kPage - 1) / SendFrames::kPage * SendFrames::kPage;
  f.image.assign(std::max<uint64_t>(pages, f.chunk_size), 0);
  for (size_t i = 0; i < copies.size(); ++i)
    memcpy(f.image.data() + f.frames[i].addr, copies[i].data(), copies[i].size());
  return true;
}

} // namespace gppbench
