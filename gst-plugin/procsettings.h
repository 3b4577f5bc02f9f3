/* gpupacketproc's settings: what users set through its properties, kept
 * under the element's object lock apart from the state the streaming
 * threads own (gst-plugins-rs `Settings` vs `State`).  Each default is
 * defined here once (the property specs and the struct both read it); the
 * property texts are parsed and checked here, and the values a start and
 * each batch run with are taken from here. */
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "acl_rules.h"
#include "dpi_patterns.h"
#include "engine.h"
#include "flow_meter.h"
#include "gstgpupacketproc.h"

#define DEFAULT_MODE GST_GPU_PACKET_PROC_MODE_CPU
#define DEFAULT_SYMMETRIC_RSS FALSE
#define DEFAULT_VERIFY_L4_CHECKSUM FALSE
#define DEFAULT_CPU_THREADS 1
#define MAX_CPU_THREADS 1024
#define DEFAULT_DEVICE_ID (gpp::EngineSettings {}.device_id)
#define DEFAULT_DEVICE_IDS NULL
#define DEFAULT_NUM_STREAMS gpp::kDefaultNumStreams
#define MAX_NUM_STREAMS gpp::kMaxNumStreams
#define DEFAULT_POOL_SIZE gpp::kDefaultPoolSizeMib
#define MAX_POOL_SIZE (64 * 1024)
#define DEFAULT_POOL_MEMORY GST_GPU_PACKET_PROC_MEMORY_DEFAULT
#define DEFAULT_PERSISTENT_BLOCKS (gpp::EngineSettings {}.persistent_blocks)
#define DEFAULT_WAIT ((GstGpuPacketProcWait) gpp::EngineSettings {}.wait)
#define DEFAULT_LOW_LATENCY FALSE
#define DEFAULT_PACKET_RECORDS TRUE
#define DEFAULT_FLOWS FALSE
#define DEFAULT_FLOW_IDLE_TIMEOUT gpp::kDefaultFlowIdleTimeoutS
#define DEFAULT_FLOW_ACTIVE_TIMEOUT gpp::kDefaultFlowActiveTimeoutS
#define DEFAULT_FLOW_MAX gpp::kDefaultMaxFlows
#define DEFAULT_COMMUNITY_ID_SEED gpp::kDefaultCommunityIdSeed
#define DEFAULT_ACL_RULES NULL
#define DEFAULT_DPI_PATTERNS NULL
#define DEFAULT_DEFAULT_ACTION GST_GPU_PACKET_PROC_ACTION_ALLOW
#define DEFAULT_DPI_SELECT GST_GPU_PACKET_PROC_DPI_SELECT_ALL
#define DEFAULT_DECAP GST_GPU_PACKET_PROC_DECAP_NONE

enum
{
  PROP_0,
  PROP_MODE,
  PROP_RSS_KEY,
  PROP_SYMMETRIC_RSS,
  PROP_VERIFY_L4_CHECKSUM,
  PROP_CPU_THREADS,
  PROP_DEVICE_ID,
  PROP_DEVICE_IDS,
  PROP_NUM_STREAMS,
  PROP_POOL_SIZE,
  PROP_POOL_MEMORY,
  PROP_PERSISTENT_BLOCKS,
  PROP_WAIT_STRATEGY,
  PROP_LOW_LATENCY,
  PROP_PACKET_RECORDS,
  PROP_FLOWS,
  PROP_FLOW_IDLE_TIMEOUT,
  PROP_FLOW_ACTIVE_TIMEOUT,
  PROP_FLOW_MAX,
  PROP_COMMUNITY_ID_SEED,
  PROP_ACL_RULES,
  PROP_DEFAULT_ACTION,
  PROP_DPI_PATTERNS,
  PROP_DPI_SELECT,
  PROP_DECAP,
  PROP_VXLAN_PORTS,
  PROP_STATS,
};

/* Installs the element's properties, each with its default from here
 * (procproperties.cpp). */
void gst_gpu_packet_proc_install_properties (GObjectClass * gobject_class);

/* device-ids: "" (device-id alone), "all" (every CUDA device), or device
 * numbers separated by commas ("0,1"; a device may repeat: "0,0" runs two
 * shards on one GPU).  Each parser returns NULL on success or a newly
 * allocated message saying what is wrong. */
gchar *device_ids_from_text (const gchar * text, std::vector<int> *ids);
/* The key as 80 hex digits, the form the rss-key property shows. */
gchar *rss_key_to_text (const uint8_t * key);
/* 40 bytes of hex, ':', '-' and space allowed between digit pairs (the
 * forms ethtool -x and driver docs print). */
gchar *rss_key_from_text (const gchar * text, uint8_t * key);
/* vxlan-ports: one or two UDP ports separated by a comma ("4789,8472"), or
 * "" (no port is taken as VXLAN); unused places of `ports` are 0. */
gchar *vxlan_ports_from_text (const gchar * text, uint16_t * ports);
/* The ports as vxlan-ports shows them ("4789"). */
gchar *vxlan_ports_to_text (const uint16_t * ports);

/* A string owned here (g_free), NULL allowed: a text property as set. */
class GppText
{
public:
  GppText () = default;
  explicit GppText (gchar * taken) : text_ (taken) {}
  const gchar *get () const { return text_.get (); }
  void take (gchar * text) { text_.reset (text); }
  void set (const gchar * text) { text_.reset (g_strdup (text)); }

private:
  struct Free
  {
    void operator() (gchar * text) const { g_free (text); }
  };
  std::unique_ptr<gchar, Free> text_;
};

/* A rule or pattern file property: what it holds (for messages), the path
 * as set, why it was refused (or NULL), and the set loaded from it
 * (nullptr: none). */
template <typename Set>
struct GppLoadedFile
{
  explicit GppLoadedFile (const char *holds) : what (holds) {}
  const char *const what;       /* "ACL rules", "DPI patterns" */
  GppText path;
  GppText error;
  std::shared_ptr<const Set> set;
  bool warn_empty_at_start = false;     /* an empty set came before start: say so then */
};

/* What one batch runs with, taken whole under the object lock: a batch runs
 * wholly with the old or wholly with the new value of every property. */
struct GppBatchSettings
{
  gpp::Mode mode = gpp::Mode::Cpu;
  gpp::CoreConfig config {};    /* its acl and dpi point into the sets below */
  gpp::EngineSettings engine;
  std::shared_ptr<const gpp::AclRuleSet> acl;   /* held while the batch runs */
  std::shared_ptr<const gpp::DpiPatternSet> dpi;
  bool push_records = true;     /* packet-records: false pushes a gap instead */
  bool low_latency = false;
  guint pool_size_mib = 0;      /* for the messages of a batch too large */
};

/* What a start (READY→PAUSED) sets up, taken under the object lock. */
struct GppStartSettings
{
  gpp::Mode mode = gpp::Mode::Cpu;
  gpp::EngineSettings engine;
  bool flows = false;           /* flows=true: meter them with `flow` */
  gpp::FlowSettings flow;
  int pool_device = 0;          /* the pinned pools live with it */
  guint pool_size_mib = 0;
  gpp::HostMemoryKind pool_kind = gpp::HostMemoryKind::Default;
  guint record_size = GPP_RESULTS_RECORD_SIZE;  /* a packet's results: decap's */
};

struct GppProcSettings
{
  GstGpuPacketProcMode mode = DEFAULT_MODE;
  /* rss-key, symmetric-rss, verify-l4-checksum, decap, vxlan-ports */
  gpp::CoreConfig config = default_config ();
  GppText rss_key_text {rss_key_to_text (gpp::kDefaultRssKey)};  /* as the user wrote it */
  GppText rss_key_error;        /* why rss_key_text was refused, or NULL */
  GppText vxlan_ports_text {vxlan_ports_to_text (default_config ().vxlan_ports)};
  GppText vxlan_ports_error;    /* why vxlan_ports_text was refused, or NULL */
  guint cpu_threads = DEFAULT_CPU_THREADS;
  gint device_id = DEFAULT_DEVICE_ID;
  GppText device_ids_text;      /* as the user wrote it */
  GppText device_ids_error;     /* why it was refused, or NULL */
  std::vector<int> device_ids;  /* parsed: empty = device-id alone */
  guint num_streams = DEFAULT_NUM_STREAMS;
  guint pool_size_mib = DEFAULT_POOL_SIZE;
  GstGpuPacketProcMemory pool_memory = DEFAULT_POOL_MEMORY;
  guint persistent_blocks = DEFAULT_PERSISTENT_BLOCKS;
  GstGpuPacketProcWait wait_strategy = DEFAULT_WAIT;
  gboolean low_latency = DEFAULT_LOW_LATENCY;
  gboolean packet_records = DEFAULT_PACKET_RECORDS;
  gboolean flows = DEFAULT_FLOWS;
  guint flow_idle_timeout = DEFAULT_FLOW_IDLE_TIMEOUT;
  guint flow_active_timeout = DEFAULT_FLOW_ACTIVE_TIMEOUT;
  guint flow_max = DEFAULT_FLOW_MAX;
  guint community_id_seed = DEFAULT_COMMUNITY_ID_SEED;
  GppLoadedFile<gpp::AclRuleSet> acl {"ACL rules"};
  GstGpuPacketProcAction default_action = DEFAULT_DEFAULT_ACTION;
  GppLoadedFile<gpp::DpiPatternSet> dpi {"DPI patterns"};
  GstGpuPacketProcDpiSelect dpi_select = DEFAULT_DPI_SELECT;

  /* The properties held as plain values: sets or reads `prop_id`, FALSE
   * when it is not one of them. */
  bool set_value (guint prop_id, const GValue * value);
  bool get_value (guint prop_id, GValue * value) const;
  /* rss-key from `text`.  An invalid key is kept with its error (start
   * fails on it), or with `keep_current` refused: the key in use stays and
   * the error is returned for the caller to warn with (and free). */
  gchar *set_rss_key (const gchar * text, bool keep_current);
  /* vxlan-ports from `text`, refused like rss-key. */
  gchar *set_vxlan_ports (const gchar * text, bool keep_current);
  /* device-ids as parsed (outside the lock) by device_ids_from_text. */
  void set_device_ids (const gchar * text, std::vector<int> ids, gchar * error);

  /* Why the element cannot start with these settings, as the text of its
   * error, or NULL (free it). */
  gchar *start_error () const;
  /* The bytes of one packet's results with decap as set: the caps'
   * record-size. */
  guint record_size () const { return (guint) gpp::results_bytes (1, config); }
  GppStartSettings start () const;
  GppBatchSettings batch () const;

private:
  static gpp::CoreConfig default_config ();
  /* The engine the properties ask for. */
  gpp::EngineSettings engine_settings () const;
};
