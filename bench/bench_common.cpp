#include "bench_common.h"

#include <ctime>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>


namespace gppbench {

// ---- statistics -----------------------------------------------------------------

LatencyStats summarize(std::vector<uint64_t> samples) {
  LatencyStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  auto rank = [&](double p) {
    size_t r = static_cast<size_t>(p / 100.0 * static_cast<double>(samples.size()) + 0.999999);
    r = std::min(std::max<size_t>(r, 1), samples.size());
    return static_cast<double>(samples[r - 1]);
  };
  s.n = samples.size();
  s.min = static_cast<double>(samples.front());
  s.max = static_cast<double>(samples.back());
  s.p50 = rank(50);
  s.p99 = rank(99);
  s.p999 = rank(99.9);
  long double sum = 0;
  for (uint64_t v : samples) sum += v;
  s.mean = static_cast<double>(sum / samples.size());
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// ---- formatting ---------------------------------------------------------------------

std::string fmt(double v, int decimals) {
  if (std::isnan(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string fmt_us(double ns) {
  const double us = ns / 1000.0;
  return fmt(us, us < 10 ? 2 : us < 1000 ? 1 : 0);
}

std::string fmt_bytes(uint64_t b) {
  char buf[64];
  if (b >= (1ull << 20) && b % (1ull << 20) == 0)
    std::snprintf(buf, sizeof buf, "%llu MiB", static_cast<unsigned long long>(b >> 20));
  else if (b >= (1ull << 10) && b % (1ull << 10) == 0)
    std::snprintf(buf, sizeof buf, "%llu KiB", static_cast<unsigned long long>(b >> 10));
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

std::string now_utc_text() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string csv_escape(const std::string &s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// ---- report ---------------------------------------------------------------------------

void Report::add_meta(const std::string &key, const std::string &value) {
  std::lock_guard<std::timed_mutex> lock(mutex_);
  meta_.emplace_back(key, value);
}

void Report::add_table(const Table &table) {
  {
    std::lock_guard<std::timed_mutex> lock(mutex_);
    tables_.push_back(table);
  }
  std::cout << "\n" << render_text(table) << std::flush;
}

void Report::add_csv(const CsvRow &row) {
  std::lock_guard<std::timed_mutex> lock(mutex_);
  csv_.push_back(row);
}

void Report::add_error(const std::string &what) {
  {
    std::lock_guard<std::timed_mutex> lock(mutex_);
    errors_.push_back(what);
  }
  std::cerr << "gpupacket-bench: ERROR: " << what << std::endl;
}

size_t Report::errors() const {
  std::lock_guard<std::timed_mutex> lock(mutex_);
  return errors_.size();
}

std::string Report::render_text(const Table &t) {
  std::vector<size_t> width(t.header.size(), 0);
  for (size_t c = 0; c < t.header.size(); ++c) width[c] = t.header[c].size();
  for (const auto &row : t.rows)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  std::ostringstream os;
  os << "== " << t.title << " ==\n";
  auto line = [&](const std::vector<std::string> &cells) {
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      os << (c ? "  " : "") << cell << std::string(width[c] - std::min(width[c], cell.size()), ' ');
    }
    os << "\n";
  };
  line(t.header);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  os << std::string(total > 2 ? total - 2 : 0, '-') << "\n";
  for (const auto &row : t.rows) line(row);
  for (const auto &n : t.notes) os << "  * " << n << "\n";
  return os.str();
}

std::string Report::render_markdown(const Table &t) {
  std::ostringstream os;
  os << "## " << t.title << "\n\n|";
  for (const auto &h : t.header) os << " " << h << " |";
  os << "\n|";
  for (size_t c = 0; c < t.header.size(); ++c) os << "---|";
  os << "\n";
  for (const auto &row : t.rows) {
    os << "|";
    for (size_t c = 0; c < t.header.size(); ++c) os << " " << (c < row.size() ? row[c] : "") << " |";
    os << "\n";
  }
  if (!t.notes.empty()) {
    os << "\n";
    for (const auto &n : t.notes) os << "- " << n << "\n";
  }
  os << "\n";
  return os.str();
}

bool Report::write(const std::string &dir, const std::string &status, std::string *error) {
  std::lock_guard<std::timed_mutex> lock(mutex_);
  return write_locked(dir, status, error);
}

bool Report::try_write(const std::string &dir, const std::string &status, int wait_ms,
                       std::string *error) {
  std::unique_lock<std::timed_mutex> lock(mutex_, std::defer_lock);
  if (!lock.try_lock_for(std::chrono::milliseconds(wait_ms))) {
    *error = "the report was busy";
    return false;
  }
  return write_locked(dir, status, error);
}

bool Report::write_locked(const std::string &dir, const std::string &status, std::string *error) {
  if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    *error = "cannot create " + dir + ": " + std::strerror(errno);
    return false;
  }
  const std::string md_path = dir + "/report.md", csv_path = dir + "/report.csv";
  {
    std::ofstream md(md_path);
    md << "# gpupacket-bench report\n\n";
    for (const auto &kv : meta_) md << "- **" << kv.first << "**: " << kv.second << "\n";
    md << "- **status**: " << status << "\n\n";
    for (const auto &t : tables_) md << render_markdown(t);
    if (!errors_.empty()) {
      md << "## Errors\n\n";
      for (const auto &e : errors_) md << "- " << e << "\n";
      md << "\n";
    }
    if (!md) {
      *error = "cannot write " + md_path;
      return false;
    }
  }
  std::ofstream csv(csv_path);
  csv << "section,item,mode,profile,workload,batch_packets,packet_bytes,metric,value,unit,target,"
         "status,note\n";
  for (const auto &r : csv_) {
    char value[64];
    std::snprintf(value, sizeof value, "%.6g", r.value);
    csv << csv_escape(r.section) << ',' << csv_escape(r.item) << ',' << csv_escape(r.mode) << ','
        << csv_escape(r.profile) << ',' << csv_escape(r.workload) << ',' << r.batch_packets << ',' << r.packet_bytes << ',' << csv_escape(r.metric) << ',' << value
        << ',' << csv_escape(r.unit) << ',' << csv_escape(r.target) << ',' << csv_escape(r.status)
        << ',' << csv_escape(r.note) << "\n";
  }
  if (!csv) {
    *error = "cannot write " + csv_path;
    return false;
  }
  return true;
}

// ---- watchdog ----------------------------------------------------------------------------

Watchdog::Watchdog(std::function<void(const std::string &)> on_expire)
    : on_expire_(std::move(on_expire)), thread_(&Watchdog::loop, this) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::arm(const std::string &phase, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  phase_ = phase;
  budget_s_ = seconds;
  deadline_ns_ = now_ns() + static_cast<uint64_t>(seconds * 1e9);
  cv_.notify_all();
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  deadline_ns_ = 0;
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stop_ || deadline_ns_ == 0 || now_ns() < deadline_ns_) continue;
    char msg[512];
    std::snprintf(msg, sizeof msg,
                  "phase \"%s\" overran its %.0f s budget (a GPU wait that never returned?); "
                  "aborting",
                  phase_.c_str(), budget_s_);
    lock.unlock();
    std::fflush(stdout);
    std::fprintf(stderr, "\ngpupacket-bench: WATCHDOG: %s\n", msg);
    if (on_expire_) on_expire_(msg);
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(kWatchdogExit);
  }
}

} // namespace gppbench
