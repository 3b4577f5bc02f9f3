/* Batch buffers for the sources: memory from the allocator downstream
 * proposed in the ALLOCATION query (gpupacketproc's pinned pool), so a batch
 * is written once, where the GPU reads it. */
#pragma once

#include <gst/base/gstbasesrc.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "livetimestamp.h"

/* Now on the clock of the descriptors' capture timestamps (the wall clock,
 * ns since the epoch, as libpcap stamps live packets). */
guint64 gpp_capture_clock_ns (void);

/* A `size`-byte buffer mapped for writing into `map`; NULL, with an element
 * error posted, when no memory could be had. */
GstBuffer *gpp_src_alloc_batch (GstBaseSrc * src, gsize size, GstMapInfo * map);

/* Plain memory for batches where downstream proposes no allocator (fakesink,
 * filesink): freed blocks are kept and handed out again, so a batch is not
 * written into fresh pages that fault in one by one (a 1.5 MiB batch is 384
 * page faults).  Blocks outlive the recycler while buffers hold them. */
class GppBatchRecycler
{
public:
  GppBatchRecycler ();
  ~GppBatchRecycler ();
  GppBatchRecycler (const GppBatchRecycler &) = delete;
  GppBatchRecycler & operator= (const GppBatchRecycler &) = delete;

  /* A `size`-byte buffer mapped for writing, from a kept block when one is
   * large enough. */
  GstBuffer *alloc (gsize size, GstMapInfo * map);

  struct Shelf;
private:
  std::shared_ptr<Shelf> shelf_;
};

/* As gpp_src_alloc_batch, from `recycler` where downstream proposed no
 * allocator of its own. */
GstBuffer *gpp_src_alloc_batch_recycled (GstBaseSrc * src, gsize size, GstMapInfo * map,
    GppBatchRecycler * recycler);

/* A batch buffer that a source's own thread (a capture file's reader, an
 * AF_XDP queue) writes while mapped: the handle travels with the batch. */
struct GppMappedBatch
{
  GstBuffer *buffer;
  GstMapInfo map;
};

/* A `size`-byte batch from downstream's allocator or `recycler`, mapped for
 * writing; NULL (an element error posted) when none could be had. */
GppMappedBatch *gpp_mapped_batch_new (GstBaseSrc * src, gsize size, GppBatchRecycler * recycler);

/* Unmaps the batch behind `handle` (a GppMappedBatch), frees the handle and
 * returns the buffer. */
GstBuffer *gpp_mapped_batch_finish (void *handle);

/* The Allocate of a capture library's threads (capture/: BatchProducer,
 * XdpCapture, PcapFanout): gpp_mapped_batch_new, its handle in *memory. */
std::function<uint8_t *(size_t, void **)> gpp_mapped_batch_allocator (GstBaseSrc * src,
    GppBatchRecycler * recycler);

/* Frees a batch such a thread wrote that was never pushed. */
void gpp_mapped_batch_discard (void *handle);

/* A live batch's PTS: the running time at which its first packet was
 * captured (`first_ns`, wall clock), by `timestamp` (the source's); its
 * duration reaches `last_ns`. */
void gpp_src_timestamp_live (GstElement * src, GppLiveTimestamp & timestamp, GstBuffer * buf,
    guint64 first_ns, guint64 last_ns);
