// packetresultenc's text, without GStreamer: result records (GppResult) and
// flow records (GppFlowRecord) as CSV or JSON Lines, one line per record,
// written straight into memory with hand-written digit loops and
// std::to_chars (no printf: its per-call parsing and locale work cost more
// than the formatting itself, and the encoder wrote about 0.3 Mpps a core
// with it).  The column contract (names, order, empty and null rules) lives
// in resulttext.cpp's tables; README's "Result fields" table and its
// "Flows" section document the same lists.
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
// for either record (the widest, a JSON result line with every field at its
// longest, is about 820 bytes; test_resulttext checks it stays below).
constexpr size_t kMaxTextLineBytes = 1024;

// The CSV header row (column names, then a newline).
const std::string &csv_header_row(const GppResult *);
const std::string &csv_header_row(const GppFlowRecord *);

// Writes the lines of records [0, count) at `out`, which has room for
// count * kMaxTextLineBytes; returns the bytes written.  Every field of a
// record is read as it is, except vlan_count: past GPP_MAX_VLANS only the
// tags a record holds are written (the element rejects such records first).
size_t format_records(const GppResult *records, size_t count, TextFormat format,
                      uint16_t community_id_seed, char *out);
size_t format_records(const GppFlowRecord *records, size_t count, TextFormat format,
                      char *out);

class TextEncoder {
public:
  // Below this many records per thread a buffer uses fewer threads.  The
  // pool's two hand-outs (format, copy) cost about 5 us a buffer: on a
  // 2-core VM, CSV of `mix` traffic took 500 ns a record on one thread,
  // 580 on two at 8 records each, 390 at 32 each and 330 at 128 each.
  static constexpr size_t kMinRecordsPerThread = 64;

  // threads == 0: one per online core.
  explicit TextEncoder(unsigned threads);

  unsigned threads() const { return pool_.threads(); }

  // Formats records [0, count) into the encoder's memory; returns the
  // text's size in bytes, which copy_to() then writes out.
  size_t format(const GppResult *records, size_t count, TextFormat format,
                uint16_t community_id_seed);
  size_t format(const GppFlowRecord *records, size_t count, TextFormat format);
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
  };

  template <typename Record, typename Format>
  size_t run(const Record *records, size_t count, const Format &format_range);

  WorkerPool pool_;
  std::vector<Chunk> chunks_;
  unsigned used_ = 0; // chunks the last format() filled
};

} // namespace gpp
