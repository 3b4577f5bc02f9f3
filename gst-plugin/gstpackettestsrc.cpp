/**
 * SECTION:element-packettestsrc
 * @title: packettestsrc
 *
 * Synthetic packet batches, as videotestsrc is for video: Ethernet frames of
 * a size #GstPacketTestSrc:profile over #GstPacketTestSrc:flows distinct
 * 5-tuples, with valid checksums.  Headers can be drawn from an ACL rule file
 * and payloads can carry patterns from a DPI pattern file, at chosen rates,
 * so the classification stages do real work.  A ring of batches is generated
 * on READY→PAUSED and replayed (packet numbers and timestamps renewed), each
 * batch in memory from the downstream allocator (gpupacketproc's pinned
 * pool).  The batches are copied there once, into a pool of buffers that
 * come back to the source when downstream is done with them: a replay then
 * renews only the descriptors, so the source costs far less than the
 * element it feeds (a copy per batch took ~30 us of a 4096 x 64-byte batch,
 * the GPU modes' whole budget at 150-270 Mpps).  #GstPacketTestSrc:rate
 * paces it for latency runs.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 packettestsrc profile=imix flows=100000 num-buffers=10000 batch-size=4096 ! \
 *     gpupacketproc mode=graph ! fakesink
 * ]|
 */
#include "gstpackettestsrc.h"
#include "noexcept.h"
#include "readyonly.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "batch_builder.h"
#include "batchbuffer.h"
#include "gstpinnedallocator.h"
#include "traffic_gen.h"

GST_DEBUG_CATEGORY_STATIC (gst_packet_test_src_debug);
#define GST_CAT_DEFAULT gst_packet_test_src_debug

#define DEFAULT_PROFILE GST_PACKET_TEST_SRC_PROFILE_MIX
#define DEFAULT_FLOWS 1024
#define DEFAULT_SEED 1
#define DEFAULT_BATCH_SIZE 256
#define DEFAULT_RING_BATCHES 16
#define DEFAULT_RATE 0
#define DEFAULT_RATE_SHARE 0.0
/* The generated ring stays below this (frames are at most 1518 bytes). */
#define MAX_RING_BYTES (G_GUINT64_CONSTANT (2) << 30)
/* Buffers of the replay pool: enough for the batches a GPU mode has in flight
 * and queued (a multiple of ring-batches, so each keeps its batch). */
#define MIN_POOLED_BATCHES 16
/* Plain memory the pool may take beyond the ring itself. */
#define POOL_PLAIN_BYTES (G_GUINT64_CONSTANT (64) << 20)

enum
{
  PROP_0,
  PROP_PROFILE,
  PROP_FLOWS,
  PROP_SEED,
  PROP_BATCH_SIZE,
  PROP_RING_BATCHES,
  PROP_RATE,
  PROP_ACL_RULES,
  PROP_ACL_RATE,
  PROP_DPI_PATTERNS,
  PROP_DPI_RATE,
};

struct _GstPacketTestSrc
{
  GstPushSrc parent;

  /* settings, under the object lock */
  GstPacketTestSrcProfile profile;
  guint flows, seed, batch_size, ring_batches;
  guint64 rate;
  gchar *acl_rules, *dpi_patterns;
  gdouble acl_rate, dpi_rate;

  /* streaming state, between start and stop */
  std::vector<std::vector<uint8_t>> *ring;
  GstBufferPool *pool;          /* replay buffers, or NULL: a copy per batch */
  GstAllocator *pool_allocator; /* the allocator the pool was made for */
  bool pool_tried;              /* the pool was set up (or found not to fit) */
  std::mutex *pace_lock;        /* rate pacing waits, cut short by unlock */
  std::condition_variable *pace_wake;
  bool unlocking;
  guint64 batches_out, packets_out;
  std::chrono::steady_clock::time_point started;
};

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_BATCH_CAPS_NAME ", linktype = (int) 1"));

#define gst_packet_test_src_parent_class parent_class
G_DEFINE_TYPE (GstPacketTestSrc, gst_packet_test_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (packettestsrc, "packettestsrc", GST_RANK_NONE,
    GST_TYPE_PACKET_TEST_SRC);

GType
gst_packet_test_src_profile_get_type (void)
{
  static GType type = 0;
  static const GEnumValue profiles[] = {
    {GST_PACKET_TEST_SRC_PROFILE_64, "64-byte frames, IPv4 TCP/UDP", "64"},
    {GST_PACKET_TEST_SRC_PROFILE_1500, "1500-byte frames, IPv4 TCP/UDP", "1500"},
    {GST_PACKET_TEST_SRC_PROFILE_IMIX, "IMIX: 7:4:1 of 64, 576 and 1500 bytes, IPv4", "imix"},
    {GST_PACKET_TEST_SRC_PROFILE_MIX, "Realistic: IPv4/IPv6, TCP/UDP/ICMP, some VLAN tags "
          "and fragments, IMIX sizes", "mix"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstPacketTestSrcProfile", profiles);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* Which ring batch a pooled buffer holds (index + 1; 0: none yet). */
static GQuark
ring_index_quark (void)
{
  static GQuark quark = g_quark_from_static_string ("gpp-ring-index");
  return quark;
}

static void
gst_packet_test_src_drop_pool (GstPacketTestSrc * self)
{
  if (self->pool) {
    gst_buffer_pool_set_active (self->pool, FALSE);
    gst_clear_object (&self->pool);
  }
  if (self->pool_allocator)
    gst_clear_object (&self->pool_allocator);
  self->pool_tried = false;
}

static gboolean
gst_packet_test_src_start_body (GstBaseSrc * base)
{
  GstPacketTestSrc *self = GST_PACKET_TEST_SRC (base);
  gpp::TrafficSpec spec;
  GST_OBJECT_LOCK (self);
  spec.profile = static_cast<gpp::TrafficProfile> (self->profile);
  spec.flows = self->flows;
  spec.seed = self->seed;
  spec.acl_rate = self->acl_rate;
  spec.dpi_rate = self->dpi_rate;
  const std::string acl_path = self->acl_rules ? self->acl_rules : "";
  const std::string dpi_path = self->dpi_patterns ? self->dpi_patterns : "";
  const guint batch_size = self->batch_size, ring_batches = self->ring_batches;
  GST_OBJECT_UNLOCK (self);
  if (batch_size == 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("batch-size=0: " GPP_BATCH_SIZE_ZERO_REASON "."), (NULL));
    return FALSE;
  }

  std::string error;
  std::shared_ptr<const gpp::AclRuleSet> acl;
  std::shared_ptr<const gpp::DpiPatternSet> dpi;
  if (!acl_path.empty () && !(acl = gpp::load_acl_rules (acl_path, &error))) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Invalid ACL rules: %s", error.c_str ()), (NULL));
    return FALSE;
  }
  if (!dpi_path.empty () && !(dpi = gpp::load_dpi_patterns (dpi_path, &error))) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Invalid DPI patterns: %s", error.c_str ()),
        (NULL));
    return FALSE;
  }
  spec.acl = acl.get ();
  spec.dpi = dpi.get ();

  const guint64 worst_case = (guint64) batch_size * ring_batches * 1536;
  if (worst_case > MAX_RING_BYTES) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("batch-size %u x ring-batches %u "
            "could take %" G_GUINT64_FORMAT " MiB; keep their product under %" G_GUINT64_FORMAT
            " packets.", batch_size, ring_batches, worst_case >> 20, MAX_RING_BYTES / 1536),
        (NULL));
    return FALSE;
  }
  /* Generated here, on READY→PAUSED, so streaming only copies. */
  try {
    gpp::TrafficGenerator generator (spec);
    gpp::BatchBuilder builder;
    auto ring = std::make_unique<std::vector<std::vector<uint8_t>>> ();
    for (guint b = 0; b < ring_batches; b++) {
      builder.reset (GPP_LINKTYPE_ETHERNET);
      for (guint i = 0; i < batch_size; i++) {
        const std::vector<uint8_t> &frame = generator.next ();
        builder.add (frame.data (), (uint32_t) frame.size (), (uint32_t) frame.size (), 0, 0);
      }
      ring->push_back (builder.finish ());
    }
    self->ring = ring.release ();
  } catch (const std::bad_alloc &) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory generating %u batches "
            "of %u packets.", ring_batches, batch_size), (NULL));
    return FALSE;
  }
  self->unlocking = false;
  self->batches_out = self->packets_out = 0;
  self->started = std::chrono::steady_clock::now ();
  return TRUE;
}

/* Rule loading and the ring can throw (std::bad_alloc, std::length_error):
 * no exception leaves the vfunc (noexcept.h). */
static gboolean
gst_packet_test_src_start (GstBaseSrc * base)
{
  return gpp_no_throw (GST_ELEMENT (base), "packettestsrc's start", FALSE,
      [&] { return gst_packet_test_src_start_body (base); });
}

static gboolean
gst_packet_test_src_stop (GstBaseSrc * base)
{
  GstPacketTestSrc *self = GST_PACKET_TEST_SRC (base);
  gst_packet_test_src_drop_pool (self);
  delete self->ring;
  self->ring = nullptr;
  return TRUE;
}

/* Sets up the replay pool for the allocator downstream proposed: as many
 * buffers of the largest batch as fit (a multiple of the ring where it can,
 * at most half of gpupacketproc's pinned pool, so the element always has
 * room for what it must copy there), or none when fewer than two fit. */
static void
gst_packet_test_src_make_pool (GstPacketTestSrc * self, GstAllocator * allocator,
    const GstAllocationParams & params)
{
  const guint ring = (guint) self->ring->size ();
  gsize largest = 0;
  for (const auto & batch : *self->ring)
    largest = MAX (largest, batch.size ());
  guint64 budget = allocator && GPP_IS_PINNED_ALLOCATOR (allocator) ?
      gpp_pinned_allocator_capacity (allocator) / 2 :
      MAX ((guint64) ring * largest, POOL_PLAIN_BYTES);
  guint buffers = ring * ((MIN_POOLED_BATCHES + ring - 1) / ring);
  buffers = (guint) MIN ((guint64) buffers, budget / MAX (largest, (gsize) 1));
  self->pool_tried = true;
  self->pool_allocator = allocator ? GST_ALLOCATOR (gst_object_ref (allocator)) : NULL;
  if (buffers < 2) {
    GST_INFO_OBJECT (self, "no replay pool: a %" G_GSIZE_FORMAT "-byte batch is too large "
        "for it; copying each batch", largest);
    return;
  }
  self->pool = gst_buffer_pool_new ();
  GstStructure *config = gst_buffer_pool_get_config (self->pool);
  /* All made at once and handed out in turn (the pool is a FIFO): with
   * fewer made, the few in use would each hold a different batch every time. */
  gst_buffer_pool_config_set_params (config, NULL, (guint) largest, buffers, buffers);
  gst_buffer_pool_config_set_allocator (config, allocator, &params);
  if (!gst_buffer_pool_set_config (self->pool, config) ||
      !gst_buffer_pool_set_active (self->pool, TRUE)) {
    GST_WARNING_OBJECT (self, "could not set up a replay pool; copying each batch");
    gst_clear_object (&self->pool);
    return;
  }
  GST_INFO_OBJECT (self, "replay pool: %u buffers of %" G_GSIZE_FORMAT " bytes", buffers,
      largest);
}

/* A buffer holding ring batch `index`, mapped for writing: from the replay
 * pool, copied only when the buffer held another batch; or else freshly
 * allocated and copied. */
static GstFlowReturn
gst_packet_test_src_batch_buffer (GstPacketTestSrc * self, guint index, GstBuffer ** out,
    GstMapInfo * map)
{
  GstAllocator *allocator = NULL;
  GstAllocationParams params;
  gst_base_src_get_allocator (GST_BASE_SRC (self), &allocator, &params);
  if (!self->pool_tried || allocator != self->pool_allocator) {
    /* Under the lock unlock takes: it finds the pool there, or none. */
    std::lock_guard<std::mutex> lock (*self->pace_lock);
    gst_packet_test_src_drop_pool (self);
    gst_packet_test_src_make_pool (self, allocator, params);
    if (self->pool && self->unlocking)
      gst_buffer_pool_set_flushing (self->pool, TRUE);
  }
  if (allocator)
    gst_object_unref (allocator);

  const std::vector<uint8_t> &batch = (*self->ring)[index];
  if (!self->pool) {
    *out = gpp_src_alloc_batch (GST_BASE_SRC (self), batch.size (), map);
    if (!*out)
      return GST_FLOW_ERROR;
    memcpy (map->data, batch.data (), batch.size ());
    return GST_FLOW_OK;
  }
  GstBuffer *buf = NULL;
  const GstFlowReturn ret = gst_buffer_pool_acquire_buffer (self->pool, &buf, NULL);
  if (ret != GST_FLOW_OK)
    return ret;                 /* FLUSHING on unlock */
  gst_buffer_resize (buf, 0, batch.size ());
  if (!gst_buffer_map (buf, map, GST_MAP_WRITE)) {
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("Could not map a batch buffer."), (NULL));
    return GST_FLOW_ERROR;
  }
  const gpointer held = GUINT_TO_POINTER (index + 1);
  if (gst_mini_object_get_qdata (GST_MINI_OBJECT (buf), ring_index_quark ()) != held) {
    memcpy (map->data, batch.data (), batch.size ());
    gst_mini_object_set_qdata (GST_MINI_OBJECT (buf), ring_index_quark (), held, NULL);
  }
  *out = buf;
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_packet_test_src_create_body (GstPushSrc * src, GstBuffer ** out)
{
  GstPacketTestSrc *self = GST_PACKET_TEST_SRC (src);
  GST_OBJECT_LOCK (self);
  const guint64 rate = self->rate;
  GST_OBJECT_UNLOCK (self);

  const std::vector<uint8_t> &batch = (*self->ring)[self->batches_out % self->ring->size ()];
  const auto *header = reinterpret_cast<const GppBatchHeader *> (batch.data ());
  if (rate > 0) {
    /* Pace whole batches: batch k starts when k batches' packets are due.
     * The wait ends early on unlock (flush, PAUSED→READY). */
    const auto due = self->started + std::chrono::nanoseconds ((guint64) (
            (double) self->packets_out / (double) rate * 1e9));
    std::unique_lock<std::mutex> lock (*self->pace_lock);
    self->pace_wake->wait_until (lock, due, [self] { return self->unlocking; });
    if (self->unlocking)
      return GST_FLOW_FLUSHING;
  }

  GstMapInfo map;
  GstBuffer *buf = NULL;
  const GstFlowReturn ret = gst_packet_test_src_batch_buffer (self,
      (guint) (self->batches_out % self->ring->size ()), &buf, &map);
  if (ret != GST_FLOW_OK)
    return ret;
  /* Fresh numbers and capture times for every replay. */
  auto *descs = reinterpret_cast<GppPacketDesc *> (map.data + header->header_size);
  const guint64 now_ns = (guint64) g_get_real_time () * 1000;
  for (uint32_t i = 0; i < header->packet_count; i++) {
    descs[i].packet_number = self->packets_out + i + 1;
    descs[i].timestamp_ns = now_ns;
  }
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_OFFSET (buf) = self->packets_out;
  GST_BUFFER_OFFSET_END (buf) = self->packets_out + header->packet_count;
  self->packets_out += header->packet_count;
  self->batches_out++;
  *out = buf;
  return GST_FLOW_OK;
}

static gboolean
gst_packet_test_src_unlock (GstBaseSrc * base)
{
  GstPacketTestSrc *self = GST_PACKET_TEST_SRC (base);
  std::lock_guard<std::mutex> lock (*self->pace_lock);
  self->unlocking = true;
  self->pace_wake->notify_all ();
  if (self->pool)               /* a wait for a buffer to come back */
    gst_buffer_pool_set_flushing (self->pool, TRUE);
  return TRUE;
}

static gboolean
gst_packet_test_src_unlock_stop (GstBaseSrc * base)
{
  GstPacketTestSrc *self = GST_PACKET_TEST_SRC (base);
  std::lock_guard<std::mutex> lock (*self->pace_lock);
  self->unlocking = false;
  if (self->pool)
    gst_buffer_pool_set_flushing (self->pool, FALSE);
  return TRUE;
}

static void
gst_packet_test_src_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  GstPacketTestSrc *self = GST_PACKET_TEST_SRC (object);

  if (GPP_REFUSE_READY_ONLY (object, pspec))
    return;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_PROFILE:
      self->profile = (GstPacketTestSrcProfile) g_value_get_enum (value);
      break;
    case PROP_FLOWS:
      self->flows = g_value_get_uint (value);
      break;
    case PROP_SEED:
      self->seed = g_value_get_uint (value);
      break;
    case PROP_BATCH_SIZE:
      self->batch_size = g_value_get_uint (value);
      break;
    case PROP_RING_BATCHES:
      self->ring_batches = g_value_get_uint (value);
      break;
    case PROP_RATE:
      self->rate = g_value_get_uint64 (value);
      break;
    case PROP_ACL_RULES:
      g_free (self->acl_rules);
      self->acl_rules = g_value_dup_string (value);
      break;
    case PROP_ACL_RATE:
      self->acl_rate = g_value_get_double (value);
      break;
    case PROP_DPI_PATTERNS:
      g_free (self->dpi_patterns);
      self->dpi_patterns = g_value_dup_string (value);
      break;
    case PROP_DPI_RATE:
      self->dpi_rate = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_packet_test_src_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstPacketTestSrc *self = GST_PACKET_TEST_SRC (object);
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_PROFILE:
      g_value_set_enum (value, self->profile);
      break;
    case PROP_FLOWS:
      g_value_set_uint (value, self->flows);
      break;
    case PROP_SEED:
      g_value_set_uint (value, self->seed);
      break;
    case PROP_BATCH_SIZE:
      g_value_set_uint (value, self->batch_size);
      break;
    case PROP_RING_BATCHES:
      g_value_set_uint (value, self->ring_batches);
      break;
    case PROP_RATE:
      g_value_set_uint64 (value, self->rate);
      break;
    case PROP_ACL_RULES:
      g_value_set_string (value, self->acl_rules);
      break;
    case PROP_ACL_RATE:
      g_value_set_double (value, self->acl_rate);
      break;
    case PROP_DPI_PATTERNS:
      g_value_set_string (value, self->dpi_patterns);
      break;
    case PROP_DPI_RATE:
      g_value_set_double (value, self->dpi_rate);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_packet_test_src_finalize (GObject * object)
{
  GstPacketTestSrc *self = GST_PACKET_TEST_SRC (object);
  gst_packet_test_src_drop_pool (self);
  delete self->ring;
  delete self->pace_lock;
  delete self->pace_wake;
  g_free (self->acl_rules);
  g_free (self->dpi_patterns);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}


/* packettestsrc's create, run so that no exception leaves it (noexcept.h). */
static GstFlowReturn
gst_packet_test_src_create (GstPushSrc * src, GstBuffer ** out)
{
  return gpp_no_throw (GST_ELEMENT (src), "packettestsrc's create", (GstFlowReturn) GST_FLOW_ERROR,
      [&] { return gst_packet_test_src_create_body (src, out); });
}

static void
gst_packet_test_src_class_init (GstPacketTestSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS (klass);
  const auto rw_ready = (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY);

  gobject_class->set_property = gst_packet_test_src_set_property;
  gobject_class->get_property = gst_packet_test_src_get_property;
  gobject_class->finalize = gst_packet_test_src_finalize;

  g_object_class_install_property (gobject_class, PROP_PROFILE,
      g_param_spec_enum ("profile", "Profile", "Frame sizes and protocol mix",
          GST_TYPE_PACKET_TEST_SRC_PROFILE, DEFAULT_PROFILE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FLOWS,
      g_param_spec_uint ("flows", "Flows", "Distinct 5-tuples the packets are drawn from",
          1, 16 * 1024 * 1024, DEFAULT_FLOWS, rw_ready));
  g_object_class_install_property (gobject_class, PROP_SEED,
      g_param_spec_uint ("seed", "Seed", "Random seed: the same seed gives the same packets",
          0, G_MAXUINT, DEFAULT_SEED, rw_ready));
  g_object_class_install_property (gobject_class, PROP_BATCH_SIZE,
      g_param_spec_uint ("batch-size", "Batch size", "Packets per batch; 0 is refused", 0, 1 << 20,
          DEFAULT_BATCH_SIZE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_RING_BATCHES,
      g_param_spec_uint ("ring-batches", "Ring batches",
          "Distinct batches generated on READY→PAUSED and replayed in turn", 1, 4096,
          DEFAULT_RING_BATCHES, rw_ready));
  g_object_class_install_property (gobject_class, PROP_RATE,
      g_param_spec_uint64 ("rate", "Rate", "Packets per second, whole batches at a time; "
          "0 = as fast as downstream takes them", 0, G_MAXUINT64, DEFAULT_RATE,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
              GST_PARAM_MUTABLE_PLAYING)));
  g_object_class_install_property (gobject_class, PROP_ACL_RULES,
      g_param_spec_string ("acl-rules", "ACL rules", "Rule file (gpupacketproc syntax) "
          "that acl-rate of the headers are drawn from", NULL, rw_ready));
  g_object_class_install_property (gobject_class, PROP_ACL_RATE,
      g_param_spec_double ("acl-rate", "ACL rate", "Share of packets whose header lies "
          "inside a random rule of acl-rules", 0, 1, DEFAULT_RATE_SHARE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_DPI_PATTERNS,
      g_param_spec_string ("dpi-patterns", "DPI patterns", "Pattern or rule file "
          "(gpupacketproc syntax) whose patterns dpi-rate of the payloads carry", NULL, rw_ready));
  g_object_class_install_property (gobject_class, PROP_DPI_RATE,
      g_param_spec_double ("dpi-rate", "DPI rate", "Share of packets whose payload holds a "
          "random pattern of dpi-patterns (where it fits)", 0, 1, DEFAULT_RATE_SHARE, rw_ready));

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Packet test source",
      "Source/Network", "Synthetic packet batches for tests and benchmarks",
      "gpupacket developers");
  basesrc_class->start = GST_DEBUG_FUNCPTR (gst_packet_test_src_start);
  basesrc_class->stop = GST_DEBUG_FUNCPTR (gst_packet_test_src_stop);
  basesrc_class->unlock = GST_DEBUG_FUNCPTR (gst_packet_test_src_unlock);
  basesrc_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_packet_test_src_unlock_stop);
  GST_PUSH_SRC_CLASS (klass)->create = GST_DEBUG_FUNCPTR (gst_packet_test_src_create);

  gst_type_mark_as_plugin_api (GST_TYPE_PACKET_TEST_SRC_PROFILE, (GstPluginAPIFlags) 0);
  GST_DEBUG_CATEGORY_INIT (gst_packet_test_src_debug, "packettestsrc", 0,
      "synthetic packet batches");
}

static void
gst_packet_test_src_init (GstPacketTestSrc * self)
{
  self->profile = DEFAULT_PROFILE;
  self->flows = DEFAULT_FLOWS;
  self->seed = DEFAULT_SEED;
  self->batch_size = DEFAULT_BATCH_SIZE;
  self->ring_batches = DEFAULT_RING_BATCHES;
  self->rate = DEFAULT_RATE;
  self->acl_rules = NULL;
  self->dpi_patterns = NULL;
  self->acl_rate = DEFAULT_RATE_SHARE;
  self->dpi_rate = DEFAULT_RATE_SHARE;
  self->ring = nullptr;
  self->pool = NULL;
  self->pool_allocator = NULL;
  self->pool_tried = false;
  self->pace_lock = new std::mutex ();
  self->pace_wake = new std::condition_variable ();
  self->unlocking = false;
}
