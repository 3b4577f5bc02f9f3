#include "flowoutput.h"

void
GppFlowOutput::start (const gpp::FlowSettings & settings, bool decap)
{
  settings_ = settings;
  decap_ = decap;
  enabled_ = true;
  meter_.reset ();
  segment_sent_ = false;
  dropped_ = 0;
  publish_counters ();
}

void
GppFlowOutput::stop ()
{
  enabled_ = false;
  meter_.reset ();
  publish_counters ();
}

void
GppFlowOutput::post_error (const char *what, const std::string & error)
{
  GstElement *parent = gst_pad_get_parent_element (pad_);
  if (parent) {
    GST_ELEMENT_ERROR (parent, RESOURCE, FAILED, ("%s", what), ("%s", error.c_str ()));
    gst_object_unref (parent);
  }
}

bool
GppFlowOutput::place (gpp::Engine * engine)
{
  if (!enabled_) {
    engine->attach_flows (nullptr);
    return true;
  }
  const int device = engine->flow_device ();
  const uint32_t slots = gpp::flow_table_slots (settings_.max_flows);
  std::string error;
  if (!meter_ || meter_->store ().device () != device) {
    std::unique_ptr<gpp::FlowStore> store;
    if (device >= 0)
      store = gpp::make_device_flow_store (device, slots, &error);
    else
      store = gpp::make_host_flow_store (slots, settings_.threads, &error);
    if (!store) {
      post_error ("Could not make the flow table.", "flow-max=" +
          std::to_string (settings_.max_flows) + ": " + error + "; lower flow-max");
      return false;
    }
    if (!meter_) {
      meter_.reset (new gpp::FlowMeter (settings_, std::move (store)));
    } else if (!meter_->move_to (std::move (store), &error)) {
      post_error ("Could not move the flow table to the new mode's memory.", error);
      return false;
    }
  }
  if (!engine->attach_flows (device >= 0 ? &meter_->store () : nullptr)) {
    post_error ("Could not meter flows in this mode.",
        "the engine refused its device's flow table");
    return false;
  }
  publish_counters ();
  return true;
}

void
GppFlowOutput::start_stream ()
{
  if (segment_sent_)
    return;
  GstElement *parent = gst_pad_get_parent_element (pad_);
  gchar *stream_id = gst_pad_create_stream_id (pad_, parent, "flows");
  if (parent)
    gst_object_unref (parent);
  gst_pad_push_event (pad_, gst_event_new_stream_start (stream_id));
  g_free (stream_id);
  /* decap: a field the sink templates leave open, so readers that know
   * nothing of it still link; packetresultenc adds tunnel_id for "inner". */
  GstCaps *caps = gst_caps_new_simple (GPP_FLOW_CAPS_NAME, "record-size", G_TYPE_INT,
      (int) sizeof (GppFlowRecord), "decap", G_TYPE_STRING, decap_ ? "inner" : "none", NULL);
  gst_pad_push_event (pad_, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  /* Records carry their own times (start_ns, end_ns): buffers have none,
   * and a gap at once lets the sinks downstream preroll, since the first
   * flow may end long after the first packet. */
  GstSegment segment;
  gst_segment_init (&segment, GST_FORMAT_TIME);
  gst_pad_push_event (pad_, gst_event_new_segment (&segment));
  gst_pad_push_event (pad_, gst_event_new_gap (0, 0));
  segment_sent_ = true;
}

GstFlowReturn
GppFlowOutput::push (std::vector<GppFlowRecord> & records)
{
  publish_counters ();
  start_stream ();
  if (records.empty ())
    return GST_FLOW_OK;
  GstBuffer *buf = gst_buffer_new_memdup (records.data (),
      records.size () * sizeof (GppFlowRecord));
  records.clear ();
  const GstFlowReturn flow = gst_pad_push (pad_, buf);
  return flow == GST_FLOW_NOT_LINKED ? GST_FLOW_OK : flow;
}

GstFlowReturn
GppFlowOutput::sweep ()
{
  std::string error;
  if (!meter_->sweep (ended_, &error)) {
    post_error ("Flow metering failed.", error);
    return GST_FLOW_ERROR;
  }
  return push (ended_);
}

GstFlowReturn
GppFlowOutput::add (const GppResult * records, uint32_t count, const GppTunnelInfo * tunnels)
{
  if (!meter_) {
    /* flows=false: an empty flow stream all the same, so that a sink
     * linked to the pad prerolls instead of holding the pipeline. */
    start_stream ();
    return GST_FLOW_OK;
  }
  if (on_device ())
    return GST_FLOW_OK;
  if (!records) {
    /* Only engines with a table of their own leave the records on the GPU. */
    post_error ("Flow metering failed.", "a host flow table got no records");
    return GST_FLOW_ERROR;
  }
  meter_->add (records, count, tunnels);
  return sweep ();
}

GstFlowReturn
GppFlowOutput::added (uint32_t count, uint64_t latest_ns)
{
  if (!on_device ())
    return GST_FLOW_OK;
  meter_->added (count, latest_ns);
  return sweep ();
}

GstFlowReturn
GppFlowOutput::finish ()
{
  if (!meter_) {
    start_stream ();            /* EOS follows a stream-start, even if empty */
    return GST_FLOW_OK;
  }
  std::string error;
  if (!meter_->flush (ended_, &error)) {
    post_error ("Flow metering failed at the end of the stream.", error);
    return GST_FLOW_ERROR;
  }
  return push (ended_);
}

void
GppFlowOutput::flushed ()
{
  segment_sent_ = false;        /* a new segment (and gap) after the flush */
  if (!meter_)
    return;
  std::vector<GppFlowRecord> open;
  std::string error;
  if (!meter_->flush (open, &error))
    post_error ("Flow metering failed in a flush.", error);
  dropped_ += open.size ();
  publish_counters ();
}

void
GppFlowOutput::publish_counters ()
{
  std::lock_guard<std::mutex> guard (stats_lock_);
  published_enabled_ = enabled_;
  published_ = meter_ ? meter_->counters () : gpp::FlowCounters ();
  published_dropped_ = dropped_;
  table_bytes_ = meter_ ? meter_->table_bytes () : 0;
  published_on_device_ = on_device ();
}

void
GppFlowOutput::add_stats (GstStructure * stats)
{
  std::lock_guard<std::mutex> guard (stats_lock_);
  if (!published_enabled_)
    return;
  gst_structure_set (stats,
      "flows-active", G_TYPE_UINT64, (guint64) published_.active_flows,
      "flows-created", G_TYPE_UINT64, (guint64) published_.flows_created,
      "flows-ended", G_TYPE_UINT64, (guint64) published_.flows_ended,
      "flows-evicted", G_TYPE_UINT64, (guint64) published_.flows_evicted,
      "flows-dropped", G_TYPE_UINT64, published_dropped_,
      "flow-packets-untracked", G_TYPE_UINT64, (guint64) published_.packets_untracked,
      "flow-packets-not-ip", G_TYPE_UINT64, (guint64) published_.packets_not_ip,
      "flow-table-bytes", G_TYPE_UINT64, table_bytes_,
      "flow-table-on-gpu", G_TYPE_BOOLEAN, (gboolean) published_on_device_, NULL);
}
