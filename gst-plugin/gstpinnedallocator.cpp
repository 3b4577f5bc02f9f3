#include "gstpinnedallocator.h"

#include <condition_variable>
#include <exception>
#include <mutex>

GST_DEBUG_CATEGORY_STATIC (gpp_pinned_allocator_debug);
#define GST_CAT_DEFAULT gpp_pinned_allocator_debug

#define GPP_PINNED_MEMORY_TYPE "GppPinnedMemory"

struct GppPinnedMemory
{
  GstMemory mem;
  guint8 *data;
};

struct GppArenaState
{
  std::unique_ptr<gpp::HostArena> arena;
  std::mutex lock;
  std::condition_variable freed;  /* signalled when memory goes back, or on a wake */
  guint64 generation = 0;       /* under `lock`: counts frees and wakes */
  std::atomic<guint64> fallbacks {0};
};

struct _GppPinnedAllocator
{
  GstAllocator parent;
  GppArenaState *state;
};

G_DEFINE_TYPE (GppPinnedAllocator, gpp_pinned_allocator, GST_TYPE_ALLOCATOR);

static GstMemory *
wrap (GstAllocator * allocator, GstMemory * parent, guint8 * data, gsize maxsize,
    gsize offset, gsize size)
{
  auto *m = g_new0 (GppPinnedMemory, 1);
  gst_memory_init (GST_MEMORY_CAST (m), (GstMemoryFlags) 0, allocator, parent, maxsize,
      gpp::HostArena::kAlign - 1, offset, size);
  m->data = data;
  return GST_MEMORY_CAST (m);
}

GstMemory *
gpp_pinned_allocator_try_alloc (GstAllocator * allocator, gsize size)
{
  GppPinnedAllocator *self = GPP_PINNED_ALLOCATOR (allocator);
  void *data = self->state->arena->allocate (MAX (size, 1));
  if (!data)
    return NULL;
  return wrap (allocator, NULL, static_cast<guint8 *> (data), size, 0, size);
}

GstMemory *
gpp_pinned_allocator_alloc_wait (GstAllocator * allocator, gsize size,
    const std::atomic<bool> &cancel)
{
  GppArenaState *st = GPP_PINNED_ALLOCATOR (allocator)->state;
  for (;;) {
    guint64 seen;
    {
      std::lock_guard<std::mutex> lock (st->lock);
      seen = st->generation;
    }
    GstMemory *mem = gpp_pinned_allocator_try_alloc (allocator, size);
    if (mem || cancel.load ())
      return mem;
    /* A free or a wake since `seen` ends the wait: none is lost between the
     * failed try and the wait. */
    std::unique_lock<std::mutex> lock (st->lock);
    st->freed.wait (lock, [&] { return st->generation != seen || cancel.load (); });
  }
}

void
gpp_pinned_allocator_wake (GstAllocator * allocator)
{
  GppArenaState *st = GPP_PINNED_ALLOCATOR (allocator)->state;
  std::lock_guard<std::mutex> lock (st->lock);
  st->generation++;
  st->freed.notify_all ();
}

/* The GstAllocator vfuncs are called from C: no exception may leave them.
 * The arena's bookkeeping can throw (std::bad_alloc); alloc then serves
 * ordinary memory as when the arena is full, and free logs and still frees
 * the wrapper. */
static GstMemory *
gpp_pinned_allocator_alloc (GstAllocator * allocator, gsize size, GstAllocationParams * params)
{
  GppPinnedAllocator *self = GPP_PINNED_ALLOCATOR (allocator);
  const gsize total = size + params->prefix + params->padding;
  GstMemory *mem = NULL;
  try {
    mem = gpp_pinned_allocator_try_alloc (allocator, total);
  } catch (const std::exception & e) {
    GST_ERROR_OBJECT (self, "pinned allocation of %" G_GSIZE_FORMAT " bytes failed: %s",
        total, e.what ());
  } catch (...) {
    GST_ERROR_OBJECT (self, "pinned allocation of %" G_GSIZE_FORMAT " bytes failed", total);
  }
  if (!mem) {
    /* Never fail upstream: hand out ordinary memory, which gpupacketproc
     * copies into the arena once there is room. */
    self->state->fallbacks++;
    GST_LOG_OBJECT (self, "arena full, %" G_GSIZE_FORMAT " bytes from system memory", total);
    return gst_allocator_alloc (NULL, size, params);
  }
  mem->offset = params->prefix;
  mem->size = size;
  return mem;
}

/* Gives the block back to the arena and wakes the waiters for room. */
static void
release_to_arena (GppArenaState * st, guint8 * data)
{
  st->arena->release (data);
  std::lock_guard<std::mutex> lock (st->lock);
  st->generation++;
  st->freed.notify_all ();
}

static void
gpp_pinned_allocator_free (GstAllocator * allocator, GstMemory * mem)
{
  GppArenaState *st = GPP_PINNED_ALLOCATOR (allocator)->state;
  auto *m = reinterpret_cast<GppPinnedMemory *> (mem);
  if (!mem->parent) {
    try {
      release_to_arena (st, m->data);
    } catch (const std::exception & e) {
      GST_ERROR_OBJECT (allocator, "returning %" G_GSIZE_FORMAT " bytes to the pinned arena "
          "failed: %s", mem->maxsize, e.what ());
    } catch (...) {
      GST_ERROR_OBJECT (allocator, "returning %" G_GSIZE_FORMAT " bytes to the pinned arena "
          "failed", mem->maxsize);
    }
  }
  g_free (m);
}

static gpointer
pinned_map (GstMemory * mem, gsize, GstMapFlags)
{
  return reinterpret_cast<GppPinnedMemory *> (mem)->data;
}

static void
pinned_unmap (GstMemory *)
{
}

static GstMemory *
pinned_share (GstMemory * mem, gssize offset, gssize size)
{
  auto *m = reinterpret_cast<GppPinnedMemory *> (mem);
  GstMemory *parent = mem->parent ? mem->parent : mem;
  if (size == -1)
    size = mem->size - offset;
  return wrap (mem->allocator, parent, m->data, mem->maxsize, mem->offset + offset, size);
}

gboolean
gpp_pinned_allocator_owns (GstAllocator * allocator, GstMemory * mem)
{
  return mem->allocator == allocator;
}

gsize
gpp_pinned_allocator_capacity (GstAllocator * allocator)
{
  return GPP_PINNED_ALLOCATOR (allocator)->state->arena->capacity ();
}

gsize
gpp_pinned_allocator_in_use (GstAllocator * allocator)
{
  return GPP_PINNED_ALLOCATOR (allocator)->state->arena->in_use ();
}

guint64
gpp_pinned_allocator_fallbacks (GstAllocator * allocator)
{
  return GPP_PINNED_ALLOCATOR (allocator)->state->fallbacks.load ();
}

static void
gpp_pinned_allocator_finalize (GObject * object)
{
  GppPinnedAllocator *self = GPP_PINNED_ALLOCATOR (object);
  GST_DEBUG_OBJECT (self, "freeing the pinned arena");
  delete self->state;
  G_OBJECT_CLASS (gpp_pinned_allocator_parent_class)->finalize (object);
}

static void
gpp_pinned_allocator_class_init (GppPinnedAllocatorClass * klass)
{
  GST_ALLOCATOR_CLASS (klass)->alloc = gpp_pinned_allocator_alloc;
  GST_ALLOCATOR_CLASS (klass)->free = gpp_pinned_allocator_free;
  G_OBJECT_CLASS (klass)->finalize = gpp_pinned_allocator_finalize;
  GST_DEBUG_CATEGORY_INIT (gpp_pinned_allocator_debug, "gpppinnedallocator", 0,
      "pinned host memory for gpupacket");
}

static void
gpp_pinned_allocator_init (GppPinnedAllocator * self)
{
  GstAllocator *alloc = GST_ALLOCATOR (self);
  alloc->mem_type = GPP_PINNED_MEMORY_TYPE;
  alloc->mem_map = pinned_map;
  alloc->mem_unmap = pinned_unmap;
  alloc->mem_share = pinned_share;
  GST_OBJECT_FLAG_SET (self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
  self->state = new GppArenaState ();
}

GstAllocator *
gpp_pinned_allocator_new (std::unique_ptr<gpp::HostArena> arena)
{
  auto *self = GPP_PINNED_ALLOCATOR (g_object_new (GPP_TYPE_PINNED_ALLOCATOR, NULL));
  gst_object_ref_sink (self);
  self->state->arena = std::move (arena);
  return GST_ALLOCATOR (self);
}
