#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

typedef enum
{
  GST_GPU_PACKET_PROC_MODE_CPU = 0,
} GstGpuPacketProcMode;

#define GST_TYPE_GPU_PACKET_PROC_MODE (gst_gpu_packet_proc_mode_get_type ())
GType gst_gpu_packet_proc_mode_get_type (void);

#define GST_TYPE_GPU_PACKET_PROC (gst_gpu_packet_proc_get_type ())
G_DECLARE_FINAL_TYPE (GstGpuPacketProc, gst_gpu_packet_proc, GST, GPU_PACKET_PROC,
    GstElement)

GST_ELEMENT_REGISTER_DECLARE (gpupacketproc);

G_END_DECLS
