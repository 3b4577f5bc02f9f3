#include "procsettings.h"

#include "engine.h"
#include "sharded_engine.h"

gchar *
device_ids_from_text (const gchar * text, std::vector<int> *ids)
{
  ids->clear ();
  if (!text || !*text)
    return NULL;
  if (g_strcmp0 (text, "all") == 0) {
    const int count = gpp::gpu_device_count ();
    if (count == 0)
      return g_strdup ("device-ids=all: no CUDA device is usable here");
    for (int d = 0; d < count; d++)
      ids->push_back (d);
    return NULL;
  }
  gchar **parts = g_strsplit (text, ",", -1);
  gchar *error = NULL;
  for (gchar ** p = parts; *p && !error; p++) {
    gchar *item = g_strstrip (*p);
    gchar *end = NULL;
    const gint64 id = g_ascii_strtoll (item, &end, 10);
    if (!*item || *end || id < 0 || id > G_MAXINT)
      error = g_strdup_printf ("device-ids \"%s\": \"%s\" is not a device number (write "
          "numbers separated by commas, or all)", text, item);
    else
      ids->push_back ((int) id);
  }
  g_strfreev (parts);
  if (!error && ids->size () > gpp::kMaxShards)
    error = g_strdup_printf ("device-ids \"%s\": at most %u devices", text, gpp::kMaxShards);
  if (error)
    ids->clear ();
  return error;
}

gchar *
rss_key_to_text (const uint8_t * key)
{
  GString *s = g_string_sized_new (2 * gpp::kRssKeySize);
  for (int i = 0; i < gpp::kRssKeySize; i++)
    g_string_append_printf (s, "%02x", key[i]);
  return g_string_free (s, FALSE);
}

gchar *
rss_key_from_text (const gchar * text, uint8_t * key)
{
  int n = 0;
  const gchar *p = text;

  while (*p) {
    if (*p == ':' || *p == '-' || *p == ' ') {
      p++;
      continue;
    }
    if (!g_ascii_isxdigit (p[0]) || !g_ascii_isxdigit (p[1]))
      return g_strdup_printf ("rss-key \"%s\": expected hex digit pairs at \"%s\"",
          text, p);
    if (n == gpp::kRssKeySize)
      return g_strdup_printf ("rss-key \"%s\": longer than %d bytes", text,
          gpp::kRssKeySize);
    key[n++] = (uint8_t) (g_ascii_xdigit_value (p[0]) * 16 + g_ascii_xdigit_value (p[1]));
    p += 2;
  }
  if (n != gpp::kRssKeySize)
    return g_strdup_printf ("rss-key \"%s\": %d bytes, a Toeplitz key needs %d",
        text, n, gpp::kRssKeySize);
  return NULL;
}

