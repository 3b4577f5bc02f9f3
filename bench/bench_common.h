// Pieces of gpupacket-bench that know no CUDA: clocks and percentiles, the
// report (stdout tables, report.md, report.csv) and the
// watchdog that turns any hang into a clear message and an exit.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "spin_lock.h"

namespace gppbench {

// ---- time ------------------------------------------------------------------

inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

using gpp::cpu_relax;

// Percentiles by nearest rank, as the element's `stats` property computes them.
struct LatencyStats {
  size_t n = 0;
  double min = 0, p50 = 0, p99 = 0, p999 = 0, max = 0, mean = 0; // ns
};
LatencyStats summarize(std::vector<uint64_t> samples_ns);
double median(std::vector<double> v);

// ---- formatting ----------------------------------------------------------------

std::string fmt(double v, int decimals);
std::string fmt_us(double ns);          // "12.34" (microseconds)
std::string fmt_bytes(uint64_t bytes);  // "64 KiB", "6.3 MB" ...
std::string csv_escape(const std::string &s);
std::string now_utc_text();             // "2026-12-06 06:13:27 UTC": a report's date

// ---- the report ----------------------------------------------------------------

struct Table {
  std::string id;    // short name, used in report.csv's section column
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;
};

// One measured figure in report.csv.
struct CsvRow {
  std::string section, item, mode;
  std::string profile, workload; // grid dimensions ("" where they do not apply)
  uint32_t batch_packets = 0, packet_bytes = 0;
  std::string metric;
  double value = 0;
  std::string unit;
  std::string target, status, note;
};

// Collects everything the run measured; thread-safe, so the watchdog can
// write what there is when a phase hangs.
class Report {
public:
  void add_meta(const std::string &key, const std::string &value);
  // Adds the table and prints it to stdout.
  void add_table(const Table &table);
  void add_csv(const CsvRow &row);
  void add_error(const std::string &what);
  size_t errors() const;
  // Writes DIR/report.md and DIR/report.csv; `status` is a closing line
  // ("complete", "ABORTED: ...").  Returns false with a message on failure.
  bool write(const std::string &dir, const std::string &status, std::string *error);
  // Like write() but gives up after `wait_ms` if another thread holds the report.
  bool try_write(const std::string &dir, const std::string &status, int wait_ms,
                 std::string *error);

  static std::string render_text(const Table &table);
  static std::string render_markdown(const Table &table);

private:
  bool write_locked(const std::string &dir, const std::string &status, std::string *error);

  mutable std::timed_mutex mutex_;
  std::vector<std::pair<std::string, std::string>> meta_;
  std::vector<Table> tables_;
  std::vector<CsvRow> csv_;
  std::vector<std::string> errors_;
};

// ---- the watchdog ------------------------------------------------------------------

// Every phase of the run gets a time budget.  GPU waits inside the engine
// (Engine::wait_oldest, the persistent engine's destructor) cannot be
// bounded from outside, so a thread watches the clock: when a phase overruns,
// it calls `on_expire` (which writes what the report has) and ends the process
// with exit code kWatchdogExit.
class Watchdog {
public:
  static constexpr int kWatchdogExit = 3;

  explicit Watchdog(std::function<void(const std::string &message)> on_expire);
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

  void arm(const std::string &phase, double seconds);
  void disarm();

private:
  void loop();

  std::function<void(const std::string &)> on_expire_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string phase_;
  double budget_s_ = 0;
  uint64_t deadline_ns_ = 0; // 0 = disarmed
  bool stop_ = false;
  std::thread thread_;
};

} // namespace gppbench
