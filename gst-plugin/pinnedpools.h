/* gpupacketproc's pinned memory: a pool for batches (pool-size) and one for
 * results, both GstAllocators over a gpp::HostArena, and the cap on what
 * all elements of the process may pin together.  Opened at READY→PAUSED,
 * closed (and the process's count given back) when destroyed. */
#pragma once

#include <gst/gst.h>

#include <string>

#include "engine.h"
#include "gpupacket/packet-batch.h"

class GppPinnedPools
{
public:
  /* The results pool is this many times pool-size, for results of
   * `record_size` bytes a packet (the caps' record-size): each packet takes
   * at least a 32-byte descriptor of a batch (caplen 0), so 4 for 128-byte
   * records and 6 with their tunnel plane (176). */
  static constexpr size_t results_pool_factor (size_t record_size)
  {
    return (record_size + sizeof (GppPacketDesc) - 1) / sizeof (GppPacketDesc);
  }
  /* Pinned pages cannot be swapped out: all pools of all elements of the
   * process together may take at most this share of physical memory (CUDA's
   * advice is to stay well under half). */
  static constexpr double kMaxPinnedShare = 0.5;

  enum class Open
  {
    Ok,       /* both pools are there */
    NoPool,   /* none (no_pool_reason () says why): mode=cpu only */
    Refused   /* the process would pin more than kMaxPinnedShare: `why` says so */
  };

  GppPinnedPools () = default;
  GppPinnedPools (const GppPinnedPools &) = delete;
  GppPinnedPools & operator= (const GppPinnedPools &) = delete;
  ~GppPinnedPools ();

  /* Opens pools of `bytes` for batches on `device` (0: none), and its
   * results pool for results of `record_size` bytes a packet. */
  Open open (int device, size_t bytes, gpp::HostMemoryKind kind, size_t record_size,
      std::string * why);

  GstAllocator *input () const { return input_; }
  GstAllocator *results () const { return results_; }
  const std::string & no_pool_reason () const { return no_pool_reason_; }
  size_t pinned_bytes () const { return pinned_bytes_; }
  size_t results_bytes () const { return results_bytes_; }
  guint64 fallbacks () const;
  guint64 in_use () const;
  /* Wakes every wait for pool room (a flush starts). */
  void wake ();

private:
  GstAllocator *input_ = nullptr;
  GstAllocator *results_ = nullptr;
  std::string no_pool_reason_;
  size_t pinned_bytes_ = 0;     /* both pools, counted in the process's total */
  size_t results_bytes_ = 0;    /* the results pool's */
};
