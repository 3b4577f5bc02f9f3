/* pcapsrc reading files through the capture library: the batches it pushes
 * are the reader's (checked against libpcap by tests/capture) for plain,
 * gzip and zstd files at any batch size and thread count, with their
 * offsets; and its reading thread never outlives it (200 starts and stops
 * at random points, a restart from READY, run under ASan and LSan in the
 * sanitizer build). */
#include <zlib.h>
#include <zstd.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <glib/gstdio.h>
#include "test_support.h"

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gpupacket/packet-batch.h>

#include "capture_reader.h"

namespace {

std::string
data_path (const char *name)
{
  const char *dir = g_getenv ("GPP_TEST_DATA_DIR");
  return std::string (dir ? dir : "../shared/data") + "/pcap/" + name;
}

std::vector<uint8_t>
file_bytes (const std::string & path)
{
  std::ifstream in (path, std::ios::binary);
  return std::vector<uint8_t> (std::istreambuf_iterator<char> (in), {});
}

void
write_file (const std::string & path, const std::vector<uint8_t> & bytes)
{
  std::ofstream (path, std::ios::binary).write (reinterpret_cast<const char *> (bytes.data ()),
      (std::streamsize) bytes.size ());
}

/* libpcap's batches of `path` (the reader forced onto libpcap). */
std::vector<std::vector<uint8_t>>
libpcap_batches (const std::string & path, guint batch_size)
{
  using gpp::capture::CaptureReader;
  std::string error;
  CaptureReader::OpenError kind;
  auto reader = CaptureReader::open (path, "", &error, &kind);
  fail_unless (reader != nullptr, "%s", error.c_str ());
  reader->use_libpcap_only ();
  gpp::capture::BatchPlan plan;
  std::vector<std::vector<uint8_t>> out;
  while (reader->plan (&plan, batch_size, 256u << 20) == CaptureReader::Step::Batch) {
    std::vector<uint8_t> bytes (plan.size ());
    reader->write (plan, bytes.data (), nullptr);
    out.push_back (std::move (bytes));
  }
  return out;
}


}                               // namespace

GST_START_TEST (test_pcapsrc_pushes_the_readers_batches)
{
  gchar *dir = g_dir_make_tmp ("gpp-pcapsrc-XXXXXX", NULL);
  const std::string plain = data_path ("zeek__ssh.pcap");
  const std::vector<uint8_t> bytes = file_bytes (plain);
  const std::string gz = std::string (dir) + "/ssh.pcap.gz", zst = std::string (dir) + "/ssh.zst";
  {
    gzFile f = gzopen (gz.c_str (), "wb");
    gzwrite (f, bytes.data (), (unsigned) bytes.size ());
    gzclose (f);
    std::vector<uint8_t> packed (ZSTD_compressBound (bytes.size ()));
    packed.resize (ZSTD_compress (packed.data (), packed.size (), bytes.data (), bytes.size (), 3));
    write_file (zst, packed);
  }
  for (guint batch_size : {1u, 100u, 4096u}) {
    const auto want = libpcap_batches (plain, batch_size);
    for (const std::string & path : {plain, gz, zst}) {
      for (guint threads : {1u, 3u}) {
        GstHarness *h = gst_harness_new ("pcapsrc");
        g_object_set (h->element, "location", path.c_str (), "batch-size", batch_size,
            "threads", threads, NULL);
        gst_harness_play (h);
        guint64 next_record = 0;
        for (size_t i = 0; i < want.size (); i++) {
          GstBuffer *buf = gst_harness_pull (h);
          fail_unless (buf != NULL);
          GstMapInfo map;
          gst_buffer_map (buf, &map, GST_MAP_READ);
          fail_unless (map.size == want[i].size () &&
              memcmp (map.data, want[i].data (), map.size) == 0,
              "%s, batch-size %u, threads %u: batch %zu differs", path.c_str (), batch_size,
              threads, i);
          const auto *header = reinterpret_cast<const GppBatchHeader *> (map.data);
          fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buf), next_record);
          next_record += header->packet_count;
          fail_unless_equals_uint64 (GST_BUFFER_OFFSET_END (buf), next_record);
          gst_buffer_unmap (buf, &map);
          gst_buffer_unref (buf);
        }
        GstEvent *event;
        while ((event = gst_harness_pull_event (h)) && GST_EVENT_TYPE (event) != GST_EVENT_EOS)
          gst_event_unref (event);
        fail_unless (event != NULL, "no EOS after the last batch");
        gst_event_unref (event);
        gst_harness_teardown (h);
      }
    }
  }
  g_unlink (gz.c_str ());
  g_unlink (zst.c_str ());
  g_rmdir (dir);
  g_free (dir);
}

GST_END_TEST;

/* Stopped anywhere — before its first batch, with batches queued ahead,
 * at the end — pcapsrc leaves no thread behind and loses no memory. */
GST_START_TEST (test_pcapsrc_start_stop_cycles_leave_no_thread)
{
  const guint before = test::process_thread_count ();
  std::mt19937 rng (5);
  const std::string location = data_path ("zeek__ssh.pcap");
  for (int cycle = 0; cycle < 200; cycle++) {
    GstElement *pipeline = gst_parse_launch ("pcapsrc name=src batch-size=16 threads=2 ! "
        "fakesink sync=false", NULL);
    fail_unless (pipeline != NULL);
    GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
    g_object_set (src, "location", location.c_str (), NULL);
    gst_object_unref (src);
    fail_if (gst_element_set_state (pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE);
    g_usleep (rng () % 3000);
    if (cycle % 10 == 0) {
      /* Back to READY and on again: the file is read from its start. */
      gst_element_set_state (pipeline, GST_STATE_READY);
      gst_element_set_state (pipeline, GST_STATE_PLAYING);
      g_usleep (rng () % 3000);
    }
    gst_element_set_state (pipeline, GST_STATE_NULL);
    gst_object_unref (pipeline);
  }
  /* GStreamer's own threads (the task pool) may stay: none of pcapsrc's. */
  const guint after = test::thread_count_settled (before + 2);
  fail_unless (after <= before + 2, "%u threads before the cycles, %u after", before, after);
}

GST_END_TEST;

static Suite *
pcapsrc_file_suite (void)
{
  Suite *s = suite_create ("pcapsrc_file");
  TCase *tc = tcase_create ("general");
  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_pcapsrc_pushes_the_readers_batches);
  tcase_add_test (tc, test_pcapsrc_start_stop_cycles_leave_no_thread);
  return s;
}

GST_CHECK_MAIN (pcapsrc_file);
