#include "procsettings.h"

#include <algorithm>
#include <cstring>

#include "engine.h"
#include "gpupacket/packet-result.h"
#include "sharded_engine.h"

namespace {

/* A property that takes a comma-separated list of numbers. */
struct NumberList
{
  const char *property;
  gint64 min, max;              /* each number's range */
  size_t most;                  /* numbers in a list, at most */
  const char *one;              /* what a number is, for messages: "a UDP port" */
  const char *how;              /* how to write the list */
  const char *many;             /* what the numbers are: "ports" */

  /* The numbers of `text` (spaces around each allowed); NULL, or why they
   * are not a list of this property (free it). */
  gchar *parse (const gchar * text, std::vector<gint64> *numbers) const
  {
    numbers->clear ();
    gchar **parts = g_strsplit (text, ",", -1);
    gchar *error = NULL;
    for (gchar ** p = parts; *p && !error; p++) {
      gchar *item = g_strstrip (*p);
      gchar *end = NULL;
      const gint64 n = g_ascii_strtoll (item, &end, 10);
      if (!*item || *end || n < min || n > max)
        error = g_strdup_printf ("%s \"%s\": \"%s\" is not %s (%s)", property, text, item, one,
            how);
      else
        numbers->push_back (n);
    }
    g_strfreev (parts);
    if (!error && numbers->size () > most)
      error = g_strdup_printf ("%s \"%s\": at most %zu %s", property, text, most, many);
    if (error)
      numbers->clear ();
    return error;
  }
};

} // namespace

gchar *
device_ids_from_text (const gchar * text, std::vector<int> *ids)
{
  ids->clear ();
  if (!text || !*text)
    return NULL;
  if (g_strcmp0 (text, "all") == 0) {
    const int count = gpp::gpu_device_count ();
    if (count == 0)
      return g_strdup ("device-ids=all: no CUDA device is usable here");
    for (int d = 0; d < count; d++)
      ids->push_back (d);
    return NULL;
  }
  static const NumberList kDeviceIds = {"device-ids", 0, G_MAXINT, gpp::kMaxShards,
    "a device number", "write numbers separated by commas, or all", "devices"};
  std::vector<gint64> numbers;
  gchar *error = kDeviceIds.parse (text, &numbers);
  ids->assign (numbers.begin (), numbers.end ());
  return error;
}

gchar *
rss_key_to_text (const uint8_t * key)
{
  GString *s = g_string_sized_new (2 * gpp::kRssKeySize);
  for (int i = 0; i < gpp::kRssKeySize; i++)
    g_string_append_printf (s, "%02x", key[i]);
  return g_string_free (s, FALSE);
}

gchar *
rss_key_from_text (const gchar * text, uint8_t * key)
{
  int n = 0;
  const gchar *p = text;

  while (*p) {
    if (*p == ':' || *p == '-' || *p == ' ') {
      p++;
      continue;
    }
    if (!g_ascii_isxdigit (p[0]) || !g_ascii_isxdigit (p[1]))
      return g_strdup_printf ("rss-key \"%s\": expected hex digit pairs at \"%s\"",
          text, p);
    if (n == gpp::kRssKeySize)
      return g_strdup_printf ("rss-key \"%s\": longer than %d bytes", text,
          gpp::kRssKeySize);
    key[n++] = (uint8_t) (g_ascii_xdigit_value (p[0]) * 16 + g_ascii_xdigit_value (p[1]));
    p += 2;
  }
  if (n != gpp::kRssKeySize)
    return g_strdup_printf ("rss-key \"%s\": %d bytes, a Toeplitz key needs %d",
        text, n, gpp::kRssKeySize);
  return NULL;
}

/* The VXLAN ports the core takes. */
static constexpr size_t kVxlanPortCount = G_N_ELEMENTS (gpp::CoreConfig {}.vxlan_ports);

gchar *
vxlan_ports_from_text (const gchar * text, uint16_t * ports)
{
  ports[0] = ports[1] = 0;
  if (!text || !*text)
    return NULL;
  static const NumberList kVxlanPorts = {"vxlan-ports", 1, G_MAXUINT16, kVxlanPortCount,
    "a UDP port", "write one or two ports from 1 to 65535 separated by a comma", "ports"};
  std::vector<gint64> numbers;
  gchar *error = kVxlanPorts.parse (text, &numbers);
  std::copy (numbers.begin (), numbers.end (), ports);
  return error;
}

gchar *
vxlan_ports_to_text (const uint16_t * ports)
{
  GString *s = g_string_new (NULL);
  for (size_t i = 0; i < kVxlanPortCount; i++)
    if (ports[i])
      g_string_append_printf (s, "%s%u", s->len ? "," : "", ports[i]);
  return g_string_free (s, FALSE);
}

/* Properties whose values the engine takes by a cast. */
static_assert ((int) GST_GPU_PACKET_PROC_WAIT_SPIN == (int) gpp::WaitStrategy::Spin &&
    (int) GST_GPU_PACKET_PROC_WAIT_YIELD == (int) gpp::WaitStrategy::Yield &&
    (int) GST_GPU_PACKET_PROC_WAIT_BLOCK == (int) gpp::WaitStrategy::Block,
    "wait-strategy values are gpp::WaitStrategy's");
static_assert ((int) GST_GPU_PACKET_PROC_MEMORY_DEFAULT == (int) gpp::HostMemoryKind::Default &&
    (int) GST_GPU_PACKET_PROC_MEMORY_WRITE_COMBINED == (int) gpp::HostMemoryKind::WriteCombined &&
    (int) GST_GPU_PACKET_PROC_MEMORY_MAPPED == (int) gpp::HostMemoryKind::Mapped,
    "pool-memory values are gpp::HostMemoryKind's");
static_assert ((int) GST_GPU_PACKET_PROC_ACTION_ALLOW == GPP_ACL_ALLOW &&
    (int) GST_GPU_PACKET_PROC_ACTION_DROP == GPP_ACL_DROP,
    "default-action values are the records' GPP_ACL_* actions");
static_assert ((int) GST_GPU_PACKET_PROC_DECAP_NONE == 0 &&
    (int) GST_GPU_PACKET_PROC_DECAP_INNER == 1, "decap values are gpp::CoreConfig.decap's");

gpp::CoreConfig
GppProcSettings::default_config ()
{
  gpp::CoreConfig config;
  memset (&config, 0, sizeof config);
  memcpy (config.rss_key, gpp::kDefaultRssKey, sizeof config.rss_key);
  config.symmetric_rss = DEFAULT_SYMMETRIC_RSS;
  config.verify_l4_checksum = DEFAULT_VERIFY_L4_CHECKSUM;
  config.decap = DEFAULT_DECAP;
  config.vxlan_ports[0] = gpp::kVxlanPort;
  return config;
}

bool
GppProcSettings::set_value (guint prop_id, const GValue * value)
{
  switch (prop_id) {
    case PROP_SYMMETRIC_RSS:
      config.symmetric_rss = g_value_get_boolean (value);
      break;
    case PROP_VERIFY_L4_CHECKSUM:
      config.verify_l4_checksum = g_value_get_boolean (value);
      break;
    case PROP_CPU_THREADS:
      cpu_threads = g_value_get_uint (value);
      break;
    case PROP_DEVICE_ID:
      device_id = g_value_get_int (value);
      break;
    case PROP_NUM_STREAMS:
      num_streams = g_value_get_uint (value);
      break;
    case PROP_POOL_SIZE:
      pool_size_mib = g_value_get_uint (value);
      break;
    case PROP_POOL_MEMORY:
      pool_memory = (GstGpuPacketProcMemory) g_value_get_enum (value);
      break;
    case PROP_PERSISTENT_BLOCKS:
      persistent_blocks = g_value_get_uint (value);
      break;
    case PROP_WAIT_STRATEGY:
      wait_strategy = (GstGpuPacketProcWait) g_value_get_enum (value);
      break;
    case PROP_LOW_LATENCY:
      low_latency = g_value_get_boolean (value);
      break;
    case PROP_PACKET_RECORDS:
      packet_records = g_value_get_boolean (value);
      break;
    case PROP_FLOWS:
      flows = g_value_get_boolean (value);
      break;
    case PROP_FLOW_IDLE_TIMEOUT:
      flow_idle_timeout = g_value_get_uint (value);
      break;
    case PROP_FLOW_ACTIVE_TIMEOUT:
      flow_active_timeout = g_value_get_uint (value);
      break;
    case PROP_FLOW_MAX:
      flow_max = g_value_get_uint (value);
      break;
    case PROP_COMMUNITY_ID_SEED:
      community_id_seed = g_value_get_uint (value);
      break;
    case PROP_DEFAULT_ACTION:
      default_action = (GstGpuPacketProcAction) g_value_get_enum (value);
      break;
    case PROP_DECAP:
      config.decap = (uint8_t) g_value_get_enum (value);
      break;
    default:
      return false;
  }
  return true;
}

bool
GppProcSettings::get_value (guint prop_id, GValue * value) const
{
  switch (prop_id) {
    case PROP_MODE:
      g_value_set_enum (value, mode);
      break;
    case PROP_RSS_KEY:
      g_value_set_string (value, rss_key_text.get ());
      break;
    case PROP_SYMMETRIC_RSS:
      g_value_set_boolean (value, config.symmetric_rss);
      break;
    case PROP_VERIFY_L4_CHECKSUM:
      g_value_set_boolean (value, config.verify_l4_checksum);
      break;
    case PROP_CPU_THREADS:
      g_value_set_uint (value, cpu_threads);
      break;
    case PROP_DEVICE_ID:
      g_value_set_int (value, device_id);
      break;
    case PROP_DEVICE_IDS:
      g_value_set_string (value, device_ids_text.get ());
      break;
    case PROP_NUM_STREAMS:
      g_value_set_uint (value, num_streams);
      break;
    case PROP_POOL_SIZE:
      g_value_set_uint (value, pool_size_mib);
      break;
    case PROP_POOL_MEMORY:
      g_value_set_enum (value, pool_memory);
      break;
    case PROP_PERSISTENT_BLOCKS:
      g_value_set_uint (value, persistent_blocks);
      break;
    case PROP_WAIT_STRATEGY:
      g_value_set_enum (value, wait_strategy);
      break;
    case PROP_LOW_LATENCY:
      g_value_set_boolean (value, low_latency);
      break;
    case PROP_PACKET_RECORDS:
      g_value_set_boolean (value, packet_records);
      break;
    case PROP_FLOWS:
      g_value_set_boolean (value, flows);
      break;
    case PROP_FLOW_IDLE_TIMEOUT:
      g_value_set_uint (value, flow_idle_timeout);
      break;
    case PROP_FLOW_ACTIVE_TIMEOUT:
      g_value_set_uint (value, flow_active_timeout);
      break;
    case PROP_FLOW_MAX:
      g_value_set_uint (value, flow_max);
      break;
    case PROP_COMMUNITY_ID_SEED:
      g_value_set_uint (value, community_id_seed);
      break;
    case PROP_ACL_RULES:
      g_value_set_string (value, acl.path.get ());
      break;
    case PROP_DEFAULT_ACTION:
      g_value_set_enum (value, default_action);
      break;
    case PROP_DPI_SELECT:
      g_value_set_enum (value, dpi_select);
      break;
    case PROP_DPI_PATTERNS:
      g_value_set_string (value, dpi.path.get ());
      break;
    case PROP_DECAP:
      g_value_set_enum (value, config.decap);
      break;
    case PROP_VXLAN_PORTS:
      g_value_set_string (value, vxlan_ports_text.get ());
      break;
    default:
      return false;
  }
  return true;
}

gchar *
GppProcSettings::set_rss_key (const gchar * text, bool keep_current)
{
  uint8_t key[gpp::kRssKeySize];
  gchar *error = rss_key_from_text (text ? text : "", key);
  if (error && keep_current)
    return error;
  rss_key_error.take (error);
  rss_key_text.set (text);
  if (!error)
    memcpy (config.rss_key, key, sizeof key);
  return NULL;
}

gchar *
GppProcSettings::set_vxlan_ports (const gchar * text, bool keep_current)
{
  uint16_t ports[kVxlanPortCount];
  gchar *error = vxlan_ports_from_text (text, ports);
  if (error && keep_current)
    return error;
  vxlan_ports_error.take (error);
  vxlan_ports_text.set (text ? text : "");
  if (!error)
    memcpy (config.vxlan_ports, ports, sizeof ports);
  return NULL;
}

void
GppProcSettings::set_device_ids (const gchar * text, std::vector<int> ids, gchar * error)
{
  device_ids = std::move (ids);
  device_ids_error.take (error);
  device_ids_text.set (text);
}

gchar *
GppProcSettings::start_error () const
{
  if (rss_key_error.get ())
    return g_strdup_printf ("Invalid %s.", rss_key_error.get ());
  if (device_ids_error.get ())
    return g_strdup_printf ("Invalid %s.", device_ids_error.get ());
  if (vxlan_ports_error.get ())
    return g_strdup_printf ("Invalid %s.", vxlan_ports_error.get ());
  if (acl.error.get ())
    return g_strdup_printf ("Invalid %s: %s", acl.what, acl.error.get ());
  if (dpi.error.get ())
    return g_strdup_printf ("Invalid %s: %s", dpi.what, dpi.error.get ());
  return NULL;
}

gpp::EngineSettings
GppProcSettings::engine_settings () const
{
  gpp::EngineSettings settings;
  settings.cpu_threads = cpu_threads;
  settings.device_id = device_id;
  /* Several devices: an engine that shards by flow over them. */
  if (device_ids.size () == 1)
    settings.device_id = device_ids.front ();
  else if (device_ids.size () > 1)
    settings.device_ids = device_ids;
  settings.num_streams = num_streams;
  settings.persistent_blocks = persistent_blocks;
  settings.wait = static_cast<gpp::WaitStrategy> (wait_strategy);
  settings.max_batch_bytes = (size_t) pool_size_mib << 20;
  settings.records_to_host = packet_records;
  /* low-latency: each batch on the streaming thread; otherwise the next one
   * arrives while the engine's threads run this one. */
  settings.cpu_pipelined = !low_latency;
  return settings;
}

GppStartSettings
GppProcSettings::start () const
{
  GppStartSettings start;
  start.mode = static_cast<gpp::Mode> (mode);
  start.engine = engine_settings ();
  start.flows = flows;
  start.flow.max_flows = flow_max;
  start.flow.idle_timeout_ns = (guint64) flow_idle_timeout * GST_SECOND;
  start.flow.active_timeout_ns = (guint64) flow_active_timeout * GST_SECOND;
  start.flow.community_id_seed = (uint16_t) community_id_seed;
  /* A host flow table (mode=cpu) counts on as many threads as the cpu mode
   * parses on. */
  start.flow.threads = cpu_threads;
  /* The pool is portable pinned memory; it lives with the first device. */
  start.pool_device = device_ids.empty () ? device_id : device_ids.front ();
  start.pool_size_mib = pool_size_mib;
  start.pool_kind = static_cast<gpp::HostMemoryKind> (pool_memory);
  start.record_size = record_size ();
  return start;
}

GppBatchSettings
GppProcSettings::batch () const
{
  GppBatchSettings batch;
  batch.mode = static_cast<gpp::Mode> (mode);
  batch.config = config;
  batch.acl = acl.set;
  batch.dpi = dpi.set;
  batch.config.acl = batch.acl ? batch.acl->blob.data () : nullptr;
  batch.config.acl_default_action = batch.acl ? (uint8_t) default_action :
      (uint8_t) GPP_ACL_NONE;
  batch.config.dpi = batch.dpi ? batch.dpi->blob.data () : nullptr;
  batch.engine = engine_settings ();
  batch.push_records = packet_records;
  batch.low_latency = low_latency;
  batch.pool_size_mib = pool_size_mib;
  return batch;
}
