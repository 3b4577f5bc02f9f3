#include "grid.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "batch_builder.h"
#include "cpu_engine.h"

#include "bench_cuda.h"
#include "packet_kernels.h"

namespace gppbench {

namespace {

// Distinct batches per size: many small ones, few of the largest (memory).
unsigned ring_length(const GridOptions &opt, uint32_t size) {
  if (opt.quick) return 2;
  return size <= 1024 ? 8 : size <= 4096 ? 4 : 2;
}

// Runs fn(i) for i in [0, n) on every core.
template <typename Fn> void parallel_for(size_t n, Fn fn) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
    });
  for (auto &th : pool) th.join();
}

} // namespace

bool Grid::build(const RuleSets &sets, const GridOptions &opt, const Phase &phase,
                 std::string *error) {
  opt_ = opt;
  uint32_t max_size = 1;
  for (const Cell &c : opt.cells)
    for (uint32_t n : sizes(c)) max_size = std::max(max_size, n);
  const size_t pool_packets = std::max<size_t>(2 * max_size, 4096);
  // Traffic and batches first (host vectors), once per kind of traffic, then
  // one arena for all.
  std::map<std::pair<std::string, uint32_t>, std::vector<std::vector<uint8_t>>> built;
  size_t arena_bytes = 1u << 20;
  for (const Cell &c : opt.cells) {
    const std::string key = traffic_key(c);
    std::vector<uint32_t> todo;
    for (uint32_t n : sizes(c))
      if (!built.count({key, n})) todo.push_back(n);
    if (todo.empty()) continue;
    phase("B: traffic, " + key, 120);
    const auto frames = cell_traffic(sets, c, pool_packets);
    size_t cursor = 0;
    for (uint32_t n : todo) {
      auto &v = built[{key, n}];
      for (unsigned k = 0; k < ring_length(opt, n); ++k) {
        gpp::BatchBuilder builder;
        builder.reset(GPP_LINKTYPE_ETHERNET);
        for (uint32_t i = 0; i < n; ++i, ++cursor) {
          const auto &f = frames[cursor % frames.size()];
          builder.add(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()),
                      1700000000000000000ull + 1000ull * cursor, cursor + 1);
        }
        v.push_back(builder.finish());
        arena_bytes += gpp_align_up(v.back().size(), gpp::HostArena::kAlign);
      }
    }
  }
  phase("B: arenas", 120);
  inputs_ = make_arena(opt.cpu_only, opt.device, arena_bytes, error);
  const unsigned nres = std::max(8u, opt.streams);
  const size_t per_result = gpp_align_up(max_size * sizeof(GppResult), gpp::HostArena::kAlign);
  if (inputs_) outputs_ = make_arena(opt.cpu_only, opt.device, per_result * nres + (1u << 20), error);
  if (!inputs_ || !outputs_) {
    *error = "arenas: " + *error;
    return false;
  }
  for (unsigned i = 0; i < nres; ++i)
    results_.push_back(static_cast<GppResult *>(outputs_->allocate(per_result)));

  std::map<std::pair<std::string, uint32_t>, std::vector<Batch>> batches;
  for (auto &kv : built) {
    for (auto &bytes : kv.second) {
      char why[256];
      if (!gpp_batch_validate(bytes.data(), bytes.size(), why, sizeof why)) {
        *error = std::string("a synthetic batch is invalid: ") + why;
        return false;
      }
      auto *dst = static_cast<uint8_t *>(inputs_->allocate(bytes.size()));
      if (!dst) {
        *error = "input arena too small";
        return false;
      }
      std::memcpy(dst, bytes.data(), bytes.size());
      Batch b;
      b.data = dst;
      b.bytes = bytes.size();
      b.count = kv.first.second;
      for (uint32_t i = 0; i < b.count; ++i) b.wire_bytes += gpp_batch_descs(dst)[i].wirelen;
      batches[kv.first].push_back(b);
    }
  }
  // References: the CPU core over every batch of every cell, on all cores.
  for (const Cell &c : opt.cells) {
    const Profile &p = *c.profile;
    const Workload &w = *c.workload;
    phase(std::string("B: CPU references, ") + p.name + " " + w.name, 300);
    std::vector<Ring *> rings;
    for (uint32_t n : sizes(c)) {
      Ring &ring = rings_[{p.name, w.name, n}];
      ring.count = n;
      ring.cfg = workload_config(w, sets);
      ring.batches = batches.at({traffic_key(c), n});
      ring.reference.assign(ring.batches.size(), std::vector<GppResult>(n));
      rings.push_back(&ring);
    }
    std::vector<std::pair<Ring *, size_t>> jobs;
    for (Ring *r : rings)
      for (size_t k = 0; k < r->batches.size(); ++k) jobs.push_back({r, k});
    parallel_for(jobs.size(), [&](size_t j) {
      Ring *r = jobs[j].first;
      const size_t k = jobs[j].second;
      gpp::process_batch_range(r->batches[k].data, r->cfg, r->reference[k].data(), 0, r->count);
    });
    // Shares from the largest ring; a catch-all rule (ClassBench files end
    // with one) does not count as a match.
    const AclSet *acl_set = sets.find_acl(w.acl);
    const gpp::AclRuleSet *acl = acl_set ? acl_set->rules.get() : nullptr;
    auto specific = [acl](int32_t rule) {
      if (!acl || rule < 0 || static_cast<size_t>(rule) >= acl->rules.size()) return false;
      return !catch_all(acl->rules[rule]);
    };
    const Ring &big = *rings.back();
    uint64_t packets = 0, matched = 0, hit = 0, hits = 0, wire = 0, payload = 0;
    for (size_t k = 0; k < big.batches.size(); ++k) {
      wire += big.batches[k].wire_bytes;
      for (const GppResult &res : big.reference[k]) {
        ++packets;
        matched += specific(res.acl_rule);
        hit += res.dpi_hits > 0;
        hits += res.dpi_hits;
        payload += res.dpi_scanned ? res.payload_length : 0;
      }
    }
    TrafficShare s;
    if (packets) {
      s.acl_matched = acl ? double(matched) / packets : kNaN;
      s.dpi_hit = w.dpi ? double(hit) / packets : kNaN;
      s.dpi_hits_per_kb = w.dpi && payload ? hits * 1024.0 / payload : kNaN;
      s.mean_wire_bytes = double(wire) / packets;
    }
    shares_[{p.name, w.name}] = s;
  }
  return true;
}

bool Grid::has(const std::string &profile, const std::string &workload) const {
  return shares_.count({profile, workload}) != 0;
}

const Ring *Grid::ring(const std::string &profile, const std::string &workload,
                       uint32_t batch) const {
  auto it = rings_.find({profile, workload, batch});
  return it == rings_.end() ? nullptr : &it->second;
}

std::vector<std::vector<uint8_t>> Grid::batch_bytes(const std::string &profile,
                                                    uint32_t batch) const {
  std::vector<std::vector<uint8_t>> out;
  if (const Ring *r = ring(profile, workloads().front().name, batch))
    for (const Batch &b : r->batches) out.emplace_back(b.data, b.data + b.bytes);
  return out;
}

bool Grid::selected(const std::string &engine) const {
  return opt_.engines.empty() ||
         std::find(opt_.engines.begin(), opt_.engines.end(), engine) != opt_.engines.end();
}

std::vector<EngineSpec> Grid::specs() const {
  std::vector<EngineSpec> out;
  for (const EngineSpec &s : engine_specs(opt_.cpu_only))
    if (selected(s.name)) out.push_back(s);
  return out;
}

std::vector<std::string> Grid::engine_names() const {
  std::vector<std::string> names;
  for (const EngineSpec &s : specs()) names.push_back(s.name);
  return names;
}

std::string Grid::parallel_name() const {
  return "cpu-" + std::to_string(std::max(1u, std::thread::hardware_concurrency())) + "x1";
}

const GridPoint *Grid::point(const std::string &engine, const std::string &profile,
                             const std::string &workload, uint32_t batch) const {
  auto it = points_.find({engine, profile, workload, batch});
  return it == points_.end() ? nullptr : &it->second;
}

double Grid::kernel_us(const std::string &profile, const std::string &workload,
                       uint32_t batch) const {
  auto it = kernel_us_.find({profile, workload, batch});
  return it == kernel_us_.end() ? kNaN : it->second;
}

TrafficShare Grid::share(const std::string &profile, const std::string &workload) const {
  auto it = shares_.find({profile, workload});
  return it == shares_.end() ? TrafficShare{} : it->second;
}

void Grid::measure_kernel_time(const Phase &phase, std::vector<std::string> *errors) {
  if (opt_.cpu_only) return;
  phase("B: kernel time", 120);
  try {
    GPP_CUDA_TRY(cudaSetDevice(opt_.device));
    GPP_CUDA_TRY(gpp::preload_kernels());
    gpp::Stream stream;
    gpp::Event start(cudaEventDefault), stop(cudaEventDefault);
    // Device copies of the rule and pattern blobs, by host address.
    std::map<const uint8_t *, gpp::DeviceMemory> blobs;
    auto device_blob = [&](const uint8_t *host, size_t bytes) -> const uint8_t * {
      if (!host) return nullptr;
      auto it = blobs.find(host);
      if (it == blobs.end()) {
        it = blobs.emplace(host, gpp::DeviceMemory(bytes)).first;
        GPP_CUDA_TRY(cudaMemcpy(it->second.get(), host, bytes, cudaMemcpyHostToDevice));
      }
      return it->second.get<uint8_t>();
    };
    size_t max_batch = 0;
    for (const auto &kv : rings_) max_batch = std::max(max_batch, kv.second.batches[0].bytes);
    gpp::DeviceMemory batch(max_batch), results(opt_.sizes.back() * sizeof(GppResult) + 256);
    for (auto &kv : rings_) {
      const Ring &r = kv.second;
      gpp::CoreConfig cfg = r.cfg;
      if (cfg.acl)
        cfg.acl = device_blob(cfg.acl, reinterpret_cast<const gpp::AclBlobHeader *>(cfg.acl)->total_size);
      if (cfg.dpi)
        cfg.dpi = device_blob(cfg.dpi, reinterpret_cast<const gpp::DpiBlobHeader *>(cfg.dpi)->total_size);
      GPP_CUDA_TRY(cudaMemcpy(batch.get(), r.batches[0].data, r.batches[0].bytes,
                              cudaMemcpyHostToDevice));
      std::vector<double> us;
      const unsigned reps = opt_.quick ? 3 : 15;
      for (unsigned i = 0; i <= reps; ++i) {
        GPP_CUDA_TRY(cudaEventRecord(start.get(), stream.get()));
        GPP_CUDA_TRY(gpp::launch_process_batch(batch.get<uint8_t>(), r.count, cfg,
                                               gpp::acl_tuple_count(r.cfg.acl),
                                               results.get<GppResult>(), stream.get()));
        GPP_CUDA_TRY(cudaEventRecord(stop.get(), stream.get()));
        wait_event_bounded(stop.get(), 30, "process kernel");
        float ms = 0;
        GPP_CUDA_TRY(cudaEventElapsedTime(&ms, start.get(), stop.get()));
        if (i) us.push_back(ms * 1000.0); // the first launch warms up
      }
      kernel_us_[kv.first] = median(us);
    }
  } catch (const std::exception &e) {
    errors->push_back(std::string("B kernel time: ") + e.what());
  }
}

void Grid::run(const Phase &phase, std::vector<std::string> *errors) {
  const double point_budget = opt_.tput_seconds + opt_.latency_seconds + 30;
  for (const EngineSpec &spec : specs()) {
    phase("B: " + spec.name + " start", 60);
    std::string error;
    std::unique_ptr<Runner> r = make_runner(spec, opt_.device, opt_.streams, opt_.records, &error);
    if (!r) {
      engine_errors[spec.name] = error;
      errors->push_back("B " + spec.name + ": " + error);
      continue;
    }
    bool broken = false;
    for (const Cell &c : opt_.cells) {
      const Profile &p = *c.profile;
      const Workload &w = *c.workload;
      // One resident block is a diagnostic of the persistent kernel, not a
      // way to run heavy workloads: the realistic cells leave it out.
      if (spec.persistent_blocks == 1 && w.realistic) continue;
      for (uint32_t n : sizes(c)) {
        if (broken) break;
        const std::string where = spec.name + " " + p.name + " " + w.name + " " +
                                  std::to_string(n);
        phase("B: " + where, point_budget);
        const Ring &ring = rings_.at({p.name, w.name, n});
        GridPoint &pt = points_[{spec.name, p.name, w.name, n}];
        const bool small = n <= 256;
        pt.latency = run_latency(*r, ring, results_, small ? (opt_.quick ? 5 : 20) : 2,
                                 small ? opt_.latency_iters_small : opt_.latency_iters_large,
                                 opt_.min_samples, opt_.latency_seconds);
        pt.has_latency = true;
        if (pt.latency.error.empty())
          pt.throughput = run_throughput(*r, ring, results_, opt_.tput_seconds);
        const std::string &e =
            !pt.latency.error.empty() ? pt.latency.error : pt.throughput.error;
        if (!e.empty()) {
          // An engine error may leave it unusable: the rest of this engine is skipped.
          engine_errors[spec.name] = e;
          errors->push_back("B " + where + ": " + e);
          broken = true;
        }
        if (pt.latency.parity_failed || pt.throughput.parity_failed)
          errors->push_back("B " + where + ": " +
                            std::to_string(pt.latency.parity_failed + pt.throughput.parity_failed) +
                            " batch(es) differ from the CPU reference");
      }
    }
    phase("B: " + spec.name + " teardown", 60);
    r.reset();
  }
  // The host's CPU ceiling: every core on batches of its own.
  if (!selected(kCpuParallelEngine)) return;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (const Cell &c : opt_.cells)
    for (uint32_t n : sizes(c)) {
      const Profile &p = *c.profile;
      const Workload &w = *c.workload;
      phase("B: " + parallel_name() + " " + p.name + " " + w.name + " " + std::to_string(n),
            point_budget);
      GridPoint &pt = points_[{parallel_name(), p.name, w.name, n}];
      pt.throughput = run_cpu_parallel(rings_.at({p.name, w.name, n}), cores, opt_.tput_seconds);
    }
}

} // namespace gppbench
