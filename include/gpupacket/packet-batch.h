/* gpupacket — the packet batch format (caps "application/x-packet-batch").
 *
 * One GstBuffer holds one batch in one contiguous block, so the whole batch can
 * reach the GPU in a single copy:
 *
 *   offset 0                 GppBatchHeader
 *   header_size              GppPacketDesc[packet_count]
 *   aligned to 16            packet bytes, each packet starting on a
 *                            GPP_PACKET_ALIGN boundary (wide loads on the GPU)
 *
 * All fields are in host byte order (the batch never leaves the machine).
 * Plain C, no GStreamer: applications build and read batches with appsrc and
 * appsink using only this header. The same header is compiled into the engine.
 */
#ifndef GPUPACKET_PACKET_BATCH_H
#define GPUPACKET_PACKET_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPP_BATCH_CAPS_NAME "application/x-packet-batch"
#define GPP_BATCH_MAGIC 0x42505047u /* "GPPB" read as little-endian bytes */
#define GPP_BATCH_VERSION 1u
#define GPP_PACKET_ALIGN 16u

/* pcap LINKTYPE_* values the packet core understands (www.tcpdump.org/linktypes.html). */
#define GPP_LINKTYPE_NULL 0u        /* BSD loopback: 4-byte address family, host order */
#define GPP_LINKTYPE_ETHERNET 1u
#define GPP_LINKTYPE_RAW 101u       /* raw IPv4 or IPv6, told apart by the version nibble */
#define GPP_LINKTYPE_LOOP 108u      /* OpenBSD loopback: address family in network order */
#define GPP_LINKTYPE_LINUX_SLL 113u
#define GPP_LINKTYPE_IPV4 228u
#define GPP_LINKTYPE_IPV6 229u
#define GPP_LINKTYPE_LINUX_SLL2 276u

typedef struct GppBatchHeader {
  uint32_t magic;               /* GPP_BATCH_MAGIC */
  uint16_t version;             /* GPP_BATCH_VERSION */
  uint16_t header_size;         /* sizeof (GppBatchHeader): descriptors start here */
  uint32_t packet_count;
  uint32_t linktype;            /* pcap LINKTYPE of every packet in the batch */
  uint64_t total_size;          /* bytes of the whole batch, header included */
  uint64_t reserved;            /* 0 */
} GppBatchHeader;

typedef struct GppPacketDesc {
  uint64_t timestamp_ns;  /* capture time, ns since the Unix epoch */
  uint64_t packet_number; /* 1-based number in the stream; pcapsrc gives the
                           * packet's place in the file (tshark's frame.number),
                           * also when its filter skipped packets before it */
  uint32_t offset;        /* first byte of the packet, from the start of the batch */
  uint32_t caplen;        /* bytes captured (present in the batch) */
  uint32_t wirelen;       /* bytes the packet had on the wire (>= caplen) */
  uint32_t reserved;      /* 0 */
} GppPacketDesc;

static inline size_t
gpp_align_up (size_t n, size_t a)
{
  return (n + a - 1) / a * a;
}

/* Where packet bytes start in a batch of @packet_count packets. */
static inline size_t
gpp_batch_data_start (uint32_t packet_count)
{
  return gpp_align_up (sizeof (GppBatchHeader) +
      (size_t) packet_count * sizeof (GppPacketDesc), GPP_PACKET_ALIGN);
}

/* Bytes a batch needs for @packet_count packets holding @sum_aligned_caplen
 * bytes, where each caplen was rounded up to GPP_PACKET_ALIGN. */
static inline size_t
gpp_batch_size (uint32_t packet_count, size_t sum_aligned_caplen)
{
  return gpp_batch_data_start (packet_count) + sum_aligned_caplen;
}

static inline const GppPacketDesc *
gpp_batch_descs (const void *batch)
{
  return (const GppPacketDesc *) ((const uint8_t *) batch +
      ((const GppBatchHeader *) batch)->header_size);
}

/* Checks a batch of @size bytes before anything reads it: header, sizes, and
 * that every descriptor stays inside the buffer.  Returns 1 when valid; else 0
 * with a one-line reason in @err. */
static inline int
gpp_batch_validate (const void *batch, size_t size, char *err, size_t err_len)
{
  const GppBatchHeader *h = (const GppBatchHeader *) batch;
  const GppPacketDesc *d;
  size_t data_start;
  uint32_t i;

  if (size < sizeof (GppBatchHeader)) {
    snprintf (err, err_len, "batch of %zu bytes is smaller than its %zu-byte header",
        size, sizeof (GppBatchHeader));
    return 0;
  }
  if (h->magic != GPP_BATCH_MAGIC) {
    snprintf (err, err_len, "bad batch magic 0x%08x (expected 0x%08x)",
        (unsigned) h->magic, (unsigned) GPP_BATCH_MAGIC);
    return 0;
  }
  if (h->version != GPP_BATCH_VERSION || h->header_size != sizeof (GppBatchHeader)) {
    snprintf (err, err_len, "unsupported batch version %u / header size %u "
        "(this build reads version %u, header size %zu)", (unsigned) h->version,
        (unsigned) h->header_size, (unsigned) GPP_BATCH_VERSION, sizeof (GppBatchHeader));
    return 0;
  }
  if (h->total_size != size) {
    snprintf (err, err_len, "batch header says %llu bytes but the buffer holds %zu",
        (unsigned long long) h->total_size, size);
    return 0;
  }
  if (h->packet_count > (size - sizeof (GppBatchHeader)) / sizeof (GppPacketDesc)) {
    snprintf (err, err_len, "%u packet descriptors do not fit in a %zu-byte batch",
        (unsigned) h->packet_count, size);
    return 0;
  }
  data_start = gpp_batch_data_start (h->packet_count);
  d = gpp_batch_descs (batch);
  for (i = 0; i < h->packet_count; i++) {
    if (d[i].offset < data_start || d[i].offset % GPP_PACKET_ALIGN != 0 ||
        (uint64_t) d[i].offset + d[i].caplen > size) {
      snprintf (err, err_len, "packet %u: bytes [%u, +%u) lie outside the packet "
          "area [%zu, %zu) or are not %u-byte aligned", (unsigned) i,
          (unsigned) d[i].offset, (unsigned) d[i].caplen, data_start, size,
          (unsigned) GPP_PACKET_ALIGN);
      return 0;
    }
    if (d[i].caplen > d[i].wirelen) {
      snprintf (err, err_len, "packet %u: captured length %u exceeds wire length %u",
          (unsigned) i, (unsigned) d[i].caplen, (unsigned) d[i].wirelen);
      return 0;
    }
  }
  return 1;
}

#ifdef __cplusplus
}
#endif
#endif /* GPUPACKET_PACKET_BATCH_H */
