/* The gpupacket plugin: registers its elements.  It loads on machines
 * without a GPU; GPU modes are offered only where they work. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>

#if HAVE_AFXDP
#include "gstafxdpsrc.h"
#endif
#include "gstgpupacketproc.h"
#if HAVE_FIXBUF
#include "gstipfixsink.h"
#endif
#include "gstpacketresultenc.h"
#include "gstpackettestsrc.h"
#include "gstpcapsink.h"
#include "gstpcapsrc.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ok = FALSE;

  ok |= GST_ELEMENT_REGISTER (pcapsrc, plugin);
  ok |= GST_ELEMENT_REGISTER (gpupacketproc, plugin);
  ok |= GST_ELEMENT_REGISTER (packetresultenc, plugin);
  ok |= GST_ELEMENT_REGISTER (pcapsink, plugin);
  ok |= GST_ELEMENT_REGISTER (packettestsrc, plugin);
#if HAVE_FIXBUF
  ok |= GST_ELEMENT_REGISTER (ipfixsink, plugin);
#endif
#if HAVE_AFXDP
  ok |= GST_ELEMENT_REGISTER (afxdpsrc, plugin);
#endif
  return ok;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, gpupacket,
    "Low-latency packet processing on CPU and GPU: pcap input, parsing, RSS, results",
    plugin_init, PACKAGE_VERSION, "LGPL", "gpupacket", GST_PACKAGE_ORIGIN)
