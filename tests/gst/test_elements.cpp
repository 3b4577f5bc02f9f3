/* Element tests for pcapsrc, gpupacketproc and packetresultenc (GstHarness
 * and small pipelines).
 *
 * Captures come from $GPP_TEST_DATA_DIR (../shared/data); expected packet
 * counts, frame numbers and timestamps are the tshark / capinfos values of
 * data/pcap/SOURCES.md.  Synthetic batches are built with gpp::BatchBuilder
 * from packets whose checksums this file computes itself, and RSS hashes are
 * checked against data/rss/toeplitz_vectors.csv and an independent Toeplitz
 * implementation (test_support.h). */
/* The C++ library first: check.h defines macros (fail, ...) that clash with
 * names in <ios>. */
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "batch_builder.h"
#include "packet_core.h"
#include "test_support.h"

#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gpupacket/gstpacketbatchmeta.h>
#include <gpupacket/packet-batch.h>
#include <gpupacket/packet-result.h>

using test::Bytes;
using test::Endpoint;

/* How long any wait for a pipeline or an element may take before the test
 * fails instead of hanging. */
#define WAIT_SECONDS 10

#define WIKIPEDIA "pcap/zeek__wikipedia.pcap"
#define WIKIPEDIA_PACKETS 136
/* pcapsrc's documented format and packetresultenc's column contract.  The
 * sample rows' Community IDs come from an independent computation (Python's
 * hashlib and base64 over the spec's layout), not from gpupacket's code. */
#define BATCH_CAPS_ETHERNET "application/x-packet-batch, linktype=(int)1"
#define RESULTS_CAPS "application/x-packet-results, record-size=(int)128"
static const char *const kCsvHeader =
    "packet,ethertype,vlan,ip_version,src,dst,l4_proto,sport,dport,frag_offset,"
    "more_fragments,ipv4_checksum,l4_checksum,rss,status,timestamp,caplen,wirelen,ttl,"
    "tcp_flags,icmp_type,icmp_code,payload_length,acl_rule,acl_action,dpi_pattern,dpi_hits,"
    "ip_length,community_id";

/* ------------------------------------------------------------------------ */
/* Shared helpers                                                            */

static std::string
data_path (const char *relative)
{
  const gchar *dir = g_getenv ("GPP_TEST_DATA_DIR");
  fail_unless (dir != NULL, "GPP_TEST_DATA_DIR is not set (run through meson test)");
  gchar *p = g_build_filename (dir, relative, NULL);
  std::string path (p);
  g_free (p);
  return path;
}

/* The RSS verification suite; its key is gpupacketproc's documented default. */
static test::RssVectors
rss_suite ()
{
  test::RssVectors v = test::load_rss_vectors (data_path ("rss/toeplitz_vectors.csv"));
  fail_unless (v.have_key && v.rows.size () == 8, "rss/toeplitz_vectors.csv unreadable");
  return v;
}

static std::string
key_text (const uint8_t * key, const char *separator)
{
  std::string s;
  for (int i = 0; i < 40; i++) {
    char b[3];
    g_snprintf (b, sizeof b, "%02x", key[i]);
    if (i)
      s += separator;
    s += b;
  }
  return s;
}

static GstBuffer *
buffer_from (const Bytes & bytes)
{
  if (bytes.empty ())
    return gst_buffer_new ();
  return gst_buffer_new_memdup (bytes.data (), bytes.size ());
}

static Bytes
buffer_bytes (GstBuffer * buf)
{
  GstMapInfo map;
  fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
  Bytes out (map.data, map.data + map.size);
  gst_buffer_unmap (buf, &map);
  return out;
}

static void
assert_caps_equal (GstCaps * caps, const char *expected)
{
  GstCaps *want = gst_caps_from_string (expected);
  fail_unless (caps != NULL, "no caps, expected %s", expected);
  gchar *got = gst_caps_to_string (caps);
  fail_unless (gst_caps_is_equal (caps, want), "caps %s, expected %s", got, expected);
  g_free (got);
  gst_caps_unref (want);
}

/* Pops the next ERROR (or WARNING) message already on @bus and returns its
 * text and debug string joined; fails when there is none. */
static std::string
pop_message_text (GstBus * bus, GstMessageType type)
{
  GstMessage *msg = gst_bus_pop_filtered (bus, type);
  fail_unless (msg != NULL, "expected a %s message on the bus",
      gst_message_type_get_name (type));
  GError *err = NULL;
  gchar *debug = NULL;
  if (type == GST_MESSAGE_ERROR)
    gst_message_parse_error (msg, &err, &debug);
  else
    gst_message_parse_warning (msg, &err, &debug);
  std::string text = err->message;
  text += " | ";
  text += debug ? debug : "";
  g_clear_error (&err);
  g_free (debug);
  gst_message_unref (msg);
  return text;
}

static void
assert_text_equal (const std::string & got, const std::string & expected)
{
  fail_unless (got == expected, "got \"%s\", expected \"%s\"", got.c_str (),
      expected.c_str ());
}

static void
assert_contains (const std::string & text, const std::string & needle)
{
  fail_unless (text.find (needle) != std::string::npos, "\"%s\" does not mention \"%s\"",
      text.c_str (), needle.c_str ());
}

/* A parsed view of one packet batch buffer. */
struct BatchView
{
  Bytes bytes;
  GppBatchHeader header;
  std::vector<GppPacketDesc> descs;

  Bytes packet (size_t i) const
  {
    return Bytes (bytes.begin () + descs[i].offset,
        bytes.begin () + descs[i].offset + descs[i].caplen);
  }
};

/* Copies and validates a batch; fails the test when gpp_batch_validate()
 * refuses it. */
static BatchView
view_batch (GstBuffer * buf)
{
  BatchView v;
  char why[256] = "";
  v.bytes = buffer_bytes (buf);
  fail_unless (gpp_batch_validate (v.bytes.data (), v.bytes.size (), why, sizeof why),
      "invalid batch: %s", why);
  memcpy (&v.header, v.bytes.data (), sizeof v.header);
  v.descs.resize (v.header.packet_count);
  if (v.header.packet_count)
    memcpy (v.descs.data (), v.bytes.data () + v.header.header_size,
        v.header.packet_count * sizeof (GppPacketDesc));
  return v;
}

static std::vector<GppResult>
view_results (GstBuffer * buf)
{
  Bytes b = buffer_bytes (buf);
  fail_unless (b.size () % sizeof (GppResult) == 0, "results buffer of %zu bytes",
      b.size ());
  std::vector<GppResult> out (b.size () / sizeof (GppResult));
  if (!b.empty ())
    memcpy (out.data (), b.data (), b.size ());
  return out;
}

/* Pulls buffers from a harness whose element is a source until EOS, failing
 * after WAIT_SECONDS rather than waiting for ever. */
static std::vector<GstBuffer *>
pull_until_eos (GstHarness * h)
{
  std::vector<GstBuffer *> out;
  const gint64 deadline = g_get_monotonic_time () + WAIT_SECONDS * G_TIME_SPAN_SECOND;
  bool eos = false;
  while (!eos) {
    while (GstBuffer *b = gst_harness_try_pull (h))
      out.push_back (b);
    while (GstEvent *e = gst_harness_try_pull_event (h)) {
      eos |= GST_EVENT_TYPE (e) == GST_EVENT_EOS;
      gst_event_unref (e);
    }
    if (!eos) {
      fail_unless (g_get_monotonic_time () < deadline, "no EOS after %d s", WAIT_SECONDS);
      g_usleep (1000);
    }
  }
  /* EOS follows the last buffer in the stream, so nothing more can come. */
  while (GstBuffer *b = gst_harness_try_pull (h))
    out.push_back (b);
  return out;
}

struct CaptureRun
{
  std::vector<GstBuffer *> batches;
  GstCaps *caps = nullptr;

  ~CaptureRun ()
  {
    for (GstBuffer *b : batches)
      gst_buffer_unref (b);
    if (caps)
      gst_caps_unref (caps);
  }
};

/* Runs pcapsrc in a harness over @file (relative to the data dir). */
static void
read_capture (CaptureRun & run, const char *file, guint batch_size,
    const char *filter = nullptr)
{
  GstElement *src = gst_element_factory_make ("pcapsrc", NULL);
  fail_unless (src != NULL, "pcapsrc not found");
  g_object_set (src, "location", data_path (file).c_str (), "batch-size", batch_size,
      "filter", filter, NULL);
  GstHarness *h = gst_harness_new_with_element (src, NULL, "src");
  gst_object_unref (src);
  gst_harness_play (h);
  run.batches = pull_until_eos (h);
  run.caps = gst_pad_get_current_caps (h->sinkpad);
  gst_harness_teardown (h);
}

/* Every batch valid, of @linktype, with at most @batch_size packets; returns
 * the descriptors of all batches in order. */
static std::vector<GppPacketDesc>
check_batches (const CaptureRun & run, guint linktype, guint batch_size)
{
  std::vector<GppPacketDesc> all;
  for (GstBuffer *b : run.batches) {
    BatchView v = view_batch (b);
    fail_unless_equals_int (v.header.linktype, linktype);
    fail_unless (v.header.packet_count >= 1 && v.header.packet_count <= batch_size,
        "batch of %u packets with batch-size %u", v.header.packet_count, batch_size);
    all.insert (all.end (), v.descs.begin (), v.descs.end ());
  }
  return all;
}

/* Outcome of a pipeline run to EOS or ERROR. */
struct PipelineRun
{
  GstMessageType end = GST_MESSAGE_UNKNOWN;    /* EOS, ERROR, or UNKNOWN on timeout */
  std::string error_text;       /* message | debug of the first ERROR */
  std::string error_source;     /* name of the element that posted it */
  std::mutex lock;
  std::vector<guint64> packet_numbers;  /* from batches reaching fakesink "sink" */
  std::vector<std::string> invalid;     /* batches that failed validation */
  Bytes sink_bytes;             /* everything that reached fakesink "sink" */
};

static void
on_handoff (GstElement *, GstBuffer * buf, GstPad * pad, gpointer user_data)
{
  auto *run = static_cast<PipelineRun *> (user_data);
  GstCaps *caps = gst_pad_get_current_caps (pad);
  const bool is_batch = caps && gst_structure_has_name (gst_caps_get_structure (caps, 0),
      GPP_BATCH_CAPS_NAME);
  if (caps)
    gst_caps_unref (caps);
  GstMapInfo map;
  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return;
  std::lock_guard<std::mutex> guard (run->lock);
  run->sink_bytes.insert (run->sink_bytes.end (), map.data, map.data + map.size);
  if (is_batch) {
    char why[256];
    if (gpp_batch_validate (map.data, map.size, why, sizeof why)) {
      const GppPacketDesc *d = gpp_batch_descs (map.data);
      const auto *header = reinterpret_cast<const GppBatchHeader *> (map.data);
      for (uint32_t i = 0; i < header->packet_count; i++)
        run->packet_numbers.push_back (d[i].packet_number);
    } else {
      run->invalid.push_back (why);
    }
  }
  gst_buffer_unmap (buf, &map);
}

/* Runs @description (which names its last element "sink", a fakesink) after
 * @configure set properties, until EOS, ERROR or WAIT_SECONDS. */
static void
run_pipeline (PipelineRun & run, const char *description,
    void (*configure) (GstElement * pipeline, gpointer), gpointer configure_data)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (description, &error);
  fail_unless (pipeline != NULL && error == NULL, "gst_parse_launch (%s): %s", description,
      error ? error->message : "?");
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  fail_unless (sink != NULL);
  g_object_set (sink, "signal-handoffs", TRUE, NULL);
  g_signal_connect (sink, "handoff", G_CALLBACK (on_handoff), &run);
  gst_object_unref (sink);
  if (configure)
    configure (pipeline, configure_data);

  GstBus *bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  GstMessage *msg = gst_bus_timed_pop_filtered (bus, WAIT_SECONDS * GST_SECOND,
      (GstMessageType) (GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  if (msg) {
    run.end = GST_MESSAGE_TYPE (msg);
    if (run.end == GST_MESSAGE_ERROR) {
      GError *err = NULL;
      gchar *debug = NULL;
      gst_message_parse_error (msg, &err, &debug);
      run.error_text = std::string (err->message) + " | " + (debug ? debug : "");
      run.error_source = GST_OBJECT_NAME (GST_MESSAGE_SRC (msg));
      g_clear_error (&err);
      g_free (debug);
    }
    gst_message_unref (msg);
  }
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

/* Sets "location" and optionally "filter" on the element named "src". */
struct SourceSettings
{
  std::string location;
  const char *filter = nullptr;
};

static void
configure_source (GstElement * pipeline, gpointer data)
{
  auto *s = static_cast<SourceSettings *> (data);
  GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  fail_unless (src != NULL);
  g_object_set (src, "location", s->location.c_str (), "filter", s->filter, NULL);
  gst_object_unref (src);
}

/* A scratch directory removed with its files at the end of a test. */
struct TempDir
{
  gchar *path;
  std::vector<std::string> files;

  TempDir ()
  {
    path = g_dir_make_tmp ("gpupacket-test-XXXXXX", NULL);
    fail_unless (path != NULL);
  }
  std::string file (const char *name, const Bytes & contents)
  {
    gchar *p = g_build_filename (path, name, NULL);
    std::string s (p);
    g_free (p);
    fail_unless (g_file_set_contents (s.c_str (), (const gchar *) contents.data (),
            contents.size (), NULL));
    files.push_back (s);
    return s;
  }
  ~TempDir ()
  {
    for (const auto & f : files)
      g_unlink (f.c_str ());
    g_rmdir (path);
    g_free (path);
  }
};

/* ------------------------------------------------------------------------ */
/* pcapsrc                                                                   */

GST_START_TEST (test_pcapsrc_batch_sizes)
{
  const guint sizes[] = { 1, 7, 64, 1000 };
  for (guint batch_size : sizes) {
    CaptureRun run;
    read_capture (run, WIKIPEDIA, batch_size);
    assert_caps_equal (run.caps, BATCH_CAPS_ETHERNET);
    const guint expected_batches = (WIKIPEDIA_PACKETS + batch_size - 1) / batch_size;
    fail_unless_equals_int (run.batches.size (), expected_batches);
    std::vector<GppPacketDesc> descs = check_batches (run, GPP_LINKTYPE_ETHERNET, batch_size);
    fail_unless_equals_int (descs.size (), WIKIPEDIA_PACKETS);
    for (size_t i = 0; i < descs.size (); i++) {
      fail_unless_equals_uint64 (descs[i].packet_number, i + 1);
      fail_unless (descs[i].caplen <= descs[i].wirelen);
      if (i)
        fail_unless (descs[i].timestamp_ns >= descs[i - 1].timestamp_ns);
    }
    /* All batches but the last are full. */
    for (size_t b = 0; b + 1 < run.batches.size (); b++)
      fail_unless_equals_int (view_batch (run.batches[b]).header.packet_count, batch_size);
    /* tshark: frame 1 at 1300475167.096535000, 87 bytes; frame 2 213 bytes. */
    fail_unless_equals_uint64 (descs[0].timestamp_ns, G_GUINT64_CONSTANT (1300475167096535000));
    fail_unless_equals_int (descs[0].caplen, 87);
    fail_unless_equals_int (descs[1].caplen, 213);
    fail_unless_equals_int (descs[WIKIPEDIA_PACKETS - 1].caplen, 92);
  }
}

GST_END_TEST;

/* pcapsrc on the Wikipedia capture in a harness, playing, its first batch
 * pulled: for tests that change a property while it runs.  Its own bus
 * collects the warnings. */
struct PlayingPcapSrc
{
  GstElement *src;
  GstBus *bus;
  GstHarness *h;
  size_t packets;               /* pulled so far */

  explicit PlayingPcapSrc (guint batch_size)
  {
    src = gst_element_factory_make ("pcapsrc", NULL);
    fail_unless (src != NULL, "pcapsrc not found");
    g_object_set (src, "location", data_path (WIKIPEDIA).c_str (), "batch-size", batch_size,
        NULL);
    bus = gst_bus_new ();
    gst_element_set_bus (src, bus);
    h = gst_harness_new_with_element (src, NULL, "src");
    gst_harness_play (h);
    GstBuffer *first = gst_harness_pull (h);
    packets = view_batch (first).header.packet_count;
    gst_buffer_unref (first);
  }
  ~PlayingPcapSrc ()
  {
    gst_harness_teardown (h);
    gst_object_unref (src);
    gst_object_unref (bus);
  }

  /* Pulls the rest of the file: every packet must come, once. */
  void expect_every_packet ()
  {
    for (GstBuffer *b : pull_until_eos (h)) {
      packets += view_batch (b).header.packet_count;
      gst_buffer_unref (b);
    }
    fail_unless_equals_int (packets, WIKIPEDIA_PACKETS);
  }
};

/* batch-size=0 is an error at start in both sources (GLib's range check
 * used to warn and leave the default in use), and refused with a warning
 * while pcapsrc runs, the value in use kept. */
GST_START_TEST (test_batch_size_zero_refused)
{
  for (const char *description : {"pcapsrc name=src batch-size=0 ! fakesink name=sink",
          "packettestsrc name=src batch-size=0 num-buffers=1 ! fakesink name=sink"}) {
    SourceSettings s { data_path (WIKIPEDIA) };
    PipelineRun p;
    const bool pcap = g_str_has_prefix (description, "pcapsrc");
    run_pipeline (p, description, pcap ? configure_source : NULL, &s);
    fail_unless_equals_int (p.end, GST_MESSAGE_ERROR);
    assert_contains (p.error_text, "batch-size=0: a batch needs at least one packet");
    fail_unless (p.packet_numbers.empty ());
  }

  PlayingPcapSrc p (3);
  g_object_set (p.src, "batch-size", 0, NULL);
  assert_contains (pop_message_text (p.bus, GST_MESSAGE_WARNING),
      "Ignoring the new value of \"batch-size\": a batch needs at least one packet");
  guint batch_size = 0;
  g_object_get (p.src, "batch-size", &batch_size, NULL);
  fail_unless_equals_int (batch_size, 3);
  p.expect_every_packet ();
}

GST_END_TEST;

/* Properties that apply when the element starts are refused once it has
 * (a warning names the property, the value in use stays): setting pcapsrc's
 * device while it read a file used to stall the stream for good. */
GST_START_TEST (test_ready_only_properties_refused_while_running)
{
  PlayingPcapSrc p (1);
  g_object_set (p.src, "device", "lo", "snaplen", 100, "batch-size", 2, NULL);
  assert_contains (pop_message_text (p.bus, GST_MESSAGE_WARNING), "\"device\"");
  assert_contains (pop_message_text (p.bus, GST_MESSAGE_WARNING), "\"snaplen\"");
  fail_unless (gst_bus_pop_filtered (p.bus, GST_MESSAGE_WARNING) == NULL,
      "batch-size may change while playing");
  gchar *device = NULL;
  guint batch_size = 0;
  g_object_get (p.src, "device", &device, "batch-size", &batch_size, NULL);
  fail_unless (device == NULL, "device changed to %s", device);
  fail_unless_equals_int (batch_size, 2);
  /* The file goes on to its end: every packet, in batches of 2 from now on. */
  p.expect_every_packet ();
}

GST_END_TEST;

GST_START_TEST (test_pcapsrc_pcapng)
{
  CaptureRun run;
  read_capture (run, "pcap/tcpdump__OSPFv2_Capture_FINAL.pcapng", 8);
  assert_caps_equal (run.caps, BATCH_CAPS_ETHERNET);
  fail_unless_equals_int (run.batches.size (), 4);
  std::vector<GppPacketDesc> descs = check_batches (run, GPP_LINKTYPE_ETHERNET, 8);
  fail_unless_equals_int (descs.size (), 30);
  for (size_t i = 0; i < descs.size (); i++)
    fail_unless_equals_uint64 (descs[i].packet_number, i + 1);
}

GST_END_TEST;

GST_START_TEST (test_pcapsrc_linux_sll)
{
  {
    CaptureRun run;
    read_capture (run, "pcap/tcpdump__mptcp-v1.pcap", 256);
    assert_caps_equal (run.caps, "application/x-packet-batch, linktype=(int)113");
    fail_unless_equals_int (run.batches.size (), 1);
    fail_unless_equals_int (check_batches (run, GPP_LINKTYPE_LINUX_SLL, 256).size (), 20);
  }
  {
    /* A nanosecond pcap (also SLL): timestamps keep their nanoseconds. */
    CaptureRun run;
    read_capture (run, "pcap/tcpdump__tcp-handshake-nano.pcap", 2);
    assert_caps_equal (run.caps, "application/x-packet-batch, linktype=(int)113");
    std::vector<GppPacketDesc> descs = check_batches (run, GPP_LINKTYPE_LINUX_SLL, 2);
    fail_unless_equals_int (descs.size (), 3);
    fail_unless_equals_uint64 (descs[0].timestamp_ns, G_GUINT64_CONSTANT (1418145369924505488));
    fail_unless_equals_uint64 (descs[1].timestamp_ns, G_GUINT64_CONSTANT (1418145370052027262));
    fail_unless_equals_uint64 (descs[2].timestamp_ns, G_GUINT64_CONSTANT (1418145370052115157));
    fail_unless_equals_int (descs[2].caplen, 68);
  }
}

GST_END_TEST;

/* capinfos / tcpdump: link type and packet count of captures in the corpus. */
static const struct
{
  const char *file;
  guint linktype;
  guint packets;
} kLinkTypeCaptures[] = {
  {"pcap/zeek__dns-svcb.pcap", GPP_LINKTYPE_NULL, 2},
  {"pcap/zeek__pcapng-multi-interface.pcapng", GPP_LINKTYPE_ETHERNET, 6},
  {"pcap/tcpdump__LINKTYPE_RAW_ipv4.pcap", GPP_LINKTYPE_RAW, 1},
  {"pcap/tcpdump__LINKTYPE_RAW_ipv6.pcap", GPP_LINKTYPE_RAW, 1},
  {"pcap/tcpdump__bgp-role.pcapng", GPP_LINKTYPE_LINUX_SLL, 9},
  {"pcap/sv__linktype-228.pcap", GPP_LINKTYPE_IPV4, 7},
  {"pcap/tcpdump__LINKTYPE_IPV4.pcap", GPP_LINKTYPE_IPV4, 1},
  {"pcap/tcpdump__LINKTYPE_IPV6.pcap", GPP_LINKTYPE_IPV6, 1},
  {"pcap/zeek__linux_dlt_sll2.pcap", GPP_LINKTYPE_LINUX_SLL2, 6},
};

GST_START_TEST (test_pcapsrc_link_types)
{
  for (const auto & c : kLinkTypeCaptures) {
    CaptureRun run;
    read_capture (run, c.file, 4);
    gchar *caps = g_strdup_printf ("application/x-packet-batch, linktype=(int)%u", c.linktype);
    assert_caps_equal (run.caps, caps);
    g_free (caps);
    std::vector<GppPacketDesc> descs = check_batches (run, c.linktype, 4);
    fail_unless_equals_int (descs.size (), c.packets);
    for (size_t i = 0; i < descs.size (); i++)
      fail_unless_equals_uint64 (descs[i].packet_number, i + 1);
  }
}

GST_END_TEST;

GST_START_TEST (test_pcapsrc_restart)
{
  /* The same pipeline played twice reads the file again from packet 1. */
  GstElement *pipeline = gst_parse_launch ("pcapsrc name=src batch-size=50 ! "
      "fakesink name=sink signal-handoffs=true", NULL);
  fail_unless (pipeline != NULL);
  SourceSettings settings { data_path (WIKIPEDIA) };
  configure_source (pipeline, &settings);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  PipelineRun run;
  g_signal_connect (sink, "handoff", G_CALLBACK (on_handoff), &run);
  GstBus *bus = gst_element_get_bus (pipeline);
  for (int round = 0; round < 2; round++) {
    run.packet_numbers.clear ();
    gst_element_set_state (pipeline, GST_STATE_PLAYING);
    GstMessage *msg = gst_bus_timed_pop_filtered (bus, WAIT_SECONDS * GST_SECOND,
        (GstMessageType) (GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS,
        "round %d did not reach EOS", round);
    gst_message_unref (msg);
    fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_READY),
        GST_STATE_CHANGE_SUCCESS);
    fail_unless_equals_int (run.packet_numbers.size (), WIKIPEDIA_PACKETS);
    for (size_t i = 0; i < run.packet_numbers.size (); i++)
      fail_unless_equals_uint64 (run.packet_numbers[i], i + 1);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
}

GST_END_TEST;

static bool
is_udp_over_ethernet (const Bytes & p)
{
  if (p.size () < 14 + 40)
    return false;
  const unsigned ethertype = (p[12] << 8) | p[13];
  if (ethertype == 0x0800)
    return p[14 + 9] == test::kProtoUdp;
  if (ethertype == 0x86dd)
    return p[14 + 6] == test::kProtoUdp;
  return false;
}

GST_START_TEST (test_pcapsrc_filter)
{
  /* tshark -Y udp frame numbers of the capture (tcpdump "udp" picks the same). */
  const guint64 udp_frames[] = { 1, 2, 3, 16, 17, 18, 19, 20, 21, 24, 25, 26, 27, 28,
    29, 31, 32, 33, 34, 35, 36, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 114, 117, 119,
    120, 121, 122, 123, 125, 126, 127, 129, 130, 132, 133, 134, 135, 136
  };
  CaptureRun all, udp;
  read_capture (all, WIKIPEDIA, 1000);
  read_capture (udp, WIKIPEDIA, 7, "udp");
  assert_caps_equal (udp.caps, BATCH_CAPS_ETHERNET);

  std::vector<Bytes> all_packets;
  for (GstBuffer *b : all.batches) {
    BatchView v = view_batch (b);
    for (size_t i = 0; i < v.descs.size (); i++)
      all_packets.push_back (v.packet (i));
  }
  fail_unless_equals_int (all_packets.size (), WIKIPEDIA_PACKETS);

  std::vector<guint64> numbers;
  for (GstBuffer *b : udp.batches) {
    BatchView v = view_batch (b);
    fail_unless (v.header.packet_count >= 1 && v.header.packet_count <= 7);
    for (size_t i = 0; i < v.descs.size (); i++) {
      const guint64 n = v.descs[i].packet_number;
      numbers.push_back (n);
      fail_unless (n >= 1 && n <= WIKIPEDIA_PACKETS);
      /* The packet numbered n is the file's n-th packet, byte for byte. */
      fail_unless (v.packet (i) == all_packets[n - 1], "packet %" G_GUINT64_FORMAT
          " differs from the unfiltered run", n);
      fail_unless (is_udp_over_ethernet (v.packet (i)), "packet %" G_GUINT64_FORMAT
          " is not UDP", n);
    }
  }
  fail_unless_equals_int (numbers.size (), G_N_ELEMENTS (udp_frames));
  fail_unless (std::equal (numbers.begin (), numbers.end (), udp_frames));
  /* 48 packets in batches of up to 7. */
  fail_unless_equals_int (udp.batches.size (), 7);

  /* A filter that matches nothing: EOS without batches. */
  CaptureRun none;
  read_capture (none, WIKIPEDIA, 7, "tcp port 1");
  fail_unless_equals_int (none.batches.size (), 0);
}

GST_END_TEST;

GST_START_TEST (test_pcapsrc_empty_capture)
{
  CaptureRun run;
  read_capture (run, "pcap/tcpdump__empty.pcap", 16);
  fail_unless_equals_int (run.batches.size (), 0);

  /* In a pipeline: EOS, no error, nothing reaches the sink. */
  PipelineRun p;
  SourceSettings s { data_path ("pcap/tcpdump__empty.pcap") };
  run_pipeline (p, "pcapsrc name=src ! fakesink name=sink", configure_source, &s);
  fail_unless_equals_int (p.end, GST_MESSAGE_EOS);
  fail_unless_equals_int (p.sink_bytes.size (), 0);
}

GST_END_TEST;

static void
assert_pcapsrc_error (PipelineRun & p, const std::string & names)
{
  fail_unless_equals_int (p.end, GST_MESSAGE_ERROR);
  fail_unless_equals_string (p.error_source.c_str (), "src");
  assert_contains (p.error_text, names);
}

GST_START_TEST (test_pcapsrc_missing_file)
{
  PipelineRun p;
  SourceSettings s { data_path ("pcap/no-such-capture.pcap") };
  run_pipeline (p, "pcapsrc name=src ! fakesink name=sink", configure_source, &s);
  assert_pcapsrc_error (p, s.location);
  fail_unless_equals_int (p.packet_numbers.size (), 0);
}

GST_END_TEST;

GST_START_TEST (test_pcapsrc_no_location)
{
  PipelineRun p;
  run_pipeline (p, "pcapsrc name=src ! fakesink name=sink", NULL, NULL);
  assert_pcapsrc_error (p, "location");
}

GST_END_TEST;

GST_START_TEST (test_pcapsrc_not_a_capture)
{
  TempDir dir;
  Bytes junk (4096);
  GRand *rand = g_rand_new_with_seed (42);
  for (auto & b : junk)
    b = (uint8_t) g_rand_int_range (rand, 0, 256);
  g_rand_free (rand);
  memcpy (junk.data (), "JUNK", 4);     /* never a pcap or pcapng magic */
  PipelineRun p;
  SourceSettings s { dir.file ("random.pcap", junk) };
  run_pipeline (p, "pcapsrc name=src ! fakesink name=sink", configure_source, &s);
  assert_pcapsrc_error (p, s.location);
  fail_unless_equals_int (p.packet_numbers.size (), 0);

  /* A capture cut inside its 24-byte file header. */
  Bytes file;
  fail_unless (test::read_file (data_path (WIKIPEDIA), file));
  file.resize (10);
  PipelineRun q;
  SourceSettings t { dir.file ("header-only.pcap", file) };
  run_pipeline (q, "pcapsrc name=src ! fakesink name=sink", configure_source, &t);
  assert_pcapsrc_error (q, t.location);
}

GST_END_TEST;

GST_START_TEST (test_pcapsrc_truncated_capture)
{
  Bytes file;
  fail_unless (test::read_file (data_path (WIKIPEDIA), file));
  std::vector<test::PcapRecord> records = test::pcap_records (file);
  fail_unless_equals_int (records.size (), WIKIPEDIA_PACKETS);
  /* Cut in the middle of packet 50's bytes: 49 whole packets remain. */
  const test::PcapRecord & cut = records[49];
  file.resize (cut.offset + 16 + cut.incl_len / 2);

  TempDir dir;
  SourceSettings s { dir.file ("truncated.pcap", file) };
  for (guint batch_size : { 16u, 256u }) {
    PipelineRun p;
    gchar *description = g_strdup_printf ("pcapsrc name=src batch-size=%u ! "
        "fakesink name=sink", batch_size);
    run_pipeline (p, description, configure_source, &s);
    g_free (description);
    assert_pcapsrc_error (p, s.location);
    fail_unless_equals_int (p.invalid.size (), 0);
    fail_unless_equals_int (p.packet_numbers.size (), 49);
    for (size_t i = 0; i < p.packet_numbers.size (); i++)
      fail_unless_equals_uint64 (p.packet_numbers[i], i + 1);
  }
}

GST_END_TEST;

/* A valid pcapng whose interfaces have different link types: unsupported
 * (libpcap reads one link type per file), and said so, not "damaged". */
GST_START_TEST (test_pcapsrc_pcapng_two_link_types)
{
  Bytes file;
  auto block = [&file] (uint32_t type, Bytes body) {
    while (body.size () % 4)
      body.push_back (0);
    const uint32_t length = 12 + (uint32_t) body.size ();
    auto put32 = [&file] (uint32_t v) {
      for (int i = 0; i < 4; i++)
        file.push_back ((uint8_t) (v >> (8 * i)));
    };
    put32 (type);
    put32 (length);
    file.insert (file.end (), body.begin (), body.end ());
    put32 (length);
  };
  /* Section header (little-endian magic, version 1.0, unknown length). */
  block (0x0A0D0D0A, { 0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
          0xff, 0xff });
  block (1, { 1, 0, 0, 0, 0xff, 0xff, 0, 0 });        /* interface 0: Ethernet */
  block (1, { 101, 0, 0, 0, 0xff, 0xff, 0, 0 });      /* interface 1: raw IP */
  TempDir dir;
  SourceSettings s { dir.file ("two-link-types.pcapng", file) };
  PipelineRun p;
  run_pipeline (p, "pcapsrc name=src ! fakesink name=sink", configure_source, &s);
  fail_unless_equals_int (p.end, GST_MESSAGE_ERROR);
  assert_contains (p.error_text, "is not supported: its interfaces have different link types");
  fail_if (p.error_text.find ("damaged") != std::string::npos, "%s", p.error_text.c_str ());
}

GST_END_TEST;

GST_START_TEST (test_pcapsrc_invalid_filter)
{
  PipelineRun p;
  SourceSettings s { data_path (WIKIPEDIA), "udp and and nonsense" };
  run_pipeline (p, "pcapsrc name=src ! fakesink name=sink", configure_source, &s);
  assert_pcapsrc_error (p, s.filter);
  fail_unless_equals_int (p.packet_numbers.size (), 0);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* gpupacketproc                                                             */

/* What gst_harness_set_src_caps() sends, for caps it must not assert on. */
static void
push_caps_and_segment (GstHarness * h, const char *caps_text)
{
  GstCaps *caps = gst_caps_from_string (caps_text);
  GstSegment segment;
  gst_segment_init (&segment, GST_FORMAT_TIME);
  gst_harness_push_event (h, gst_event_new_caps (caps));
  gst_harness_push_event (h, gst_event_new_segment (&segment));
  gst_caps_unref (caps);
}

/* A gpupacketproc harness with a bus, so that element messages can be read. */
struct Proc
{
  GstHarness *h = nullptr;
  GstBus *bus = nullptr;

  /* @props ("decap=inner vxlan-ports=8472") are set before the harness
   * starts the element. */
  explicit Proc (const char *caps = BATCH_CAPS_ETHERNET, const char *props = NULL)
  {
    GstElement *e = gst_element_factory_make ("gpupacketproc", NULL);
    fail_unless (e != NULL, "gpupacketproc not found");
    gchar **pairs = g_strsplit (props ? props : "", " ", -1);
    for (gchar ** pair = pairs; *pair; pair++) {
      gchar **nv = g_strsplit (*pair, "=", 2);
      fail_unless (nv[0] && nv[1], "not name=value: %s", *pair);
      gst_util_set_object_arg (G_OBJECT (e), nv[0], nv[1]);
      g_strfreev (nv);
    }
    g_strfreev (pairs);
    bus = gst_bus_new ();
    gst_element_set_bus (e, bus);
    h = gst_harness_new_with_element (e, "sink", "src");
    gst_object_unref (e);
    if (caps)
      gst_harness_set_src_caps_str (h, caps);
  }
  ~Proc ()
  {
    gst_harness_teardown (h);
    gst_object_unref (bus);
  }

  /* Waits until every batch pushed so far is out (a serialized query
   * drains the element: mode=cpu, like the GPU modes, pushes from its task
   * unless low-latency is set). */
  void drain ()
  {
    GstQuery *query = gst_query_new_drain ();
    gst_pad_peer_query (h->srcpad, query);
    gst_query_unref (query);
  }

  /* Pushes @batch, expects one results buffer and returns it. */
  GstBuffer *push_pull (GstBuffer * batch)
  {
    fail_unless_equals_int (gst_harness_push (h, batch), GST_FLOW_OK);
    drain ();
    fail_unless_equals_int (gst_harness_buffers_in_queue (h), 1);
    return gst_harness_pull (h);
  }

  std::vector<GppResult> process (const Bytes & batch)
  {
    GstBuffer *out = push_pull (buffer_from (batch));
    std::vector<GppResult> r = view_results (out);
    gst_buffer_unref (out);
    return r;
  }

  GstStructure *stats ()
  {
    GstStructure *s = NULL;
    g_object_get (h->element, "stats", &s, NULL);
    fail_unless (s != NULL);
    return s;
  }
};

static guint64
stat (GstStructure * s, const char *field)
{
  guint64 v = 0;
  fail_unless (gst_structure_get_uint64 (s, field, &v), "stats lack %s", field);
  return v;
}

/* Results buffers carry a GstPacketBatchMeta.  The test does not link the
 * plugin, so it finds the meta by API name, as the header tells applications. */
static GstPacketBatchMeta *
batch_meta (GstBuffer * results)
{
  GType api = g_type_from_name (GST_PACKET_BATCH_META_API_NAME);
  fail_unless (api != 0, "%s is not registered", GST_PACKET_BATCH_META_API_NAME);
  return (GstPacketBatchMeta *) gst_buffer_get_meta (results, api);
}

/* The endpoints of the first IPv4 and the first IPv6 RSS verification vector. */
struct Flows
{
  Endpoint a4 { test::ip_from_text ("66.9.149.187"), 2794 };
  Endpoint b4 { test::ip_from_text ("161.142.100.80"), 1766 };
  Endpoint a6 { test::ip_from_text ("3ffe:2501:200:1fff::7"), 2794 };
  Endpoint b6 { test::ip_from_text ("3ffe:2501:200:3::1"), 1766 };
};

/* Five packets: 0 TCP a→b, 1 TCP a→b with a bad checksum, 2 TCP b→a,
 * 3 UDP/IPv6 a→b, 4 UDP/IPv6 a→b with a bad checksum. */
static Bytes
checksum_and_rss_batch ()
{
  Flows f;
  gpp::BatchBuilder bb;
  bb.reset (GPP_LINKTYPE_ETHERNET);
  const Bytes pkts[] = {
    test::make_packet (f.a4, f.b4, test::kProtoTcp, 10),
    test::make_packet (f.a4, f.b4, test::kProtoTcp, 11, true),
    test::make_packet (f.b4, f.a4, test::kProtoTcp, 12),
    test::make_packet (f.a6, f.b6, test::kProtoUdp, 13),
    test::make_packet (f.a6, f.b6, test::kProtoUdp, 14, true),
  };
  guint64 n = 1;
  for (const Bytes & p : pkts)
    bb.add (p.data (), (uint32_t) p.size (), (uint32_t) p.size (), 1000 * n, n), n++;
  return bb.finish ();
}

/* @count packets cycling through TCP, UDP and ICMP over IPv4 and IPv6 with
 * changing ports, numbered from @first_number. */
static Bytes
mixed_batch (uint32_t count, guint64 first_number)
{
  Flows f;
  gpp::BatchBuilder bb;
  bb.reset (GPP_LINKTYPE_ETHERNET);
  for (uint32_t i = 0; i < count; i++) {
    const bool v6 = i % 2;
    Endpoint s = v6 ? f.a6 : f.a4, d = v6 ? f.b6 : f.b4;
    s.port = (uint16_t) (1024 + i);
    const uint8_t protos[] = { test::kProtoTcp, test::kProtoUdp,
      v6 ? test::kProtoIcmpv6 : test::kProtoIcmp
    };
    Bytes p = test::make_packet (s, d, protos[i % 3], i % 50, i % 7 == 0);
    bb.add (p.data (), (uint32_t) p.size (), (uint32_t) p.size (), 5000 + i,
        first_number + i);
  }
  return bb.finish ();
}

GST_START_TEST (test_proc_caps_records_timestamps_meta)
{
  Proc p;
  const Bytes batch = mixed_batch (9, 1000);
  GstBuffer *in = buffer_from (batch);
  GST_BUFFER_PTS (in) = 3 * GST_SECOND;
  GST_BUFFER_DTS (in) = 2 * GST_SECOND;
  GST_BUFFER_DURATION (in) = 40 * GST_MSECOND;
  GST_BUFFER_OFFSET (in) = 17;
  GST_BUFFER_OFFSET_END (in) = 26;
  GstBuffer *out = p.push_pull (gst_buffer_ref (in));

  GstCaps *caps = gst_pad_get_current_caps (p.h->sinkpad);
  assert_caps_equal (caps, RESULTS_CAPS);
  gst_caps_unref (caps);

  fail_unless_equals_int (gst_buffer_get_size (out), 9 * 128);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 3 * GST_SECOND);
  fail_unless_equals_uint64 (GST_BUFFER_DTS (out), 2 * GST_SECOND);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), 40 * GST_MSECOND);
  fail_unless_equals_uint64 (GST_BUFFER_OFFSET (out), 17);
  fail_unless_equals_uint64 (GST_BUFFER_OFFSET_END (out), 26);

  GstPacketBatchMeta *meta = batch_meta (out);
  fail_unless (meta != NULL, "results carry no GstPacketBatchMeta");
  fail_unless (meta->batch == in, "the meta refers to another buffer than the batch");
  /* A copy of the results refers to the same batch. */
  GstBuffer *copy = gst_buffer_copy (out);
  fail_unless (batch_meta (copy) && batch_meta (copy)->batch == in);
  gst_buffer_unref (copy);

  BatchView v = view_batch (in);
  /* The meta keeps the batch alive on its own. */
  gst_buffer_unref (in);
  in = NULL;
  fail_unless (view_batch (meta->batch).bytes == v.bytes);
  std::vector<GppResult> r = view_results (out);
  for (size_t i = 0; i < r.size (); i++) {
    fail_unless_equals_uint64 (r[i].packet_number, v.descs[i].packet_number);
    fail_unless_equals_uint64 (r[i].packet_number, 1000 + i);
    fail_unless_equals_uint64 (r[i].timestamp_ns, v.descs[i].timestamp_ns);
    fail_unless_equals_int (r[i].caplen, v.descs[i].caplen);
    fail_unless_equals_int (r[i].wirelen, v.descs[i].wirelen);
    fail_unless_equals_int (r[i].ip_version, i % 2 ? 6 : 4);
    fail_unless_equals_int (r[i].status, 0);
  }
  gst_buffer_unref (out);
  fail_unless (gst_bus_pop_filtered (p.bus, GST_MESSAGE_ERROR) == NULL);
}

GST_END_TEST;

/* packet-records=false: no results buffer, a gap event in each batch's
 * place (one untimed gap at most, so that sinks preroll), the batches still
 * counted; back on while playing, the next batch's records come again. */
GST_START_TEST (test_proc_packet_records_off)
{
  Proc p;
  g_object_set (p.h->element, "packet-records", FALSE, NULL);
  const Bytes batch = mixed_batch (9, 1);
  fail_unless_equals_int (gst_harness_push (p.h, buffer_from (batch)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_push (p.h, buffer_from (batch)), GST_FLOW_OK);
  GstBuffer *timed = buffer_from (batch);
  GST_BUFFER_PTS (timed) = 3 * GST_SECOND;
  GST_BUFFER_DURATION (timed) = 40 * GST_MSECOND;
  fail_unless_equals_int (gst_harness_push (p.h, timed), GST_FLOW_OK);
  p.drain ();
  fail_unless_equals_int (gst_harness_buffers_in_queue (p.h), 0);
  std::vector<std::pair<GstClockTime, GstClockTime>> gaps;
  for (GstEvent *e; (e = gst_harness_try_pull_event (p.h)) != NULL; gst_event_unref (e)) {
    if (GST_EVENT_TYPE (e) != GST_EVENT_GAP)
      continue;
    GstClockTime ts, duration;
    gst_event_parse_gap (e, &ts, &duration);
    gaps.emplace_back (ts, duration);
  }
  fail_unless_equals_int (gaps.size (), 2);
  fail_unless_equals_uint64 (gaps[0].first, 0);
  fail_unless_equals_uint64 (gaps[1].first, 3 * GST_SECOND);
  fail_unless_equals_uint64 (gaps[1].second, 40 * GST_MSECOND);
  GstStructure *s = p.stats ();
  fail_unless_equals_uint64 (stat (s, "batches"), 3);
  fail_unless_equals_uint64 (stat (s, "packets"), 3 * 9);
  gst_structure_free (s);

  g_object_set (p.h->element, "packet-records", TRUE, NULL);
  std::vector<GppResult> r = p.process (batch);
  fail_unless_equals_int (r.size (), 9);
  fail_unless_equals_uint64 (r[8].packet_number, 9);
  fail_unless (gst_bus_pop_filtered (p.bus, GST_MESSAGE_ERROR) == NULL);
}

GST_END_TEST;

GST_START_TEST (test_proc_capture_batches)
{
  CaptureRun run;
  read_capture (run, WIKIPEDIA, 10);
  Proc p;
  guint64 bytes = 0, malformed = 0, packets = 0;
  for (GstBuffer *b : run.batches) {
    BatchView v = view_batch (b);
    GstBuffer *out = p.push_pull (gst_buffer_ref (b));
    std::vector<GppResult> r = view_results (out);
    fail_unless_equals_int (r.size (), v.header.packet_count);
    fail_unless (batch_meta (out) && batch_meta (out)->batch == b);
    for (size_t i = 0; i < r.size (); i++) {
      fail_unless_equals_uint64 (r[i].packet_number, v.descs[i].packet_number);
      fail_unless_equals_uint64 (r[i].timestamp_ns, v.descs[i].timestamp_ns);
      bytes += v.descs[i].caplen;
      malformed += r[i].status != 0;
    }
    packets += r.size ();
    gst_buffer_unref (out);
  }
  fail_unless_equals_int (packets, WIKIPEDIA_PACKETS);
  GstStructure *s = p.stats ();
  fail_unless_equals_uint64 (stat (s, "batches"), run.batches.size ());
  fail_unless_equals_uint64 (stat (s, "packets"), WIKIPEDIA_PACKETS);
  fail_unless_equals_uint64 (stat (s, "bytes"), bytes);
  /* SOURCES.md: 27460 file bytes = 24 + 136 * 16 + captured bytes. */
  fail_unless_equals_uint64 (bytes, 27460 - 24 - 16 * WIKIPEDIA_PACKETS);
  fail_unless_equals_uint64 (stat (s, "malformed"), malformed);
  gst_structure_free (s);
}

GST_END_TEST;

GST_START_TEST (test_proc_link_types)
{
  for (const auto & c : kLinkTypeCaptures) {
    CaptureRun run;
    read_capture (run, c.file, 1000);
    gchar *caps = gst_caps_to_string (run.caps);
    Proc p (caps);
    g_free (caps);
    GstBuffer *out = p.push_pull (gst_buffer_ref (run.batches[0]));
    std::vector<GppResult> r = view_results (out);
    gst_buffer_unref (out);
    fail_unless_equals_int (r.size (), c.packets);
    /* Each of these captures starts with an IP packet. */
    fail_unless (r[0].ip_version == 4 || r[0].ip_version == 6, "%s: packet 1 not IP",
        c.file);
    fail_unless (gst_bus_pop_filtered (p.bus, GST_MESSAGE_ERROR) == NULL);
  }
}

GST_END_TEST;

GST_START_TEST (test_proc_empty_batch)
{
  Proc p;
  gpp::BatchBuilder bb;
  bb.reset (GPP_LINKTYPE_ETHERNET);
  GstBuffer *in = buffer_from (bb.finish ());
  GST_BUFFER_PTS (in) = GST_SECOND;
  GstBuffer *out = p.push_pull (gst_buffer_ref (in));
  fail_unless_equals_int (gst_buffer_get_size (out), 0);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), GST_SECOND);
  fail_unless (batch_meta (out) && batch_meta (out)->batch == in);
  gst_buffer_unref (out);
  gst_buffer_unref (in);
  GstStructure *s = p.stats ();
  fail_unless_equals_uint64 (stat (s, "batches"), 1);
  fail_unless_equals_uint64 (stat (s, "packets"), 0);
  gst_structure_free (s);
}

GST_END_TEST;

/* One way to spoil a valid two-packet batch. */
struct Damage
{
  const char *what;
  void (*apply) (Bytes & batch);
};

static GppBatchHeader *
header_of (Bytes & b)
{
  return reinterpret_cast<GppBatchHeader *> (b.data ());
}

static GppPacketDesc *
descs_of (Bytes & b)
{
  return reinterpret_cast<GppPacketDesc *> (b.data () + sizeof (GppBatchHeader));
}

static const Damage kDamages[] = {
  {"bad magic", [](Bytes & b) { header_of (b)->magic = 0x12345678; }},
  {"wrong version", [](Bytes & b) { header_of (b)->version = 2; }},
  {"wrong header size", [](Bytes & b) { header_of (b)->header_size = 16; }},
  {"total_size too large", [](Bytes & b) { header_of (b)->total_size += 16; }},
  {"total_size too small", [](Bytes & b) { header_of (b)->total_size -= 16; }},
  {"more descriptors than fit", [](Bytes & b) { header_of (b)->packet_count = 0xffffffffu; }},
  {"truncated header", [](Bytes & b) { b.resize (20); }},
  {"empty buffer", [](Bytes & b) { b.clear (); }},
  {"descriptor past the end", [](Bytes & b) { descs_of (b)[1].offset = (uint32_t) b.size (); }},
  {"descriptor length past the end", [](Bytes & b) {
      descs_of (b)[1].caplen = descs_of (b)[1].wirelen = 1u << 20; }},
  {"descriptor inside the header", [](Bytes & b) { descs_of (b)[0].offset = 0; }},
  {"misaligned descriptor", [](Bytes & b) { descs_of (b)[0].offset += 1; }},
  {"caplen above wirelen", [](Bytes & b) { descs_of (b)[0].wirelen = descs_of (b)[0].caplen - 1; }},
  {"unsupported link type in the header", [](Bytes & b) { header_of (b)->linktype = 147; }},
};

GST_START_TEST (test_proc_malformed_batches)
{
  Proc p;
  const Bytes good = mixed_batch (2, 1);
  for (const Damage & d : kDamages) {
    Bytes bad = good;
    d.apply (bad);
    GstFlowReturn ret = gst_harness_push (p.h, buffer_from (bad));
    fail_unless (ret == GST_FLOW_ERROR, "%s: flow %s", d.what, gst_flow_get_name (ret));
    fail_unless (gst_harness_buffers_in_queue (p.h) == 0, "%s: results pushed", d.what);
    const std::string text = pop_message_text (p.bus, GST_MESSAGE_ERROR);
    fail_unless (text.find ("batch") != std::string::npos, "%s: error \"%s\"", d.what,
        text.c_str ());
  }
  /* The element still processes valid batches afterwards. */
  std::vector<GppResult> r = p.process (good);
  fail_unless_equals_int (r.size (), 2);
  fail_unless_equals_uint64 (r[1].packet_number, 2);
  GstStructure *s = p.stats ();
  fail_unless_equals_uint64 (stat (s, "batches"), 1);
  fail_unless_equals_uint64 (stat (s, "packets"), 2);
  gst_structure_free (s);
}

GST_END_TEST;

/* Pinned pools bounded by the machine: a request over half of physical
 * memory (with what the process has pinned) is refused at READY→PAUSED with
 * both figures, whatever the mode; stats shows what is pinned. */
GST_START_TEST (test_proc_pinned_memory_bound)
{
  GstElement *e = gst_element_factory_make ("gpupacketproc", NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (e, bus);
  g_object_set (e, "pool-size", 65535, NULL);   /* 64 GiB + 256 GiB of results */
  gchar *meminfo = NULL;
  fail_unless (g_file_get_contents ("/proc/meminfo", &meminfo, NULL, NULL));
  unsigned long long kib = 0;
  sscanf (strstr (meminfo, "MemTotal:"), "MemTotal: %llu kB", &kib);
  g_free (meminfo);
  if (kib * 1024 / 2 < 5ull * 65535 << 20) {
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
        GST_STATE_CHANGE_FAILURE);
    const std::string text = pop_message_text (bus, GST_MESSAGE_ERROR);
    assert_contains (text, "Pinned memory refused: pool-size=65535 needs 327675 MiB");
    assert_contains (text, std::to_string (kib / 1024) + " MiB");
  }
  gst_element_set_state (e, GST_STATE_NULL);
  /* A modest pool starts; stats reports what it pinned (0 without a GPU). */
  g_object_set (e, "pool-size", 4, NULL);
  fail_if (gst_element_set_state (e, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE);
  GstStructure *stats = NULL;
  g_object_get (e, "stats", &stats, NULL);
  guint64 pinned = G_MAXUINT64;
  fail_unless (gst_structure_get_uint64 (stats, "pool-bytes-pinned", &pinned));
  fail_unless (pinned == 0 || pinned == 5ull * 4 << 20, "%" G_GUINT64_FORMAT, pinned);
  gst_structure_free (stats);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_object_unref (bus);
}

GST_END_TEST;

GST_START_TEST (test_proc_unsupported_linktype_caps)
{
  /* gst_pad_push_event() reports success for sticky events whatever the
   * peer says; the refusal shows as an error message and in the data flow. */
  Proc p (NULL);
  push_caps_and_segment (p.h, "application/x-packet-batch, linktype=(int)147");
  assert_contains (pop_message_text (p.bus, GST_MESSAGE_ERROR), "147");
  fail_unless (gst_pad_get_current_caps (p.h->sinkpad) == NULL);
  /* Each push offers the sticky caps again: refused each time, posted once. */
  for (int i = 0; i < 3; i++)
    fail_if (gst_harness_push (p.h, buffer_from (mixed_batch (1, 1))) == GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (p.h), 0);
  fail_unless (gst_bus_pop_filtered (p.bus, GST_MESSAGE_ERROR) == NULL,
      "the unsupported link type was reported more than once");

  /* The CAPS query tells a source beforehand: the link types the core
   * parses, exactly (gpp::linktype_supported over every 16-bit value). */
  GstPad *sink = gst_element_get_static_pad (p.h->element, "sink");
  for (guint linktype = 0; linktype < 65536; linktype++) {
    GstCaps *want = gst_caps_new_simple ("application/x-packet-batch", "linktype", G_TYPE_INT,
        (gint) linktype, NULL);
    GstCaps *taken = gst_pad_query_caps (sink, want);
    fail_unless_equals_int (!gst_caps_is_empty (taken), gpp::linktype_supported (linktype));
    gst_caps_unref (taken);
    gst_caps_unref (want);
  }
  gst_object_unref (sink);

  /* A batch without a link type is refused as well. */
  Proc q (NULL);
  push_caps_and_segment (q.h, "application/x-packet-batch");
  fail_if (gst_harness_push (q.h, buffer_from (mixed_batch (1, 1))) == GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (q.h), 0);
}

GST_END_TEST;

GST_START_TEST (test_proc_unsupported_linktype_pipeline)
{
  /* A pcap of LINKTYPE_USER0 (147) with one 4-byte packet. */
  const uint8_t capture[] = {
    0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 147, 0, 0, 0,
    1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef,
  };
  TempDir dir;
  SourceSettings s { dir.file ("user0.pcap", Bytes (capture, capture + sizeof capture)) };
  PipelineRun p;
  run_pipeline (p, "pcapsrc name=src ! gpupacketproc name=proc ! fakesink name=sink",
      configure_source, &s);
  /* pcapsrc asks at start (ACCEPT_CAPS) and fails READY→PAUSED naming both. */
  fail_unless_equals_int (p.end, GST_MESSAGE_ERROR);
  fail_unless_equals_string (p.error_source.c_str (), "src");
  assert_contains (p.error_text, "proc does not accept link type 147");
  fail_unless_equals_int (p.sink_bytes.size (), 0);
}

GST_END_TEST;

GST_START_TEST (test_proc_rss_vectors)
{
  const test::RssVectors suite = rss_suite ();
  const uint8_t *default_key = suite.key.data ();
  const std::vector<test::RssVector> & vectors = suite.rows;
  gpp::BatchBuilder bb;
  bb.reset (GPP_LINKTYPE_ETHERNET);
  guint64 n = 1;
  for (const auto & v : vectors) {
    /* The oracle of this file agrees with the published vectors. */
    fail_unless_equals_int_hex (test::rss_of (default_key, v.src, v.dst, true), v.hash_ip_l4);
    fail_unless_equals_int_hex (test::rss_of (default_key, v.src, v.dst, false),
        v.hash_ip_only);
    const bool v6 = v.src.addr.size () == 16;
    Bytes tcp = test::make_packet (v.src, v.dst, test::kProtoTcp, 4);
    Bytes udp = test::make_packet (v.src, v.dst, test::kProtoUdp, 4);
    Bytes icmp = test::make_packet (v.src, v.dst, v6 ? test::kProtoIcmpv6 : test::kProtoIcmp, 4);
    for (const Bytes *p : { &tcp, &udp, &icmp })
      bb.add (p->data (), (uint32_t) p->size (), (uint32_t) p->size (), 0, n++);
  }
  Proc p;
  std::vector<GppResult> r = p.process (bb.finish ());
  fail_unless_equals_int (r.size (), 3 * vectors.size ());
  for (size_t i = 0; i < vectors.size (); i++) {
    fail_unless_equals_int_hex (r[3 * i].rss_hash, vectors[i].hash_ip_l4);
    fail_unless_equals_int_hex (r[3 * i + 1].rss_hash, vectors[i].hash_ip_l4);
    fail_unless_equals_int_hex (r[3 * i + 2].rss_hash, vectors[i].hash_ip_only);
  }
}

GST_END_TEST;

GST_START_TEST (test_proc_properties_while_playing)
{
  const test::RssVectors suite = rss_suite ();
  const uint8_t *default_key = suite.key.data ();
  Flows f;
  const Bytes batch = checksum_and_rss_batch ();
  Proc p;
  fail_unless_equals_int (GST_STATE (p.h->element), GST_STATE_PLAYING);
  const uint32_t ab = test::rss_of (default_key, f.a4, f.b4, true);
  const uint32_t ba = test::rss_of (default_key, f.b4, f.a4, true);
  fail_unless_equals_int_hex (ab, 0x51ccc178);
  fail_if (ab == ba);

  /* Defaults: checksums unverified, NIC-compatible (asymmetric) hash. */
  std::vector<GppResult> base = p.process (batch);
  fail_unless_equals_int (base.size (), 5);
  for (const GppResult & r : base)
    fail_unless_equals_int (r.l4_checksum, GPP_CHECKSUM_UNVERIFIED);
  fail_unless_equals_int_hex (base[0].rss_hash, ab);
  fail_unless_equals_int_hex (base[2].rss_hash, ba);

  g_object_set (p.h->element, "verify-l4-checksum", TRUE, NULL);
  std::vector<GppResult> r = p.process (batch);
  const int expected_checksums[] = { GPP_CHECKSUM_GOOD, GPP_CHECKSUM_BAD, GPP_CHECKSUM_GOOD,
    GPP_CHECKSUM_GOOD, GPP_CHECKSUM_BAD
  };
  for (size_t i = 0; i < r.size (); i++)
    fail_unless_equals_int (r[i].l4_checksum, expected_checksums[i]);

  g_object_set (p.h->element, "symmetric-rss", TRUE, NULL);
  r = p.process (batch);
  fail_unless_equals_int_hex (r[0].rss_hash, ab);       /* a < b: already in order */
  fail_unless_equals_int_hex (r[2].rss_hash, ab);
  fail_unless_equals_int (r[1].l4_checksum, GPP_CHECKSUM_BAD);

  g_object_set (p.h->element, "verify-l4-checksum", FALSE, NULL);
  uint8_t other_key[40];
  for (int i = 0; i < 40; i++)
    other_key[i] = (uint8_t) (i * 37 + 11);
  const std::string other = key_text (other_key, "-");
  g_object_set (p.h->element, "rss-key", other.c_str (), NULL);
  r = p.process (batch);
  fail_unless_equals_int (r[1].l4_checksum, GPP_CHECKSUM_UNVERIFIED);
  fail_unless_equals_int_hex (r[0].rss_hash, test::rss_of (other_key, f.a4, f.b4, true));
  fail_unless_equals_int_hex (r[2].rss_hash, r[0].rss_hash);
  /* Symmetric: the smaller (address, port) endpoint goes first; b6 < a6. */
  fail_unless_equals_int_hex (r[3].rss_hash, test::rss_of (other_key, f.b6, f.a6, true));
  fail_unless (f.b6.addr < f.a6.addr);
  fail_if (r[0].rss_hash == ab);

  /* Back to the defaults, on more threads: the very same records. */
  g_object_set (p.h->element, "symmetric-rss", FALSE, "cpu-threads", 3,
      "rss-key", key_text (default_key, ":").c_str (), NULL);
  r = p.process (batch);
  fail_unless (memcmp (r.data (), base.data (), r.size () * sizeof (GppResult)) == 0);
  fail_unless (gst_bus_pop_filtered (p.bus, GST_MESSAGE_ERROR) == NULL);
  fail_unless (gst_bus_pop_filtered (p.bus, GST_MESSAGE_WARNING) == NULL);
}

GST_END_TEST;

GST_START_TEST (test_proc_cpu_threads_same_results)
{
  /* Large enough for several threads (512 packets per thread at least). */
  const Bytes batch = mixed_batch (2000, 1);
  Proc p;
  std::vector<GppResult> one = p.process (batch);
  fail_unless_equals_int (one.size (), 2000);
  for (guint threads : { 2u, 4u, 0u, 1u }) {
    g_object_set (p.h->element, "cpu-threads", threads, NULL);
    std::vector<GppResult> r = p.process (batch);
    fail_unless (memcmp (r.data (), one.data (), r.size () * sizeof (GppResult)) == 0,
        "cpu-threads=%u changes the results", threads);
  }
  for (size_t i = 0; i < one.size (); i++)
    fail_unless_equals_uint64 (one[i].packet_number, i + 1);
}

GST_END_TEST;

/* gpupacketproc with @value for @property, set before start: READY→PAUSED
 * fails with an error mentioning @needle; @valid then lets it start. */
static void
assert_start_refused (const char *property, const char *value, const char *needle,
    const char *valid)
{
  GstElement *e = gst_element_factory_make ("gpupacketproc", NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (e, bus);
  g_object_set (e, property, value, NULL);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  assert_contains (pop_message_text (bus, GST_MESSAGE_ERROR), needle);
  g_object_set (e, property, valid, NULL);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (e);
  gst_object_unref (bus);
}

GST_START_TEST (test_proc_invalid_rss_key)
{
  const test::RssVectors suite = rss_suite ();
  const uint8_t *default_key = suite.key.data ();
  const char *bad_keys[] = {
    "00112233",                 /* 4 bytes */
    "zz5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa",
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa00",
    "",
  };
  for (const char *key : bad_keys)
    assert_start_refused ("rss-key", key, "rss-key", key_text (default_key, " ").c_str ());

  /* While running, an invalid key is ignored with a warning: the stream
   * keeps hashing with the key in use. */
  Flows f;
  Proc p;
  gchar *before = NULL, *after = NULL;
  g_object_get (p.h->element, "rss-key", &before, NULL);
  g_object_set (p.h->element, "rss-key", "not a key", NULL);
  assert_contains (pop_message_text (p.bus, GST_MESSAGE_WARNING), "rss-key");
  g_object_get (p.h->element, "rss-key", &after, NULL);
  fail_unless_equals_string (after, before);
  std::vector<GppResult> r = p.process (checksum_and_rss_batch ());
  fail_unless_equals_int_hex (r[0].rss_hash, test::rss_of (default_key, f.a4, f.b4, true));
  g_free (before);
  g_free (after);
}

GST_END_TEST;

#define RESULTS_CAPS_TUNNELS "application/x-packet-results, record-size=(int)176"

/* The tunnel plane of a record-size=176 buffer. */
static std::vector<GppTunnelInfo>
view_tunnels (GstBuffer * buf)
{
  Bytes b = buffer_bytes (buf);
  fail_unless (b.size () % GPP_RESULTS_RECORD_SIZE_TUNNELS == 0, "results buffer of %zu bytes",
      b.size ());
  const size_t n = b.size () / GPP_RESULTS_RECORD_SIZE_TUNNELS;
  std::vector<GppTunnelInfo> out (n);
  if (n)
    memcpy (out.data (), gpp_results_tunnels (b.data (), b.size ()), n * sizeof (GppTunnelInfo));
  return out;
}

/* The first @n records of a results buffer of either record size. */
static Bytes
record_plane (GstBuffer * buf, size_t n)
{
  Bytes b = buffer_bytes (buf);
  fail_unless (b.size () >= n * sizeof (GppResult));
  return Bytes (b.begin (), b.begin () + n * sizeof (GppResult));
}

/* decap=inner: record-size=176 caps and buffers, the tunnel plane after the
 * records (zeek's VXLAN capture: VNI 123, UDP 4789); packets in no tunnel
 * have the records of decap=none and an empty plane; vxlan-ports applies
 * from the next batch while playing, and decap, which changes the format,
 * is refused then. */
GST_START_TEST (test_proc_decap_inner)
{
  CaptureRun vxlan;
  read_capture (vxlan, "pcap-tunnels/zeek__vxlan.pcap", 64);
  fail_unless_equals_int (vxlan.batches.size (), 1);
  const guint n = view_batch (vxlan.batches[0]).header.packet_count;
  fail_unless_equals_int (n, 10);

  Proc p (BATCH_CAPS_ETHERNET, "decap=inner");
  GstBuffer *out = p.push_pull (gst_buffer_ref (vxlan.batches[0]));
  GstCaps *caps = gst_pad_get_current_caps (p.h->sinkpad);
  assert_caps_equal (caps, RESULTS_CAPS_TUNNELS);
  gst_caps_unref (caps);
  fail_unless_equals_int (gst_buffer_get_size (out), n * GPP_RESULTS_RECORD_SIZE_TUNNELS);
  for (const GppTunnelInfo & t : view_tunnels (out)) {
    fail_unless_equals_int (t.tunnel_count, 1);
    fail_unless_equals_int (t.tunnel_types[0], GPP_TUNNEL_VXLAN);
    fail_unless_equals_int (t.tunnel_id, 123);
    fail_unless_equals_int (t.outer_ip_version, 4);
    fail_unless_equals_int (t.outer_l4_proto, 17);
    fail_unless_equals_int (t.outer_dport, 4789);
  }
  gst_buffer_unref (out);

  /* No tunnel: decap=none's records, and nothing in the plane. */
  const Bytes plain = mixed_batch (9, 1);
  Proc none;
  GstBuffer *want = none.push_pull (buffer_from (plain));
  fail_unless_equals_int (gst_buffer_get_size (want), 9 * GPP_RESULTS_RECORD_SIZE);
  out = p.push_pull (buffer_from (plain));
  fail_unless (record_plane (out, 9) == buffer_bytes (want));
  const GppTunnelInfo zero {};
  for (const GppTunnelInfo & t : view_tunnels (out))
    fail_unless (memcmp (&t, &zero, sizeof t) == 0, "a tunnel plane entry is not empty");
  gst_buffer_unref (out);
  gst_buffer_unref (want);

  /* vxlan-ports while playing: from the next batch; a bad list keeps them. */
  g_object_set (p.h->element, "vxlan-ports", "8472", NULL);
  out = p.push_pull (gst_buffer_ref (vxlan.batches[0]));
  for (const GppTunnelInfo & t : view_tunnels (out))
    fail_unless_equals_int (t.tunnel_count, 0);
  gst_buffer_unref (out);
  g_object_set (p.h->element, "vxlan-ports", "4789,x", NULL);
  assert_contains (pop_message_text (p.bus, GST_MESSAGE_WARNING), "vxlan-ports \"4789,x\"");
  gchar *ports = NULL;
  g_object_get (p.h->element, "vxlan-ports", &ports, NULL);
  fail_unless_equals_string (ports, "8472");
  g_free (ports);
  g_object_set (p.h->element, "vxlan-ports", "8472,4789", NULL);
  out = p.push_pull (gst_buffer_ref (vxlan.batches[0]));
  for (const GppTunnelInfo & t : view_tunnels (out))
    fail_unless_equals_int (t.tunnel_types[0], GPP_TUNNEL_VXLAN);
  gst_buffer_unref (out);

  /* decap changes the records' format: refused while playing. */
  gst_util_set_object_arg (G_OBJECT (p.h->element), "decap", "none");
  assert_contains (pop_message_text (p.bus, GST_MESSAGE_WARNING),
      "Ignoring the new value of \"decap\"");
  gint decap = -1;
  g_object_get (p.h->element, "decap", &decap, NULL);
  fail_unless_equals_int (decap, 1);
  out = p.push_pull (buffer_from (plain));
  fail_unless_equals_int (gst_buffer_get_size (out), 9 * GPP_RESULTS_RECORD_SIZE_TUNNELS);
  gst_buffer_unref (out);
  fail_unless (gst_bus_pop_filtered (p.bus, GST_MESSAGE_ERROR) == NULL);
  fail_unless (gst_bus_pop_filtered (none.bus, GST_MESSAGE_ERROR) == NULL);
}

GST_END_TEST;

/* vxlan-ports before start: a bad list fails READY→PAUSED with an error
 * naming it (as rss-key); a good one then starts. */
GST_START_TEST (test_proc_invalid_vxlan_ports)
{
  for (const char *bad : {"x", "0", "65536", "1,2,3", "4789,", "4789;8472", "-5"})
    assert_start_refused ("vxlan-ports", bad, "Invalid vxlan-ports", "");  /* "": no port */
}

GST_END_TEST;

/* decap=inner into a peer that takes only record-size=128: the push fails
 * not-negotiated, and gpupacketproc says so once, naming both sizes. */
GST_START_TEST (test_proc_decap_refused_downstream)
{
  for (const char *decap : {"decap=none", "decap=inner"}) {
    Proc p (NULL, decap);
    gst_harness_set_sink_caps_str (p.h, RESULTS_CAPS);
    push_caps_and_segment (p.h, BATCH_CAPS_ETHERNET);
    const bool refused = g_str_equal (decap, "decap=inner");
    GstFlowReturn flow = gst_harness_push (p.h, buffer_from (mixed_batch (3, 1)));
    p.drain ();
    if (flow == GST_FLOW_OK)
      flow = gst_harness_push (p.h, buffer_from (mixed_batch (3, 4)));
    if (!refused) {
      fail_unless_equals_int (flow, GST_FLOW_OK);
      fail_unless (gst_bus_pop_filtered (p.bus, GST_MESSAGE_ERROR) == NULL);
      continue;
    }
    fail_unless_equals_int (flow, GST_FLOW_NOT_NEGOTIATED);
    const std::string error = pop_message_text (p.bus, GST_MESSAGE_ERROR);
    assert_contains (error, "not-negotiated");
    assert_contains (error, "record-size=(int)176");
    assert_contains (error, "downstream accepts application/x-packet-results, "
        "record-size=(int)128");
    fail_unless (gst_bus_pop_filtered (p.bus, GST_MESSAGE_ERROR) == NULL,
        "the refused caps were reported more than once");
    fail_unless_equals_int (gst_harness_buffers_in_queue (p.h), 0);
  }
}

GST_END_TEST;

/* With no NVIDIA driver, a GPU mode fails to start with an error that says
 * there is none, not the CUDA runtime's text for that case (which blames the
 * driver's version).  Where the driver is there (the GPU host) nothing is
 * asserted: the gpu suite starts every mode there. */
GST_START_TEST (test_proc_gpu_mode_without_driver)
{
  void *driver = dlopen ("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver) {
    dlclose (driver);
    GST_INFO ("an NVIDIA driver is installed: nothing to check");
    return;
  }
  GstElement *e = gst_element_factory_make ("gpupacketproc", NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (e, bus);
  gst_util_set_object_arg (G_OBJECT (e), "mode", "streams");
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  const std::string text = pop_message_text (bus, GST_MESSAGE_ERROR);
  assert_contains (text, "mode=streams needs a CUDA GPU");
  fail_if (text.find ("insufficient") != std::string::npos,
      "without a driver the error blames its version: %s", text.c_str ());
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_object_unref (bus);
}

GST_END_TEST;

GST_START_TEST (test_proc_stats)
{
  Flows f;
  Bytes ok1 = test::make_packet (f.a4, f.b4, test::kProtoTcp, 100);
  Bytes ok2 = test::make_packet (f.a6, f.b6, test::kProtoUdp, 30);
  /* IPv4 total length 1000 in a 74-byte frame: malformed. */
  Bytes bad_len = test::make_packet (f.a4, f.b4, test::kProtoUdp, 20);
  test::put16 (bad_len, 14 + 2, 1000);
  /* Captured only up to the middle of the TCP header: truncated. */
  Bytes cut = test::make_packet (f.a4, f.b4, test::kProtoTcp, 40);

  gpp::BatchBuilder bb;
  bb.reset (GPP_LINKTYPE_ETHERNET);
  bb.add (ok1.data (), (uint32_t) ok1.size (), (uint32_t) ok1.size (), 1, 1);
  bb.add (bad_len.data (), (uint32_t) bad_len.size (), (uint32_t) bad_len.size (), 2, 2);
  bb.add (ok2.data (), (uint32_t) ok2.size (), (uint32_t) ok2.size (), 3, 3);
  const Bytes batch1 = bb.finish ();
  bb.reset (GPP_LINKTYPE_ETHERNET);
  bb.add (cut.data (), 14 + 20 + 10, (uint32_t) cut.size (), 4, 4);
  bb.add (ok2.data (), (uint32_t) ok2.size (), (uint32_t) ok2.size (), 5, 5);
  const Bytes batch2 = bb.finish ();

  Proc p;
  GstStructure *s = p.stats ();
  for (const char *field : { "batches", "packets", "bytes", "malformed",
          "latency-p50-ns", "latency-p99-ns", "latency-max-ns" })
    fail_unless_equals_uint64 (stat (s, field), 0);
  gst_structure_free (s);

  std::vector<GppResult> r1 = p.process (batch1);
  std::vector<GppResult> r2 = p.process (batch2);
  fail_unless_equals_int (r1[0].status, 0);
  fail_unless (r1[1].status != 0);
  fail_unless_equals_int (r1[2].status, 0);
  fail_unless (r2[0].status & GPP_STATUS_TRUNCATED);
  fail_unless_equals_int (r2[1].status, 0);
  for (int i = 0; i < 3; i++)
    p.process (batch2);

  s = p.stats ();
  fail_unless_equals_uint64 (stat (s, "batches"), 5);
  fail_unless_equals_uint64 (stat (s, "packets"), 3 + 4 * 2);
  fail_unless_equals_uint64 (stat (s, "bytes"),
      ok1.size () + bad_len.size () + ok2.size () + 4 * (14 + 20 + 10 + ok2.size ()));
  fail_unless_equals_uint64 (stat (s, "malformed"), 1 + 4);
  const guint64 p50 = stat (s, "latency-p50-ns");
  fail_unless (p50 > 0);
  fail_unless (stat (s, "latency-p99-ns") >= p50);
  fail_unless (stat (s, "latency-p999-ns") >= stat (s, "latency-p99-ns"));
  fail_unless (stat (s, "latency-max-ns") >= stat (s, "latency-p999-ns"));
  /* Where the time went: every batch was in the engine and pushed; a
   * pipelined mode=cpu batch queues for the task; nothing here waits for
   * the pinned pool (there is none) or, one batch at a time, for a slot. */
  fail_unless (stat (s, "time-engine-ns") > 0);
  fail_unless (stat (s, "time-push-ns") > 0);
  fail_unless (stat (s, "time-queued-ns") > 0);
  fail_unless_equals_uint64 (stat (s, "time-pool-wait-ns"), 0);
  gst_structure_free (s);

  /* low-latency: the streaming thread runs each batch; nothing queues. */
  g_object_set (p.h->element, "low-latency", TRUE, NULL);
  s = p.stats ();
  const guint64 queued = stat (s, "time-queued-ns");
  gst_structure_free (s);
  p.process (batch2);
  s = p.stats ();
  fail_unless_equals_uint64 (stat (s, "time-queued-ns"), queued);
  fail_unless_equals_uint64 (stat (s, "batches"), 6);
  gst_structure_free (s);

  /* Counted since the last READY→PAUSED. */
  fail_unless_equals_int (gst_element_set_state (p.h->element, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  fail_unless_equals_int (gst_element_set_state (p.h->element, GST_STATE_PAUSED),
      GST_STATE_CHANGE_SUCCESS);
  s = p.stats ();
  fail_unless_equals_uint64 (stat (s, "batches"), 0);
  fail_unless_equals_uint64 (stat (s, "packets"), 0);
  fail_unless_equals_uint64 (stat (s, "latency-p50-ns"), 0);
  fail_unless_equals_uint64 (stat (s, "time-engine-ns"), 0);
  gst_structure_free (s);
}

GST_END_TEST;

GST_START_TEST (test_proc_stress_cpu_threads)
{
  /* 1300 packets: up to 2 chunks, so thread counts above 1 really split work. */
  const Bytes batch = mixed_batch (1300, 7);
  Proc p;
  const std::vector<GppResult> reference = p.process (batch);

  GValue one = G_VALUE_INIT, three = G_VALUE_INIT, all = G_VALUE_INIT;
  g_value_init (&one, G_TYPE_UINT);
  g_value_init (&three, G_TYPE_UINT);
  g_value_init (&all, G_TYPE_UINT);
  g_value_set_uint (&one, 1);
  g_value_set_uint (&three, 3);
  g_value_set_uint (&all, 0);
  GstHarnessThread *threads[] = {
    gst_harness_stress_property_start_full (p.h, "cpu-threads", &one, 50),
    gst_harness_stress_property_start_full (p.h, "cpu-threads", &three, 70),
    gst_harness_stress_property_start_full (p.h, "cpu-threads", &all, 110),
  };
  const int rounds = 60;
  for (int i = 0; i < rounds; i++) {
    std::vector<GppResult> r = p.process (batch);
    fail_unless_equals_int (r.size (), reference.size ());
    fail_unless (memcmp (r.data (), reference.data (), r.size () * sizeof (GppResult)) == 0,
        "round %d: results differ while cpu-threads changes", i);
  }
  for (GstHarnessThread *t : threads)
    fail_unless (gst_harness_stress_thread_stop (t) > 0);
  g_value_unset (&one);
  g_value_unset (&three);
  g_value_unset (&all);

  GstStructure *s = p.stats ();
  fail_unless_equals_uint64 (stat (s, "batches"), rounds + 1);
  fail_unless_equals_uint64 (stat (s, "packets"), (rounds + 1) * 1300);
  gst_structure_free (s);
  fail_unless (gst_bus_pop_filtered (p.bus, GST_MESSAGE_ERROR) == NULL);
}

GST_END_TEST;

GST_START_TEST (test_proc_stress_rss_key)
{
  const test::RssVectors suite = rss_suite ();
  const uint8_t *default_key = suite.key.data ();
  /* Each batch is hashed with one key from start to end, also on two
   * threads, while another thread keeps switching keys. */
  uint8_t other_key[40];
  for (int i = 0; i < 40; i++)
    other_key[i] = (uint8_t) (255 - i * 5);
  const std::string key_a = key_text (default_key, ":");
  const std::string key_b = key_text (other_key, "");
  const Bytes batch = mixed_batch (1300, 1);
  Proc p;
  g_object_set (p.h->element, "cpu-threads", 2, NULL);
  const std::vector<GppResult> with_a = p.process (batch);
  g_object_set (p.h->element, "rss-key", key_b.c_str (), NULL);
  const std::vector<GppResult> with_b = p.process (batch);
  fail_if (with_a[0].rss_hash == with_b[0].rss_hash);

  GValue a = G_VALUE_INIT, b = G_VALUE_INIT;
  g_value_init (&a, G_TYPE_STRING);
  g_value_init (&b, G_TYPE_STRING);
  g_value_set_string (&a, key_a.c_str ());
  g_value_set_string (&b, key_b.c_str ());
  GstHarnessThread *ta = gst_harness_stress_property_start_full (p.h, "rss-key", &a, 30);
  GstHarnessThread *tb = gst_harness_stress_property_start_full (p.h, "rss-key", &b, 40);
  for (int i = 0; i < 60; i++) {
    std::vector<GppResult> r = p.process (batch);
    const size_t bytes = r.size () * sizeof (GppResult);
    fail_unless (memcmp (r.data (), with_a.data (), bytes) == 0 ||
        memcmp (r.data (), with_b.data (), bytes) == 0,
        "round %d: a batch mixes two RSS keys", i);
  }
  fail_unless (gst_harness_stress_thread_stop (ta) > 0);
  fail_unless (gst_harness_stress_thread_stop (tb) > 0);
  g_value_unset (&a);
  g_value_unset (&b);
  fail_unless (gst_bus_pop_filtered (p.bus, GST_MESSAGE_WARNING) == NULL);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* packetresultenc                                                           */

struct Enc
{
  GstHarness *h = nullptr;
  GstBus *bus = nullptr;

  explicit Enc (const char *format, gboolean header = TRUE)
  {
    GstElement *e = gst_element_factory_make ("packetresultenc", NULL);
    fail_unless (e != NULL, "packetresultenc not found");
    gst_util_set_object_arg (G_OBJECT (e), "format", format);
    g_object_set (e, "header", header, NULL);
    bus = gst_bus_new ();
    gst_element_set_bus (e, bus);
    h = gst_harness_new_with_element (e, "sink", "src");
    gst_object_unref (e);
    gst_harness_set_src_caps_str (h, RESULTS_CAPS);
  }
  ~Enc ()
  {
    gst_harness_teardown (h);
    gst_object_unref (bus);
  }

  /* Everything the encoder has pushed so far, as text. */
  std::string drain ()
  {
    std::string text;
    while (GstBuffer *b = gst_harness_try_pull (h)) {
      Bytes bytes = buffer_bytes (b);
      text.append (bytes.begin (), bytes.end ());
      gst_buffer_unref (b);
    }
    return text;
  }
};

static std::vector<std::string>
split_lines (const std::string & text)
{
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size ()) {
    size_t nl = text.find ('\n', start);
    fail_unless (nl != std::string::npos, "text does not end with a newline");
    lines.push_back (text.substr (start, nl - start));
    start = nl + 1;
  }
  return lines;
}

/* Three hand-made records covering every column kind. */
static std::vector<GppResult>
sample_records ()
{
  std::vector<GppResult> r (3);
  memset (r.data (), 0, r.size () * sizeof (GppResult));
  for (auto & x : r) {
    x.acl_rule = -1;
    x.dpi_pattern = -1;
  }
  /* IPv4 TCP in two VLANs, IPv4 checksum good, L4 checksum bad. */
  r[0].packet_number = 7;
  r[0].timestamp_ns = G_GUINT64_CONSTANT (1300475167096535000);
  r[0].rss_hash = 0x51ccc178;
  r[0].caplen = r[0].wirelen = 74;
  r[0].ethertype = 0x0800;
  r[0].vlan_ids[0] = 100;
  r[0].vlan_ids[1] = 4094;
  r[0].vlan_count = 2;
  r[0].ip_version = 4;
  r[0].l4_proto = 6;
  r[0].ipv4_checksum = GPP_CHECKSUM_GOOD;
  r[0].l4_checksum = GPP_CHECKSUM_BAD;
  r[0].ip_flags = GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED | GPP_IP_DONT_FRAGMENT;
  r[0].sport = 2794;
  r[0].dport = 1766;
  r[0].tcp_flags = 0x18;
  r[0].ttl = 64;
  r[0].payload_length = 12;
  r[0].acl_rule = 5;
  r[0].acl_action = GPP_ACL_DROP;
  memcpy (r[0].src, test::ip_from_text ("66.9.149.187").data (), 4);
  memcpy (r[0].dst, test::ip_from_text ("161.142.100.80").data (), 4);
  /* ARP: no IP at all. */
  r[1].packet_number = 8;
  r[1].timestamp_ns = 1;
  r[1].caplen = 42;
  r[1].wirelen = 60;
  r[1].ethertype = 0x0806;
  r[1].acl_rule = -1;           /* non-IP: no rule, the default action */
  r[1].acl_action = GPP_ACL_ALLOW;
  /* A later IPv6 fragment of an ICMPv6 packet, cut short, two status flags. */
  r[2].packet_number = 9;
  r[2].timestamp_ns = 2 * GST_SECOND + 5;
  r[2].caplen = 96;
  r[2].wirelen = 1500;
  r[2].status = GPP_STATUS_TRUNCATED | GPP_STATUS_BAD_L4_HEADER;
  r[2].rss_hash = 0xdeadbeef;
  r[2].ethertype = 0x86dd;
  r[2].ip_version = 6;
  r[2].l4_proto = 58;
  r[2].l4_checksum = GPP_CHECKSUM_UNVERIFIED;
  r[2].ip_flags = GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED | GPP_IP_FRAGMENT |
      GPP_IP_MORE_FRAGMENTS;
  r[2].frag_offset = 1448;
  r[2].icmp_type = 128;
  r[2].icmp_code = 0;
  r[2].ttl = 255;
  memcpy (r[2].src, test::ip_from_text ("2001:db8::1").data (), 16);
  memcpy (r[2].dst, test::ip_from_text ("ff02::1").data (), 16);
  return r;
}

static const char *const kSampleCsv[] = {
  "7,0x0800,100;4094,4,66.9.149.187,161.142.100.80,6,2794,1766,0,0,good,bad,0x51ccc178,ok,"
      "1300475167.096535000,74,74,64,0x18,,,12,5,drop,,,0,1:qsWRmBlr00h2Mh8Hjm6C1WUyoJ0=",
  "8,0x0806,,,,,,,,,,,,0x00000000,ok,0.000000001,42,60,,,,,,,allow,,,,",
  "9,0x86dd,,6,2001:db8::1,ff02::1,58,,,1448,1,,unverified,0xdeadbeef,"
      "truncated;bad_l4_header,2.000000005,96,1500,255,,128,0,,,,,,0,1:fGMMlAn5OW4ALtQn4k5OPdivs7o=",
};

static GstBuffer *
records_buffer (const std::vector<GppResult> & r)
{
  return gst_buffer_new_memdup (r.data (), r.size () * sizeof (GppResult));
}

GST_START_TEST (test_enc_csv)
{
  Enc e ("csv");
  fail_unless_equals_int (gst_harness_push (e.h, records_buffer (sample_records ())),
      GST_FLOW_OK);
  GstCaps *caps = gst_pad_get_current_caps (e.h->sinkpad);
  assert_caps_equal (caps, "text/csv");
  gst_caps_unref (caps);
  /* A second buffer adds rows, not a second header. */
  std::vector<GppResult> more = sample_records ();
  more.resize (1);
  more[0].packet_number = 10;
  fail_unless_equals_int (gst_harness_push (e.h, records_buffer (more)), GST_FLOW_OK);
  std::vector<std::string> lines = split_lines (e.drain ());
  fail_unless_equals_int (lines.size (), 1 + 3 + 1);
  fail_unless_equals_string (lines[0].c_str (), kCsvHeader);
  for (int i = 0; i < 3; i++)
    fail_unless_equals_string (lines[1 + i].c_str (), kSampleCsv[i]);
  fail_unless (g_str_has_prefix (lines[4].c_str (), "10,0x0800,"));
  const size_t columns = std::count (lines[0].begin (), lines[0].end (), ',');
  for (const auto & l : lines)
    fail_unless_equals_int (std::count (l.begin (), l.end (), ','), columns);
}

GST_END_TEST;

GST_START_TEST (test_enc_csv_without_header)
{
  Enc e ("csv", FALSE);
  fail_unless_equals_int (gst_harness_push (e.h, records_buffer (sample_records ())),
      GST_FLOW_OK);
  fail_unless (gst_harness_push_event (e.h, gst_event_new_eos ()));
  std::vector<std::string> lines = split_lines (e.drain ());
  fail_unless_equals_int (lines.size (), 3);
  for (int i = 0; i < 3; i++)
    fail_unless_equals_string (lines[i].c_str (), kSampleCsv[i]);
}

GST_END_TEST;

static const char *
json_type_name (const test::Json * j)
{
  static const char *names[] = { "null", "bool", "number", "string", "array", "object" };
  return j ? names[j->type] : "missing";
}

static void
assert_json_field (const test::Json & o, const char *key, test::Json::Type type,
    const char *text = nullptr)
{
  const test::Json *v = o.get (key);
  fail_unless (v != nullptr && v->type == type, "\"%s\" is %s", key, json_type_name (v));
  if (text)
    fail_unless_equals_string (v->text.c_str (), text);
}

GST_START_TEST (test_enc_jsonl)
{
  Enc e ("jsonl");
  fail_unless_equals_int (gst_harness_push (e.h, records_buffer (sample_records ())),
      GST_FLOW_OK);
  fail_unless (gst_harness_push_event (e.h, gst_event_new_eos ()));
  GstCaps *caps = gst_pad_get_current_caps (e.h->sinkpad);
  assert_caps_equal (caps, "application/x-ndjson");
  gst_caps_unref (caps);
  std::vector<std::string> lines = split_lines (e.drain ());
  fail_unless_equals_int (lines.size (), 3);

  gchar **columns = g_strsplit (kCsvHeader, ",", -1);
  std::vector<test::Json> objects (3);
  for (size_t i = 0; i < lines.size (); i++) {
    fail_unless (test::JsonParser::parse (lines[i], objects[i]), "not JSON: %s",
        lines[i].c_str ());
    fail_unless_equals_int (objects[i].type, test::Json::OBJECT);
    /* The CSV columns, as keys, in the same order. */
    fail_unless_equals_int (objects[i].members.size (), g_strv_length (columns));
    for (size_t c = 0; columns[c]; c++)
      fail_unless_equals_string (objects[i].members[c].first.c_str (), columns[c]);
  }
  g_strfreev (columns);

  using J = test::Json;
  const J & tcp = objects[0];
  assert_json_field (tcp, "packet", J::NUMBER, "7");
  assert_json_field (tcp, "ethertype", J::STRING, "0x0800");
  const J *vlan = tcp.get ("vlan");
  fail_unless (vlan && vlan->type == J::ARRAY && vlan->items.size () == 2);
  fail_unless_equals_string (vlan->items[0].text.c_str (), "100");
  fail_unless_equals_string (vlan->items[1].text.c_str (), "4094");
  assert_json_field (tcp, "ip_version", J::NUMBER, "4");
  assert_json_field (tcp, "src", J::STRING, "66.9.149.187");
  assert_json_field (tcp, "dst", J::STRING, "161.142.100.80");
  assert_json_field (tcp, "sport", J::NUMBER, "2794");
  assert_json_field (tcp, "dport", J::NUMBER, "1766");
  assert_json_field (tcp, "ipv4_checksum", J::STRING, "good");
  assert_json_field (tcp, "l4_checksum", J::STRING, "bad");
  assert_json_field (tcp, "rss", J::STRING, "0x51ccc178");
  assert_json_field (tcp, "status", J::STRING, "ok");
  assert_json_field (tcp, "timestamp", J::NUMBER, "1300475167.096535000");
  assert_json_field (tcp, "community_id", J::STRING, "1:qsWRmBlr00h2Mh8Hjm6C1WUyoJ0=");
  assert_json_field (objects[1], "community_id", J::NUL);
  assert_json_field (tcp, "icmp_type", J::NUL);

  const J & arp = objects[1];
  const J *no_vlan = arp.get ("vlan");
  fail_unless (no_vlan && no_vlan->type == J::ARRAY && no_vlan->items.empty ());
  for (const char *key : { "ip_version", "src", "dst", "l4_proto", "sport", "dport",
          "frag_offset", "more_fragments", "ipv4_checksum", "l4_checksum", "ttl",
          "tcp_flags", "icmp_type", "icmp_code", "payload_length", "acl_rule" })
    assert_json_field (arp, key, J::NUL);
  assert_json_field (arp, "acl_action", J::STRING, "allow");
  assert_json_field (tcp, "acl_rule", J::NUMBER, "5");
  assert_json_field (tcp, "acl_action", J::STRING, "drop");
  assert_json_field (arp, "caplen", J::NUMBER, "42");
  assert_json_field (arp, "wirelen", J::NUMBER, "60");

  const J & frag = objects[2];
  assert_json_field (frag, "src", J::STRING, "2001:db8::1");
  assert_json_field (frag, "frag_offset", J::NUMBER, "1448");
  assert_json_field (frag, "more_fragments", J::NUMBER, "1");
  assert_json_field (frag, "status", J::STRING, "truncated;bad_l4_header");
  assert_json_field (frag, "icmp_type", J::NUMBER, "128");
  assert_json_field (frag, "sport", J::NUL);
}

GST_END_TEST;

GST_START_TEST (test_enc_empty_stream)
{
  {
    Enc e ("csv");
    fail_unless (gst_harness_push_event (e.h, gst_event_new_eos ()));
    assert_text_equal (e.drain (), std::string (kCsvHeader) + "\n");
  }
  {
    /* Empty results buffers (empty batches) add no rows either. */
    Enc e ("csv");
    fail_unless_equals_int (gst_harness_push (e.h, gst_buffer_new ()), GST_FLOW_OK);
    fail_unless (gst_harness_push_event (e.h, gst_event_new_eos ()));
    assert_text_equal (e.drain (), std::string (kCsvHeader) + "\n");
    fail_unless (gst_bus_pop_filtered (e.bus, GST_MESSAGE_ERROR) == NULL);
  }
  {
    Enc e ("csv", FALSE);
    fail_unless (gst_harness_push_event (e.h, gst_event_new_eos ()));
    assert_text_equal (e.drain (), "");
  }
  {
    Enc e ("jsonl");
    fail_unless (gst_harness_push_event (e.h, gst_event_new_eos ()));
    assert_text_equal (e.drain (), "");
  }
}

GST_END_TEST;

GST_START_TEST (test_enc_bad_size)
{
  Enc e ("csv");
  Bytes odd (128 + 5, 0);
  fail_unless_equals_int_hex (gst_harness_push (e.h, buffer_from (odd)), GST_FLOW_ERROR);
  assert_contains (pop_message_text (e.bus, GST_MESSAGE_ERROR), "133");
  fail_unless_equals_int (gst_harness_buffers_in_queue (e.h), 0);

  /* Records of another size are refused at negotiation. */
  GstHarness *h = gst_harness_new ("packetresultenc");
  push_caps_and_segment (h, "application/x-packet-results, record-size=(int)64");
  fail_if (gst_harness_push (h, gst_buffer_new_allocate (NULL, 64, NULL)) == GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Records from outside (filesrc, appsrc) are checked before use: an
 * impossible VLAN count or IP version is a stream error naming the record,
 * and the records before it are still written. */
GST_START_TEST (test_enc_invalid_record)
{
  for (const char *format : {"csv", "jsonl"}) {
    for (int field = 0; field < 2; field++) {
      Enc e (format, FALSE);
      std::vector<GppResult> r = sample_records ();
      if (field == 0)
        r[1].vlan_count = 200;    /* would index far past vlan_ids[4] */
      else
        r[1].ip_flags = GPP_IP_HEADER_PARSED, r[1].ip_version = 9;   /* not 4 or 6 */
      fail_unless_equals_int (gst_harness_push (e.h, records_buffer (r)), GST_FLOW_ERROR);
      const std::string message = pop_message_text (e.bus, GST_MESSAGE_ERROR);
      assert_contains (message, "record 2 of 3");
      assert_contains (message, field == 0 ? "vlan_count is 200" : "ip_version is 9");
      const std::vector<std::string> lines = split_lines (e.drain ());
      fail_unless_equals_int (lines.size (), 1);  /* the first record, and no more */
      if (std::string (format) == "csv")
        fail_unless_equals_string (lines[0].c_str (), kSampleCsv[0]);
    }
  }
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* The three elements together                                               */

GST_START_TEST (test_pipeline_capture_to_text)
{
  {
    PipelineRun p;
    SourceSettings s { data_path (WIKIPEDIA) };
    run_pipeline (p, "pcapsrc name=src batch-size=50 ! gpupacketproc ! "
        "packetresultenc format=csv ! fakesink name=sink", configure_source, &s);
    fail_unless_equals_int (p.end, GST_MESSAGE_EOS);
    std::vector<std::string> lines =
        split_lines (std::string (p.sink_bytes.begin (), p.sink_bytes.end ()));
    fail_unless_equals_int (lines.size (), 1 + WIKIPEDIA_PACKETS);
    fail_unless_equals_string (lines[0].c_str (), kCsvHeader);
    for (int i = 1; i <= WIKIPEDIA_PACKETS; i++) {
      gchar *prefix = g_strdup_printf ("%d,", i);
      fail_unless (g_str_has_prefix (lines[i].c_str (), prefix), "line %d: %s", i,
          lines[i].c_str ());
      g_free (prefix);
    }
  }
  {
    PipelineRun p;
    SourceSettings s { data_path (WIKIPEDIA), "udp" };
    run_pipeline (p, "pcapsrc name=src ! gpupacketproc ! packetresultenc format=jsonl ! "
        "fakesink name=sink", configure_source, &s);
    fail_unless_equals_int (p.end, GST_MESSAGE_EOS);
    std::vector<std::string> lines =
        split_lines (std::string (p.sink_bytes.begin (), p.sink_bytes.end ()));
    fail_unless_equals_int (lines.size (), 48);
    for (const auto & l : lines) {
      test::Json o;
      fail_unless (test::JsonParser::parse (l, o), "not JSON: %s", l.c_str ());
      assert_json_field (o, "l4_proto", test::Json::NUMBER, "17");
    }
  }
}

GST_END_TEST;

GST_START_TEST (test_pipeline_empty_capture)
{
  /* An empty capture still gives the CSV header row. */
  PipelineRun p;
  SourceSettings s { data_path ("pcap/tcpdump__empty.pcap") };
  run_pipeline (p, "pcapsrc name=src ! gpupacketproc ! packetresultenc ! "
      "fakesink name=sink", configure_source, &s);
  fail_unless_equals_int (p.end, GST_MESSAGE_EOS);
  assert_text_equal (std::string (p.sink_bytes.begin (), p.sink_bytes.end ()),
      std::string (kCsvHeader) + "\n");
}

GST_END_TEST;


/* acl-rules and dpi-patterns: results, swaps while playing, bad files. */
static std::string
write_temp (const char *name, const std::string & text)
{
  gchar *path = g_build_filename (g_get_tmp_dir (), name, NULL);
  fail_unless (g_file_set_contents (path, text.data (), (gssize) text.size (), NULL));
  std::string out = path;
  g_free (path);
  return out;
}

/* Plays @pipeline from READY to EOS and returns the warnings it posted. */
static std::vector<std::string>
play_to_eos_warnings (GstElement * pipeline, GstBus * bus)
{
  std::vector<std::string> warnings;
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  for (;;) {
    GstMessage *msg = gst_bus_timed_pop_filtered (bus, WAIT_SECONDS * GST_SECOND,
        (GstMessageType) (GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING));
    fail_unless (msg != NULL, "no EOS");
    const GstMessageType type = GST_MESSAGE_TYPE (msg);
    fail_unless (type != GST_MESSAGE_ERROR, "an error");
    if (type == GST_MESSAGE_WARNING) {
      GError *err = NULL;
      gst_message_parse_warning (msg, &err, NULL);
      warnings.push_back (err->message);
      g_clear_error (&err);
    }
    gst_message_unref (msg);
    if (type == GST_MESSAGE_EOS)
      break;
  }
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  return warnings;
}

/* An empty rule file set before the element is in a pipeline (as
 * gst-launch-1.0 sets properties) is warned about at start, on the bus,
 * once: not again at the next start. */
GST_START_TEST (test_proc_empty_rules_warned_at_start)
{
  const std::string empty = write_temp ("gpp-empty-at-start.rules", "# nothing here\n");
  const std::string description = "packettestsrc num-buffers=2 ! gpupacketproc acl-rules=" +
      empty + " ! fakesink";
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (description.c_str (), &error);
  fail_unless (pipeline != NULL && error == NULL, "gst_parse_launch: %s",
      error ? error->message : "?");
  GstBus *bus = gst_element_get_bus (pipeline);
  std::vector<std::string> warnings = play_to_eos_warnings (pipeline, bus);
  fail_unless_equals_int (warnings.size (), 1);
  assert_contains (warnings[0], "holds none");
  assert_contains (warnings[0], "gpp-empty-at-start.rules");
  fail_unless_equals_int (play_to_eos_warnings (pipeline, bus).size (), 0);
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_unlink (empty.c_str ());
}

GST_END_TEST;

GST_START_TEST (test_proc_classification_files)
{
  const Bytes batch = checksum_and_rss_batch ();     /* 3 TCP/IPv4, 2 UDP/IPv6 */
  const std::string drop_tcp = write_temp ("gpp-drop-tcp.rules",
      "# drop TCP\n@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0x06/0xFF drop\n");
  const std::string drop_udp = write_temp ("gpp-drop-udp.rules",
      "@::/0 ::/0 0 : 65535 0 : 65535 0x11/0xFF drop\n");
  const std::string bad = write_temp ("gpp-bad.rules", "@1.2.3.4/40 0.0.0.0/0 0 : 1 0 : 1 0/0\n");
  const std::string patterns = write_temp ("gpp.patterns", "|00|\nnot-there\n");
  Proc p;
  g_object_set (p.h->element, "acl-rules", drop_tcp.c_str (), "dpi-patterns",
      patterns.c_str (), NULL);
  std::vector<GppResult> r = p.process (batch);
  for (size_t i = 0; i < r.size (); i++) {
    const bool tcp = r[i].l4_proto == 6;
    fail_unless_equals_int (r[i].acl_action, tcp ? GPP_ACL_DROP : GPP_ACL_ALLOW);
    fail_unless_equals_int (r[i].acl_rule, tcp ? 0 : -1);
    fail_unless_equals_int (r[i].dpi_scanned, 1);
  }
  /* stats name the sets in use and the bytes of their lookup blobs. */
  GstStructure *stats = NULL;
  g_object_get (p.h->element, "stats", &stats, NULL);
  guint rule_count = 0, pattern_count = 0;
  guint64 acl_bytes = 0, dpi_bytes = 0;
  fail_unless (gst_structure_get (stats, "acl-rule-count", G_TYPE_UINT, &rule_count,
          "acl-bytes", G_TYPE_UINT64, &acl_bytes, "dpi-pattern-count", G_TYPE_UINT,
          &pattern_count, "dpi-bytes", G_TYPE_UINT64, &dpi_bytes, NULL));
  gst_structure_free (stats);
  fail_unless_equals_int (rule_count, 1);
  fail_unless_equals_int (pattern_count, 2);
  fail_unless (acl_bytes > 0 && dpi_bytes > 0);
  /* dpi-select: a rule's every content, or its one fast pattern (the
   * longest here); set while playing, the file is reloaded with it. */
  const std::string rule = write_temp ("gpp-fast.rules",
      "alert ip any any -> any any (content:\"a\"; content:\"not-there\"; sid:7;)\n");
  g_object_set (p.h->element, "dpi-patterns", rule.c_str (), NULL);
  gint select = -1;
  g_object_get (p.h->element, "dpi-select", &select, NULL);
  GParamSpec *spec = g_object_class_find_property (G_OBJECT_GET_CLASS (p.h->element),
      "dpi-select");
  GEnumClass *selects = (GEnumClass *) g_type_class_ref (G_PARAM_SPEC_VALUE_TYPE (spec));
  fail_unless_equals_string (g_enum_get_value (selects, select)->value_nick, "all");
  g_type_class_unref (selects);
  for (const GppResult & x : p.process (batch))    /* payloads are "abc..." */
    fail_unless_equals_int (x.dpi_pattern, 0);
  gst_util_set_object_arg (G_OBJECT (p.h->element), "dpi-select", "fast-pattern");
  for (const GppResult & x : p.process (batch)) {
    fail_unless_equals_int (x.dpi_scanned, 1);
    fail_unless_equals_int (x.dpi_pattern, -1);
  }
  gst_util_set_object_arg (G_OBJECT (p.h->element), "dpi-select", "all");
  g_object_set (p.h->element, "dpi-patterns", patterns.c_str (), NULL);
  g_unlink (rule.c_str ());

  /* A new file while playing applies from the next batch. */
  g_object_set (p.h->element, "acl-rules", drop_udp.c_str (), NULL);
  r = p.process (batch);
  for (size_t i = 0; i < r.size (); i++)
    fail_unless_equals_int (r[i].acl_action, r[i].l4_proto == 17 ? GPP_ACL_DROP : GPP_ACL_ALLOW);
  /* A bad file while playing: a warning naming file and line, the old rules stay. */
  g_object_set (p.h->element, "acl-rules", bad.c_str (), NULL);
  GstMessage *warning = gst_bus_pop_filtered (p.bus, GST_MESSAGE_WARNING);
  fail_unless (warning != NULL, "no warning for a bad rule file");
  GError *err = NULL;
  gchar *debug = NULL;
  gst_message_parse_warning (warning, &err, &debug);
  fail_unless (strstr (debug, "gpp-bad.rules:1:") != NULL, "warning lacks file:line: %s", debug);
  g_clear_error (&err);
  g_free (debug);
  gst_message_unref (warning);
  r = p.process (batch);
  for (size_t i = 0; i < r.size (); i++)
    fail_unless_equals_int (r[i].acl_action, r[i].l4_proto == 17 ? GPP_ACL_DROP : GPP_ACL_ALLOW);
  /* An empty file is a valid, empty rule set, loaded with a warning. */
  const std::string empty = write_temp ("gpp-empty.rules", "# nothing here\n");
  g_object_set (p.h->element, "acl-rules", empty.c_str (), NULL);
  assert_contains (pop_message_text (p.bus, GST_MESSAGE_WARNING), "holds none");
  for (const GppResult & x : p.process (batch)) {
    fail_unless_equals_int (x.acl_action, GPP_ACL_ALLOW);
    fail_unless_equals_int (x.acl_rule, -1);
  }
  g_unlink (empty.c_str ());
  g_object_set (p.h->element, "acl-rules", drop_udp.c_str (), NULL);
  /* A file whose size stat() does not know (procfs) is read and judged like
   * any other: a warning, not an abort. */
  g_object_set (p.h->element, "acl-rules", "/proc/self/status", NULL);
  assert_contains (pop_message_text (p.bus, GST_MESSAGE_WARNING), "/proc/self/status");
  r = p.process (batch);
  for (size_t i = 0; i < r.size (); i++)
    fail_unless_equals_int (r[i].acl_action, r[i].l4_proto == 17 ? GPP_ACL_DROP : GPP_ACL_ALLOW);
  /* Unset: no ACL ran. */
  g_object_set (p.h->element, "acl-rules", NULL, "dpi-patterns", NULL, NULL);
  r = p.process (batch);
  for (const GppResult & x : r) {
    fail_unless_equals_int (x.acl_action, GPP_ACL_NONE);
    fail_unless_equals_int (x.dpi_scanned, 0);
  }
  g_unlink (drop_tcp.c_str ());
  g_unlink (drop_udp.c_str ());
  g_unlink (patterns.c_str ());

  /* A bad file before start: READY->PAUSED fails with an error naming it. */
  GstElement *e = gst_element_factory_make ("gpupacketproc", NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (e, bus);
  g_object_set (e, "acl-rules", bad.c_str (), NULL);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  GstMessage *error = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (error != NULL);
  gst_message_parse_error (error, &err, &debug);
  fail_unless (strstr (err->message, "gpp-bad.rules:1:") != NULL, "%s", err->message);
  g_clear_error (&err);
  g_free (debug);
  gst_message_unref (error);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_object_unref (bus);
  g_unlink (bad.c_str ());
}

GST_END_TEST;

static Suite *
gpupacket_elements_suite (void)
{
  Suite *s = suite_create ("gpupacket-elements");
  TCase *src = tcase_create ("pcapsrc");
  TCase *proc = tcase_create ("gpupacketproc");
  TCase *enc = tcase_create ("packetresultenc");
  TCase *all = tcase_create ("pipeline");

  tcase_add_test (src, test_pcapsrc_batch_sizes);
  tcase_add_test (src, test_pcapsrc_pcapng);
  tcase_add_test (src, test_pcapsrc_pcapng_two_link_types);
  tcase_add_test (src, test_ready_only_properties_refused_while_running);
  tcase_add_test (src, test_batch_size_zero_refused);
  tcase_add_test (src, test_pcapsrc_linux_sll);
  tcase_add_test (src, test_pcapsrc_link_types);
  tcase_add_test (src, test_pcapsrc_restart);
  tcase_add_test (src, test_pcapsrc_filter);
  tcase_add_test (src, test_pcapsrc_empty_capture);
  tcase_add_test (src, test_pcapsrc_missing_file);
  tcase_add_test (src, test_pcapsrc_no_location);
  tcase_add_test (src, test_pcapsrc_not_a_capture);
  tcase_add_test (src, test_pcapsrc_truncated_capture);
  tcase_add_test (src, test_pcapsrc_invalid_filter);

  tcase_add_test (proc, test_proc_caps_records_timestamps_meta);
  tcase_add_test (proc, test_proc_packet_records_off);
  tcase_add_test (proc, test_proc_capture_batches);
  tcase_add_test (proc, test_proc_link_types);
  tcase_add_test (proc, test_proc_empty_batch);
  tcase_add_test (proc, test_proc_malformed_batches);
  tcase_add_test (proc, test_proc_unsupported_linktype_caps);
  tcase_add_test (proc, test_proc_pinned_memory_bound);
  tcase_add_test (proc, test_proc_unsupported_linktype_pipeline);
  tcase_add_test (proc, test_proc_rss_vectors);
  tcase_add_test (proc, test_proc_properties_while_playing);
  tcase_add_test (proc, test_proc_cpu_threads_same_results);
  tcase_add_test (proc, test_proc_invalid_rss_key);
  tcase_add_test (proc, test_proc_decap_inner);
  tcase_add_test (proc, test_proc_invalid_vxlan_ports);
  tcase_add_test (proc, test_proc_decap_refused_downstream);
  tcase_add_test (proc, test_proc_gpu_mode_without_driver);
  tcase_add_test (proc, test_proc_stats);
  tcase_add_test (proc, test_proc_stress_cpu_threads);
  tcase_add_test (proc, test_proc_stress_rss_key);
  tcase_add_test (proc, test_proc_classification_files);
  tcase_add_test (proc, test_proc_empty_rules_warned_at_start);

  tcase_add_test (enc, test_enc_csv);
  tcase_add_test (enc, test_enc_csv_without_header);
  tcase_add_test (enc, test_enc_jsonl);
  tcase_add_test (enc, test_enc_empty_stream);
  tcase_add_test (enc, test_enc_bad_size);
  tcase_add_test (enc, test_enc_invalid_record);

  tcase_add_test (all, test_pipeline_capture_to_text);
  tcase_add_test (all, test_pipeline_empty_capture);

  suite_add_tcase (s, src);
  suite_add_tcase (s, proc);
  suite_add_tcase (s, enc);
  suite_add_tcase (s, all);
  return s;
}

GST_CHECK_MAIN (gpupacket_elements);
