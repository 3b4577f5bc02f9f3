/* packetresultenc's threads through GstHarness: a buffer is formatted the
 * same at every thread count, a bad record in the middle of a large buffer
 * still lets exactly the rows before it out, the encoder is rebuilt across
 * READY, and no formatting thread outlives the element.  Records with their
 * tunnel plane (record-size=176): the rows of the same records without it,
 * then the tunnel columns, at every thread count; a bad plane entry; the
 * widest line within the formatter's bound. */
#include "test_support.h"

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>


#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include <gpupacket/flow-record.h>
#include <gpupacket/packet-result.h>

#include "flowoutput.h"
#include "resulttext.h"

/* Records of a few hundred conversations, every field in use. */
static std::vector<GppResult>
make_results (size_t count)
{
  std::vector<GppResult> records (count);
  for (size_t i = 0; i < count; i++) {
    GppResult & r = records[i];
    memset (&r, 0, sizeof r);
    r.packet_number = i + 1;
    r.timestamp_ns = 1700000000000000000ull + i * 1234567ull;
    r.caplen = r.wirelen = 60 + (guint32) (i % 1400);
    r.ethertype = i % 3 ? 0x0800 : 0x86dd;
    r.ip_version = i % 3 ? 4 : 6;
    r.ip_flags = GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED;
    r.l4_proto = i % 5 ? 6 : 17;
    r.src[0] = 10;
    r.src[3] = (guint8) (i % 251);
    r.dst[0] = 192;
    r.dst[15] = (guint8) (i % 7);
    r.sport = (guint16) (1024 + i % 300);
    r.dport = 443;
    r.rss_hash = (guint32) (i * 2654435761u);
    r.vlan_count = (guint8) (i % 3);
    r.vlan_ids[0] = 100;
    r.vlan_ids[1] = 200;
    r.acl_rule = -1;
    r.dpi_pattern = -1;
    r.ttl = 64;
    r.ip_length = r.caplen - 14;
  }
  return records;
}

static GstBuffer *
buffer_of (const void *data, size_t size)
{
  return gst_buffer_new_memdup (data, size);
}

static GstHarness *
new_encoder (const char *props)
{
  GstHarness *h = gst_harness_new_parse ((std::string ("packetresultenc ") + props).c_str ());
  gst_harness_set_src_caps_str (h, GPP_RESULTS_CAPS_NAME ", record-size=(int)128");
  return h;
}

/* Everything the encoder pushed, in order. */
static std::string
drain_text (GstHarness * h)
{
  std::string text;
  while (GstBuffer *b = gst_harness_try_pull (h)) {
    GstMapInfo map;
    fail_unless (gst_buffer_map (b, &map, GST_MAP_READ));
    text.append (reinterpret_cast<const char *> (map.data), map.size);
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
  }
  return text;
}

static std::string
encode (const char *props, const std::vector<GppResult> & records, GstFlowReturn expect)
{
  GstHarness *h = new_encoder (props);
  fail_unless_equals_int (gst_harness_push (h, buffer_of (records.data (),
              records.size () * sizeof (GppResult))), expect);
  std::string text = drain_text (h);
  gst_harness_teardown (h);
  return text;
}


GST_START_TEST (test_same_text_at_every_thread_count)
{
  for (size_t count : {1, 7, 300, 4096}) {
    const std::vector<GppResult> records = make_results (count);
    for (const char *format : {"format=csv", "format=jsonl"}) {
      const std::string props = std::string (format) + " threads=";
      const std::string one = encode ((props + "1").c_str (), records, GST_FLOW_OK);
      fail_unless (one.size () > count * 100);
      for (const char *threads : {"2", "3", "8", "0"})
        fail_unless (encode ((props + threads).c_str (), records, GST_FLOW_OK) == one,
            "%s%s differs from threads=1 at %zu records", props.c_str (), threads, count);
    }
  }
}

GST_END_TEST;

/* A record with a VLAN count past GPP_MAX_VLANS at 3000 of 4096: rows 1 to
 * 2999 are written (in one buffer, on every thread), then the error. */
GST_START_TEST (test_rows_before_a_bad_record)
{
  std::vector<GppResult> records = make_results (4096);
  records[2999].vlan_count = GPP_MAX_VLANS + 1;
  const std::string one = encode ("threads=1", records, GST_FLOW_ERROR);
  const std::string four = encode ("threads=4", records, GST_FLOW_ERROR);
  fail_unless (one == four);
  size_t lines = 0;
  for (char c : four)
    lines += c == '\n';
  fail_unless_equals_int ((int) lines, 1 + 2999);  /* the header row, then the rows */
  const size_t last_row = four.rfind ('\n', four.size () - 2) + 1;
  fail_unless (four.compare (last_row, 5, "2999,") == 0);
}

GST_END_TEST;

/* Through READY the encoder and its pool are freed and made again; the
 * text is the same, and no thread is left behind. */
GST_START_TEST (test_threads_end_with_the_stream)
{
  const std::vector<GppResult> records = make_results (2048);
  const guint before = test::process_thread_count ();
  const std::string want = encode ("threads=1 header=false", records, GST_FLOW_OK);
  for (int cycle = 0; cycle < 20; cycle++) {
    GstHarness *h = new_encoder ("threads=4 header=false");
    for (int state_change = 0; state_change < 3; state_change++) {
      fail_unless_equals_int (gst_harness_push (h, buffer_of (records.data (),
                  records.size () * sizeof (GppResult))), GST_FLOW_OK);
      fail_unless (drain_text (h) == want);
      fail_unless (test::process_thread_count () >= before + 3);
      gst_element_set_state (h->element, GST_STATE_READY);
      fail_unless_equals_int (test::thread_count_settled (before), before);
      gst_element_set_state (h->element, GST_STATE_PLAYING);
      gst_harness_set_src_caps_str (h, GPP_RESULTS_CAPS_NAME ", record-size=(int)128");
    }
    gst_harness_teardown (h);
  }
  fail_unless_equals_int (test::thread_count_settled (before), before);
}

GST_END_TEST;

/* Flow records take the same path. */
GST_START_TEST (test_flows_at_every_thread_count)
{
  std::vector<GppFlowRecord> flows (1000);
  for (size_t i = 0; i < flows.size (); i++) {
    GppFlowRecord & f = flows[i];
    memset (&f, 0, sizeof f);
    f.start_ns = 1700000000000000000ull + i;
    f.end_ns = f.start_ns + i * 1000;
    f.first_packet = i + 1;
    f.packets[0] = i;
    f.ip_version = i % 2 ? 4 : 6;
    f.l4_proto = i % 3 ? 6 : 1;
    f.src[3] = (guint8) i;
    f.end_reason = (guint8) (i % 6);
    f.acl_rule = f.dpi_pattern = -1;
  }
  std::string texts[2];
  for (int k = 0; k < 2; k++) {
    GstHarness *h = gst_harness_new_parse (k ? "packetresultenc threads=3" :
        "packetresultenc threads=1");
    gst_harness_set_src_caps_str (h, GPP_FLOW_CAPS_NAME ", record-size=(int)144");
    fail_unless_equals_int (gst_harness_push (h, buffer_of (flows.data (),
                flows.size () * sizeof (GppFlowRecord))), GST_FLOW_OK);
    texts[k] = drain_text (h);
    gst_harness_teardown (h);
  }
  fail_unless (texts[0].size () > 1000 * 100);
  fail_unless (texts[0] == texts[1]);
}

GST_END_TEST;

/* A plane entry of `types` levels over the IP header `src` -> `dst`. */
static GppTunnelInfo
tunnel (std::initializer_list<guint8> types, guint32 id, const char *src, const char *dst,
    guint8 l4_proto, guint16 sport, guint16 dport)
{
  GppTunnelInfo t {};
  for (guint8 type : types)
    t.tunnel_types[t.tunnel_count++] = type;
  t.tunnel_id = id;
  const test::Bytes a = test::ip_from_text (src), b = test::ip_from_text (dst);
  t.outer_ip_version = a.size () == 4 ? 4 : 6;
  std::copy (a.begin (), a.end (), t.outer_src);
  std::copy (b.begin (), b.end (), t.outer_dst);
  t.outer_l4_proto = l4_proto;
  t.outer_sport = sport;
  t.outer_dport = dport;
  return t;
}

/* Tunnel planes for make_results (): none for most packets, VXLAN over
 * IPv4 for every 3rd, GRE then IP-in-IP over IPv6 for every 7th. */
static std::vector<GppTunnelInfo>
make_tunnels (size_t count)
{
  std::vector<GppTunnelInfo> tunnels (count);
  for (size_t i = 0; i < count; i += 3)
    tunnels[i] = tunnel ({GPP_TUNNEL_VXLAN}, 5000 + (guint32) i, "192.0.0.1", "192.0.0.2", 17,
        (guint16) (40000 + i), 4789);
  for (size_t i = 0; i < count; i += 7)
    tunnels[i] = tunnel ({GPP_TUNNEL_GRE, GPP_TUNNEL_IPIP}, 0, "2001::1", "2001::2", 41, 0, 0);
  return tunnels;
}

/* The two planes of a record-size=176 buffer. */
static GstBuffer *
planes_buffer (const std::vector<GppResult> & records, const std::vector<GppTunnelInfo> & tunnels)
{
  std::string bytes (reinterpret_cast<const char *> (records.data ()),
      records.size () * sizeof (GppResult));
  bytes.append (reinterpret_cast<const char *> (tunnels.data ()),
      tunnels.size () * sizeof (GppTunnelInfo));
  return buffer_of (bytes.data (), bytes.size ());
}

static std::string
encode_tunnels (const char *props, const std::vector<GppResult> & records,
    const std::vector<GppTunnelInfo> & tunnels, GstFlowReturn expect)
{
  GstHarness *h = gst_harness_new_parse ((std::string ("packetresultenc ") + props).c_str ());
  gst_harness_set_src_caps_str (h, GPP_RESULTS_CAPS_NAME ", record-size=(int)176");
  fail_unless_equals_int (gst_harness_push (h, planes_buffer (records, tunnels)), expect);
  std::string text = drain_text (h);
  gst_harness_teardown (h);
  return text;
}

static std::vector<std::string>
lines_of (const std::string & text)
{
  std::vector<std::string> lines;
  for (size_t at = 0, end; at < text.size (); at = end + 1) {
    end = text.find ('\n', at);
    lines.push_back (text.substr (at, end - at));
  }
  return lines;
}

/* A row of record-size=176 is the row of its record at record-size=128,
 * then the tunnel columns; the text is the same at every thread count. */
GST_START_TEST (test_tunnel_columns)
{
  const std::vector<GppResult> records = make_results (700);
  const std::vector<GppTunnelInfo> tunnels = make_tunnels (700);
  const std::vector<std::string> plain = lines_of (encode ("threads=1", records, GST_FLOW_OK));
  const std::string text = encode_tunnels ("threads=1", records, tunnels, GST_FLOW_OK);
  for (const char *threads : {"threads=3", "threads=0"})
    fail_unless (encode_tunnels (threads, records, tunnels, GST_FLOW_OK) == text, "%s", threads);
  const std::vector<std::string> rows = lines_of (text);
  fail_unless_equals_int (rows.size (), plain.size ());
  const std::string header = plain[0] + ",tunnels,tunnel_id,outer_src,outer_dst,"
      "outer_l4_proto,outer_sport,outer_dport";
  fail_unless_equals_string (rows[0].c_str (), header.c_str ());
  for (size_t i = 1; i < rows.size (); i++)
    fail_unless (rows[i].compare (0, plain[i].size () + 1, plain[i] + ",") == 0,
        "row %zu: %s is not %s and the tunnel columns", i, rows[i].c_str (), plain[i].c_str ());
  /* Packet 1 (index 0): two levels over IPv6; packet 4: VXLAN; 2: none. */
  const auto tail = [&] (size_t packet) { return rows[packet].substr (plain[packet].size ()); };
  fail_unless (tail (1) == ",gre;ipip,0,2001::1,2001::2,41,,", "%s", rows[1].c_str ());
  fail_unless (tail (4) == ",vxlan,5003,192.0.0.1,192.0.0.2,17,40003,4789", "%s",
      rows[4].c_str ());
  fail_unless (tail (2) == ",,,,,,,", "%s", rows[2].c_str ());

  const std::vector<std::string> json = lines_of (encode_tunnels ("format=jsonl", records,
          tunnels, GST_FLOW_OK));
  const std::string none = "\"tunnels\":null,\"tunnel_id\":null,\"outer_src\":null,"
      "\"outer_dst\":null,\"outer_l4_proto\":null,\"outer_sport\":null,\"outer_dport\":null}";
  fail_unless (json[1].size () > none.size () &&
      json[1].compare (json[1].size () - none.size (), none.size (), none) == 0, "%s",
      json[1].c_str ());
  const std::string vxlan = "\"tunnels\":\"vxlan\",\"tunnel_id\":5003,\"outer_src\":"
      "\"192.0.0.1\",\"outer_dst\":\"192.0.0.2\",\"outer_l4_proto\":17,\"outer_sport\":40003,"
      "\"outer_dport\":4789}";
  fail_unless (json[3].compare (json[3].size () - vxlan.size (), vxlan.size (), vxlan) == 0,
      "%s", json[3].c_str ());
}

GST_END_TEST;

/* A plane entry with more levels than a record holds, or an outer IP
 * version that is neither 4 nor 6: the rows before it, then the error. */
GST_START_TEST (test_tunnel_bad_plane)
{
  const std::vector<GppResult> records = make_results (400);
  for (int which = 0; which < 2; which++) {
    std::vector<GppTunnelInfo> tunnels = make_tunnels (400);
    if (which == 0)
      tunnels[300].tunnel_count = GPP_MAX_TUNNEL_DEPTH + 1;
    else
      tunnels[300].outer_ip_version = 5;
    GstHarness *h = gst_harness_new_parse ("packetresultenc threads=2");
    GstBus *bus = gst_bus_new ();
    gst_element_set_bus (h->element, bus);
    gst_harness_set_src_caps_str (h, GPP_RESULTS_CAPS_NAME ", record-size=(int)176");
    fail_unless_equals_int (gst_harness_push (h, planes_buffer (records, tunnels)),
        GST_FLOW_ERROR);
    fail_unless_equals_int ((int) lines_of (drain_text (h)).size (), 1 + 300);
    GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    fail_unless (msg != NULL);
    GError *err = NULL;
    gst_message_parse_error (msg, &err, NULL);
    fail_unless (strstr (err->message, which == 0 ? "tunnel_count" : "outer_ip_version"),
        "%s", err->message);
    g_error_free (err);
    gst_message_unref (msg);
    gst_harness_teardown (h);
    gst_object_unref (bus);
  }
  /* A buffer of 128-byte records under record-size=176 caps is refused. */
  GstHarness *h = gst_harness_new_parse ("packetresultenc");
  gst_harness_set_src_caps_str (h, GPP_RESULTS_CAPS_NAME ", record-size=(int)176");
  fail_unless_equals_int (gst_harness_push (h, buffer_of (records.data (),
              11 * sizeof (GppResult))), GST_FLOW_ERROR);
  gst_harness_teardown (h);
}

GST_END_TEST;

static Suite *
resultenc_suite (void)
{
  Suite *s = suite_create ("packetresultenc_threads");
  TCase *tc = tcase_create ("threads");
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_same_text_at_every_thread_count);
  tcase_add_test (tc, test_rows_before_a_bad_record);
  tcase_add_test (tc, test_threads_end_with_the_stream);
  tcase_add_test (tc, test_flows_at_every_thread_count);
  tcase_add_test (tc, test_tunnel_columns);
  tcase_add_test (tc, test_tunnel_bad_plane);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (resultenc);
