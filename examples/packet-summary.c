/* gpupacket-summary: runs  pcapsrc ! gpupacketproc ! appsink  over a capture
 * and prints what is in it (protocols, malformed packets, checksums) and how
 * fast the element went.  Also an example of reading GppResult records and
 * the gpupacketproc stats structure from an application.
 *
 *   gpupacket-summary [--batch-size N] [--cpu-threads N] [--verify-l4-checksum] FILE
 */
#include <gst/app/gstappsink.h>
#include <gst/gst.h>

#include <gpupacket/packet-result.h>

typedef struct
{
  guint64 packets, bytes, ipv4, ipv6, non_ip, tcp, udp, icmp, icmpv6, other_l4;
  guint64 vlan_tagged, fragments, malformed, ipv4_bad_checksum, l4_bad_checksum;
  guint64 flag_counts[32];
} Summary;

static void
count (Summary * s, const GppResult * r)
{
  s->packets++;
  s->bytes += r->wirelen;
  if (r->ip_version == 4)
    s->ipv4++;
  else if (r->ip_version == 6)
    s->ipv6++;
  else
    s->non_ip++;
  if (r->ip_flags & GPP_IP_HEADER_PARSED) {
    switch (r->l4_proto) {
      case 6: s->tcp++; break;
      case 17: s->udp++; break;
      case 1: s->icmp++; break;
      case 58: s->icmpv6++; break;
      default: s->other_l4++; break;
    }
  }
  s->vlan_tagged += r->vlan_count > 0;
  s->fragments += (r->ip_flags & GPP_IP_FRAGMENT) != 0;
  s->ipv4_bad_checksum += r->ipv4_checksum == GPP_CHECKSUM_BAD;
  s->l4_bad_checksum += r->l4_checksum == GPP_CHECKSUM_BAD;
  if (r->status) {
    s->malformed++;
    for (int bit = 0; bit < 32; bit++)
      s->flag_counts[bit] += (r->status >> bit) & 1;
  }
}

static void
print_row (const char *what, guint64 n, guint64 total)
{
  g_print ("  %-22s %10" G_GUINT64_FORMAT "  %6.2f %%\n", what, n,
      total ? 100.0 * (double) n / (double) total : 0.0);
}

int
main (int argc, char **argv)
{
  guint batch_size = 256, cpu_threads = 1;
  gboolean verify = FALSE;
  GOptionEntry entries[] = {
    {"batch-size", 'b', 0, G_OPTION_ARG_INT, &batch_size, "Packets per batch (256)", "N"},
    {"cpu-threads", 't', 0, G_OPTION_ARG_INT, &cpu_threads, "CPU threads, 0 = all cores (1)", "N"},
    {"verify-l4-checksum", 'c', 0, G_OPTION_ARG_NONE, &verify, "Verify TCP/UDP/ICMP checksums", NULL},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("FILE - summarise a capture with gpupacketproc");
  GError *err = NULL;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc != 2) {
    g_printerr ("%s\n", err ? err->message : "give exactly one capture file");
    g_printerr ("%s", g_option_context_get_help (ctx, TRUE, NULL));
    return 2;
  }
  g_option_context_free (ctx);

  gchar *desc = g_strdup_printf ("pcapsrc name=src batch-size=%u ! gpupacketproc name=proc "
      "mode=cpu cpu-threads=%u verify-l4-checksum=%s ! appsink name=sink sync=false",
      batch_size, cpu_threads, verify ? "true" : "false");
  GstElement *pipeline = gst_parse_launch (desc, &err);
  g_free (desc);
  /* A missing element (the plugin not found) gives a partial pipeline AND an
   * error: either is a failure. */
  if (!pipeline || err) {
    g_printerr ("Could not build the pipeline: %s\n", err ? err->message : "unknown error");
    g_clear_error (&err);
    if (pipeline)
      gst_object_unref (pipeline);
    return 1;
  }
  GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  g_object_set (src, "location", argv[1], NULL);
  gst_object_unref (src);
  GstElement *proc = gst_bin_get_by_name (GST_BIN (pipeline), "proc");
  GstAppSink *sink = GST_APP_SINK (gst_bin_get_by_name (GST_BIN (pipeline), "sink"));
  GstBus *bus = gst_element_get_bus (pipeline);

  Summary s = { 0 };
  int rc = 0;
  gint64 start = g_get_monotonic_time ();
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  for (;;) {
    GstSample *sample = gst_app_sink_try_pull_sample (sink, 100 * GST_MSECOND);
    if (sample) {
      GstMapInfo map;
      GstBuffer *buf = gst_sample_get_buffer (sample);
      gst_buffer_map (buf, &map, GST_MAP_READ);
      const GppResult *records = (const GppResult *) map.data;
      for (gsize i = 0; i < map.size / sizeof (GppResult); i++)
        count (&s, &records[i]);
      gst_buffer_unmap (buf, &map);
      gst_sample_unref (sample);
      continue;
    }
    GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    if (msg) {
      GError *e;
      gchar *dbg;
      gst_message_parse_error (msg, &e, &dbg);
      g_printerr ("ERROR from %s: %s\n", GST_OBJECT_NAME (msg->src), e->message);
      g_error_free (e);
      g_free (dbg);
      gst_message_unref (msg);
      rc = 1;
      break;
    }
    if (gst_app_sink_is_eos (sink))
      break;
  }
  double seconds = (double) (g_get_monotonic_time () - start) / 1e6;
  if (rc != 0) {
    /* No summary of a capture that could not be read (it would be all zeros). */
    gst_element_set_state (pipeline, GST_STATE_NULL);
    goto done;
  }

  GstStructure *stats;
  g_object_get (proc, "stats", &stats, NULL);
  guint64 p50 = 0, p99 = 0, batches = 0;
  gst_structure_get_uint64 (stats, "latency-p50-ns", &p50);
  gst_structure_get_uint64 (stats, "latency-p99-ns", &p99);
  gst_structure_get_uint64 (stats, "batches", &batches);
  gst_structure_free (stats);
  gst_element_set_state (pipeline, GST_STATE_NULL);

  g_print ("\n%s: %" G_GUINT64_FORMAT " packets, %" G_GUINT64_FORMAT " bytes on the wire\n\n",
      argv[1], s.packets, s.bytes);
  g_print ("  %-22s %10s  %8s\n", "", "packets", "share");
  print_row ("IPv4", s.ipv4, s.packets);
  print_row ("IPv6", s.ipv6, s.packets);
  print_row ("not IP", s.non_ip, s.packets);
  print_row ("TCP", s.tcp, s.packets);
  print_row ("UDP", s.udp, s.packets);
  print_row ("ICMP", s.icmp, s.packets);
  print_row ("ICMPv6", s.icmpv6, s.packets);
  print_row ("other L4", s.other_l4, s.packets);
  print_row ("VLAN tagged", s.vlan_tagged, s.packets);
  print_row ("fragments", s.fragments, s.packets);
  print_row ("bad IPv4 checksum", s.ipv4_bad_checksum, s.packets);
  if (verify)
    print_row ("bad L4 checksum", s.l4_bad_checksum, s.packets);
  print_row ("malformed", s.malformed, s.packets);
  static const struct { int bit; const char *name; } flags[] = {
#define FLAG_NAME(flag, bit, name, meaning) { bit, "  " name },
    GPP_STATUS_FLAGS (FLAG_NAME)
#undef FLAG_NAME
  };
  for (gsize i = 0; i < G_N_ELEMENTS (flags); i++)
    if (s.flag_counts[flags[i].bit])
      print_row (flags[i].name, s.flag_counts[flags[i].bit], s.packets);

  gchar *threads = cpu_threads ? g_strdup_printf ("%u thread(s)", cpu_threads)
      : g_strdup ("one thread per core");
  g_print ("\n  %" G_GUINT64_FORMAT " batches of up to %u packets, mode cpu, %s\n",
      batches, batch_size, threads);
  g_free (threads);
  g_print ("  pipeline throughput  %.2f Mpps, %.2f Gbit/s (%.3f s wall, file reading included)\n",
      seconds > 0 ? s.packets / seconds / 1e6 : 0.0,
      seconds > 0 ? s.bytes * 8.0 / seconds / 1e9 : 0.0, seconds);
  g_print ("  gpupacketproc latency per batch  p50 %.1f us, p99 %.1f us\n", p50 / 1e3, p99 / 1e3);

done:
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (proc);
  gst_object_unref (pipeline);
  gst_deinit ();
  return rc;
}
