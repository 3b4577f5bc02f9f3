/* packetresultenc's threads through GstHarness: a buffer is formatted the
 * same at every thread count, a bad record in the middle of a large buffer
 * still lets exactly the rows before it out, the encoder is rebuilt across
 * READY, and no formatting thread outlives the element. */
#include "test_support.h"

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>


#include <cstring>
#include <string>
#include <vector>

#include <gpupacket/flow-record.h>
#include <gpupacket/packet-result.h>

#include "flowoutput.h"

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
      fail_unless_equals_int (test::process_thread_count (), before);
      gst_element_set_state (h->element, GST_STATE_PLAYING);
      gst_harness_set_src_caps_str (h, GPP_RESULTS_CAPS_NAME ", record-size=(int)128");
    }
    gst_harness_teardown (h);
  }
  fail_unless_equals_int (test::process_thread_count (), before);
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
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (resultenc);
