#include "batch_builder.h"

#include <cstring>

namespace gpp {

void BatchBuilder::reset(uint32_t linktype) {
  linktype_ = linktype;
  descs_.clear();
  data_.clear();
}

void BatchBuilder::add(const uint8_t *data, uint32_t caplen, uint32_t wirelen,
                       uint64_t timestamp_ns, uint64_t packet_number) {
  GppPacketDesc d{};
  d.timestamp_ns = timestamp_ns;
  d.packet_number = packet_number;
  d.offset = static_cast<uint32_t>(data_.size());
  d.caplen = caplen;
  d.wirelen = wirelen < caplen ? caplen : wirelen;
  descs_.push_back(d);
  data_.insert(data_.end(), data, data + caplen);
  data_.resize(gpp_align_up(data_.size(), GPP_PACKET_ALIGN), 0);
}

size_t BatchBuilder::size() const { return gpp_batch_size(packet_count(), data_.size()); }

void BatchBuilder::write(uint8_t *dst) const {
  const size_t data_start = gpp_batch_data_start(packet_count());
  GppBatchHeader header{};
  header.magic = GPP_BATCH_MAGIC;
  header.version = GPP_BATCH_VERSION;
  header.header_size = sizeof(GppBatchHeader);
  header.packet_count = packet_count();
  header.linktype = linktype_;
  header.total_size = size();
  std::memcpy(dst, &header, sizeof header);
  auto *descs = reinterpret_cast<GppPacketDesc *>(dst + sizeof header);
  for (size_t i = 0; i < descs_.size(); ++i) {
    GppPacketDesc d = descs_[i];
    d.offset += static_cast<uint32_t>(data_start);
    std::memcpy(&descs[i], &d, sizeof d);
  }
  const size_t descs_end = sizeof header + descs_.size() * sizeof(GppPacketDesc);
  std::memset(dst + descs_end, 0, data_start - descs_end);
  if (!data_.empty()) std::memcpy(dst + data_start, data_.data(), data_.size());
}

size_t BatchBuilder::subset_packet_size(const uint8_t *src, uint32_t pick) {
  return gpp_align_up(gpp_batch_descs(src)[pick].caplen, GPP_PACKET_ALIGN);
}

size_t BatchBuilder::subset_size(const uint8_t *src, const uint32_t *picks, uint32_t count) {
  size_t data = 0;
  for (uint32_t i = 0; i < count; ++i) data += subset_packet_size(src, picks ? picks[i] : i);
  return gpp_batch_size(count, data);
}

void BatchBuilder::write_subset_packet(const uint8_t *src, uint32_t pick, uint32_t index,
                                       uint32_t count, size_t data_at, uint8_t *dst) {
  GppPacketDesc d = gpp_batch_descs(src)[pick];
  const uint8_t *bytes = src + d.offset;
  const size_t at = gpp_batch_data_start(count) + data_at;
  d.offset = static_cast<uint32_t>(at);
  std::memcpy(dst + sizeof(GppBatchHeader) + size_t{index} * sizeof d, &d, sizeof d);
  std::memcpy(dst + at, bytes, d.caplen);
  const size_t padded = gpp_align_up(d.caplen, GPP_PACKET_ALIGN);
  std::memset(dst + at + d.caplen, 0, padded - d.caplen);
}

void BatchBuilder::write_subset_header(const uint8_t *src, uint32_t count, size_t data_bytes,
                                       uint8_t *dst) {
  GppBatchHeader header{};
  header.magic = GPP_BATCH_MAGIC;
  header.version = GPP_BATCH_VERSION;
  header.header_size = sizeof(GppBatchHeader);
  header.packet_count = count;
  header.linktype = reinterpret_cast<const GppBatchHeader *>(src)->linktype;
  header.total_size = gpp_batch_size(count, data_bytes);
  std::memcpy(dst, &header, sizeof header);
  const size_t descs_end = sizeof header + size_t{count} * sizeof(GppPacketDesc);
  std::memset(dst + descs_end, 0, gpp_batch_data_start(count) - descs_end);
}

void BatchBuilder::write_subset(const uint8_t *src, const uint32_t *picks, uint32_t count,
                                uint8_t *dst) {
  size_t at = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t pick = picks ? picks[i] : i;
    write_subset_packet(src, pick, i, count, at, dst);
    at += subset_packet_size(src, pick);
  }
  write_subset_header(src, count, at, dst);
}

std::vector<uint8_t> BatchBuilder::finish() const {
  std::vector<uint8_t> out(size());
  write(out.data());
  return out;
}

} // namespace gpp
