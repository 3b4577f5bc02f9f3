#include "modedispatch.h"

#include <exception>

bool
GppModeDispatch::needs_switch (gpp::Mode mode, const gpp::EngineSettings & settings) const
{
  return !engine_ || engine_->mode () != mode ||
      !gpp::same_engine_settings (mode, settings, settings_);
}

void
GppModeDispatch::release (GppProcStats & stats)
{
  std::unique_ptr<gpp::Engine> old;
  {
    /* Its figures move to the stats in the same step as it leaves: a stats
     * read sees them once, live or retired. */
    std::lock_guard<std::mutex> guard (lock_);
    if (engine_) {
      const gpp::GpuCounters c = engine_->counters ();
      stats.add_engine_traffic (c.bytes_h2d, c.bytes_d2h, gpp::shard_figures (*engine_));
    }
    old = std::move (engine_);
  }
  /* Destroyed outside the lock (persistent: waits for its kernel). */
}

bool
GppModeDispatch::idle (GppProcStats & stats, std::string * error)
{
  if (!engine_ || engine_->idle (error))
    return true;
  release (stats);
  return false;
}

bool
GppModeDispatch::switch_to (gpp::Mode mode, const gpp::EngineSettings & settings,
    GppProcStats & stats, std::string * error)
{
  release (stats);
  if (gpp::is_gpu_mode (mode) && !pools.input ()) {
    *error = std::string ("mode=") + gpp::mode_name (mode) + " needs a CUDA GPU and its pinned "
        "memory pool, which are not available: " + pools.no_pool_reason ();
    return false;
  }
  std::string why;
  std::unique_ptr<gpp::Engine> engine;
  try {
    engine = gpp::make_engine (mode, settings, &why);
  } catch (const std::exception & e) {
    /* An allocation that throws: the same failure as one reported. */
    why = e.what ();
  } catch (...) {
    why = "an unknown exception";
  }
  if (!engine) {
    std::string devices = std::to_string (settings.device_id);
    if (!settings.device_ids.empty ()) {
      devices.clear ();
      for (int d : settings.device_ids)
        devices += (devices.empty () ? "" : ",") + std::to_string (d);
    }
    *error = std::string ("Could not start mode=") + gpp::mode_name (mode) + " on CUDA device" +
        (settings.device_ids.empty () ? " " : "s ") + devices + ": " + why;
    return false;
  }
  std::lock_guard<std::mutex> guard (lock_);
  engine_ = std::move (engine);
  settings_ = settings;
  return true;
}

GstStructure *
GppModeDispatch::make_stats (GppLiveFigures & live, GppProcStats & stats)
{
  live.pool_pinned = pools.pinned_bytes ();
  live.pool_fallbacks = pools.fallbacks ();
  live.pool_in_use = pools.in_use ();
  std::lock_guard<std::mutex> guard (lock_);
  live.active_mode = engine_ ? gpp::mode_name (engine_->mode ()) : "none";
  if (engine_) {
    const gpp::GpuCounters c = engine_->counters ();
    live.engine_h2d = c.bytes_h2d;
    live.engine_d2h = c.bytes_d2h;
    live.shards = gpp::shard_figures (*engine_);
  }
  return stats.to_structure (live);
}
