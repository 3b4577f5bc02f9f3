/* Properties flagged GST_PARAM_MUTABLE_READY take effect when the element
 * starts; set later they would leave the element half on the old value and
 * half on the new (pcapsrc's device while reading a file stalled the stream).
 * Every element refuses them the same way: a warning naming the property,
 * the value in use kept. */
#pragma once

#include <gst/gst.h>

/* TRUE when @pspec may not change now (the caller returns without setting). */
#define GPP_REFUSE_READY_ONLY(element, pspec) \
  gpp_refuse_ready_only_at (GST_ELEMENT (element), (pspec), __FILE__, GST_FUNCTION, __LINE__)

static inline gboolean
gpp_refuse_ready_only_at (GstElement * element, GParamSpec * pspec, const gchar * file,
    const gchar * function, gint line)
{
  if (!(pspec->flags & GST_PARAM_MUTABLE_READY))
    return FALSE;
  GST_OBJECT_LOCK (element);
  const gboolean started = GST_STATE (element) > GST_STATE_READY ||
      GST_STATE_PENDING (element) > GST_STATE_READY;
  GST_OBJECT_UNLOCK (element);
  if (!started)
    return FALSE;
  gst_element_message_full (element, GST_MESSAGE_WARNING, GST_LIBRARY_ERROR,
      GST_LIBRARY_ERROR_SETTINGS,
      g_strdup_printf ("Ignoring the new value of \"%s\": it can only be set in the NULL or "
          "READY state.", pspec->name),
      g_strdup ("set it before starting, or stop the pipeline first"), file, function, line);
  return TRUE;
}
