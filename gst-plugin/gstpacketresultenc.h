#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

typedef enum
{
  GST_PACKET_RESULT_ENC_FORMAT_CSV = 0,
  GST_PACKET_RESULT_ENC_FORMAT_JSONL = 1,
} GstPacketResultEncFormat;

#define GST_TYPE_PACKET_RESULT_ENC_FORMAT (gst_packet_result_enc_format_get_type ())
GType gst_packet_result_enc_format_get_type (void);

#define GST_TYPE_PACKET_RESULT_ENC (gst_packet_result_enc_get_type ())
G_DECLARE_FINAL_TYPE (GstPacketResultEnc, gst_packet_result_enc, GST, PACKET_RESULT_ENC,
    GstElement)

GST_ELEMENT_REGISTER_DECLARE (packetresultenc);

G_END_DECLS
