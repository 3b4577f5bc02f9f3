// packetresultenc's text, without GStreamer: result records (GppResult) and
// flow records (GppFlowRecord) as CSV or JSON Lines, one line per record,
// written straight into memory with hand-written digit loops and
// std::to_chars (no printf: with it a CSV row took 1,420 ns of a core on a
// 2-core VM, without it 500, most of that the Community ID's SHA-1).  The column contract (names, order, empty and null rules) lives
// in resulttext.cpp's tables; docs/result-fields.md and docs/flows.md
// document the same lists.
//
// TextEncoder spreads a buffer's records over a pool of threads, each
// formatting a contiguous chunk into memory of its own, and then copies the
// chunks out in order: the text is the same, byte for byte, at every thread
// count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gpupacket/flow-record.h>
#include <gpupacket/packet-result.h>

#include "worker_pool.h"

namespace gpp {

enum class TextFormat { kCsv, kJsonLines };

// Room one record's line may need, newline included, in either format and
// for either record: the widest, a JSON result line with its tunnel columns
// and every field at its longest, is 1,087 bytes (856 without the tunnel
// columns; test_resulttext and test_resultenc_harness check them), and
// names are copied as 32-byte blocks that may write up to 32 bytes past a
// line's end.
constexpr size_t kMaxTextLineBytes = 1280;

// The CSV header row (column names, then a newline); with `tunnels`, that
// of records with their tunnel plane (the tunnel columns at the end).
const std::string &csv_header_row(const GppResult *, bool tunnels = false);
// Flow records' row: with `tunnel_id` (flows metered with decap=inner), the
// tunnel_id column last.
const std::string &csv_header_row(const GppFlowRecord *, bool tunnel_id = false);

// The Community ID texts of recent records.  A conversation's packets share
// one, and its SHA-1 is most of a row's cost (365 of 500 ns for a CSV row
// on a 2-core VM; 190 ns with the ID remembered), so each formatting thread
// remembers the last ones it computed, keyed by every field
// community_id_digest() reads (the test checks that no other field changes
// a digest).
class CommunityIdCache {
public:
  // The fields a record's Community ID is computed from, packed.
  struct Key {
    uint8_t src[16];
    uint8_t dst[16];
    uint16_t seed;
    uint16_t sport;
    uint16_t dport;
    uint8_t ip_version;
    uint8_t ip_flags; // GPP_IP_HEADER_PARSED and GPP_IP_L4_PARSED only
    uint8_t l4_proto;
    uint8_t icmp_type;
    uint8_t icmp_code;
    uint8_t zero;
  };
  static Key key_of(const GppResult &r, uint16_t seed);

  CommunityIdCache();
  // The record's Community ID text ("1:" and 28 base64 characters, no
  // NUL), or nullptr when it has none (no IP header parsed).
  const char *text(const GppResult &r, uint16_t seed);

private:
  struct Slot {
    Key key;
    bool used;
    bool has_id;
    char text[30];
  };
  // Direct-mapped: 4096 slots (304 KB) stay in a core's L2 cache.
  static constexpr unsigned kSlotBits = 12;
  std::vector<Slot> slots_;
};

// Writes the lines of records [0, count) at `out`, which has room for
// count * kMaxTextLineBytes; returns the bytes written.  Every field of a
// record is read as it is, except vlan_count: past GPP_MAX_VLANS only the
// tags a record holds are written (the element rejects such records first).
// Community IDs come from `cache` where one is given.
size_t format_records(const GppResult *records, size_t count, TextFormat format,
                      uint16_t community_id_seed, char *out,
                      CommunityIdCache *cache = nullptr);
// Records with their tunnel plane (record-size=176): `tunnels[i]` is
// records[i]'s, and each line ends with the tunnel columns.
size_t format_records(const GppResult *records, const GppTunnelInfo *tunnels, size_t count,
                      TextFormat format, uint16_t community_id_seed, char *out,
                      CommunityIdCache *cache = nullptr);
// Flow records; with `tunnel_id`, each line ends with the flow's tunnel id.
size_t format_records(const GppFlowRecord *records, size_t count, TextFormat format,
                      char *out, bool tunnel_id = false);

class TextEncoder {
public:
  // Below this many records per thread a buffer uses fewer threads.  The
  // pool's two hand-outs (format, copy) cost a few microseconds a buffer: on
  // a 2-core VM a CSV row of `mix` traffic (Community ID cached) took
  // 115-130 ns on one thread, and on two 335 ns at 8 records a thread,
  // 120-160 at 32, 87-123 at 64 and 80-115 at 128.
  static constexpr size_t kMinRecordsPerThread = 128;

  // threads == 0: one per online core.
  explicit TextEncoder(unsigned threads);
  ~TextEncoder();

  unsigned threads() const { return pool_.threads(); }

  // Formats records [0, count) into the encoder's memory (with their
  // tunnel plane, when given, as format_records()); returns the text's size
  // in bytes, which copy_to() then writes out.
  size_t format(const GppResult *records, size_t count, TextFormat format,
                uint16_t community_id_seed, const GppTunnelInfo *tunnels = nullptr);
  size_t format(const GppFlowRecord *records, size_t count, TextFormat format,
                bool tunnel_id = false);
  // Copies the last format()'s text to `out`, chunk after chunk.
  void copy_to(char *out);

private:
  struct FreeText {
    void operator()(char *text) const;
  };
  // One thread's share of a buffer's text (malloc'd: it grows by realloc).
  struct Chunk {
    std::unique_ptr<char, FreeText> text;
    size_t capacity = 0;
    size_t size = 0;
    std::unique_ptr<CommunityIdCache> ids;
  };

  template <typename Record, typename Format>
  size_t run(const Record *records, size_t count, const Format &format_range);

  WorkerPool pool_;
  std::vector<Chunk> chunks_;
  unsigned used_ = 0; // chunks the last format() filled
};

} // namespace gpp
