/* GstPacketBatchMeta: attached by gpupacketproc to every results buffer; it
 * holds a reference to the input batch those results describe, so that
 * downstream elements and applications see packets and results together. */
#ifndef GPUPACKET_GST_PACKET_BATCH_META_H
#define GPUPACKET_GST_PACKET_BATCH_META_H

#include <gst/gst.h>

G_BEGIN_DECLS

/* Applications that do not link the plugin find the meta by this API name:
 *   gst_buffer_get_meta (buf, g_type_from_name (GST_PACKET_BATCH_META_API_NAME)) */
#define GST_PACKET_BATCH_META_API_NAME "GstPacketBatchMetaAPI"

typedef struct _GstPacketBatchMeta {
  GstMeta meta;
  GstBuffer *batch; /* the application/x-packet-batch buffer (owned reference) */
} GstPacketBatchMeta;

GType gst_packet_batch_meta_api_get_type (void);
const GstMetaInfo *gst_packet_batch_meta_get_info (void);
#define GST_PACKET_BATCH_META_API_TYPE (gst_packet_batch_meta_api_get_type ())
#define gst_buffer_get_packet_batch_meta(b) \
  ((GstPacketBatchMeta *) gst_buffer_get_meta ((b), GST_PACKET_BATCH_META_API_TYPE))

GstPacketBatchMeta *gst_buffer_add_packet_batch_meta (GstBuffer * buffer, GstBuffer * batch);

/* A batch's GstMemory that every CUDA device reads at its host address
 * (host memory registered with cudaHostRegister (..., cudaHostRegisterPortable
 * | cudaHostRegisterMapped), as afxdpsrc frames-in-place registers its UMEMs)
 * carries qdata of this name, any non-NULL value (gpp_memory_mark_device_mapped): gpupacketproc's zerocopy
 * and persistent modes then read the batch where it lies instead of copying
 * it into their pinned pool.  The memory stays registered while the buffer
 * lives. */
#define GPP_DEVICE_MAPPED_QDATA "gpp-device-mapped"

static inline void
gpp_memory_mark_device_mapped (GstMemory * mem)
{
  gst_mini_object_set_qdata (GST_MINI_OBJECT_CAST (mem),
      g_quark_from_static_string (GPP_DEVICE_MAPPED_QDATA), GINT_TO_POINTER (1), NULL);
}

static inline gboolean
gpp_memory_is_device_mapped (GstMemory * mem)
{
  return gst_mini_object_get_qdata (GST_MINI_OBJECT_CAST (mem),
      g_quark_from_static_string (GPP_DEVICE_MAPPED_QDATA)) != NULL;
}

G_END_DECLS

#endif
