#include "pinnedpools.h"

#include <atomic>
#include <cstdio>

#include "gstpinnedallocator.h"

namespace {

/* Bytes pinned by every gpupacketproc of this process. */
std::atomic<uint64_t> pinned_in_process {0};

/* Physical memory (MemTotal of /proc/meminfo) in bytes; 0 if unknown. */
uint64_t
physical_memory_bytes (void)
{
  FILE *f = fopen ("/proc/meminfo", "r");
  if (!f)
    return 0;
  char line[256];
  unsigned long long kib = 0;
  while (fgets (line, sizeof line, f))
    if (sscanf (line, "MemTotal: %llu kB", &kib) == 1)
      break;
  fclose (f);
  return (uint64_t) kib * 1024;
}

} // namespace

GppPinnedPools::~GppPinnedPools ()
{
  if (input_)
    gst_object_unref (input_);
  if (results_)
    gst_object_unref (results_);
  pinned_in_process -= pinned_bytes_;
}

GppPinnedPools::Open
GppPinnedPools::open (int device, size_t bytes, gpp::HostMemoryKind kind, size_t record_size,
    std::string * why)
{
  const size_t factor = results_pool_factor (record_size);
  const uint64_t request = (uint64_t) bytes * (1 + factor);
  const uint64_t physical = physical_memory_bytes ();
  const uint64_t pinned_before = pinned_in_process.load ();
  if (bytes != 0 && physical && pinned_before + request > kMaxPinnedShare * physical) {
    gchar *text = g_strdup_printf ("pool-size=%u needs %" G_GUINT64_FORMAT " MiB of pinned "
        "memory (input pool and a results pool %zu times its size), and the process has "
        "%" G_GUINT64_FORMAT " MiB pinned already; together more than half of the "
        "machine's %" G_GUINT64_FORMAT " MiB, which would starve the host (pinned pages "
        "cannot be swapped)", (guint) (bytes >> 20), request >> 20, factor,
        pinned_before >> 20, physical >> 20);
    *why = text;
    g_free (text);
    return Open::Refused;
  }
  std::string error;
  if (bytes == 0) {
    no_pool_reason_ = "pool-size is 0";
    return Open::NoPool;
  }
  if (!(error = gpp::gpu_unavailable_reason (device)).empty ()) {
    no_pool_reason_ = error;
    return Open::NoPool;
  }
  /* Results are read by the CPU: never write-combined. */
  const auto results_kind = kind == gpp::HostMemoryKind::WriteCombined ?
      gpp::HostMemoryKind::Default : kind;
  const size_t results_bytes = factor * bytes;
  auto input = gpp::make_host_arena (device, bytes, kind, &error);
  auto results = input ? gpp::make_host_arena (device, results_bytes, results_kind, &error) :
      nullptr;
  if (!input || !results) {
    no_pool_reason_ = "pinned pools of " + std::to_string (bytes >> 20) + " + " +
        std::to_string (results_bytes >> 20) + " MiB: " + error;
    return Open::NoPool;
  }
  input_ = gpp_pinned_allocator_new (std::move (input));
  results_ = gpp_pinned_allocator_new (std::move (results));
  pinned_bytes_ = bytes + results_bytes;
  results_bytes_ = results_bytes;
  pinned_in_process += pinned_bytes_;
  return Open::Ok;
}

guint64
GppPinnedPools::fallbacks () const
{
  return input_ ? gpp_pinned_allocator_fallbacks (input_) : 0;
}

guint64
GppPinnedPools::in_use () const
{
  return input_ ? gpp_pinned_allocator_in_use (input_) + gpp_pinned_allocator_in_use (results_) :
      0;
}

void
GppPinnedPools::wake ()
{
  for (GstAllocator *allocator : {input_, results_})
    if (allocator)
      gpp_pinned_allocator_wake (allocator);
}
