/* Buffers of ordinary memory reused through a GstBufferPool whose buffer
 * size follows the largest request: mode=cpu's results and packetresultenc's
 * text.  A fresh allocation of a batch's size (half a megabyte of results,
 * 0.7-2.2 MB of text for 4096 packets) is mapped anew by malloc and
 * page-faulted as it is written: for results allocated on the streaming
 * thread and freed on the push task's, 8.4 page faults and ~250 us of CPU a
 * batch on the 2-core development VM; for text, 6% of a JSON Lines
 * pipeline's time. */
#pragma once

#include <gst/gst.h>

class GppResultsPool
{
public:
  /* A larger request replaces the pool with buffers of its size plus
   * size / spare_divisor (0: none), rounded up to whole pages. */
  explicit GppResultsPool (gsize spare_divisor = 0) : spare_divisor_ (spare_divisor) {}
  GppResultsPool (const GppResultsPool &) = delete;
  GppResultsPool & operator= (const GppResultsPool &) = delete;
  ~GppResultsPool ();

  /* A buffer of `size` bytes (the pool grows its buffers for a larger
   * request), or NULL when no memory or past what a pool's buffer holds. */
  GstBuffer *acquire (gsize size);

private:
  GstBufferPool *pool_ = nullptr;
  gsize buffer_size_ = 0;
  gsize spare_divisor_;
};
