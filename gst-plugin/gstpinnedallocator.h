/* A GstAllocator over one pinned host-memory arena (gpu/engine.h HostArena).
 * gpupacketproc offers it upstream in the ALLOCATION query so sources write
 * batches straight into memory the GPU can copy from (or read) directly. */
#pragma once

#include <gst/gst.h>

#include <atomic>
#include <memory>

#include "engine.h"

G_BEGIN_DECLS

#define GPP_TYPE_PINNED_ALLOCATOR (gpp_pinned_allocator_get_type ())
G_DECLARE_FINAL_TYPE (GppPinnedAllocator, gpp_pinned_allocator, GPP, PINNED_ALLOCATOR,
    GstAllocator)

G_END_DECLS

/* Takes the arena; the arena lives as long as the allocator and every memory
 * it handed out. */
GstAllocator *gpp_pinned_allocator_new (std::unique_ptr<gpp::HostArena> arena);

/* Memory from the arena, or NULL when it has no room now.  (The alloc vfunc,
 * used by upstream elements, falls back to system memory instead and counts
 * the fallback.) */
GstMemory *gpp_pinned_allocator_try_alloc (GstAllocator * allocator, gsize size);

/* Waits for room, up to the moment `cancel` becomes true (then NULL); whoever
 * sets `cancel` calls gpp_pinned_allocator_wake () so the wait ends at once. */
GstMemory *gpp_pinned_allocator_alloc_wait (GstAllocator * allocator, gsize size,
    const std::atomic<bool> &cancel);

/* Wakes the threads waiting in gpp_pinned_allocator_alloc_wait () to look at
 * their `cancel` again. */
void gpp_pinned_allocator_wake (GstAllocator * allocator);

/* Whether `mem` came from this allocator's arena. */
gboolean gpp_pinned_allocator_owns (GstAllocator * allocator, GstMemory * mem);

gsize gpp_pinned_allocator_capacity (GstAllocator * allocator);
gsize gpp_pinned_allocator_in_use (GstAllocator * allocator);
guint64 gpp_pinned_allocator_fallbacks (GstAllocator * allocator);
