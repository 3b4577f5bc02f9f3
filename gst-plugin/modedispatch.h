/* gpupacketproc's mode dispatcher: the engine in use (gpp::make_engine), the
 * settings it was made with, and the pinned pools the GPU modes need;
 * deciding when a batch needs another engine, and switching.  The streaming
 * thread switches (after the ordered queue drained) and uses the engine; the
 * stats read it from any thread under the dispatcher's lock.  Errors come
 * back as text for the element to post. */
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "engine.h"
#include "pinnedpools.h"
#include "procstats.h"

class GppModeDispatch
{
public:
  GppPinnedPools pools;

  /* The engine in use, or nullptr (before the first batch, after a failed
   * switch or idle).  Streaming threads only. */
  gpp::Engine *engine () const { return engine_.get (); }
  /* Whether a batch in `mode` with `settings` needs another engine than the
   * one in use (only the settings that mode reads count). */
  bool needs_switch (gpp::Mode mode, const gpp::EngineSettings & settings) const;
  /* Replaces the engine by one for `mode`; FALSE with why it could not be
   * made (none is then in use).  The old engine's copy traffic goes to
   * `stats`. */
  bool switch_to (gpp::Mode mode, const gpp::EngineSettings & settings, GppProcStats & stats,
      std::string * error);
  /* Idles the engine in use (gpp::Engine::idle: a persistent kernel stops,
   * its memory stays for the next batch); FALSE with why if it could not,
   * and the engine is then released. */
  bool idle (GppProcStats & stats, std::string * error);
  /* Destroys the engine in use (persistent: stops its kernel). */
  void release (GppProcStats & stats);
  /* The stats with the engine's share in `live`, from any thread: under
   * the lock release() adds a destroyed engine's figures to `stats` under,
   * so each engine counts once, live or retired. */
  GstStructure *make_stats (GppLiveFigures & live, GppProcStats & stats);

private:
  std::mutex lock_;             /* engine_ where it is replaced vs. make_stats */
  std::unique_ptr<gpp::Engine> engine_;
  gpp::EngineSettings settings_;  /* engine_ was made with */
};
