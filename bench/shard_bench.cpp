// gpupacket-shard-bench: several GPUs against one, side by side in one run.
//
//   gpupacket-shard-bench [--devices LIST] [--seconds S] [--quick] [--report FILE.md]
//
// For each GPU mode and each packet profile (64-byte, IMIX, 1500-byte
// frames of 16,384 flows, 4096-packet batches in pinned memory): engine
// throughput on the first device alone, then sharded over LIST (gpupacket's
// device-ids; default every CUDA device, and "0,0" on a one-GPU machine,
// which measures the sharding's cost rather than a second device), the
// scaling factor (the goal: >= 1.8x where one GPU is not held by
// PCIe), and the host's share of the sharded run: microseconds per batch
// splitting (the hash of every packet, each share copied into its device's
// buffer) and merging, with the packet rate that cost alone would allow.
// Medians of three alternating runs; records checked against mode=cpu
// first.  A second table gives the host's part alone: the sharded engine
// over engines that finish every share at once (no device), split and merge
// per batch.  Exit 77 where no GPU is usable.  Linked with the simulated GPU
// (shard-bench-sim) it checks itself anywhere (GPP_SIM_DEVICES=2).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gpupacket/packet-batch.h>
#include <gpupacket/packet-result.h>

#include "batch_builder.h"
#include "cpu_engine.h"
#include "bench_common.h"
#include "engine.h"
#include "packet_core.h"
#include "sharded_engine.h"
#include "traffic_gen.h"

namespace {

using gppbench::now_ns;

constexpr uint32_t kBatch = 4096;

struct Ring {
  std::unique_ptr<gpp::HostArena> arena;
  std::vector<const uint8_t *> batches;
  std::vector<size_t> sizes;
  std::vector<uint32_t> counts;
};

bool build_ring(gpp::TrafficProfile profile, unsigned batches, int device, Ring &ring,
                std::string *error) {
  gpp::TrafficSpec spec;
  spec.profile = profile;
  spec.flows = 16384;
  spec.seed = 11;
  gpp::TrafficGenerator gen(spec);
  std::vector<std::vector<uint8_t>> built;
  size_t total = 0;
  uint64_t number = 1;
  for (unsigned b = 0; b < batches; ++b) {
    gpp::BatchBuilder bb;
    bb.reset(GPP_LINKTYPE_ETHERNET);
    for (uint32_t i = 0; i < kBatch; ++i, ++number) {
      const std::vector<uint8_t> &f = gen.next();
      bb.add(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()),
             number * 1000, number);
    }
    built.push_back(bb.finish());
    total += built.back().size() + 4096;
  }
  ring.arena = gpp::make_host_arena(device, total, gpp::HostMemoryKind::Default, error);
  if (!ring.arena) return false;
  for (const auto &b : built) {
    auto *dst = static_cast<uint8_t *>(ring.arena->allocate(b.size()));
    std::memcpy(dst, b.data(), b.size());
    ring.batches.push_back(dst);
    ring.sizes.push_back(b.size());
    ring.counts.push_back(kBatch);
  }
  return true;
}

gpp::CoreConfig config() {
  gpp::CoreConfig cfg{};
  std::memcpy(cfg.rss_key, gpp::kDefaultRssKey, sizeof cfg.rss_key);
  return cfg;
}

struct Rig {
  std::unique_ptr<gpp::HostArena> results_arena;
  std::vector<GppResult *> results;
  std::unique_ptr<gpp::Engine> engine; // last: goes first
};

// Pinned results for each of the rig's engine's slots.
bool add_results(Rig &rig, int device, std::string *error) {
  const unsigned slots = rig.engine->slots();
  rig.results_arena = gpp::make_host_arena(device, slots * (kBatch * sizeof(GppResult) + 4096),
                                           gpp::HostMemoryKind::Default, error);
  if (!rig.results_arena) return false;
  for (unsigned k = 0; k < slots; ++k)
    rig.results.push_back(
        static_cast<GppResult *>(rig.results_arena->allocate(kBatch * sizeof(GppResult))));
  return true;
}

bool make_rig(gpp::Mode mode, const std::vector<int> &ids, unsigned persistent_blocks, Rig &rig,
              std::string *error) {
  gpp::EngineSettings s;
  s.device_id = ids[0];
  if (ids.size() > 1) s.device_ids = ids;
  s.persistent_blocks = persistent_blocks;
  rig.engine = gpp::make_engine(mode, s, error);
  return rig.engine && add_results(rig, ids[0], error);
}

// Batches through `rig` for `seconds` (or one pass when 0); packets per second.
double run(Rig &rig, const Ring &ring, double seconds, std::string *error) {
  const unsigned slots = rig.engine->slots();
  const size_t n = ring.batches.size();
  const gpp::CoreConfig cfg = config();
  uint64_t submitted = 0, completed = 0, packets = 0;
  const uint64_t t0 = now_ns(), end = t0 + static_cast<uint64_t>(seconds * 1e9);
  bool submitting = true;
  for (;;) {
    while (submitting && submitted - completed < slots) {
      const size_t b = submitted % n;
      if (!rig.engine->submit(ring.batches[b], ring.sizes[b], ring.counts[b], cfg,
                              rig.results[submitted % slots], error))
        return -1;
      ++submitted;
      if (seconds == 0 && submitted == n) submitting = false;
    }
    if (submitted == completed) break;
    if (!rig.engine->wait_oldest(error)) return -1;
    packets += ring.counts[completed % n];
    ++completed;
    if (seconds > 0 && now_ns() >= end) submitting = false;
  }
  return packets / ((now_ns() - t0) / 1e9);
}

// One pass, every record against the core on the host.
bool records_match(Rig &rig, const Ring &ring, std::string *error) {
  const gpp::CoreConfig cfg = config();
  const unsigned slots = rig.engine->slots();
  for (size_t b = 0; b < ring.batches.size(); ++b) {
    GppResult *out = rig.results[b % slots];
    if (!rig.engine->submit(ring.batches[b], ring.sizes[b], ring.counts[b], cfg, out, error) ||
        !rig.engine->wait_oldest(error))
      return false;
    std::vector<GppResult> want(ring.counts[b]);
    gpp::process_batch_range(ring.batches[b], cfg, want.data(), 0, ring.counts[b]);
    for (uint32_t i = 0; i < ring.counts[b]; ++i)
      if (std::memcmp(&want[i], &out[i], sizeof(GppResult)) != 0) {
        *error = "batch " + std::to_string(b) + " packet " + std::to_string(i) +
                 ": record differs from the cpu core's";
        return false;
      }
  }
  return true;
}

// An engine that finishes every batch at once and touches nothing: the
// sharded engine over these costs only the host's split and merge.
class NullEngine final : public gpp::Engine {
public:
  gpp::Mode mode() const override { return gpp::Mode::Streams; }
  unsigned slots() const override { return gpp::kDefaultNumStreams; }
  bool submit(const uint8_t *, size_t, uint32_t, const gpp::CoreConfig &, GppResult *,
              std::string *) override {
    return true;
  }
  bool wait_oldest(std::string *) override { return true; }
  gpp::GpuCounters counters() const override { return {}; }
};

// The host's split and merge alone over `ids.size()` shards, in us per
// batch (medians of three runs of `seconds`).
bool host_only(const Ring &ring, const std::vector<int> &ids, double seconds, double *split_us,
               double *merge_us, std::string *error) {
  gpp::EngineSettings s;
  s.device_ids = ids;
  Rig rig;
  rig.engine = gpp::make_sharded_engine(
      gpp::Mode::Streams, s,
      [](gpp::Mode, const gpp::EngineSettings &, std::string *) {
        return std::unique_ptr<gpp::Engine>(new NullEngine);
      },
      gpp::make_host_arena, error);
  if (!rig.engine || !add_results(rig, ids[0], error)) return false;
  std::vector<double> split, merge;
  for (int rep = 0; rep < 3; ++rep) {
    const gpp::ShardHostCost before = gpp::shard_host_cost(*rig.engine);
    if (run(rig, ring, seconds, error) < 0) return false;
    const gpp::ShardHostCost after = gpp::shard_host_cost(*rig.engine);
    const double batches = static_cast<double>(after.batches - before.batches);
    split.push_back((after.split_ns - before.split_ns) / batches / 1e3);
    merge.push_back((after.merge_ns - before.merge_ns) / batches / 1e3);
  }
  *split_us = gppbench::median(split);
  *merge_us = gppbench::median(merge);
  return true;
}

std::string ids_text(const std::vector<int> &ids) {
  std::string t;
  for (int d : ids) t += (t.empty() ? "" : ",") + std::to_string(d);
  return t;
}

} // namespace

int main(int argc, char **argv) {
  double seconds = 1.0;
  bool quick = false;
  std::string report, devices_text;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char * { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--seconds") seconds = std::strtod(next(), nullptr);
    else if (a == "--devices") devices_text = next();
    else if (a == "--report") report = next();
    else if (a == "--quick") quick = true;
    else {
      std::fprintf(stderr, "usage: %s [--devices LIST] [--seconds S] [--quick] [--report FILE.md]\n",
                   argv[0]);
      return 2;
    }
  }
  if (quick) seconds = std::min(seconds, 0.1);
  const int count = gpp::gpu_device_count();
  const std::string why = gpp::gpu_unavailable_reason(0);
  if (count == 0 || !why.empty()) {
    std::printf("SKIP: %s\n", why.empty() ? "no CUDA device" : why.c_str());
    return 77;
  }
  std::vector<int> ids;
  if (devices_text.empty()) {
    for (int d = 0; d < count; ++d) ids.push_back(d);
    if (ids.size() == 1) ids.push_back(0);
  } else {
    std::stringstream in(devices_text);
    for (std::string item; std::getline(in, item, ',');) ids.push_back(std::atoi(item.c_str()));
  }
  if (ids.size() < 2) {
    std::fprintf(stderr, "--devices needs two or more ids\n");
    return 2;
  }
  const bool same_device = std::count(ids.begin(), ids.end(), ids[0]) > 1;
  std::ostringstream md;
  md << "# Several GPUs: device-ids=" << ids_text(ids) << " against device " << ids[0]
     << " alone\n\n`gpupacket-shard-bench" << (quick ? " --quick" : "")
     << "`: 4096-packet batches of 16,384 flows, median of 3 alternating " << seconds
     << "-s runs; host cost = splitting + merging per batch (the sharded run's own figures)."
     << (same_device ? " One device named twice: this measures the sharding's cost, not a "
                       "second GPU."
                     : "")
     << "\n\n| mode | profile | 1 device (Mpps) | " << ids.size()
     << " shards (Mpps) | scaling | host split + merge (us/batch) | host-bound rate (Mpps) |\n"
        "|---|---|---|---|---|---|---|\n";
  std::printf("%s", md.str().c_str());
  struct Profile {
    const char *name;
    gpp::TrafficProfile profile;
  };
  const Profile profiles[] = {{"64B", gpp::TrafficProfile::Small},
                              {"IMIX", gpp::TrafficProfile::Imix},
                              {"1500B", gpp::TrafficProfile::Large}};
  bool failed = false;
  std::string error;
  std::ostringstream host_md;
  host_md << "\n## The host's part alone\n\nThe sharded engine over " << ids.size()
          << " engines that finish every share at once (no device): splitting (the hash of every "
             "packet, each share written into its buffer) and merging per 4096-packet batch, "
             "medians of three " << seconds << "-s runs, and the packet rate they alone allow.\n\n"
             "| profile | split (us/batch) | merge (us/batch) | host-bound rate (Mpps) |\n"
             "|---|---|---|---|\n";
  for (const Profile &p : profiles) {
    Ring ring;
    if (!build_ring(p.profile, quick ? 4 : 16, ids[0], ring, &error)) {
      std::fprintf(stderr, "%s: %s\n", p.name, error.c_str());
      return 1;
    }
    double split_us = 0, merge_us = 0;
    if (!host_only(ring, ids, seconds, &split_us, &merge_us, &error)) {
      std::fprintf(stderr, "host only, %s: %s\n", p.name, error.c_str());
      failed = true;
    } else {
      host_md << "| " << p.name << " | " << gppbench::fmt(split_us, 1) << " | "
              << gppbench::fmt(merge_us, 1) << " | "
              << gppbench::fmt(kBatch / (split_us + merge_us), 0) << " |\n";
    }
    for (const gpp::ModeInfo &m : gpp::kModes) {
      if (!gpp::is_gpu_mode(m.mode)) continue;
      // Two resident kernels on one device: half its SMs each.
      const unsigned blocks = m.mode == gpp::Mode::Persistent && same_device ? 16 : 0;
      Rig one, many;
      if (!make_rig(m.mode, {ids[0]}, blocks, one, &error) ||
          !make_rig(m.mode, ids, blocks, many, &error) || !records_match(many, ring, &error) ||
          run(one, ring, 0, &error) < 0 || !one.engine->idle(&error) ||
          run(many, ring, 0, &error) < 0 || !many.engine->idle(&error)) {
        std::fprintf(stderr, "%s %s: %s\n", m.name, p.name, error.c_str());
        failed = true;
        continue;
      }
      const gpp::ShardHostCost before = gpp::shard_host_cost(*many.engine);
      std::vector<double> a, b;
      for (int rep = 0; rep < 3 && !failed; ++rep) {
        a.push_back(run(one, ring, seconds, &error) / 1e6);
        failed = a.back() < 0 || !one.engine->idle(&error);
        b.push_back(run(many, ring, seconds, &error) / 1e6);
        failed = failed || b.back() < 0 || !many.engine->idle(&error);
      }
      if (failed) {
        std::fprintf(stderr, "%s %s: %s\n", m.name, p.name, error.c_str());
        break;
      }
      const gpp::ShardHostCost after = gpp::shard_host_cost(*many.engine);
      const double batches = static_cast<double>(after.batches - before.batches);
      const double host_us =
          batches > 0 ? (after.split_ns - before.split_ns + after.merge_ns - before.merge_ns) /
                            batches / 1e3
                      : 0;
      const double base = gppbench::median(a), sharded = gppbench::median(b);
      std::ostringstream row;
      row << "| " << m.name << " | " << p.name << " | " << gppbench::fmt(base, 2) << " | "
          << gppbench::fmt(sharded, 2) << " | " << gppbench::fmt(sharded / base, 2) << "x | "
          << gppbench::fmt(host_us, 1) << " | "
          << gppbench::fmt(host_us > 0 ? kBatch / host_us : 0, 0) << " |\n";
      std::printf("%s", row.str().c_str());
      md << row.str();
    }
  }
  std::printf("%s", host_md.str().c_str());
  md << host_md.str();
  if (!report.empty()) std::ofstream(report) << md.str();
  std::printf("%s", failed ? "FAILED\n" : "done\n");
  return failed ? 1 : 0;
}
