#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

/* Values match gpp::Mode, gpp::WaitStrategy and gpp::HostMemoryKind (gpu/engine.h). */
typedef enum
{
  GST_GPU_PACKET_PROC_MODE_CPU = 0,
  GST_GPU_PACKET_PROC_MODE_STREAMS = 1,
  GST_GPU_PACKET_PROC_MODE_ZEROCOPY = 2,
  GST_GPU_PACKET_PROC_MODE_GRAPH = 3,
  GST_GPU_PACKET_PROC_MODE_PERSISTENT = 4,
} GstGpuPacketProcMode;

typedef enum
{
  GST_GPU_PACKET_PROC_WAIT_SPIN = 0,
  GST_GPU_PACKET_PROC_WAIT_YIELD = 1,
  GST_GPU_PACKET_PROC_WAIT_BLOCK = 2,
} GstGpuPacketProcWait;

typedef enum
{
  GST_GPU_PACKET_PROC_MEMORY_DEFAULT = 0,
  GST_GPU_PACKET_PROC_MEMORY_WRITE_COMBINED = 1,
  GST_GPU_PACKET_PROC_MEMORY_MAPPED = 2,
} GstGpuPacketProcMemory;

typedef enum
{
  GST_GPU_PACKET_PROC_ACTION_ALLOW = 1,
  GST_GPU_PACKET_PROC_ACTION_DROP = 2,
} GstGpuPacketProcAction;

/* Which contents of a Snort/Suricata rule become DPI patterns (gpu/dpi_patterns.h). */
typedef enum
{
  GST_GPU_PACKET_PROC_DPI_SELECT_ALL = 0,
  GST_GPU_PACKET_PROC_DPI_SELECT_FAST_PATTERN = 1,
} GstGpuPacketProcDpiSelect;

/* Whether the core walks into tunnels; the value is gpp::CoreConfig.decap. */
typedef enum
{
  GST_GPU_PACKET_PROC_DECAP_NONE = 0,
  GST_GPU_PACKET_PROC_DECAP_INNER = 1,
} GstGpuPacketProcDecap;

#define GST_TYPE_GPU_PACKET_PROC_DECAP (gst_gpu_packet_proc_decap_get_type ())
GType gst_gpu_packet_proc_decap_get_type (void);
#define GST_TYPE_GPU_PACKET_PROC_DPI_SELECT (gst_gpu_packet_proc_dpi_select_get_type ())
GType gst_gpu_packet_proc_dpi_select_get_type (void);
#define GST_TYPE_GPU_PACKET_PROC_ACTION (gst_gpu_packet_proc_action_get_type ())
GType gst_gpu_packet_proc_action_get_type (void);
#define GST_TYPE_GPU_PACKET_PROC_MODE (gst_gpu_packet_proc_mode_get_type ())
GType gst_gpu_packet_proc_mode_get_type (void);
#define GST_TYPE_GPU_PACKET_PROC_WAIT (gst_gpu_packet_proc_wait_get_type ())
GType gst_gpu_packet_proc_wait_get_type (void);
#define GST_TYPE_GPU_PACKET_PROC_MEMORY (gst_gpu_packet_proc_memory_get_type ())
GType gst_gpu_packet_proc_memory_get_type (void);

#define GST_TYPE_GPU_PACKET_PROC (gst_gpu_packet_proc_get_type ())
G_DECLARE_FINAL_TYPE (GstGpuPacketProc, gst_gpu_packet_proc, GST, GPU_PACKET_PROC,
    GstElement)

GST_ELEMENT_REGISTER_DECLARE (gpupacketproc);

G_END_DECLS
