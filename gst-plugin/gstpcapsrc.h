#pragma once

#include <gst/base/gstpushsrc.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_PCAP_SRC (gst_pcap_src_get_type ())
G_DECLARE_FINAL_TYPE (GstPcapSrc, gst_pcap_src, GST, PCAP_SRC, GstPushSrc)

GST_ELEMENT_REGISTER_DECLARE (pcapsrc);

G_END_DECLS
