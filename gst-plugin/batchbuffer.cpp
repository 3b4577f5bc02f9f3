#include "batchbuffer.h"

#include <gpupacket/packet-batch.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <vector>

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

/* Blocks waiting for their next batch.  Shared with every buffer out there,
 * whose release puts its block back (or frees it once the shelf is full). */
struct GppBatchRecycler::Shelf
{
  static constexpr size_t kMaxBlocks = 8;
  std::mutex lock;
  std::vector<std::pair<void *, gsize>> blocks;

  ~Shelf ()
  {
    for (auto & b : blocks)
      std::free (b.first);
  }
};

namespace {

struct LentBlock
{
  std::shared_ptr<GppBatchRecycler::Shelf> shelf;
  void *data;
  gsize capacity;
};

void
return_block (gpointer user_data)
{
  auto *lent = static_cast<LentBlock *> (user_data);
  {
    std::lock_guard<std::mutex> guard (lent->shelf->lock);
    if (lent->shelf->blocks.size () < GppBatchRecycler::Shelf::kMaxBlocks) {
      lent->shelf->blocks.emplace_back (lent->data, lent->capacity);
      lent->data = nullptr;
    }
  }
  std::free (lent->data);
  delete lent;
}

} // namespace

GppBatchRecycler::GppBatchRecycler ():shelf_ (std::make_shared<Shelf> ())
{
}

GppBatchRecycler::~GppBatchRecycler () = default;

GstBuffer *
GppBatchRecycler::alloc (gsize size, GstMapInfo * map)
{
  void *data = nullptr;
  gsize capacity = 0;
  {
    /* The smallest kept block that fits, and not one far larger than the
     * batch (a file's last, short batch does not pin a large block). */
    std::lock_guard<std::mutex> guard (shelf_->lock);
    auto best = shelf_->blocks.end ();
    for (auto it = shelf_->blocks.begin (); it != shelf_->blocks.end (); ++it)
      if (it->second >= size && it->second <= 2 * size + (1u << 20) &&
          (best == shelf_->blocks.end () || it->second < best->second))
        best = it;
    if (best != shelf_->blocks.end ()) {
      data = best->first;
      capacity = best->second;
      shelf_->blocks.erase (best);
    }
  }
  if (!data) {
    /* A little room above this batch, so that the next, a few packets
     * longer, fits the same block. */
    capacity = gpp_align_up (size + size / 8 + 4096, 4096);
    data = std::aligned_alloc (4096, capacity);
    if (!data)
      return NULL;
  }
  auto *lent = new LentBlock { shelf_, data, capacity };
  GstBuffer *buf = gst_buffer_new_wrapped_full ((GstMemoryFlags) 0, data, capacity, 0, size,
      lent, return_block);
  if (!gst_buffer_map (buf, map, GST_MAP_WRITE)) {
    gst_buffer_unref (buf);
    return NULL;
  }
  return buf;
}

GstBuffer *
gpp_src_alloc_batch_recycled (GstBaseSrc * src, gsize size, GstMapInfo * map,
    GppBatchRecycler * recycler)
{
  GstAllocator *allocator = NULL;
  GstAllocationParams params;
  gst_base_src_get_allocator (src, &allocator, &params);
  const gboolean plain = !allocator || g_strcmp0 (allocator->mem_type, GST_ALLOCATOR_SYSMEM) == 0;
  if (allocator)
    gst_object_unref (allocator);
  if (!plain)
    return gpp_src_alloc_batch (src, size, map);
  GstBuffer *buf = recycler->alloc (size, map);
  if (!buf)
    GST_ELEMENT_ERROR (src, RESOURCE, NO_SPACE_LEFT,
        ("Could not allocate a %" G_GSIZE_FORMAT "-byte packet batch.", size), (NULL));
  return buf;
}

GppMappedBatch *
gpp_mapped_batch_new (GstBaseSrc * src, gsize size, GppBatchRecycler * recycler)
{
  auto *mapped = new GppMappedBatch ();
  mapped->buffer = gpp_src_alloc_batch_recycled (src, size, &mapped->map, recycler);
  if (!mapped->buffer) {
    delete mapped;
    return nullptr;
  }
  return mapped;
}

GstBuffer *
gpp_mapped_batch_finish (void *handle)
{
  auto *mapped = static_cast<GppMappedBatch *> (handle);
  GstBuffer *buffer = mapped->buffer;
  gst_buffer_unmap (buffer, &mapped->map);
  delete mapped;
  return buffer;
}

void
gpp_src_timestamp_live (GstElement * src, GppLiveTimestamp & timestamp, GstBuffer * buf,
    guint64 first_ns, guint64 last_ns)
{
  const GstClockTime pts = timestamp.running_time (src, first_ns, gpp_capture_clock_ns ());
  if (!GST_CLOCK_TIME_IS_VALID (pts))
    return;
  GST_BUFFER_PTS (buf) = GST_BUFFER_DTS (buf) = pts;
  /* Timestamps from different CPUs may be slightly out of ring order. */
  GST_BUFFER_DURATION (buf) = last_ns > first_ns ? last_ns - first_ns : 0;
}

std::function<uint8_t *(size_t, void **)>
gpp_mapped_batch_allocator (GstBaseSrc * src, GppBatchRecycler * recycler)
{
  return[src, recycler] (size_t size, void **memory) -> uint8_t * {
    GppMappedBatch *mapped = gpp_mapped_batch_new (src, size, recycler);
    *memory = mapped;
    return mapped ? mapped->map.data : nullptr;
  };
}

void
gpp_mapped_batch_discard (void *handle)
{
  gst_buffer_unref (gpp_mapped_batch_finish (handle));
}
