/* mode=cpu's results buffers in ordinary memory, reused through a
 * GstBufferPool.  A fresh half-megabyte allocation per 4096-packet batch,
 * allocated on the streaming thread and freed on the push task's, made glibc
 * give the pages back and fault them in again: 8.4 page faults and ~250 us of
 * CPU a batch on the 2-core development VM. */
#pragma once

#include <gst/gst.h>

class GppResultsPool
{
public:
  GppResultsPool () = default;
  GppResultsPool (const GppResultsPool &) = delete;
  GppResultsPool & operator= (const GppResultsPool &) = delete;
  ~GppResultsPool ();

  /* A buffer of `size` bytes (the pool grows its buffers for a larger
   * batch), or NULL when no memory. */
  GstBuffer *acquire (gsize size);

private:
  GstBufferPool *pool_ = nullptr;
  gsize buffer_size_ = 0;
};
