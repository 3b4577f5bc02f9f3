/* Batch buffers for the sources: memory from the allocator downstream
 * proposed in the ALLOCATION query (gpupacketproc's pinned pool), so a batch
 * is written once, where the GPU reads it. */
#pragma once

#include <gst/base/gstbasesrc.h>

/* Now on the clock of the descriptors' capture timestamps (the wall clock,
 * ns since the epoch, as libpcap stamps live packets). */
guint64 gpp_capture_clock_ns (void);

/* A `size`-byte buffer mapped for writing into `map`; NULL, with an element
 * error posted, when no memory could be had. */
GstBuffer *gpp_src_alloc_batch (GstBaseSrc * src, gsize size, GstMapInfo * map);
