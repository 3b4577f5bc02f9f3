/* Property values an element cannot take now.  Properties flagged
 * GST_PARAM_MUTABLE_READY take effect when the element starts; set later
 * they would leave the element half on the old value and half on the new
 * (pcapsrc's device while reading a file stalled the stream).  Other values
 * are refused while running for a reason of their own (batch-size=0).
 * Every element refuses them the same way: a warning naming the property,
 * the value in use kept.  Before start such a value is kept and start ()
 * fails with an element error, so that gst-launch stops instead of running
 * on a default. */
#pragma once

#include <gst/gst.h>

/* TRUE when @pspec may not change now (the caller returns without setting). */
#define GPP_REFUSE_READY_ONLY(element, pspec) \
  gpp_refuse_ready_only_at (GST_ELEMENT (element), (pspec), __FILE__, GST_FUNCTION, __LINE__)

/* TRUE, with a warning giving @why, when the element runs (the caller
 * returns without setting); FALSE before start. */
#define GPP_REFUSE_VALUE(element, pspec, why) \
  gpp_refuse_while_running_at (GST_ELEMENT (element), (pspec), (why), NULL, __FILE__, \
      GST_FUNCTION, __LINE__)

/* The batch-size rule both sources share: a batch holds at least one packet. */
#define GPP_BATCH_SIZE_ZERO_REASON "a batch needs at least one packet"

static inline gboolean
gpp_refuse_while_running_at (GstElement * element, GParamSpec * pspec, const gchar * why,
    const gchar * hint, const gchar * file, const gchar * function, gint line)
{
  GST_OBJECT_LOCK (element);
  const gboolean started = GST_STATE (element) > GST_STATE_READY ||
      GST_STATE_PENDING (element) > GST_STATE_READY;
  GST_OBJECT_UNLOCK (element);
  if (!started)
    return FALSE;
  gst_element_message_full (element, GST_MESSAGE_WARNING, GST_LIBRARY_ERROR,
      GST_LIBRARY_ERROR_SETTINGS,
      g_strdup_printf ("Ignoring the new value of \"%s\": %s.", pspec->name, why),
      g_strdup (hint), file, function, line);
  return TRUE;
}

static inline gboolean
gpp_refuse_ready_only_at (GstElement * element, GParamSpec * pspec, const gchar * file,
    const gchar * function, gint line)
{
  return (pspec->flags & GST_PARAM_MUTABLE_READY) &&
      gpp_refuse_while_running_at (element, pspec,
      "it can only be set in the NULL or READY state",
      "set it before starting, or stop the pipeline first", file, function, line);
}
