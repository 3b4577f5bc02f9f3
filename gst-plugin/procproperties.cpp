/* gpupacketproc's properties as gst-inspect shows them: the enum types and
 * each property's spec (name, blurb, range, default from procsettings.h,
 * when it may change).  README's property tables are checked against this
 * text (tests/gst/test_readme_properties.py). */
#include <cstdarg>

#include "cpu_engine.h"
#include "latencywindow.h"
#include "pinnedpools.h"
#include "procsettings.h"

static_assert ((int) GST_GPU_PACKET_PROC_DPI_SELECT_ALL == (int) gpp::DpiSelect::All &&
    (int) GST_GPU_PACKET_PROC_DPI_SELECT_FAST_PATTERN == (int) gpp::DpiSelect::FastPattern,
    "dpi-select values are gpp::DpiSelect's");

/* The element's enum values are gpp::Mode's. */
static_assert ((int) GST_GPU_PACKET_PROC_MODE_CPU == (int) gpp::Mode::Cpu &&
    (int) GST_GPU_PACKET_PROC_MODE_STREAMS == (int) gpp::Mode::Streams &&
    (int) GST_GPU_PACKET_PROC_MODE_ZEROCOPY == (int) gpp::Mode::ZeroCopy &&
    (int) GST_GPU_PACKET_PROC_MODE_GRAPH == (int) gpp::Mode::Graph &&
    (int) GST_GPU_PACKET_PROC_MODE_PERSISTENT == (int) gpp::Mode::Persistent &&
    gpp::kModeCount == 5, "GstGpuPacketProcMode values are gpp::Mode's");

GType
gst_gpu_packet_proc_mode_get_type (void)
{
  static GType type = 0;
  /* From gpp::kModes (gpu/engine.h), the one table of modes. */
  static GEnumValue modes[gpp::kModeCount + 1];

  if (g_once_init_enter (&type)) {
    for (int i = 0; i < gpp::kModeCount; i++)
      modes[i] = {(gint) gpp::kModes[i].mode, gpp::kModes[i].description, gpp::kModes[i].name};
    modes[gpp::kModeCount] = {0, NULL, NULL};
    GType t = g_enum_register_static ("GstGpuPacketProcMode", modes);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_packet_proc_action_get_type (void)
{
  static GType type = 0;
  static const GEnumValue actions[] = {
    {GST_GPU_PACKET_PROC_ACTION_ALLOW, "Allow the packet", "allow"},
    {GST_GPU_PACKET_PROC_ACTION_DROP, "Drop the packet", "drop"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuPacketProcAction", actions);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_packet_proc_dpi_select_get_type (void)
{
  static GType type = 0;
  /* Nicks from gpp::dpi_select_name, the loader's own names. */
  static GEnumValue selects[] = {
    {GST_GPU_PACKET_PROC_DPI_SELECT_ALL, "Every positive content of every rule "
          "(ids number contents)", NULL},
    {GST_GPU_PACKET_PROC_DPI_SELECT_FAST_PATTERN, "One content per rule as an IDS "
          "gives its multi-pattern matcher: the one marked fast_pattern, else the "
          "longest (ids number rules)", NULL},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    for (GEnumValue * v = selects; v->value_name; v++)
      v->value_nick = gpp::dpi_select_name ((gpp::DpiSelect) v->value);
    GType t = g_enum_register_static ("GstGpuPacketProcDpiSelect", selects);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_packet_proc_decap_get_type (void)
{
  static GType type = 0;
  static const GEnumValue decaps[] = {
    {GST_GPU_PACKET_PROC_DECAP_NONE, "Records of the packet as captured, the outermost "
          "headers (record-size=128)", "none"},
    {GST_GPU_PACKET_PROC_DECAP_INNER, "Records of the innermost packet of each tunnel, "
          "with the tunnels walked in a second plane (record-size=176)", "inner"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuPacketProcDecap", decaps);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_packet_proc_wait_get_type (void)
{
  static GType type = 0;
  static const GEnumValue waits[] = {
    {GST_GPU_PACKET_PROC_WAIT_SPIN, "Poll without pause: lowest latency, one busy core",
        "spin"},
    {GST_GPU_PACKET_PROC_WAIT_YIELD, "Poll, yielding the core between polls", "yield"},
    {GST_GPU_PACKET_PROC_WAIT_BLOCK, "Sleep until done: frees the core, about doubles "
          "completion latency", "block"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuPacketProcWait", waits);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_packet_proc_memory_get_type (void)
{
  static GType type = 0;
  static const GEnumValue kinds[] = {
    {GST_GPU_PACKET_PROC_MEMORY_DEFAULT, "Page-locked, cached (cudaHostAllocPortable)",
        "default"},
    {GST_GPU_PACKET_PROC_MEMORY_WRITE_COMBINED, "Write-combined batches: faster copies to "
          "the GPU, very slow for the CPU to read (bad for mode=cpu)", "write-combined"},
    {GST_GPU_PACKET_PROC_MEMORY_MAPPED, "Page-locked and explicitly mapped "
          "(cudaHostAllocMapped)", "mapped"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuPacketProcMemory", kinds);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* A property blurb that states a constant, printed from it (interned, so it
 * lives as long as the class, as G_PARAM_STATIC_BLURB needs). */
static const gchar *
blurb_printf (const gchar * format, ...) G_GNUC_PRINTF (1, 2);
static const gchar *
blurb_printf (const gchar * format, ...)
{
  va_list args;
  va_start (args, format);
  gchar *text = g_strdup_vprintf (format, args);
  va_end (args);
  const gchar *interned = g_intern_string (text);
  g_free (text);
  return interned;
}

void
gst_gpu_packet_proc_install_properties (GObjectClass * gobject_class)
{
  const auto rw_playing = (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_PLAYING);
  const auto rw_ready = (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY);

  gchar *default_key = rss_key_to_text (gpp::kDefaultRssKey);
  /* Defaults held as settings text, as a new element has them. */
  const GppProcSettings defaults;
  g_object_class_install_property (gobject_class, PROP_MODE,
      g_param_spec_enum ("mode", "Mode",
          "Where the packet core runs. Changing it while playing lets the batches "
          "in flight finish first and posts a LATENCY message (each mode reports "
          "its own measured p99 latency); GPU modes need a CUDA GPU (an error says "
          "why when there is none)", GST_TYPE_GPU_PACKET_PROC_MODE, DEFAULT_MODE, rw_playing));
  g_object_class_install_property (gobject_class, PROP_RSS_KEY,
      g_param_spec_string ("rss-key", "RSS key",
          "40-byte Toeplitz key as 80 hex digits (':', '-' or ' ' may separate "
          "bytes); the default is the standard Microsoft/Intel verification key "
          "most NICs use. Applies from the next batch", default_key, rw_playing));
  g_free (default_key);
  g_object_class_install_property (gobject_class, PROP_SYMMETRIC_RSS,
      g_param_spec_boolean ("symmetric-rss", "Symmetric RSS",
          "Hash both directions of a flow alike by ordering the (address, port) "
          "endpoints before hashing; off gives the NIC-compatible hash",
          DEFAULT_SYMMETRIC_RSS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_VERIFY_L4_CHECKSUM,
      g_param_spec_boolean ("verify-l4-checksum", "Verify L4 checksums",
          "Verify TCP, UDP, ICMP and ICMPv6 checksums of wholly captured, "
          "unfragmented packets; costs one pass over each payload. Off: "
          "l4_checksum reads 'unverified'", DEFAULT_VERIFY_L4_CHECKSUM, rw_playing));
  g_object_class_install_property (gobject_class, PROP_CPU_THREADS,
      g_param_spec_uint ("cpu-threads", "CPU threads",
          blurb_printf ("Host threads for mode=cpu (its packet core, and its flow table, "
              "which takes the value the element starts with), 0 = one per core; batches "
              "under %u packets per thread use fewer threads, since handing them out costs "
              "more. Raise it when batches of %u packets or more come faster than one core "
              "parses them", gpp::CpuEngine::kMinPacketsPerThread,
              2 * gpp::CpuEngine::kMinPacketsPerThread),
          0, MAX_CPU_THREADS, DEFAULT_CPU_THREADS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_DEVICE_ID,
      g_param_spec_int ("device-id", "Device ID", "CUDA device for the GPU modes",
          0, G_MAXINT, DEFAULT_DEVICE_ID, rw_ready));
  g_object_class_install_property (gobject_class, PROP_DEVICE_IDS,
      g_param_spec_string ("device-ids", "Device IDs",
          "Several CUDA devices for the GPU modes, e.g. \"0,1\" or \"all\" (empty: "
          "device-id alone): each batch's packets are sharded by flow (their symmetric RSS "
          "hash, computed on the host) over the devices, each share runs in the mode on its "
          "device, and the records come back merged in input order; flows=true then keeps "
          "its table in host memory. A device may repeat (\"0,0\": two shards on one GPU)",
          DEFAULT_DEVICE_IDS, rw_ready));
  g_object_class_install_property (gobject_class, PROP_NUM_STREAMS,
      g_param_spec_uint ("num-streams", "Streams",
          "GPU batches in flight at once (CUDA streams for streams/zerocopy/graph, "
          "queue slots for persistent): more overlap copies and kernels of "
          "neighbouring batches, each adds a batch of latency under load",
          1, MAX_NUM_STREAMS, DEFAULT_NUM_STREAMS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_POOL_SIZE,
      g_param_spec_uint ("pool-size", "Pinned pool size",
          blurb_printf ("MiB of pinned (page-locked) host memory for batches, and %zu "
              "times as much for results (%zu with decap=inner), allocated on READY→PAUSED "
              "when a GPU is usable; 0 = none (mode=cpu only). Limits the largest batch. "
              "Refused (an error) when the pools of every gpupacketproc of the process would "
              "pin more than %.0f%% of physical memory",
              GppPinnedPools::results_pool_factor (GPP_RESULTS_RECORD_SIZE),
              GppPinnedPools::results_pool_factor (GPP_RESULTS_RECORD_SIZE_TUNNELS),
              100 * GppPinnedPools::kMaxPinnedShare),
          0, MAX_POOL_SIZE, DEFAULT_POOL_SIZE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_POOL_MEMORY,
      g_param_spec_enum ("pool-memory", "Pinned pool memory kind",
          "Kind of pinned memory for batches (results are always cached memory)",
          GST_TYPE_GPU_PACKET_PROC_MEMORY, DEFAULT_POOL_MEMORY, rw_ready));
  g_object_class_install_property (gobject_class, PROP_PERSISTENT_BLOCKS,
      g_param_spec_uint ("persistent-blocks", "Persistent blocks",
          "Resident 256-thread blocks of mode=persistent, 0 = one per SM. Without "
          "acl-rules, batches of up to 256 packets run on one block whatever this is "
          "and larger ones are shared out 256 packets per block; with acl-rules the "
          "shares hold about one ACL probe per thread (at least 16 packets)",
          0, 65535, DEFAULT_PERSISTENT_BLOCKS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_WAIT_STRATEGY,
      g_param_spec_enum ("wait-strategy", "Wait strategy",
          "How the host waits for GPU batches to finish",
          GST_TYPE_GPU_PACKET_PROC_WAIT, DEFAULT_WAIT, rw_playing));
  g_object_class_install_property (gobject_class, PROP_LOW_LATENCY,
      g_param_spec_boolean ("low-latency", "Low latency",
          "The streaming thread waits for each batch (mode=cpu: runs it) and pushes its "
          "results itself, with no hand-off to the src pad's task: lower and steadier "
          "latency for one batch at a time, but the next batch no longer arrives while "
          "this one runs (leave off for throughput from files; on behind a live source on "
          "few cores, where the task's thread competes with the capture's)",
          DEFAULT_LOW_LATENCY, rw_playing));
  g_object_class_install_property (gobject_class, PROP_PACKET_RECORDS,
      g_param_spec_boolean ("packet-records", "Packet records",
          "Push each batch's packet records on the src pad. FALSE: a gap event takes each "
          "batch's place there, and streams, zerocopy and graph on one device leave the "
          "records on the GPU (no copy back; zerocopy writes none), for flows=true alone at "
          "the highest rate; malformed in stats is then not counted in those modes",
          DEFAULT_PACKET_RECORDS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_FLOWS,
      g_param_spec_boolean ("flows", "Flows",
          "Meter flows: every packet whose IP header parsed is counted into its bidirectional "
          "flow, and the records of flows that end leave by the flows pad "
          "(application/x-flow-records, gpupacket/flow-record.h). The table is in GPU memory "
          "in the GPU modes (each batch's kernel counts its packets there), in host memory in "
          "cpu", DEFAULT_FLOWS, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FLOW_IDLE_TIMEOUT,
      g_param_spec_uint ("flow-idle-timeout", "Flow idle timeout",
          "Seconds of packet time without a packet after which a flow ends",
          1, G_MAXUINT, DEFAULT_FLOW_IDLE_TIMEOUT, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FLOW_ACTIVE_TIMEOUT,
      g_param_spec_uint ("flow-active-timeout", "Flow active timeout",
          "Seconds of packet time after which a flow still going is written out and "
          "counted afresh", 1, G_MAXUINT, DEFAULT_FLOW_ACTIVE_TIMEOUT, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FLOW_MAX,
      g_param_spec_uint ("flow-max", "Flow table size",
          "Flows tracked at once (the table takes 256 bytes a flow); when more are open, "
          "those idle longest are evicted (end reason: lack of resources)",
          64, 1u << 30, DEFAULT_FLOW_MAX, rw_ready));
  g_object_class_install_property (gobject_class, PROP_COMMUNITY_ID_SEED,
      g_param_spec_uint ("community-id-seed", "Community ID seed",
          "Seed of the flow records' Community ID (v1)", 0, G_MAXUINT16,
          DEFAULT_COMMUNITY_ID_SEED, rw_ready));
  g_object_class_install_property (gobject_class, PROP_ACL_RULES,
      g_param_spec_string ("acl-rules", "ACL rules",
          "ClassBench / DPDK test-acl rule file (README: ACL rules); each packet gets "
          "the 0-based index of the first matching rule and its action. Set while "
          "playing, the new file is loaded off the streaming path and applies from "
          "the next batch; a bad file keeps the old rules (warning)", DEFAULT_ACL_RULES,
          rw_playing));
  g_object_class_install_property (gobject_class, PROP_DEFAULT_ACTION,
      g_param_spec_enum ("default-action", "Default action",
          "ACL action of packets no rule matches (non-IP packets included)",
          GST_TYPE_GPU_PACKET_PROC_ACTION, DEFAULT_DEFAULT_ACTION, rw_playing));
  g_object_class_install_property (gobject_class, PROP_DPI_PATTERNS,
      g_param_spec_string ("dpi-patterns", "DPI patterns",
          "Pattern file (one literal per line, |41 42| hex escapes) or Snort/Suricata "
          "rule file (its content strings); each packet gets the smallest id of a "
          "pattern in its TCP/UDP payload and the number of occurrences. Swapped like "
          "acl-rules while playing. A directory loads its *.rules files in name "
          "order (an IDS rule folder)", DEFAULT_DPI_PATTERNS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_DPI_SELECT,
      g_param_spec_enum ("dpi-select", "DPI pattern selection",
          "Which contents of the rules in dpi-patterns are matched (pattern lines "
          "are always patterns); set while playing, the file is reloaded with it",
          GST_TYPE_GPU_PACKET_PROC_DPI_SELECT, DEFAULT_DPI_SELECT, rw_playing));
  g_object_class_install_property (gobject_class, PROP_DECAP,
      g_param_spec_enum ("decap", "Decapsulation",
          blurb_printf ("none: each record describes the packet as captured. inner: the core "
              "walks through up to %d nested tunnels (VXLAN, GENEVE, GRE/NVGRE, ERSPAN, GTP-U, "
              "IP-in-IP, Teredo, PPPoE, PBB, VN-Tag, E-Tag) and the record describes the "
              "innermost packet, followed by the tunnels walked: the output caps then say "
              "record-size=176 instead of 128, which a reader of 128-byte records refuses at "
              "negotiation", GPP_MAX_TUNNEL_DEPTH),
          GST_TYPE_GPU_PACKET_PROC_DECAP, DEFAULT_DECAP, rw_ready));
  g_object_class_install_property (gobject_class, PROP_VXLAN_PORTS,
      g_param_spec_string ("vxlan-ports", "VXLAN ports",
          "With decap=inner, the UDP destination ports taken as VXLAN: one or two, separated "
          "by a comma (\"4789,8472\": IANA's and Linux's older default), or empty for none. An "
          "invalid list fails start-up; set while playing, it applies from the next batch, "
          "or is ignored with a warning when invalid", defaults.vxlan_ports_text.get (),
          rw_playing));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          blurb_printf ("Since the last READY→PAUSED: active-mode; batches, packets, bytes "
          "(captured), malformed (packets with any status flag); "
          "latency-p50/p99/p999/max-ns (chain entry to result push, last %zu "
          "batches) overall and as MODE-latency-p50/p99/p999-ns with MODE-batches "
          "for each mode used; capture-latency-p50/p99/p999/max-ns (capture "
          "timestamp of each batch's first packet to its result push, wall clock, "
          "last %zu batches; recorded only when upstream answers the LATENCY query as live, 0 otherwise); "
          "batches-in-flight, max-batches-in-flight; time-pool-wait-ns, time-slot-wait-ns, "
          "time-queued-ns, time-engine-ns, time-push-ns (where the batches' time went, summed: "
          "waiting for pinned pool room, waiting for an engine slot, queued for the push task, "
          "in the engine, pushing downstream); "
          "bytes-to-device, bytes-from-device; copied-batches, copied-bytes "
          "(batches from outside the pinned pool); pool-fallbacks (upstream "
          "allocations the full pool could not serve); pool-bytes-in-use (the next batch's "
          "results memory, taken ahead in GPU modes, included); "
          "pool-bytes-pinned (both pools); acl-rule-count, acl-bytes, dpi-pattern-count, "
          "dpi-bytes (the sets in use; their bytes are what a GPU mode holds in device "
          "memory for them); with device-ids, for each shard N: shard-N-device-id, "
          "shard-N-packets, shard-N-bytes-to-device, shard-N-bytes-from-device (engines "
          "replaced or stopped since the start still count)", LatencyWindow::kCapacity, LatencyWindow::kCapacity),
          GST_TYPE_STRUCTURE, (GParamFlags) (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_type_mark_as_plugin_api (GST_TYPE_GPU_PACKET_PROC_MODE, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_PACKET_PROC_WAIT, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_PACKET_PROC_MEMORY, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_PACKET_PROC_ACTION, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_PACKET_PROC_DPI_SELECT, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_PACKET_PROC_DECAP, (GstPluginAPIFlags) 0);
}
