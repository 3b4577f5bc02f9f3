#pragma once

#include <gst/base/gstpushsrc.h>
#include <gst/gst.h>

G_BEGIN_DECLS

/* Values match gpp::TrafficProfile (gpu/traffic_gen.h). */
typedef enum
{
  GST_PACKET_TEST_SRC_PROFILE_64 = 0,
  GST_PACKET_TEST_SRC_PROFILE_1500 = 1,
  GST_PACKET_TEST_SRC_PROFILE_IMIX = 2,
  GST_PACKET_TEST_SRC_PROFILE_MIX = 3,
} GstPacketTestSrcProfile;

#define GST_TYPE_PACKET_TEST_SRC_PROFILE (gst_packet_test_src_profile_get_type ())
GType gst_packet_test_src_profile_get_type (void);

#define GST_TYPE_PACKET_TEST_SRC (gst_packet_test_src_get_type ())
G_DECLARE_FINAL_TYPE (GstPacketTestSrc, gst_packet_test_src, GST, PACKET_TEST_SRC, GstPushSrc)

GST_ELEMENT_REGISTER_DECLARE (packettestsrc);

G_END_DECLS
