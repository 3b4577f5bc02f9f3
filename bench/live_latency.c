/* gpupacket-live-latency: capture-to-result latency of gpupacketproc on a live
 * interface, per source and mode, side by side.  For each it runs
 *   SOURCE device=CAPTURE ! gpupacketproc mode=M ! fakesink
 * (SOURCE: pcapsrc, and afxdpsrc where the plugin has it)
 * while a thread injects UDP frames into INJECT (the other end of a veth
 * pair, see live-latency.sh) at a fixed rate, then prints the element's
 * capture-latency percentiles (capture timestamp of a batch's first packet
 * to the push of its results, wall clock) and the capture counts.  Two
 * measures of it: the element's own `stats` (its last 4096 batches), and a
 * probe on its source pad that sees every batch of the run as it leaves
 * (the run's percentiles, and with --trace each batch's time and latency).
 * --noise-ms first spins that long on each CPU and reports how often and how
 * long a spinning thread was interrupted there (what bounds a p99 that
 * waits microseconds for the GPU: an interruption within the wait adds its
 * length).
 *
 *   gpupacket-live-latency --capture IF --inject IF [--rate PPS] [--seconds S]
 *       [--batch-size N] [--batch-timeout US] [--modes cpu,streams,...]
 *       [--sources pcapsrc,afxdpsrc] [--source-props PROPS] [--proc-props PROPS]
 *       [--csv FILE] [--trace FILE] [--noise-ms MS]
 * PROPS: further properties of the source or of gpupacketproc, as gst-launch
 * takes them (e.g. --source-props busy-poll=true --sources afxdpsrc).
 */
#define _GNU_SOURCE /* the BSD types <pcap/pcap.h> uses; CPU affinity */
#include <gst/gst.h>
#include <pcap/pcap.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpupacket/gstpacketbatchmeta.h>
#include <gpupacket/packet-batch.h>

typedef struct {
  const char *inject;
  guint rate;
  double seconds;
  volatile gint stop;
  guint64 sent;
  gchar *error;
} Injector;

/* Every value of gpupacketproc's mode property, comma-separated (the
 * element's enum is the one list of modes); NULL without the element. */
static gchar *
all_modes (void)
{
  GstElement *proc = gst_element_factory_make ("gpupacketproc", NULL);
  if (!proc)
    return NULL;
  GParamSpec *spec = g_object_class_find_property (G_OBJECT_GET_CLASS (proc), "mode");
  GEnumClass *modes = G_PARAM_SPEC_ENUM (spec)->enum_class;
  GString *text = g_string_new (NULL);
  for (guint i = 0; i < modes->n_values; ++i)
    g_string_append_printf (text, "%s%s", i ? "," : "", modes->values[i].value_nick);
  gst_object_unref (proc);
  return g_string_free (text, FALSE);
}

static guint64
clock_ns (clockid_t id)
{
  struct timespec ts;
  clock_gettime (id, &ts);
  return (guint64) ts.tv_sec * 1000000000u + (guint64) ts.tv_nsec;
}

/* Every batch leaving gpupacketproc during a run: when, and how long after
 * its first packet's capture (both on the capture timestamps' clock,
 * CLOCK_REALTIME).  Room for one batch a frame; batches past it are
 * counted, not kept. */
typedef struct {
  GType meta_api;
  guint64 *at_ns, *latency_ns;
  gint n, missed;               /* atomic: the streaming thread counts, main reads */
  gint cap;
} Probe;

static GstPadProbeReturn
on_results (G_GNUC_UNUSED GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Probe *p = data;
  const guint64 now = clock_ns (CLOCK_REALTIME);
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  if (!p->meta_api)             /* registered with the first meta the element adds */
    p->meta_api = g_type_from_name (GST_PACKET_BATCH_META_API_NAME);
  GstPacketBatchMeta *meta = p->meta_api ?
      (GstPacketBatchMeta *) gst_buffer_get_meta (buf, p->meta_api) : NULL;
  GstMapInfo map;
  if (!meta || !gst_buffer_map (meta->batch, &map, GST_MAP_READ))
    return GST_PAD_PROBE_OK;
  const GppBatchHeader *h = (const GppBatchHeader *) map.data;
  if (map.size >= sizeof *h && h->packet_count &&
      map.size >= h->header_size + sizeof (GppPacketDesc)) {
    const guint64 first = gpp_batch_descs (map.data)[0].timestamp_ns;
    const gint i = g_atomic_int_get (&p->n);
    if (i < p->cap) {
      p->at_ns[i] = now;
      p->latency_ns[i] = now > first ? now - first : 0;
      g_atomic_int_set (&p->n, i + 1);
    } else {
      g_atomic_int_inc (&p->missed);
    }
  }
  gst_buffer_unmap (meta->batch, &map);
  return GST_PAD_PROBE_OK;
}

static int
compare_u64 (const void *a, const void *b)
{
  const guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
  return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted[0, n), as LatencyWindow's. */
static guint64
percentile (const guint64 * sorted, gsize n, double pct)
{
  if (!n)
    return 0;
  gsize rank = (gsize) (pct / 100.0 * (double) n + 0.999999);
  rank = MAX (rank, 1);
  return sorted[MIN (rank, n) - 1];
}

/* Spins on CPU `cpu` for `ms` reading the clock; every gap between two reads
 * longer than 1 us is an interruption (an interrupt, a timer tick, the
 * hypervisor): prints how many a second, of what length, and the time lost. */
static void
measure_noise (int cpu, double ms)
{
  cpu_set_t set;
  CPU_ZERO (&set);
  CPU_SET (cpu, &set);
  if (pthread_setaffinity_np (pthread_self (), sizeof set, &set) != 0)
    return;                     /* not ours to use (cpuset) */
  enum { kMaxGaps = 1 << 16 };
  static guint64 gaps[kMaxGaps];
  gsize n = 0;
  guint64 lost = 0;
  const guint64 start = clock_ns (CLOCK_MONOTONIC), end = start + (guint64) (ms * 1e6);
  guint64 last = start;
  for (;;) {
    const guint64 now = clock_ns (CLOCK_MONOTONIC);
    if (now - last > 1000) {
      lost += now - last;
      if (n < kMaxGaps)
        gaps[n++] = now - last;
    }
    last = now;
    if (now >= end)
      break;
  }
  qsort (gaps, n, sizeof gaps[0], compare_u64);
  gsize over5 = 0, over10 = 0;
  for (gsize i = 0; i < n; i++) {
    over5 += gaps[i] > 5000;
    over10 += gaps[i] > 10000;
  }
  const double s = ms / 1e3;
  printf ("%-5d %10.0f %10.0f %10.0f %9.1f %9.1f %9.1f %9.3f\n", cpu, n / s, over5 / s,
      over10 / s, percentile (gaps, n, 50) / 1e3, percentile (gaps, n, 99) / 1e3,
      n ? gaps[n - 1] / 1e3 : 0.0, lost / 1e6 / ms * 100);
}

static void
report_noise (double ms)
{
  printf ("interruptions of a thread spinning %.0f ms on each CPU (gaps > 1 us between clock reads)\n",
      ms);
  printf ("%-5s %10s %10s %10s %9s %9s %9s %9s\n", "cpu", "per s", ">5us /s", ">10us /s",
      "p50 us", "p99 us", "max us", "lost %");
  cpu_set_t allowed;
  if (sched_getaffinity (0, sizeof allowed, &allowed) != 0)
    return;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET (cpu, &allowed))
      measure_noise (cpu, ms);
  pthread_setaffinity_np (pthread_self (), sizeof allowed, &allowed);
}

static double
now_s (void)
{
  return clock_ns (CLOCK_MONOTONIC) / 1e9;
}

/* 64-byte Ethernet / IPv4 / UDP frames, flows varying with the count. */
static void
make_frame (guint8 * f, guint64 n)
{
  static const guint8 head[] = {
    0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00,
    0x45, 0, 0, 50, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
  };
  memset (f, 0, 64);
  memcpy (f, head, sizeof head);
  f[29] = (guint8) (n & 0xff);
  f[34] = 0x30;
  f[35] = (guint8) (n & 0xff);
  f[36] = 0x00;
  f[37] = 53;
  f[38] = 0;
  f[39] = 30;
  guint32 sum = 0;
  for (int i = 14; i < 34; i += 2)
    sum += (f[i] << 8) | f[i + 1];
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  f[24] = (guint8) (~sum >> 8);
  f[25] = (guint8) ~sum;
}

static gpointer
inject_thread (gpointer data)
{
  Injector *inj = data;
  char errbuf[PCAP_ERRBUF_SIZE];
  pcap_t *p = pcap_open_live (inj->inject, 128, 0, 1, errbuf);
  if (!p) {
    inj->error = g_strdup_printf ("pcap_open_live(%s): %s", inj->inject, errbuf);
    return NULL;
  }
  guint8 frame[64];
  const double start = now_s ();
  while (!g_atomic_int_get (&inj->stop) && now_s () - start < inj->seconds) {
    /* Paced by the clock: the packet due now, never a burst to catch up. */
    const double due = start + (double) inj->sent / inj->rate;
    const double early = due - now_s ();
    if (early > 0) {
      /* Sleep through long waits so this thread does not take a core from
       * the pipeline it measures; spin only the last stretch. */
      if (early > 60e-6)
        g_usleep ((gulong) ((early - 50e-6) * 1e6));
      continue;
    }
    make_frame (frame, inj->sent);
    if (pcap_inject (p, frame, sizeof frame) != sizeof frame) {
      inj->error = g_strdup_printf ("pcap_inject(%s): %s", inj->inject, pcap_geterr (p));
      break;
    }
    inj->sent++;
  }
  pcap_close (p);
  return NULL;
}

/* TEXT as a CSV field: quoted, its quotes doubled (properties may hold them). */
static gchar *
csv_field (const gchar * text)
{
  gchar **parts = g_strsplit (text ? text : "", "\"", -1);
  gchar *doubled = g_strjoinv ("\"\"", parts);
  gchar *field = g_strdup_printf ("\"%s\"", doubled);
  g_strfreev (parts);
  g_free (doubled);
  return field;
}

static guint64
get_u64 (const GstStructure * s, const char *field)
{
  guint64 v = 0;
  if (s)
    gst_structure_get_uint64 (s, field, &v);
  return v;
}

int
main (int argc, char **argv)
{
  gchar *capture = NULL, *inject = NULL, *modes = NULL, *sources = NULL;
  gchar *csv = NULL, *trace = NULL, *source_props = NULL, *proc_props = NULL;
  gint rate = 20000, batch_size = 64, batch_timeout = 100;
  gdouble seconds = 3, noise_ms = 0;
  GOptionEntry entries[] = {
    {"capture", 0, 0, G_OPTION_ARG_STRING, &capture, "interface pcapsrc captures on", "IF"},
    {"inject", 0, 0, G_OPTION_ARG_STRING, &inject, "interface frames are injected into", "IF"},
    {"rate", 0, 0, G_OPTION_ARG_INT, &rate, "frames per second (default 20000)", "PPS"},
    {"seconds", 0, 0, G_OPTION_ARG_DOUBLE, &seconds, "injection time per mode (default 3)", "S"},
    {"batch-size", 0, 0, G_OPTION_ARG_INT, &batch_size, "pcapsrc batch-size (default 64)", "N"},
    {"batch-timeout", 0, 0, G_OPTION_ARG_INT, &batch_timeout,
        "pcapsrc batch-timeout in us (default 100)", "US"},
    {"modes", 0, 0, G_OPTION_ARG_STRING, &modes, "modes to measure, comma-separated", "LIST"},
    {"sources", 0, 0, G_OPTION_ARG_STRING, &sources,
        "live sources, comma-separated (default pcapsrc, and afxdpsrc where the plugin has it)",
        "LIST"},
    {"source-props", 0, 0, G_OPTION_ARG_STRING, &source_props,
        "further properties of every source (e.g. busy-poll=true with --sources afxdpsrc)",
        "PROPS"},
    {"proc-props", 0, 0, G_OPTION_ARG_STRING, &proc_props,
        "further properties of gpupacketproc (e.g. low-latency=true)", "PROPS"},
    {"csv", 0, 0, G_OPTION_ARG_FILENAME, &csv, "also write the rows as CSV", "FILE"},
    {"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace,
        "write every batch's push time and capture-to-push latency (CSV, ns)", "FILE"},
    {"noise-ms", 0, 0, G_OPTION_ARG_DOUBLE, &noise_ms,
        "first spin this long on each CPU and report its interruptions (default 0: not)", "MS"},
    {NULL}
  };
  GError *err = NULL;
  GOptionContext *ctx = g_option_context_new ("- capture-to-result latency per mode");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || !capture || !inject || rate <= 0) {
    fprintf (stderr, "%s\nusage: %s --capture IF --inject IF [options]\n",
        err ? err->message : "--capture and --inject are required", argv[0]);
    return 2;
  }
  g_option_context_free (ctx);

  FILE *out = csv ? fopen (csv, "w") : NULL;
  if (csv && !out) {
    fprintf (stderr, "cannot write %s\n", csv);
    return 2;
  }
  FILE *trace_out = trace ? fopen (trace, "w") : NULL;
  if (trace && !trace_out) {
    fprintf (stderr, "cannot write %s\n", trace);
    return 2;
  }
  if (trace_out)
    fprintf (trace_out, "source,mode,run,push_ns,capture_to_push_ns\n");
  if (out)
    fprintf (out, "source,mode,rate_pps,batch_size,batch_timeout_us,sent,captured,kernel_dropped,"
        "batches,run_latency_p50_us,run_latency_p99_us,run_latency_p999_us,run_latency_max_us,"
        "capture_latency_p50_us,capture_latency_p99_us,capture_latency_p999_us,"
        "capture_latency_max_us,element_latency_p50_us,element_latency_p99_us,"
        "element_engine_mean_us,element_push_mean_us,element_pool_wait_mean_us,source_props,proc_props\n");
  if (noise_ms > 0)
    report_noise (noise_ms);
  printf ("capture-to-result latency, %d frames/s of 64 bytes, batch-size %d, batch-timeout %d us, "
      "%.1f s per mode%s%s%s%s\n", rate, batch_size, batch_timeout, seconds,
      source_props ? "; source " : "", source_props ? source_props : "",
      proc_props ? "; gpupacketproc " : "", proc_props ? proc_props : "");
  printf ("(p50 ... max: every batch of the run, capture of its first packet to its push; "
      "last p99: the element's stats, its last 4096 batches)\n");
  printf ("%-9s %-11s %9s %9s %8s %8s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "source", "mode",
      "sent", "captured", "dropped", "batches", "p50 us", "p99 us", "p99.9 us", "max us",
      "last p99", "elem p50", "elem p99", "engine", "push", "pool wait");
  int run = 0;
  int status = 0;
  if (!modes && !(modes = all_modes ())) {
    fprintf (stderr, "no gpupacketproc element (is GST_PLUGIN_PATH set?)\n");
    return 1;
  }
  if (!sources) {
    GstElementFactory *afxdp = gst_element_factory_find ("afxdpsrc");
    sources = g_strdup (afxdp ? "pcapsrc,afxdpsrc" : "pcapsrc");
    if (afxdp)
      gst_object_unref (afxdp);
  }
  gchar *source_field = csv_field (source_props), *proc_field = csv_field (proc_props);
  gchar **list = g_strsplit (modes, ",", -1);
  gchar **source_list = g_strsplit (sources, ",", -1);
  for (gchar ** source = source_list; *source; ++source)
  for (gchar ** m = list; *m; ++m) {
    gchar *desc = g_strdup_printf ("%s name=src device=%s batch-size=%d batch-timeout=%d %s ! "
        "gpupacketproc name=proc mode=%s %s ! fakesink sync=false", *source, capture, batch_size,
        batch_timeout, source_props ? source_props : "", *m, proc_props ? proc_props : "");
    GstElement *pipe = gst_parse_launch (desc, &err);
    g_free (desc);
    if (!pipe || err) {         /* a missing element is a "recoverable" error: not here */
      fprintf (stderr, "%s %s: %s\n", *source, *m, err ? err->message : "could not build the pipeline");
      g_clear_error (&err);
      if (pipe)
        gst_object_unref (pipe);
      status = 1;
      continue;
    }
    run++;
    /* One batch a frame at most (batch-size 1), and some to spare. */
    const gint cap = (gint) (rate * seconds) + 4096;
    Probe probe = { 0, g_new (guint64, cap), g_new (guint64, cap), 0, 0, cap };
    GstElement *proc_el = gst_bin_get_by_name (GST_BIN (pipe), "proc");
    GstPad *proc_src = gst_element_get_static_pad (proc_el, "src");
    gst_pad_add_probe (proc_src, GST_PAD_PROBE_TYPE_BUFFER, on_results, &probe, NULL);
    gst_object_unref (proc_src);
    gst_object_unref (proc_el);
    GstBus *bus = gst_element_get_bus (pipe);
    if (gst_element_set_state (pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
      GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
      if (msg) {
        gst_message_parse_error (msg, &err, NULL);
        fprintf (stderr, "%s %s: %s\n", *source, *m, err->message);
        g_clear_error (&err);
        gst_message_unref (msg);
      }
      gst_element_set_state (pipe, GST_STATE_NULL);
      gst_object_unref (bus);
      gst_object_unref (pipe);
      g_free (probe.at_ns);
      g_free (probe.latency_ns);
      status = 1;
      continue;
    }
    gst_element_get_state (pipe, NULL, NULL, 5 * GST_SECOND);
    g_usleep (300000);          /* the capture is open and the GPU engine started */
    g_atomic_int_set (&probe.missed, 0);  /* only the injected frames' batches */
    g_atomic_int_set (&probe.n, 0);
    Injector inj = { inject, (guint) rate, seconds, 0, 0, NULL };
    GThread *th = g_thread_new ("inject", inject_thread, &inj);
    g_thread_join (th);
    g_usleep (300000);          /* the last batches time out and come through */
    /* The run's batches so far (any later ones go past them). */
    const gsize n = (gsize) g_atomic_int_get (&probe.n);
    if (trace_out)
      for (gsize i = 0; i < n; i++)
        fprintf (trace_out, "%s,%s,%d,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT "\n", *source, *m,
            run, probe.at_ns[i], probe.latency_ns[i]);
    qsort (probe.latency_ns, n, sizeof (guint64), compare_u64);
    const guint64 *lat = probe.latency_ns;
    GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    GstElement *src = gst_bin_get_by_name (GST_BIN (pipe), "src");
    GstElement *proc = gst_bin_get_by_name (GST_BIN (pipe), "proc");
    GstStructure *ss = NULL, *ps = NULL;
    g_object_get (src, "stats", &ss, NULL);
    g_object_get (proc, "stats", &ps, NULL);
    gchar *key50 = g_strdup_printf ("%s-latency-p50-ns", *m), *key99 = g_strdup_printf ("%s-latency-p99-ns", *m);
    const double us = 1e3;
    const guint64 captured = get_u64 (ss, "packets");
    const guint64 dropped = get_u64 (ss, "dropped");
    /* Where the element's time went, a batch's mean (the stats sum them):
     * the engine (submit and the wait for the batch), the push downstream,
     * and before the submit the wait for pinned memory and an engine slot. */
    const guint64 batches = get_u64 (ps, "batches");
    const double engine_us = batches ? get_u64 (ps, "time-engine-ns") / us / batches : 0;
    const double push_us = batches ? get_u64 (ps, "time-push-ns") / us / batches : 0;
    const double wait_us = batches ? (get_u64 (ps, "time-pool-wait-ns") +
        get_u64 (ps, "time-slot-wait-ns")) / us / batches : 0;
    printf ("%-9s %-11s %9" G_GUINT64_FORMAT " %9" G_GUINT64_FORMAT " %8" G_GUINT64_FORMAT " %8"
        G_GUINT64_FORMAT " %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.2f %9.2f %9.2f%s%s\n", *source,
        *m, inj.sent, captured, dropped, batches, percentile (lat, n, 50) / us,
        percentile (lat, n, 99) / us, percentile (lat, n, 99.9) / us, percentile (lat, n, 100) / us,
        get_u64 (ps, "capture-latency-p99-ns") / us,
        get_u64 (ps, key50) / us, get_u64 (ps, key99) / us, engine_us, push_us, wait_us,
        msg || inj.error ? "  (error)" : "", g_atomic_int_get (&probe.missed) ? "  (batches past the probe's room)" : "");
    if (out)
      fprintf (out, "%s,%s,%d,%d,%d,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
          ",%" G_GUINT64_FORMAT ",%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.2f,%.2f,%.2f,%s,%s\n",
          *source, *m, rate, batch_size, batch_timeout, inj.sent, captured, dropped, batches,
          percentile (lat, n, 50) / us, percentile (lat, n, 99) / us,
          percentile (lat, n, 99.9) / us, percentile (lat, n, 100) / us,
          get_u64 (ps, "capture-latency-p50-ns") / us, get_u64 (ps, "capture-latency-p99-ns") / us,
          get_u64 (ps, "capture-latency-p999-ns") / us, get_u64 (ps, "capture-latency-max-ns") / us,
          get_u64 (ps, key50) / us, get_u64 (ps, key99) / us, engine_us, push_us, wait_us, source_field,
          proc_field);
    if (msg) {
      gst_message_parse_error (msg, &err, NULL);
      fprintf (stderr, "%s %s: %s\n", *source, *m, err->message);
      g_clear_error (&err);
      gst_message_unref (msg);
      status = 1;
    }
    if (inj.error) {
      fprintf (stderr, "%s %s: %s\n", *source, *m, inj.error);
      g_free (inj.error);
      status = 1;
    }
    g_free (key50);
    g_free (key99);
    if (ss)
      gst_structure_free (ss);
    if (ps)
      gst_structure_free (ps);
    gst_object_unref (src);
    gst_object_unref (proc);
    gst_element_set_state (pipe, GST_STATE_NULL);
    gst_object_unref (bus);
    gst_object_unref (pipe);
    g_free (probe.at_ns);        /* the pipeline is gone: nothing writes there */
    g_free (probe.latency_ns);
  }
  g_strfreev (list);
  g_strfreev (source_list);
  g_free (sources);
  if (out)
    fclose (out);
  if (trace_out)
    fclose (trace_out);
  g_free (trace);
  g_free (capture);
  g_free (inject);
  g_free (modes);
  g_free (csv);
  g_free (source_props);
  g_free (proc_props);
  g_free (source_field);
  g_free (proc_field);
  return status;
}
