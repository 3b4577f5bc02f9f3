#include "resultspool.h"

GppResultsPool::~GppResultsPool ()
{
  if (pool_) {
    /* Buffers still downstream hold the pool and free themselves. */
    gst_buffer_pool_set_active (pool_, FALSE);
    gst_object_unref (pool_);
  }
}

GstBuffer *
GppResultsPool::acquire (gsize size)
{
  if (size > G_MAXUINT / 5 * 4)   /* past what a pool's buffer size holds */
    return NULL;
  if (!pool_ || size > buffer_size_) {
    if (pool_) {
      gst_buffer_pool_set_active (pool_, FALSE);
      gst_object_unref (pool_);
    }
    /* Whole pages: batches of nearly the same size share the pool. */
    buffer_size_ = MAX (size + (spare_divisor_ ? size / spare_divisor_ : 0), (gsize) 1);
    buffer_size_ = (buffer_size_ + 4095) & ~(gsize) 4095;
    pool_ = gst_buffer_pool_new ();
    GstStructure *config = gst_buffer_pool_get_config (pool_);
    /* No maximum: the engine's slots and downstream bound what is out. */
    gst_buffer_pool_config_set_params (config, NULL, (guint) buffer_size_, 0, 0);
    if (!gst_buffer_pool_set_config (pool_, config) ||
        !gst_buffer_pool_set_active (pool_, TRUE)) {
      gst_clear_object (&pool_);
      buffer_size_ = 0;
      return NULL;
    }
  }
  GstBuffer *buffer = NULL;
  if (gst_buffer_pool_acquire_buffer (pool_, &buffer, NULL) != GST_FLOW_OK)
    return NULL;
  gst_buffer_resize (buffer, 0, size);
  return buffer;
}
