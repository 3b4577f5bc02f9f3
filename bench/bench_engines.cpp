#include "bench_engines.h"

#include "cpu_engine.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace gppbench {

namespace {

// --cpu-only: plain aligned heap memory standing in for the pinned arena
// (a bump allocator; release() is a no-op, the bench frees nothing early).
class HeapArena final : public gpp::HostArena {
public:
  explicit HeapArena(size_t bytes)
      : base_(static_cast<uint8_t *>(std::aligned_alloc(kAlign, gpp_align_up(bytes, kAlign)))),
        capacity_(base_ ? gpp_align_up(bytes, kAlign) : 0) {}
  ~HeapArena() override { std::free(base_); }
  void *allocate(size_t bytes) override {
    bytes = gpp_align_up(std::max<size_t>(bytes, 1), kAlign);
    if (used_ + bytes > capacity_) return nullptr;
    void *p = base_ + used_;
    used_ += bytes;
    return p;
  }
  void release(void *) override {}
  bool contains(const void *p) const override { return p >= base_ && p < base_ + capacity_; }
  size_t capacity() const override { return capacity_; }
  size_t in_use() const override { return used_; }

private:
  uint8_t *base_;
  size_t capacity_;
  size_t used_ = 0;
};

// Any mode: gpp::make_engine's engines, the element's.
class EngineRunner final : public Runner {
public:
  explicit EngineRunner(std::unique_ptr<gpp::Engine> e)
      : engine_(std::move(e)), timing_(gpp::device_timing(*engine_)) {}
  unsigned slots() const override { return engine_->slots(); }
  bool submit(const Batch &b, const gpp::CoreConfig &cfg, GppResult *results,
              std::string *error) override {
    return engine_->submit(b.data, b.bytes, b.count, cfg, results, error);
  }
  bool wait_oldest(std::string *error) override { return engine_->wait_oldest(error); }
  uint32_t last_device_ns() const override { return timing_ ? timing_->last_device_ns() : 0; }
  gpp::DevicePhases last_device_phases() const override {
    return timing_ ? timing_->last_device_phases() : gpp::DevicePhases{};
  }
  bool writes_records() const override { return engine_->writes_records(); }

private:
  std::unique_ptr<gpp::Engine> engine_;
  const gpp::DeviceTiming *timing_; // nullptr: the engine keeps none
};

bool same_results(const GppResult *out, const std::vector<GppResult> &ref, uint32_t count) {
  return ref.size() == count && std::memcmp(out, ref.data(), count * sizeof(GppResult)) == 0;
}

} // namespace

std::unique_ptr<gpp::HostArena> make_arena(bool cpu_only, int device, size_t bytes,
                                           std::string *error) {
  if (!cpu_only) return gpp::make_host_arena(device, bytes, gpp::HostMemoryKind::Default, error);
  auto arena = std::make_unique<HeapArena>(bytes);
  if (!arena->capacity()) {
    *error = "out of memory";
    return nullptr;
  }
  return arena;
}

std::vector<EngineSpec> engine_specs(bool cpu_only) {
  std::vector<EngineSpec> specs;
  for (const gpp::ModeInfo &m : gpp::kModes) {
    if (m.mode == gpp::Mode::Cpu) {
      specs.push_back({std::string(m.name) + "-1", m.mode, 1, 0});
      specs.push_back({std::string(m.name) + "-all", m.mode, 0, 0});
    } else if (!cpu_only) {
      specs.push_back({m.name, m.mode, 0, 0});
      if (m.mode == gpp::Mode::Persistent) specs.push_back({std::string(m.name) + "-1blk", m.mode, 0, 1});
    }
  }
  return specs;
}

void print_modes(FILE *f) {
  for (const gpp::ModeInfo &m : gpp::kModes) std::fprintf(f, "%s\n", m.name);
}

std::unique_ptr<Runner> make_runner(const EngineSpec &spec, int device, unsigned num_streams,
                                    bool records, std::string *error) {
  gpp::EngineSettings s;
  s.cpu_threads = spec.cpu_threads;
  s.device_id = device;
  s.num_streams = num_streams;
  s.persistent_blocks = spec.persistent_blocks;
  s.wait = gpp::WaitStrategy::Spin;
  s.records_to_host = records;
  auto engine = gpp::make_engine(spec.mode, s, error);
  if (!engine) return nullptr;
  return std::make_unique<EngineRunner>(std::move(engine));
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

LatencyResult run_latency(Runner &r, const Ring &ring, const std::vector<GppResult *> &results,
                          unsigned warmup, unsigned iters, unsigned min_samples,
                          double max_seconds) {
  LatencyResult out;
  constexpr size_t kPhases = std::tuple_size<gpp::DevicePhases>::value;
  std::vector<uint64_t> samples, device_samples, phase_samples[kPhases];
  samples.reserve(iters);
  const uint64_t stop_at = now_ns() + static_cast<uint64_t>((max_seconds) * 1e9);
  for (unsigned i = 0; i < warmup + iters; ++i) {
    const size_t which = i % ring.batches.size();
    GppResult *res = results[i % results.size()];
    const uint64_t t0 = now_ns();
    if (!r.submit(ring.batches[which], ring.cfg, res, &out.error) || !r.wait_oldest(&out.error))
      break;
    const uint64_t t1 = now_ns();
    if (r.writes_records()) {
      ++out.parity_checked;
      if (!same_results(res, ring.reference[which], ring.count)) ++out.parity_failed;
    }
    if (i < warmup) continue;
    samples.push_back(t1 - t0);
    if (const uint32_t device_ns = r.last_device_ns()) {
      device_samples.push_back(device_ns);
      const auto phases = r.last_device_phases();
      for (size_t k = 0; k < kPhases; ++k) phase_samples[k].push_back(phases[k]);
    }
    if (samples.size() >= min_samples && t1 > stop_at) break;
  }
  out.stats = summarize(std::move(samples));
  out.device = summarize(std::move(device_samples));
  for (size_t k = 0; k < kPhases; ++k) out.phases[k] = summarize(std::move(phase_samples[k]));
  return out;
}

ThroughputResult run_throughput(Runner &r, const Ring &ring,
                                const std::vector<GppResult *> &results, double seconds) {
  ThroughputResult t;
  const unsigned slots = std::max(1u, std::min<unsigned>(r.slots(), static_cast<unsigned>(results.size())));
  const size_t n = ring.batches.size();
  uint64_t submitted = 0, completed = 0;
  auto submit_next = [&]() {
    if (!r.submit(ring.batches[submitted % n], ring.cfg, results[submitted % slots], &t.error))
      return false;
    ++submitted;
    return true;
  };
  for (unsigned i = 0; i < 2 * slots; ++i)
    if (!submit_next() || !r.wait_oldest(&t.error)) return t;
  submitted = 0;
  const uint64_t t0 = now_ns();
  const double cpu0 = process_cpu_seconds();
  const uint64_t end = t0 + static_cast<uint64_t>(seconds * 1e9);
  bool submitting = true;
  for (;;) {
    while (submitting && submitted - completed < slots) {
      if (!submit_next()) {
        submitting = false;
        break;
      }
    }
    if (submitted == completed) break;
    if (!r.wait_oldest(&t.error)) break;
    const Batch &b = ring.batches[completed % n];
    ++completed;
    t.packets += b.count;
    t.batch_bytes += b.bytes;
    t.wire_bytes += b.wire_bytes;
    if (submitting && now_ns() >= end) submitting = false;
  }
  t.seconds = (now_ns() - t0) / 1e9;
  t.cpu_seconds = process_cpu_seconds() - cpu0;
  t.batches = completed;
  if (t.error.empty() && completed == submitted && r.writes_records()) {
    // Each slot holds the results of the last batch submitted into it.
    for (uint64_t i = submitted > slots ? submitted - slots : 0; i < submitted; ++i) {
      ++t.parity_checked;
      if (!same_results(results[i % slots], ring.reference[i % n], ring.count)) ++t.parity_failed;
    }
  }
  return t;
}

ThroughputResult run_cpu_parallel(const Ring &ring, unsigned threads, double seconds) {
  ThroughputResult t;
  std::atomic<bool> go{false}, stop{false};
  std::vector<uint64_t> done(threads, 0);
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < threads; ++k) {
    pool.emplace_back([&, k] {
      std::vector<GppResult> out(ring.count);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      uint64_t n = 0;
      // At least one batch each, so short budgets still measure something.
      for (size_t i = k; n == 0 || !stop.load(std::memory_order_relaxed); ++i, ++n) {
        const Batch &b = ring.batches[i % ring.batches.size()];
        gpp::process_batch_range(b.data, ring.cfg, out.data(), 0, b.count);
      }
      done[k] = n;
    });
  }
  const uint64_t t0 = now_ns();
  const double cpu0 = process_cpu_seconds();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto &th : pool) th.join();
  t.seconds = (now_ns() - t0) / 1e9;
  t.cpu_seconds = process_cpu_seconds() - cpu0;
  for (unsigned k = 0; k < threads; ++k) {
    t.batches += done[k];
    for (uint64_t i = 0; i < done[k]; ++i) {
      const Batch &b = ring.batches[(k + i) % ring.batches.size()];
      t.packets += b.count;
      t.batch_bytes += b.bytes;
      t.wire_bytes += b.wire_bytes;
    }
  }
  return t;
}

} // namespace gppbench
