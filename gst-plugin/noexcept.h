/* No C++ exception may unwind through a GLib or GStreamer frame: that C
 * code cannot clean up, and the process aborts (or worse).  Each vfunc that
 * reaches code which can throw (allocation, rule loading, engine creation,
 * batch building) runs its body through gpp_no_throw: an exception becomes
 * one element error naming where it happened and why, and the vfunc returns
 * its failure value. */
#pragma once

#include <gst/gst.h>

#include <exception>

template <typename Result, typename Body>
static inline Result
gpp_no_throw (GstElement * element, const char *where, Result failed, Body && body)
{
  try {
    return body ();
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (element, CORE, FAILED, ("Internal failure in %s: %s.", where, e.what ()),
        (NULL));
  } catch (...) {
    GST_ELEMENT_ERROR (element, CORE, FAILED, ("Internal failure in %s.", where), (NULL));
  }
  return failed;
}
