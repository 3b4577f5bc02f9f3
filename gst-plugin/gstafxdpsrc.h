#pragma once

#include <gst/base/gstpushsrc.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_AF_XDP_SRC (gst_af_xdp_src_get_type ())
G_DECLARE_FINAL_TYPE (GstAfXdpSrc, gst_af_xdp_src, GST, AF_XDP_SRC, GstPushSrc)

GST_ELEMENT_REGISTER_DECLARE (afxdpsrc);

G_END_DECLS
