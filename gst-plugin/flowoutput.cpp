#include "flowoutput.h"

void
GppFlowOutput::start (const gpp::FlowSettings & settings)
{
  meter_.reset (new gpp::FlowMeter (settings));
  segment_sent_ = false;
  dropped_ = 0;
  publish_counters ();
}

void
GppFlowOutput::stop ()
{
  meter_.reset ();
  publish_counters ();
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
  GstCaps *caps = gst_caps_new_simple (GPP_FLOW_CAPS_NAME, "record-size", G_TYPE_INT,
      (int) sizeof (GppFlowRecord), NULL);
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
GppFlowOutput::add (const GppResult * records, uint32_t count)
{
  if (!meter_)
    return GST_FLOW_OK;
  meter_->add (records, count);
  meter_->sweep (ended_);
  return push (ended_);
}

GstFlowReturn
GppFlowOutput::finish ()
{
  if (!meter_)
    return GST_FLOW_OK;
  meter_->flush (ended_);
  return push (ended_);
}

void
GppFlowOutput::flushed ()
{
  if (!meter_)
    return;
  std::vector<GppFlowRecord> open;
  meter_->flush (open);
  dropped_ += open.size ();
  segment_sent_ = false;
  publish_counters ();
}

void
GppFlowOutput::publish_counters ()
{
  std::lock_guard<std::mutex> guard (stats_lock_);
  published_enabled_ = meter_ != nullptr;
  published_ = meter_ ? meter_->counters () : gpp::FlowCounters ();
  published_dropped_ = dropped_;
  table_bytes_ = meter_ ? meter_->table_bytes () : 0;
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
      "flow-table-bytes", G_TYPE_UINT64, table_bytes_, NULL);
}
