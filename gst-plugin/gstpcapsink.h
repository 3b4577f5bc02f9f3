#pragma once

#include <gst/base/gstbasesink.h>
#include <gst/gst.h>

G_BEGIN_DECLS

typedef enum
{
  GST_PCAP_SINK_VERDICT_ALL = 0,
  GST_PCAP_SINK_VERDICT_ALLOW = 1,
  GST_PCAP_SINK_VERDICT_DROP = 2,
} GstPcapSinkVerdict;

#define GST_TYPE_PCAP_SINK_VERDICT (gst_pcap_sink_verdict_get_type ())
GType gst_pcap_sink_verdict_get_type (void);

#define GST_TYPE_PCAP_SINK (gst_pcap_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstPcapSink, gst_pcap_sink, GST, PCAP_SINK, GstBaseSink)

GST_ELEMENT_REGISTER_DECLARE (pcapsink);

G_END_DECLS
