// Writes seed corpora for the fuzz harnesses from ../shared/data:
//   fuzz-seeds packets OUT CAPTURE...   the first 16 frames of each capture,
//                                       as packet-core inputs (fuzz_common.h)
//   fuzz-seeds lines OUT PREFIX LINES FILE...
//                                       each file cut into chunks of LINES
//                                       lines (at most 24 chunks a file), each
//                                       written after PREFIX (a byte, or "")
// One file per seed, named by its content's hash, so reruns add nothing new.
#include <pcap/pcap.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "fuzz_common.h"
#include "pcap_linktype.h"

namespace {

int written = 0;

void write_seed(const std::string &dir, const std::string &bytes) {
  char name[32];
  std::snprintf(name, sizeof name, "/seed-%016zx", std::hash<std::string>()(bytes));
  std::ofstream(dir + name, std::ios::binary) << bytes;
  ++written;
}

void packets(const std::string &out, const char *capture) {
  char errbuf[PCAP_ERRBUF_SIZE];
  pcap_t *p = pcap_open_offline(capture, errbuf);
  if (!p) return; // some captures are meant to be unreadable
  const uint8_t linktype = gppfuzz::linktype_index(gpp::linktype_of(p));
  pcap_pkthdr *h;
  const u_char *bytes;
  for (int n = 0; n < 16 && pcap_next_ex(p, &h, &bytes) == 1; ++n) {
    std::string seed;
    seed += static_cast<char>(linktype);
    seed += static_cast<char>(n % 4); // the flags: L4 checksums, symmetric RSS
    seed.append(reinterpret_cast<const char *>(bytes), h->caplen);
    write_seed(out, seed);
  }
  pcap_close(p);
}

void lines(const std::string &out, const std::string &prefix, int per_chunk, const char *file) {
  std::ifstream in(file, std::ios::binary);
  std::string line, chunk = prefix;
  int in_chunk = 0, chunks = 0;
  while (chunks < 24 && std::getline(in, line)) {
    chunk += line + "\n";
    if (++in_chunk == per_chunk) {
      write_seed(out, chunk);
      chunk = prefix;
      in_chunk = 0;
      ++chunks;
    }
  }
  if (in_chunk && chunks < 24) write_seed(out, chunk);
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 2 ? argv[1] : "";
  if (mode == "packets") {
    for (int i = 3; i < argc; ++i) packets(argv[2], argv[i]);
  } else if (mode == "lines" && argc > 5) {
    const int per_chunk = std::atoi(argv[4]);
    for (int i = 5; i < argc; ++i) lines(argv[2], argv[3], per_chunk > 0 ? per_chunk : 1, argv[i]);
  } else {
    std::fprintf(stderr, "usage: %s packets OUT CAPTURE... | lines OUT PREFIX LINES FILE...\n",
                 argv[0]);
    return 2;
  }
  std::printf("%d seeds in %s\n", written, argv[2]);
  return written ? 0 : 1;
}
