/* gpupacketproc's property texts: the rss-key and device-ids forms users
 * write, parsed and printed.  Each parser returns NULL on success or a
 * newly allocated message saying what is wrong. */
#pragma once

#include <glib.h>

#include <cstdint>
#include <vector>

/* device-ids: "" (device-id alone), "all" (every CUDA device), or device
 * numbers separated by commas ("0,1"; a device may repeat: "0,0" runs two
 * shards on one GPU). */
gchar *device_ids_from_text (const gchar * text, std::vector<int> *ids);
/* The key as 80 hex digits, the form the rss-key property shows. */
gchar *rss_key_to_text (const uint8_t * key);
/* 40 bytes of hex, ':', '-' and space allowed between digit pairs (the
 * forms ethtool -x and driver docs print). */
gchar *rss_key_from_text (const gchar * text, uint8_t * key);
