#include "batchbuffer.h"

#include <chrono>

guint64
gpp_capture_clock_ns (void)
{
  return std::chrono::duration_cast<std::chrono::nanoseconds> (
      std::chrono::system_clock::now ().time_since_epoch ()).count ();
}

GstBuffer *
gpp_src_alloc_batch (GstBaseSrc * src, gsize size, GstMapInfo * map)
{
  GstAllocator *allocator = NULL;
  GstAllocationParams params;
  gst_base_src_get_allocator (src, &allocator, &params);
  GstBuffer *buf = gst_buffer_new_allocate (allocator, size, &params);
  if (allocator)
    gst_object_unref (allocator);
  if (!buf || !gst_buffer_map (buf, map, GST_MAP_WRITE)) {
    GST_ELEMENT_ERROR (src, RESOURCE, NO_SPACE_LEFT,
        ("Could not allocate a %" G_GSIZE_FORMAT "-byte packet batch.", size), (NULL));
    if (buf)
      gst_buffer_unref (buf);
    return NULL;
  }
  return buf;
}
