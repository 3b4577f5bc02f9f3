#pragma once

#include <gst/base/gstbasesink.h>
#include <gst/gst.h>

G_BEGIN_DECLS

typedef enum
{
  GST_IPFIX_SINK_TRANSPORT_UDP = 0,
  GST_IPFIX_SINK_TRANSPORT_TCP = 1,
} GstIpfixSinkTransport;

#define GST_TYPE_IPFIX_SINK_TRANSPORT (gst_ipfix_sink_transport_get_type ())
GType gst_ipfix_sink_transport_get_type (void);

#define GST_TYPE_IPFIX_SINK (gst_ipfix_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstIpfixSink, gst_ipfix_sink, GST, IPFIX_SINK, GstBaseSink)

GST_ELEMENT_REGISTER_DECLARE (ipfixsink);

G_END_DECLS
