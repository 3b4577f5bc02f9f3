/* gpupacket-mode-switch: runs  pcapsrc ! gpupacketproc ! appsink  and, while
 * it plays, switches gpupacketproc's `mode` and `num-streams` every few
 * batches.  Prints a few results after each switch and the stats at the end:
 * results stay in order and nothing is lost across switches.
 *
 *   gpupacket-mode-switch [--modes cpu,streams,...] [--every N] [--batch-size N] FILE
 */
#include <gst/app/gstappsink.h>
#include <gst/gst.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <gpupacket/packet-result.h>

static void
print_result (const GppResult * r)
{
  char src[INET6_ADDRSTRLEN] = "-", dst[INET6_ADDRSTRLEN] = "-";
  if (r->ip_flags & GPP_IP_HEADER_PARSED) {
    inet_ntop (r->ip_version == 4 ? AF_INET : AF_INET6, r->src, src, sizeof src);
    inet_ntop (r->ip_version == 4 ? AF_INET : AF_INET6, r->dst, dst, sizeof dst);
  }
  g_print ("    #%-8" G_GUINT64_FORMAT " %-39s > %-39s proto %-3u rss 0x%08x status 0x%x\n",
      r->packet_number, src, dst, r->l4_proto, r->rss_hash, r->status);
}

int
main (int argc, char **argv)
{
  gchar *modes_text = NULL;    /* default: every value of the mode property */
  gint every = 10, batch_size = 64;
  GOptionEntry entries[] = {
    {"modes", 'm', 0, G_OPTION_ARG_STRING, &modes_text, "Modes to cycle through (all)", "LIST"},
    {"every", 'e', 0, G_OPTION_ARG_INT, &every, "Switch after this many batches (10)", "N"},
    {"batch-size", 'b', 0, G_OPTION_ARG_INT, &batch_size, "Packets per batch (64)", "N"},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("FILE - switch gpupacketproc modes while playing");
  GError *err = NULL;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc != 2 || every < 1) {
    g_printerr ("%s\n", err ? err->message : "give one capture file");
    return 2;
  }
  g_option_context_free (ctx);

  gchar *desc = g_strdup_printf ("pcapsrc name=src batch-size=%d ! gpupacketproc name=proc ! "
      "appsink name=sink sync=false", batch_size);
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
  if (!modes_text) {
    /* The element's mode enum is the one list of modes. */
    GEnumClass *all = G_PARAM_SPEC_ENUM (g_object_class_find_property (G_OBJECT_GET_CLASS (proc),
            "mode"))->enum_class;
    GString *text = g_string_new (NULL);
    for (guint i = 0; i < all->n_values; ++i)
      g_string_append_printf (text, "%s%s", i ? "," : "", all->values[i].value_nick);
    modes_text = g_string_free (text, FALSE);
  }
  gchar **modes = g_strsplit (modes_text, ",", -1);
  const guint n_modes = g_strv_length (modes);
  gst_util_set_object_arg (G_OBJECT (proc), "mode", modes[0]);
  GstAppSink *sink = GST_APP_SINK (gst_bin_get_by_name (GST_BIN (pipeline), "sink"));
  GstBus *bus = gst_element_get_bus (pipeline);

  guint64 batches = 0, packets = 0, last_number = 0;
  guint mode_index = 0, streams = 1;
  int rc = 0;
  gboolean show = TRUE, in_order = TRUE, stopped = FALSE;
  g_print ("mode %s\n", modes[0]);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  for (;;) {
    GstSample *sample = gst_app_sink_try_pull_sample (sink, 100 * GST_MSECOND);
    if (sample) {
      GstMapInfo map;
      GstBuffer *buf = gst_sample_get_buffer (sample);
      gst_buffer_map (buf, &map, GST_MAP_READ);
      const GppResult *r = (const GppResult *) map.data;
      const gsize n = map.size / sizeof (GppResult);
      for (gsize i = 0; i < n; i++) {
        if (r[i].packet_number <= last_number) {
          g_printerr ("out of order: packet %" G_GUINT64_FORMAT " after %" G_GUINT64_FORMAT "\n",
              r[i].packet_number, last_number);
          in_order = FALSE;
          rc = 1;
        }
        last_number = r[i].packet_number;
      }
      for (gsize i = 0; show && i < MIN (n, 3); i++)
        print_result (&r[i]);
      show = FALSE;
      packets += n;
      gst_buffer_unmap (buf, &map);
      gst_sample_unref (sample);
      if (++batches % every == 0) {
        mode_index = (mode_index + 1) % n_modes;
        streams = streams % 8 + 1;
        g_print ("mode %s, num-streams %u (after %" G_GUINT64_FORMAT " batches)\n",
            modes[mode_index], streams, batches);
        gst_util_set_object_arg (G_OBJECT (proc), "mode", modes[mode_index]);
        g_object_set (proc, "num-streams", streams, NULL);
        show = TRUE;
      }
      continue;
    }
    GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    if (msg) {
      gchar *dbg;
      gst_message_parse_error (msg, &err, &dbg);
      g_printerr ("ERROR from %s: %s\n%s\n", GST_OBJECT_NAME (msg->src), err->message,
          dbg ? dbg : "");
      if (msg->src == GST_OBJECT (proc))
        g_printerr ("(without a CUDA GPU, run with --modes cpu)\n");
      g_clear_error (&err);
      g_free (dbg);
      gst_message_unref (msg);
      rc = 1;
      stopped = TRUE;
      break;
    }
    if (gst_app_sink_is_eos (sink))
      break;
  }

  /* Stopped by an error: no summary of a run that did not happen. */
  if (!stopped) {
    GstStructure *stats;
    g_object_get (proc, "stats", &stats, NULL);
    gchar *text = gst_structure_to_string (stats);
    g_print ("\n%" G_GUINT64_FORMAT " batches, %" G_GUINT64_FORMAT " packets, in order: %s\n"
        "stats: %s\n", batches, packets, in_order ? "yes" : "NO", text);
    g_free (text);
    gst_structure_free (stats);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);

  g_strfreev (modes);
  g_free (modes_text);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (proc);
  gst_object_unref (pipeline);
  gst_deinit ();
  return rc;
}
