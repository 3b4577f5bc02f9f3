#include "capture_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include <gpupacket/packet-batch.h>

#include "pcap_linktype.h"
#include "worker_pool.h"

namespace gpp::capture {

namespace {

constexpr uint32_t kPcapMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kPcapMagicNano = 0xa1b23c4d;
constexpr uint32_t kPcapngSectionHeader = 0x0a0d0d0a;
constexpr uint32_t kPcapngByteOrderMagic = 0x1a2b3c4d;
constexpr uint32_t kPcapngInterface = 1;
constexpr uint32_t kPcapngObsoletePacket = 2;
constexpr uint32_t kPcapngSimplePacket = 3;
constexpr uint32_t kPcapngEnhancedPacket = 6;
constexpr uint16_t kOptionEnd = 0;
constexpr uint16_t kOptionTsResol = 9;
constexpr uint16_t kOptionTsOffset = 14;
// Blocks larger than this go to libpcap, whose own limit derives from the
// link type's largest snapshot length (262144 for nearly all).
constexpr uint32_t kMaxNativeBlock = 262144;
// Below this many packet bytes a batch is written by one thread: waking
// the others costs more than it saves.
constexpr uint64_t kParallelWriteBytes = 256 * 1024;
constexpr uint64_t kNanosPerSecond = 1000000000ull;

uint32_t read32(const uint8_t *p, bool swapped) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return swapped ? __builtin_bswap32(v) : v;
}

uint16_t read16(const uint8_t *p, bool swapped) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return swapped ? __builtin_bswap16(v) : v;
}

uint64_t read64(const uint8_t *p, bool swapped) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return swapped ? __builtin_bswap64(v) : v;
}

// Link types whose packet bytes or lengths libpcap rewrites as it reads
// (pcap_post_process: pseudo-headers of files in the other byte order,
// and mmapped USB lengths): those files are read by libpcap itself.
bool libpcap_rewrites(int dlt, bool swapped) {
  if (dlt == DLT_USB_LINUX_MMAPPED) return true;
  if (!swapped) return false;
  switch (dlt) {
  case DLT_LINUX_SLL:
  case DLT_LINUX_SLL2:
  case DLT_USB_LINUX:
  case DLT_NFLOG:
  case DLT_PFLOG:
    return true;
  default:
    return false;
  }
}

// A libpcap handle on the file from its start, with nanosecond timestamps;
// compressed files through a decompressing stream.
pcap_t *open_with_libpcap(const std::string &path, Compression compression, std::string *error) {
  char errbuf[PCAP_ERRBUF_SIZE] = "";
  if (compression == Compression::None) {
    pcap_t *p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO,
                                                        errbuf);
    if (!p) *error = errbuf;
    return p;
  }
  FILE *stream = open_decompressed_stream(path, error);
  if (!stream) return nullptr;
  pcap_t *p = pcap_fopen_offline_with_tstamp_precision(stream, PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (!p) {
    *error = errbuf;
    std::fclose(stream);
  }
  return p;
}

} // namespace

size_t BatchPlan::size() const { return gpp_batch_size(count(), data_bytes); }

std::unique_ptr<CaptureReader> CaptureReader::open(const std::string &path,
                                                   const std::string &filter,
                                                   std::string *error, OpenError *kind) {
  std::unique_ptr<CaptureReader> r(new CaptureReader());
  r->path_ = path;
  // A pipe, /dev/stdin or "-" can be read once only: libpcap reads it alone,
  // through the one handle opened here (as does a path that cannot be
  // opened: libpcap then says why).
  struct stat st{};
  const bool regular = path != "-" && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  r->compression_ = regular ? file_compression(path) : Compression::None;
  *kind = OpenError::File;
  // libpcap checks the file header (and says what is wrong with it in the
  // words users know), names the link type and compiles the filter.
  pcap_t *check = open_with_libpcap(path, r->compression_, error);
  if (!check) return nullptr;
  r->dlt_ = pcap_datalink(check);
  r->linktype_ = linktype_of(check);
  r->snapshot_ = static_cast<uint32_t>(pcap_snapshot(check));
  if (!filter.empty()) {
    if (pcap_compile(check, &r->filter_, filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
      *error = pcap_geterr(check);
      *kind = OpenError::Filter;
      pcap_close(check);
      return nullptr;
    }
    r->have_filter_ = true;
  }
  if (!regular) {
    r->fallback_ = check;
    *kind = OpenError::None;
    return r;
  }
  pcap_close(check);

  r->source_ = ByteSource::open(path, error);
  if (!r->source_) return nullptr;
  if (!r->read_pcap_header()) {
    r->source_.reset(); // a layout libpcap reads alone
  } else {
    r->mapped_ = r->source_->fixed_bytes(&r->mapped_size_);
  }
  *kind = OpenError::None;
  return r;
}

CaptureReader::~CaptureReader() {
  if (have_filter_) pcap_freecode(&filter_);
  if (fallback_) pcap_close(fallback_);
}

const char *CaptureReader::linktype_name() const {
  const char *name = pcap_datalink_val_to_name(dlt_);
  return name ? name : "";
}

void CaptureReader::use_libpcap_only() { libpcap_only_ = true; }

// Reads what the walk needs of the file header; false where libpcap
// reads the records alone (the modified and pre-2.4 pcap variants, or
// packets libpcap rewrites).
bool CaptureReader::read_pcap_header() {
  if (source_->ensure(0, 24) < 24) return false; // libpcap accepted it: leave it to libpcap
  const uint8_t *h = source_->at(0);
  const uint32_t magic = read32(h, false);
  if (magic == kPcapngSectionHeader) {
    format_ = Format::Pcapng;
    const uint32_t order = read32(h + 8, false);
    swapped_ = order != kPcapngByteOrderMagic;
    offset_ = 0;
    return !libpcap_rewrites(dlt_, swapped_);
  }
  format_ = Format::Pcap;
  if (magic == kPcapMagicMicro || magic == kPcapMagicNano) {
    swapped_ = false;
  } else if (magic == __builtin_bswap32(kPcapMagicMicro) ||
             magic == __builtin_bswap32(kPcapMagicNano)) {
    swapped_ = true;
  } else {
    return false;
  }
  nanosecond_ = read32(h, swapped_) == kPcapMagicNano;
  const uint16_t major = read16(h + 4, swapped_), minor = read16(h + 6, swapped_);
  if (major != 2 || minor != 4) return false; // older lengths may be swapped
  offset_ = 24;
  return !libpcap_rewrites(dlt_, swapped_);
}

// The walk reads one record header after another, each where the last
// one's length says: a chain of cache misses the hardware prefetchers do
// not foresee.  Asking for the bytes a few KiB ahead turns it into a stream.
// Only in a mapped file: a decoded stream's bytes were just written, and
// are cached.
void CaptureReader::prefetch_ahead() {
  if (!mapped_) return;
  const uint64_t want = std::min(offset_ + kPrefetchDistance, mapped_size_);
  if (prefetched_to_ < offset_) prefetched_to_ = offset_;
  for (; prefetched_to_ < want; prefetched_to_ += 64) __builtin_prefetch(mapped_ + prefetched_to_);
}

CaptureReader::Step CaptureReader::source_end() {
  error_ = source_->error();
  return error_.empty() ? Step::End : Step::Error;
}

CaptureReader::Step CaptureReader::hand_over(Record *r) {
  if (source_ && !source_->error().empty()) return source_end();
  // The source stays until the packets already planned from it are written.
  fallback_ = open_with_libpcap(path_, compression_, &error_);
  if (!fallback_) return Step::Error;
  // libpcap reads the file again from its start up to where the walk stopped.
  for (uint64_t i = 0; i < records_read_; ++i) {
    pcap_pkthdr *hdr;
    const u_char *data;
    if (pcap_next_ex(fallback_, &hdr, &data) != 1) {
      error_ = "libpcap could not read again the packets read before packet " +
               std::to_string(records_read_ + 1) + ": " + pcap_geterr(fallback_);
      return Step::Error;
    }
  }
  return next_libpcap(r);
}

CaptureReader::Step CaptureReader::next_libpcap(Record *r) {
  pcap_pkthdr *hdr;
  const u_char *data;
  const int rc = pcap_next_ex(fallback_, &hdr, &data);
  if (rc == PCAP_ERROR_BREAK) return Step::End;
  if (rc != 1) {
    error_ = pcap_geterr(fallback_);
    return Step::Error;
  }
  r->source = PlannedPacket::kStaged | staging_.size();
  staging_.insert(staging_.end(), data, data + hdr->caplen);
  r->data = staging_.data() + (r->source & ~PlannedPacket::kStaged);
  r->caplen = hdr->caplen;
  r->wirelen = hdr->len;
  r->timestamp_ns = static_cast<uint64_t>(hdr->ts.tv_sec) * kNanosPerSecond +
                    static_cast<uint64_t>(hdr->ts.tv_usec);
  records_read_++;
  return Step::Batch;
}

CaptureReader::Step CaptureReader::next(Record *r) {
  if (fallback_) return next_libpcap(r);
  if (!source_ || libpcap_only_) return hand_over(r);
  return format_ == Format::Pcap ? next_pcap(r) : next_pcapng(r);
}

// libpcap's arithmetic: its 32-bit header fields are signed, but a
// byte-swapped one reaches the timeval unsigned.
uint64_t CaptureReader::pcap_timestamp(uint32_t seconds, uint32_t fraction) const {
  const int64_t sec = swapped_ ? int64_t{seconds} : int64_t{static_cast<int32_t>(seconds)};
  int64_t frac = swapped_ ? int64_t{fraction} : int64_t{static_cast<int32_t>(fraction)};
  if (!nanosecond_) frac *= 1000;
  return static_cast<uint64_t>(sec) * kNanosPerSecond + static_cast<uint64_t>(frac);
}

CaptureReader::Step CaptureReader::next_pcap(Record *r) {
  prefetch_ahead();
  const size_t have = source_->ensure(offset_, 16);
  if (have == 0) return source_end();
  if (have < 16) return hand_over(r);
  const uint8_t *h = source_->at(offset_);
  const uint32_t seconds = read32(h, swapped_), fraction = read32(h + 4, swapped_);
  const uint32_t caplen = read32(h + 8, swapped_), wirelen = read32(h + 12, swapped_);
  if (caplen > snapshot_) return hand_over(r); // libpcap truncates or refuses it
  if (source_->ensure(offset_ + 16, caplen) < caplen) return hand_over(r);
  r->timestamp_ns = pcap_timestamp(seconds, fraction);
  r->source = offset_ + 16;
  r->data = source_->at(r->source);
  r->caplen = caplen;
  r->wirelen = wirelen;
  offset_ += 16 + uint64_t{caplen};
  records_read_++;
  return Step::Batch;
}

CaptureReader::Step CaptureReader::next_pcapng(Record *r) {
  for (;;) {
    prefetch_ahead();
    const size_t have = source_->ensure(offset_, 12);
    if (have == 0) return source_end();
    if (have < 12) return hand_over(r);
    const uint8_t *b = source_->at(offset_);
    const uint32_t type = read32(b, false);
    if (type == kPcapngSectionHeader) {
      const uint32_t order = read32(b + 8, false);
      const bool swapped = order != kPcapngByteOrderMagic;
      if (read32(b + 8, swapped) != kPcapngByteOrderMagic || swapped != swapped_)
        return hand_over(r);
    }
    const uint32_t total = read32(b + 4, swapped_);
    if (total < 12 || total % 4 != 0 || total > kMaxNativeBlock) return hand_over(r);
    if (source_->ensure(offset_, total) < total) return hand_over(r);
    b = source_->at(offset_);
    if (read32(b + total - 4, swapped_) != total) return hand_over(r);
    const uint8_t *body = b + 8;
    const uint32_t body_len = total - 12;
    const uint64_t block_at = offset_;

    uint32_t interface = 0, caplen = 0, wirelen = 0, fixed = 0;
    uint64_t units = 0;
    switch (read32(b, swapped_)) {
    case kPcapngSectionHeader:
      if (body_len < 16 || read16(body + 4, swapped_) != 1) return hand_over(r);
      interfaces_.clear();
      offset_ += total;
      continue;
    case kPcapngInterface: {
      if (body_len < 8) return hand_over(r);
      const uint16_t linktype = read16(body, swapped_);
      const uint32_t snaplen = read32(body + 4, swapped_);
      if (have_first_idb_ && (linktype != static_cast<uint32_t>(dlt_) || snaplen != first_idb_snaplen_))
        return hand_over(r); // libpcap refuses a differing interface
      Interface itf{1000000, 1000, 0};
      bool seen_resol = false, seen_offset = false;
      for (uint32_t at = 8; at < body_len;) {
        if (body_len - at < 4) return hand_over(r);
        const uint16_t code = read16(body + at, swapped_), len = read16(body + at + 2, swapped_);
        const uint32_t padded = (len + 3u) & ~3u;
        if (padded > body_len - at - 4) return hand_over(r);
        const uint8_t *value = body + at + 4;
        if (code == kOptionEnd) {
          if (len != 0) return hand_over(r);
          break;
        }
        if (code == kOptionTsResol) {
          if (len != 1 || seen_resol || value[0] > 9) return hand_over(r); // binary, or finer than ns
          seen_resol = true;
          itf.units_per_second = 1;
          for (int i = 0; i < value[0]; ++i) itf.units_per_second *= 10;
          itf.scale = kNanosPerSecond / itf.units_per_second;
        } else if (code == kOptionTsOffset) {
          if (len != 8 || seen_offset) return hand_over(r);
          seen_offset = true;
          itf.offset_seconds = read64(value, swapped_);
        }
        at += 4 + padded;
      }
      if (!have_first_idb_) {
        have_first_idb_ = true;
        first_idb_snaplen_ = snaplen;
      }
      interfaces_.push_back(itf);
      offset_ += total;
      continue;
    }
    case kPcapngEnhancedPacket:
      if (body_len < 20) return hand_over(r);
      interface = read32(body, swapped_);
      fixed = 20;
      break;
    case kPcapngObsoletePacket:
      if (body_len < 20) return hand_over(r);
      interface = read16(body, swapped_);
      fixed = 20;
      break;
    case kPcapngSimplePacket:
      if (body_len < 4) return hand_over(r);
      wirelen = read32(body, swapped_);
      caplen = std::min(wirelen, snapshot_);
      fixed = 4;
      break;
    default:
      offset_ += total;
      continue;
    }

    uint64_t t = 0;
    if (fixed == 20) {
      t = uint64_t{read32(body + 4, swapped_)} << 32 | read32(body + 8, swapped_);
      caplen = read32(body + 12, swapped_);
      wirelen = read32(body + 16, swapped_);
    }
    if (interface >= interfaces_.size() || caplen > snapshot_ || caplen > body_len - fixed)
      return hand_over(r);
    const Interface &itf = interfaces_[interface];
    units = itf.units_per_second;
    const uint64_t sec = t / units + itf.offset_seconds;
    const uint64_t frac = (t % units) * itf.scale;
    r->timestamp_ns = sec * kNanosPerSecond + frac;
    r->source = block_at + 8 + fixed;
    r->data = source_->at(r->source);
    r->caplen = caplen;
    r->wirelen = wirelen;
    offset_ += total;
    records_read_++;
    return Step::Batch;
  }
}

CaptureReader::Step CaptureReader::plan(BatchPlan *plan, uint32_t max_packets, size_t max_bytes) {
  plan->clear();
  plan->packets.reserve(std::min<uint32_t>(max_packets, 1u << 16));
  staging_.clear();
  if (!error_.empty()) return Step::Error;
  if (fallback_) {
    source_.reset();
    mapped_ = nullptr;
  }
  if (source_) source_->release(offset_);
  const bool fast = mapped_ && !fallback_ && !libpcap_only_ && !have_filter_ &&
                    format_ == Format::Pcap;
  while (plan->count() < max_packets && plan->size() < max_bytes) {
    if (fast && !fallback_) { // a hand-over in this plan ends the walk
      plan_mapped_pcap(plan, max_packets, max_bytes);
      if (plan->count() >= max_packets || plan->size() >= max_bytes) break;
    }
    Record r;
    if (next(&r) != Step::Batch) break;
    if (have_filter_) {
      pcap_pkthdr h{};
      h.caplen = r.caplen;
      h.len = r.wirelen;
      if (!pcap_offline_filter(&filter_, &h, r.data)) continue;
    }
    add(plan, r.source, r.caplen, r.wirelen, r.timestamp_ns);
  }
  if (plan->count()) return Step::Batch;
  return error_.empty() ? Step::End : Step::Error;
}

void CaptureReader::add(BatchPlan *plan, uint64_t source, uint32_t caplen, uint32_t wirelen,
                        uint64_t timestamp_ns) const {
  PlannedPacket p;
  p.source = source;
  p.data_at = plan->data_bytes;
  p.timestamp_ns = timestamp_ns;
  p.number = records_read_;
  p.caplen = caplen;
  p.wirelen = std::max(wirelen, caplen);
  plan->packets.push_back(p);
  plan->data_bytes += gpp_align_up(caplen, GPP_PACKET_ALIGN);
  plan->captured_bytes += caplen;
}

// The walk of next_pcap() for the common case, in a tight loop over the
// mapped bytes: it stops before any record that needs more (the end of
// the file, a length past the snapshot or the file), which next_pcap()
// then reads, or hands to libpcap.
void CaptureReader::plan_mapped_pcap(BatchPlan *plan, uint32_t max_packets, size_t max_bytes) {
  // Locals, not members: stores into the plan would otherwise make the
  // compiler reload every member on each record.
  const uint8_t *const base = mapped_;
  const uint64_t size = mapped_size_;
  const uint32_t snapshot = snapshot_;
  const bool swapped = swapped_;
  uint64_t offset = offset_, records = records_read_, prefetched = std::max(prefetched_to_, offset_);
  uint64_t data = plan->data_bytes, captured = plan->captured_bytes;
  uint32_t count = plan->count();
  while (count < max_packets && gpp_batch_size(count, data) < max_bytes && offset + 16 <= size) {
    for (const uint64_t want = std::min(offset + kPrefetchDistance, size); prefetched < want;
         prefetched += 64)
      __builtin_prefetch(base + prefetched);
    const uint32_t caplen = read32(base + offset + 8, swapped);
    if (caplen > snapshot || offset + 16 + caplen > size) break;
    // The walk itself only needs the length: the writers read the rest.
    PlannedPacket p;
    p.source = PlannedPacket::kPcapRecord | offset;
    p.data_at = data;
    p.number = ++records;
    p.caplen = caplen;
    plan->packets.push_back(p);
    data += gpp_align_up(caplen, GPP_PACKET_ALIGN);
    captured += caplen;
    offset += 16 + uint64_t{caplen};
    count++;
  }
  offset_ = offset;
  records_read_ = records;
  prefetched_to_ = prefetched;
  plan->data_bytes = data;
  plan->captured_bytes = captured;
}

const uint8_t *CaptureReader::packet_bytes(uint64_t source) const {
  if (source & PlannedPacket::kStaged)
    return staging_.data() + (source & ~PlannedPacket::kStaged);
  return source_->at(source);
}

void CaptureReader::write(const BatchPlan &plan, uint8_t *dst, WorkerPool *pool) const {
  const uint32_t count = plan.count();
  const size_t data_start = gpp_batch_data_start(count);
  GppBatchHeader header{};
  header.magic = GPP_BATCH_MAGIC;
  header.version = GPP_BATCH_VERSION;
  header.header_size = sizeof(GppBatchHeader);
  header.packet_count = count;
  header.linktype = linktype_;
  header.total_size = plan.size();
  std::memcpy(dst, &header, sizeof header);
  const size_t descs_end = sizeof header + size_t{count} * sizeof(GppPacketDesc);
  std::memset(dst + descs_end, 0, data_start - descs_end);

  auto *descs = reinterpret_cast<GppPacketDesc *>(dst + sizeof header);
  auto write_range = [&](uint32_t first, uint32_t last) {
    for (uint32_t i = first; i < last; ++i) {
      const PlannedPacket &p = plan.packets[i];
      GppPacketDesc d{};
      const uint8_t *bytes;
      if (p.source & PlannedPacket::kPcapRecord) {
        const uint8_t *h = mapped_ + (p.source & PlannedPacket::kOffsetMask);
        d.timestamp_ns = pcap_timestamp(read32(h, swapped_), read32(h + 4, swapped_));
        d.wirelen = std::max(read32(h + 12, swapped_), p.caplen);
        bytes = h + 16;
      } else {
        d.timestamp_ns = p.timestamp_ns;
        d.wirelen = p.wirelen;
        bytes = packet_bytes(p.source);
      }
      d.packet_number = p.number;
      d.offset = static_cast<uint32_t>(data_start + p.data_at);
      d.caplen = p.caplen;
      std::memcpy(&descs[i], &d, sizeof d);
      uint8_t *out = dst + d.offset;
      // The padding: the packet's last 16-byte word zeroed, then its bytes over it.
      const size_t padded = gpp_align_up(p.caplen, GPP_PACKET_ALIGN);
      if (padded != p.caplen) std::memset(out + padded - GPP_PACKET_ALIGN, 0, GPP_PACKET_ALIGN);
      std::memcpy(out, bytes, p.caplen);
    }
  };
  if (pool && pool->threads() > 1 && plan.data_bytes >= kParallelWriteBytes)
    pool->run_ranges(count, write_range);
  else
    write_range(0, count);
}

} // namespace gpp::capture
