#include "gpupacket/gstpacketbatchmeta.h"

GType
gst_packet_batch_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };

  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register (GST_PACKET_BATCH_META_API_NAME, tags);
    g_once_init_leave (&type, t);
  }
  return type;
}

static gboolean
gst_packet_batch_meta_init (GstMeta * meta, gpointer, GstBuffer *)
{
  reinterpret_cast<GstPacketBatchMeta *> (meta)->batch = NULL;
  return TRUE;
}

static void
gst_packet_batch_meta_free (GstMeta * meta, GstBuffer *)
{
  gst_clear_buffer (&reinterpret_cast<GstPacketBatchMeta *> (meta)->batch);
}

static gboolean
gst_packet_batch_meta_transform (GstBuffer * dest, GstMeta * meta, GstBuffer *,
    GQuark type, gpointer)
{
  /* Results and their batch stay together through copies; any other
   * transformation (a region of the results) would break the pairing. */
  if (!GST_META_TRANSFORM_IS_COPY (type))
    return FALSE;
  gst_buffer_add_packet_batch_meta (dest,
      reinterpret_cast<GstPacketBatchMeta *> (meta)->batch);
  return TRUE;
}

const GstMetaInfo *
gst_packet_batch_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter (&info)) {
    const GstMetaInfo *i = gst_meta_register (GST_PACKET_BATCH_META_API_TYPE,
        "GstPacketBatchMeta", sizeof (GstPacketBatchMeta),
        gst_packet_batch_meta_init, gst_packet_batch_meta_free,
        gst_packet_batch_meta_transform);
    g_once_init_leave (&info, i);
  }
  return info;
}

GstPacketBatchMeta *
gst_buffer_add_packet_batch_meta (GstBuffer * buffer, GstBuffer * batch)
{
  auto *meta = reinterpret_cast<GstPacketBatchMeta *> (gst_buffer_add_meta (buffer,
          gst_packet_batch_meta_get_info (), NULL));
  meta->batch = gst_buffer_ref (batch);
  return meta;
}
