// The capture reader (capture/) against libpcap, the reference pcapsrc used
// alone before: the same batches, byte for byte, at every batch size and
// writer thread count, on every capture of ../shared/data/pcap and on
// generated variants of one (both byte orders, both pcap precisions, pcapng
// resolutions and offsets, several sections and interfaces, every packet
// block type), truncated at every byte and damaged; the same packets read
// from gzip and zstd copies; and the producer thread stopped at any point.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../unit/capture_file.h"
#include "../unit/shared_data.h"
#include "batch_producer.h"
#include "capture_reader.h"
#include "worker_pool.h"

namespace {

using gpp::capture::BatchPlan;
using gpp::capture::CaptureReader;

// Everything a reader gives for a file: each batch's bytes, then how it
// ended (End, or Error with libpcap's or the decompressor's words and the
// packets read before the damage).
struct Reading {
  std::vector<std::vector<uint8_t>> batches;
  CaptureReader::Step end = CaptureReader::Step::End;
  std::string error;
  uint64_t records = 0;
  bool opened = false;
  std::string open_error;
};

Reading read_file(const std::string &path, uint32_t batch, unsigned threads, bool libpcap_only,
                  const std::string &filter = "") {
  Reading out;
  CaptureReader::OpenError kind;
  auto reader = CaptureReader::open(path, filter, &out.open_error, &kind);
  if (!reader) return out;
  out.opened = true;
  if (libpcap_only) reader->use_libpcap_only();
  // One pool per thread count for the whole test: thousands of readings.
  static std::map<unsigned, std::unique_ptr<gpp::WorkerPool>> pools;
  auto &pool = pools[threads];
  if (!pool) pool = std::make_unique<gpp::WorkerPool>(threads);
  BatchPlan plan;
  for (;;) {
    const auto step = reader->plan(&plan, batch, size_t{256} << 20);
    if (step != CaptureReader::Step::Batch) {
      out.end = step;
      out.error = reader->error();
      break;
    }
    std::vector<uint8_t> bytes(plan.size(), 0xa5); // padding must be written, not left
    reader->write(plan, bytes.data(), pool.get());
    out.batches.push_back(std::move(bytes));
  }
  out.records = reader->records_read();
  return out;
}

void expect_same(const Reading &want, const Reading &got, const std::string &what) {
  ASSERT_EQ(want.opened, got.opened) << what << ": " << want.open_error << " / " << got.open_error;
  if (!want.opened) {
    EXPECT_EQ(want.open_error, got.open_error) << what;
    return;
  }
  ASSERT_EQ(want.batches.size(), got.batches.size()) << what;
  for (size_t i = 0; i < want.batches.size(); ++i)
    ASSERT_TRUE(want.batches[i] == got.batches[i]) << what << ": batch " << i << " differs";
  EXPECT_EQ(want.end, got.end) << what;
  EXPECT_EQ(want.error, got.error) << what;
  EXPECT_EQ(want.records, got.records) << what;
}

std::string pcap_dir() { return test::shared_data_dir() + "/pcap"; }

class TempDir {
public:
  TempDir() {
    char templ[] = "/tmp/gpp-capture-test-XXXXXX";
    path_ = mkdtemp(templ);
  }
  ~TempDir() {
    const std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", path_.c_str());
  }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

void write_bytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> read_bytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// ---- writing captures -------------------------------------------------

struct Packet {
  std::vector<uint8_t> bytes;
  uint32_t wirelen;
  uint64_t sec, frac; // as written in the file's own units
};

class Writer {
public:
  explicit Writer(bool swapped) : swapped_(swapped) {}
  void u8(uint8_t v) { out.push_back(v); }
  void u16(uint16_t v) { put(&v, 2); }
  void u32(uint32_t v) { put(&v, 4); }
  void u64(uint64_t v) { put(&v, 8); }
  void raw(const void *p, size_t n) {
    const auto *b = static_cast<const uint8_t *>(p);
    out.insert(out.end(), b, b + n);
  }
  void pad4() {
    while (out.size() % 4) out.push_back(0);
  }
  std::vector<uint8_t> out;

private:
  void put(const void *v, size_t n) {
    uint8_t b[8];
    std::memcpy(b, v, n);
    if (swapped_) std::reverse(b, b + n);
    raw(b, n);
  }
  bool swapped_;
};

std::vector<uint8_t> make_pcap(const std::vector<Packet> &packets, bool swapped, bool nano,
                               uint32_t snaplen = 65535, uint16_t minor = 4) {
  Writer w(swapped);
  w.u32(nano ? 0xa1b23c4d : 0xa1b2c3d4);
  w.u16(2);
  w.u16(minor);
  w.u32(0);
  w.u32(0);
  w.u32(snaplen);
  w.u32(1);
  for (const Packet &p : packets) {
    w.u32(static_cast<uint32_t>(p.sec));
    w.u32(static_cast<uint32_t>(p.frac));
    w.u32(static_cast<uint32_t>(p.bytes.size()));
    w.u32(p.wirelen);
    w.raw(p.bytes.data(), p.bytes.size());
  }
  return std::move(w.out);
}

struct PcapngOptions {
  bool swapped = false;
  int tsresol = -1;        // if_tsresol byte, -1 = no option (10^-6)
  bool tsoffset = false;   // if_tsoffset of 1000 s
  int interfaces = 1;
  bool sections = false;   // a second SHB (and IDBs) half way
  bool simple_blocks = false;
  bool obsolete_blocks = false;
  bool other_blocks = false; // an unknown block and a name resolution block between packets
  uint32_t snaplen = 65535;
};

void pcapng_block(Writer &w, uint32_t type, const std::vector<uint8_t> &body, bool swapped) {
  Writer b(swapped);
  const uint32_t total = static_cast<uint32_t>(12 + ((body.size() + 3) & ~size_t{3}));
  b.u32(type);
  b.u32(total);
  b.raw(body.data(), body.size());
  b.pad4();
  b.u32(total);
  w.raw(b.out.data(), b.out.size());
}

void pcapng_section(Writer &w, const PcapngOptions &o) {
  Writer shb(o.swapped);
  shb.u32(0x1a2b3c4d);
  shb.u16(1);
  shb.u16(0);
  shb.u64(~uint64_t{0});
  pcapng_block(w, 0x0a0d0d0a, shb.out, o.swapped);
  for (int i = 0; i < o.interfaces; ++i) {
    Writer idb(o.swapped);
    idb.u16(1);
    idb.u16(0);
    idb.u32(o.snaplen);
    if (o.tsresol >= 0) {
      idb.u16(9);
      idb.u16(1);
      idb.u8(static_cast<uint8_t>(o.tsresol));
      idb.pad4();
    }
    if (o.tsoffset) {
      idb.u16(14);
      idb.u16(8);
      idb.u64(1000 + i);
    }
    idb.u16(0);
    idb.u16(0);
    pcapng_block(w, 1, idb.out, o.swapped);
  }
}

std::vector<uint8_t> make_pcapng(const std::vector<Packet> &packets, const PcapngOptions &o) {
  Writer w(o.swapped);
  pcapng_section(w, o);
  for (size_t i = 0; i < packets.size(); ++i) {
    const Packet &p = packets[i];
    if (o.sections && i == packets.size() / 2) pcapng_section(w, o);
    if (o.other_blocks && i % 5 == 2) {
      pcapng_block(w, 0x40000bad, std::vector<uint8_t>(13, 7), o.swapped);
      pcapng_block(w, 4, std::vector<uint8_t>(4, 0), o.swapped); // NRB: end of records
    }
    Writer body(o.swapped);
    const uint64_t t = p.sec; // in interface units
    if (o.simple_blocks && i % 3 == 1) {
      body.u32(p.wirelen);
      body.raw(p.bytes.data(), p.bytes.size());
      pcapng_block(w, 3, body.out, o.swapped);
      continue;
    }
    if (o.obsolete_blocks && i % 3 == 2) {
      body.u16(static_cast<uint16_t>(i % o.interfaces));
      body.u16(0);
    } else {
      body.u32(static_cast<uint32_t>(i % o.interfaces));
    }
    body.u32(static_cast<uint32_t>(t >> 32));
    body.u32(static_cast<uint32_t>(t));
    body.u32(static_cast<uint32_t>(p.bytes.size()));
    body.u32(p.wirelen);
    body.raw(p.bytes.data(), p.bytes.size());
    body.pad4();
    if (i % 4 == 0) { // an EPB option (opt_comment), then the end of options
      body.u16(1);
      body.u16(5);
      body.raw("hello", 5);
      body.pad4();
      body.u16(0);
      body.u16(0);
    }
    pcapng_block(w, (o.obsolete_blocks && i % 3 == 2) ? 2 : 6, body.out, o.swapped);
  }
  return std::move(w.out);
}

// Packets of a real capture, with timestamps that test the arithmetic: some
// past 2^31 s (signed in libpcap's pcap header), fractions up to the unit.
std::vector<Packet> sample_packets(size_t limit = 200) {
  uint32_t linktype;
  std::vector<gpptest::CapturedPacket> captured;
  std::string error;
  gpptest::read_pcap(pcap_dir() + "/zeek__wikipedia.pcap", &linktype, &captured, &error);
  std::vector<Packet> out;
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < captured.size() && out.size() < limit; ++i) {
    Packet p;
    p.bytes = captured[i].bytes;
    p.wirelen = captured[i].wirelen;
    p.sec = i % 7 == 3 ? 0x80000000u + i : 1700000000u + i;
    p.frac = rng() % 1000000;
    out.push_back(std::move(p));
  }
  return out;
}

// Every reading of `path` the reader offers equals libpcap's.
void expect_like_libpcap(const std::string &path, const std::string &what) {
  const Reading ref = read_file(path, 7, 1, true);
  for (uint32_t batch : {1u, 7u, 4096u})
    for (unsigned threads : {1u, 3u}) {
      const Reading want = batch == 7 ? ref : read_file(path, batch, 1, true);
      expect_same(want, read_file(path, batch, threads, false),
                  what + " batch " + std::to_string(batch) + " threads " + std::to_string(threads));
    }
}

// ---- tests -------------------------------------------------------------

TEST(CaptureReader, EveryRealCaptureReadsAsLibpcapReadsIt) {
  const auto names = gpptest::capture_names(pcap_dir());
  ASSERT_GT(names.size(), 50u) << "no captures in " << pcap_dir();
  for (const auto &name : names) expect_like_libpcap(pcap_dir() + "/" + name, name);
}

TEST(CaptureReader, FilterSkipsPacketsButNotTheirNumbers) {
  for (const char *name : {"zeek__wikipedia.pcap", "zeek__pcapng-multi-interface.pcapng",
                           "tcpdump__LINKTYPE_RAW_ipv6.pcap"}) {
    const std::string path = pcap_dir() + "/" + name;
    for (const char *filter : {"tcp", "udp port 53", "ip6"}) {
      const Reading want = read_file(path, 5, 1, true, filter);
      expect_same(want, read_file(path, 5, 3, false, filter), std::string(name) + " " + filter);
      const Reading all = read_file(path, 5, 1, true);
      EXPECT_EQ(want.records, all.records) << name << ": numbering counts every packet";
    }
  }
  std::string error;
  CaptureReader::OpenError kind;
  EXPECT_EQ(CaptureReader::open(pcap_dir() + "/zeek__ssh.pcap", "tcp port", &error, &kind), nullptr);
  EXPECT_EQ(kind, CaptureReader::OpenError::Filter);
  EXPECT_FALSE(error.empty());
}

TEST(CaptureReader, PcapVariantsReadAsLibpcapReadsThem) {
  TempDir dir;
  const auto packets = sample_packets();
  struct Variant {
    const char *name;
    bool swapped, nano;
    uint32_t snaplen;
    uint16_t minor;
  };
  for (const Variant &v : {Variant{"le-us", false, false, 65535, 4}, Variant{"be-us", true, false, 65535, 4},
                           Variant{"le-ns", false, true, 65535, 4}, Variant{"be-ns", true, true, 65535, 4},
                           Variant{"snaplen-100", false, false, 100, 4},
                           Variant{"version-2.3", false, false, 65535, 3},
                           Variant{"be-version-2.2", true, false, 65535, 2}}) {
    std::vector<Packet> ps = packets;
    if (v.nano)
      for (auto &p : ps) p.frac *= 1000;
    const std::string path = dir.file(std::string(v.name) + ".pcap");
    write_bytes(path, make_pcap(ps, v.swapped, v.nano, v.snaplen, v.minor));
    expect_like_libpcap(path, v.name);
  }
}

TEST(CaptureReader, PcapngVariantsReadAsLibpcapReadsThem) {
  TempDir dir;
  const auto packets = sample_packets();
  std::vector<std::pair<std::string, PcapngOptions>> variants;
  variants.push_back({"plain", {}});
  PcapngOptions o;
  o.swapped = true;
  variants.push_back({"swapped", o});
  for (int resol : {0, 3, 6, 9, 10, 0x80 | 20, 0x80 | 30}) {
    PcapngOptions r;
    r.tsresol = resol;
    variants.push_back({"tsresol-" + std::to_string(resol), r});
  }
  o = {};
  o.tsoffset = true;
  o.interfaces = 3;
  variants.push_back({"tsoffset-3-interfaces", o});
  o = {};
  o.sections = true;
  o.interfaces = 2;
  o.tsresol = 9;
  variants.push_back({"two-sections", o});
  o = {};
  o.simple_blocks = true;
  o.snaplen = 120;
  variants.push_back({"simple-blocks-snaplen-120", o});
  o = {};
  o.obsolete_blocks = true;
  o.other_blocks = true;
  o.interfaces = 2;
  o.swapped = true;
  variants.push_back({"obsolete-and-other-blocks", o});
  for (const auto &[name, opts] : variants) {
    const std::string path = dir.file(name + ".pcapng");
    write_bytes(path, make_pcapng(packets, opts));
    expect_like_libpcap(path, name);
  }
}

// Cut at every byte, a capture gives libpcap's packets and libpcap's error
// (the walk hands over at the damage); bytes flipped in record headers too.
TEST(CaptureReader, TruncatedAndDamagedCapturesFailAsLibpcapFails) {
  TempDir dir;
  const auto packets = sample_packets(12);
  PcapngOptions o;
  o.interfaces = 2;
  o.other_blocks = true;
  for (const auto &[name, bytes] :
       {std::make_pair(std::string("pcap"), make_pcap(packets, false, false)),
        std::make_pair(std::string("pcap-be"), make_pcap(packets, true, true)),
        std::make_pair(std::string("pcapng"), make_pcapng(packets, o))}) {
    const std::string path = dir.file("cut." + name);
    for (size_t len = 0; len <= bytes.size(); ++len) {
      write_bytes(path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(len)));
      const std::string what = name + " cut at " + std::to_string(len);
      expect_same(read_file(path, 4, 1, true), read_file(path, 4, 2, false), what);
      if (HasFatalFailure()) return;
    }
    std::mt19937 rng(11);
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<uint8_t> damaged = bytes;
      const size_t at = 24 + rng() % (damaged.size() - 24);
      damaged[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      write_bytes(path, damaged);
      expect_same(read_file(path, 4, 1, true), read_file(path, 4, 2, false),
                  name + " bit flipped at " + std::to_string(at));
      if (HasFatalFailure()) return;
    }
  }
}

std::vector<uint8_t> gzip(const std::vector<uint8_t> &in, int members = 1) {
  std::vector<uint8_t> out;
  const size_t part = in.size() / members + 1;
  for (size_t at = 0; at < in.size(); at += part) {
    z_stream zs{};
    deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    const size_t n = std::min(part, in.size() - at);
    std::vector<uint8_t> buf(deflateBound(&zs, n));
    zs.next_in = const_cast<Bytef *>(in.data() + at);
    zs.avail_in = static_cast<uInt>(n);
    zs.next_out = buf.data();
    zs.avail_out = static_cast<uInt>(buf.size());
    deflate(&zs, Z_FINISH);
    out.insert(out.end(), buf.begin(), buf.begin() + static_cast<ptrdiff_t>(zs.total_out));
    deflateEnd(&zs);
  }
  return out;
}

std::vector<uint8_t> zstd(const std::vector<uint8_t> &in) {
  std::vector<uint8_t> out(ZSTD_compressBound(in.size()));
  out.resize(ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3));
  return out;
}

TEST(CaptureReader, CompressedCapturesReadAsTheirPlainBytes) {
  TempDir dir;
  for (const char *name : {"zeek__ssh.pcap", "zeek__pcapng-multi-interface.pcapng",
                           "tcpdump__tcp-handshake-nano.pcap", "tcpdump__empty.pcap"}) {
    const std::string plain = pcap_dir() + "/" + name;
    const Reading want = read_file(plain, 64, 1, false);
    const auto bytes = read_bytes(plain);
    const std::vector<std::pair<std::string, std::vector<uint8_t>>> copies = {
        {".gz", gzip(bytes)}, {".3.gz", gzip(bytes, 3)}, {".zst", zstd(bytes)}};
    for (const auto &[suffix, packed] : copies) {
      const std::string path = dir.file(std::string(name) + suffix);
      write_bytes(path, packed);
      expect_same(want, read_file(path, 64, 2, false), std::string(name) + suffix);
      expect_same(want, read_file(path, 64, 1, true), std::string(name) + suffix + " by libpcap");
    }
  }
}

// Larger than the decoder's chunks: records straddle chunks, and the window
// moves under the walk (a walk that kept a pointer across a move read freed
// memory).
TEST(CaptureReader, CompressedCaptureLargerThanTheWindowReadsAsPlain) {
  TempDir dir;
  std::vector<Packet> packets;
  const auto sample = sample_packets();
  while (packets.size() < 80000) packets.insert(packets.end(), sample.begin(), sample.end());
  const auto bytes = make_pcap(packets, false, true);
  ASSERT_GT(bytes.size(), 12u << 20);
  const std::string plain = dir.file("big.pcap");
  write_bytes(plain, bytes);
  write_bytes(plain + ".gz", gzip(bytes));
  write_bytes(plain + ".zst", zstd(bytes));
  for (uint32_t batch : {1u, 4096u}) {
    const Reading want = read_file(plain, batch, 1, true);
    expect_same(want, read_file(plain + ".gz", batch, 3, false), "gz batch " + std::to_string(batch));
    expect_same(want, read_file(plain + ".zst", batch, 3, false), "zst batch " + std::to_string(batch));
  }
}

// A compressed capture that ends early keeps every packet before the cut
// and fails naming where the compressed data ended.
TEST(CaptureReader, CompressedCaptureCutShortNamesTheOffset) {
  TempDir dir;
  const std::string plain = pcap_dir() + "/zeek__ssh.pcap";
  const Reading whole = read_file(plain, 1, 1, false);
  const auto bytes = read_bytes(plain);
  for (const auto &[suffix, packed] : {std::make_pair(std::string(".gz"), gzip(bytes)),
                                        std::make_pair(std::string(".zst"), zstd(bytes))}) {
    const std::string path = dir.file("cut" + suffix);
    const size_t cut = packed.size() / 2;
    write_bytes(path, std::vector<uint8_t>(packed.begin(), packed.begin() + static_cast<ptrdiff_t>(cut)));
    const Reading got = read_file(path, 1, 1, false);
    EXPECT_EQ(got.end, CaptureReader::Step::Error) << suffix;
    EXPECT_NE(got.error.find("ends early"), std::string::npos) << got.error;
    EXPECT_NE(got.error.find("compressed byte " + std::to_string(cut)), std::string::npos) << got.error;
    ASSERT_GT(got.batches.size(), 10u) << suffix;
    ASSERT_LT(got.batches.size(), whole.batches.size()) << suffix;
    for (size_t i = 0; i < got.batches.size(); ++i)
      ASSERT_TRUE(got.batches[i] == whole.batches[i]) << suffix << " packet " << i + 1;
    EXPECT_EQ(got.records, got.batches.size()) << suffix;
  }
}

// A named pipe can be read once only: libpcap reads it alone, and the
// batches are those of the file it carries.
TEST(CaptureReader, NamedPipeReadsAsTheFileItCarries) {
  TempDir dir;
  const std::string plain = pcap_dir() + "/zeek__ssh.pcap";
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto bytes = read_bytes(plain);
  std::thread writer([&] { write_bytes(fifo, bytes); });
  const Reading got = read_file(fifo, 64, 2, false);
  writer.join();
  expect_same(read_file(plain, 64, 1, true), got, "named pipe");
}

TEST(CaptureReader, MissingAndNonCaptureFilesFailAsLibpcapFails) {
  TempDir dir;
  const std::string text = dir.file("text.pcap");
  write_bytes(text, std::vector<uint8_t>(100, 'x'));
  for (const std::string &path : {dir.file("missing.pcap"), text}) {
    const Reading got = read_file(path, 4, 1, false);
    EXPECT_FALSE(got.opened) << path;
    char errbuf[PCAP_ERRBUF_SIZE];
    EXPECT_EQ(pcap_open_offline(path.c_str(), errbuf), nullptr);
    EXPECT_EQ(got.open_error, errbuf) << path;
  }
}

// The producer reads ahead on its thread: batches come in file order, and
// stopping it anywhere (or before it starts) leaves nothing behind: its
// queued batches are handed back.
TEST(BatchProducer, DeliversInOrderAndStopsAnywhere) {
  const std::string path = pcap_dir() + "/zeek__ssh.pcap";
  const Reading want = read_file(path, 16, 1, true);
  for (int stop_after = 0; stop_after < 12; ++stop_after) {
    std::string error;
    CaptureReader::OpenError kind;
    auto reader = CaptureReader::open(path, "", &error, &kind);
    ASSERT_TRUE(reader);
    int outstanding = 0;
    auto allocate = [&](size_t size, void **memory) -> uint8_t * {
      auto *v = new std::vector<uint8_t>(size);
      *memory = v;
      return v->data();
    };
    int discarded = 0;
    gpp::capture::BatchProducer producer(*reader, allocate,
                                         [&](const gpp::capture::ProducedBatch &b) {
                                           delete static_cast<std::vector<uint8_t> *>(b.memory);
                                           discarded++;
                                         },
                                         3, 2);
    producer.set_batch_size(16);
    if (stop_after > 0) producer.start();
    size_t index = 0;
    for (int taken = 0; stop_after == 11 || taken < stop_after - 1; ++taken) {
      auto b = producer.take();
      if (b.kind != gpp::capture::ProducedBatch::Kind::Batch) {
        EXPECT_EQ(b.kind, gpp::capture::ProducedBatch::Kind::End);
        EXPECT_EQ(index, want.batches.size());
        break;
      }
      auto *v = static_cast<std::vector<uint8_t> *>(b.memory);
      ASSERT_LT(index, want.batches.size());
      EXPECT_TRUE(*v == want.batches[index]) << "batch " << index;
      delete v;
      index++;
    }
    if (stop_after == 5) {
      producer.interrupt();
      EXPECT_EQ(producer.take().kind, gpp::capture::ProducedBatch::Kind::Stopped);
      producer.resume();
    }
    producer.stop();
    EXPECT_EQ(outstanding, 0);
    EXPECT_LE(discarded, 2);
  }
}

} // namespace
