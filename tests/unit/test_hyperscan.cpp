// DPI stage against Hyperscan (Debian's libhyperscan-dev), the field's
// reference multi-pattern matcher: on every capture, with both ET Open sets,
// the smallest matching pattern id and the count of all occurrences must be
// what Hyperscan reports for the same payload bytes.
#include <gtest/gtest.h>
#include <hs/hs.h>
#include <pcap/pcap.h>

#include <dirent.h>

#include <cstring>
#include <string>
#include <vector>

#include "dpi_patterns.h"
#include "packet_core.h"

namespace {

std::string data_dir() {
  for (const std::string &arg : testing::internal::GetArgvs())
    if (arg.rfind("--shared-data-dir=", 0) == 0) return arg.substr(18);
  const char *env = std::getenv("GPP_SHARED_DATA_DIR");
  return env ? env : "../shared/data";
}

struct Tally {
  int32_t min_id = -1;
  uint32_t hits = 0;
};

int on_match(unsigned int id, unsigned long long, unsigned long long, unsigned int, void *ctx) {
  auto *t = static_cast<Tally *>(ctx);
  ++t->hits;
  if (t->min_id < 0 || static_cast<int32_t>(id) < t->min_id) t->min_id = static_cast<int32_t>(id);
  return 0;
}

TEST(DpiHyperscan, EtOpenSetsAgreeOnEveryCapture) {
  const std::string dir = data_dir();
  for (const char *rules : {"et_open_emerging-scan.rules", "et_open_emerging-shellcode.rules"}) {
    std::string error;
    auto set = gpp::load_dpi_patterns(dir + "/dpi/" + rules, &error);
    ASSERT_TRUE(set) << error;
    // Literal mode: patterns are raw bytes, each occurrence reported at its end.
    std::vector<const char *> exprs;
    std::vector<size_t> lens;
    std::vector<unsigned> flags, ids;
    for (size_t i = 0; i < set->patterns.size(); ++i) {
      exprs.push_back(set->patterns[i].bytes.data());
      lens.push_back(set->patterns[i].bytes.size());
      flags.push_back(set->patterns[i].nocase ? HS_FLAG_CASELESS : 0);
      ids.push_back(static_cast<unsigned>(i));
    }
    hs_database_t *db = nullptr;
    hs_compile_error_t *compile_error = nullptr;
    ASSERT_EQ(hs_compile_lit_multi(exprs.data(), flags.data(), ids.data(), lens.data(),
                                   static_cast<unsigned>(exprs.size()), HS_MODE_BLOCK, nullptr,
                                   &db, &compile_error),
              HS_SUCCESS)
        << (compile_error ? compile_error->message : "");
    hs_scratch_t *scratch = nullptr;
    ASSERT_EQ(hs_alloc_scratch(db, &scratch), HS_SUCCESS);

    gpp::CoreConfig cfg{};
    std::memcpy(cfg.rss_key, gpp::kDefaultRssKey, sizeof cfg.rss_key);
    cfg.dpi = set->blob.data();
    size_t packets = 0, with_hits = 0;
    DIR *d = opendir((dir + "/pcap").c_str());
    ASSERT_NE(d, nullptr);
    while (dirent *e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.find(".pcap") == std::string::npos) continue;
      char errbuf[PCAP_ERRBUF_SIZE];
      pcap_t *p = pcap_open_offline((dir + "/pcap/" + name).c_str(), errbuf);
      ASSERT_NE(p, nullptr) << errbuf;
      const uint32_t linktype = pcap_datalink(p) == DLT_RAW ? GPP_LINKTYPE_RAW : pcap_datalink(p);
      pcap_pkthdr *h;
      const u_char *bytes;
      while (pcap_next_ex(p, &h, &bytes) == 1) {
        GppResult r;
        gpp::process_packet(bytes, h->caplen, h->len, linktype, ++packets, 0, cfg, r);
        Tally t;
        if (r.payload_length) {
          ASSERT_EQ(hs_scan(db, reinterpret_cast<const char *>(bytes) + r.payload_offset,
                            r.payload_length, 0, scratch, on_match, &t),
                    HS_SUCCESS);
        }
        ASSERT_EQ(r.dpi_pattern, t.min_id) << name << " packet " << packets;
        ASSERT_EQ(r.dpi_hits, t.hits) << name << " packet " << packets;
        with_hits += t.hits > 0;
      }
      pcap_close(p);
    }
    closedir(d);
    std::printf("%s: %zu packets, %zu with Hyperscan matches, all equal\n", rules, packets,
                with_hits);
    EXPECT_GT(with_hits, 0u);
    hs_free_scratch(scratch);
    hs_free_database(db);
  }
}

} // namespace
