#include "sharded_engine.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "batch_builder.h"
#include "cpu_engine.h"
#include "device_timing.h"
#include "worker_pool.h"

namespace gpp {

uint32_t shard_of(const GppResult &r, unsigned shards) { return r.rss_hash % shards; }

namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct Shard {
  int device_id;
  std::atomic<uint64_t> packets{0};
  std::unique_ptr<Engine> engine;
};

class ShardedEngine final : public Engine, public DeviceTiming {
public:
  // The split on up to kSplitThreads cores, the merge (beside the next
  // batch's split) on up to half as many: their workers poll between
  // batches (WorkerPool), and more of them would crowd out the threads that
  // wait for the devices.
  static constexpr unsigned kSplitThreads = 8;
  explicit ShardedEngine(Mode mode)
      : mode_(mode), pool_(std::clamp(std::thread::hardware_concurrency(), 1u, kSplitThreads)),
        merge_pool_(std::clamp(std::thread::hardware_concurrency() / 2, 1u, kSplitThreads / 2)) {}

  // Adds the engine of one device.
  void add(int device_id, std::unique_ptr<Engine> engine) {
    auto shard = std::make_unique<Shard>();
    shard->device_id = device_id;
    shard->engine = std::move(engine);
    shards_.push_back(std::move(shard));
  }
  // Every slot's buffers for the shares of a batch and their records,
  // allocated now, before any kernel runs (pinned allocation waits for the
  // device: never while a resident kernel polls).  One portable block on
  // the first device: the other devices reach it too (UVA).  The records
  // land here, not in the caller's buffer, so a device still busy after
  // another failed never writes memory the caller has let go: the block
  // outlives the devices' engines.
  bool finish_setup(const ArenaFactory &make_arena, size_t max_batch_bytes, std::string *error) {
    slots_ = ~0u;
    for (const auto &s : shards_) slots_ = std::min(slots_, s->engine->slots());
    // A batch's shares hold its packets once, plus a header, descriptors'
    // alignment and 256-byte placement per share.
    slot_capacity_ = max_batch_bytes + shards_.size() * 512;
    records_capacity_ = max_batch_bytes / sizeof(GppResult) * GPP_RESULTS_RECORD_SIZE_TUNNELS;
    arena_ = make_arena(shards_.front()->device_id,
                        slots_ * (slot_capacity_ + records_capacity_ + 512),
                        HostMemoryKind::Default, error);
    if (!arena_) return false;
    const size_t n = shards_.size();
    slot_packets_.resize(slots_);
    for (SlotPackets &sp : slot_packets_) {
      sp.first.resize(n);
      sp.count.resize(n);
    }
    part_packets_.resize(pool_.threads() * n);
    part_bytes_.resize(pool_.threads() * n);
    share_packets_.resize(n);
    share_data_.resize(n);
    share_at_.resize(n);
    for (unsigned k = 0; k < slots_; ++k) {
      slot_buffers_.push_back(static_cast<uint8_t *>(arena_->allocate(slot_capacity_)));
      slot_records_.push_back(static_cast<GppResult *>(arena_->allocate(records_capacity_)));
      if (!slot_buffers_.back() || !slot_records_.back()) {
        *error = "the shares' pinned buffers do not fit their arena";
        return false;
      }
    }
    return true;
  }

  Mode mode() const override { return mode_; }
  unsigned slots() const override { return slots_; }

  bool submit(const uint8_t *batch, size_t batch_size, uint32_t count, const CoreConfig &cfg,
              GppResult *results, std::string *error) override {
    (void)batch_size;
    if (const int device = failed_device_.load(); device != kNoFailure) {
      *error = "an earlier batch failed on device " + std::to_string(device);
      return false;
    }
    const uint64_t start = now_ns();
    const unsigned slot = static_cast<unsigned>(head_ % slots_);
    const unsigned n = static_cast<unsigned>(shards_.size());
    const auto *header = reinterpret_cast<const GppBatchHeader *>(batch);
    const GppPacketDesc *descs = gpp_batch_descs(batch);
    // Which device each packet goes to: the symmetric RSS hash of its flow,
    // from the shared core (no ACL, DPI or checksums: only the hash counts).
    // With decap, the innermost packet's (as the flows are keyed).
    CoreConfig shard_cfg{};
    std::copy(cfg.rss_key, cfg.rss_key + kRssKeySize, shard_cfg.rss_key);
    shard_cfg.symmetric_rss = true;
    shard_cfg.decap = cfg.decap;
    std::copy(cfg.vxlan_ports, cfg.vxlan_ports + 2, shard_cfg.vxlan_ports);
    // The key's byte table (as the persistent kernel hashes): a lookup per
    // input byte instead of a bit loop.
    const detail::RssTable *table = &host_rss_table(cfg.rss_key);
    // This slot's per-packet shard and place in it (read again by the merge:
    // the slot is not reused before its batch is waited for).
    SlotPackets &sp = slot_packets_[slot];
    try {
      if (sp.shard.size() < count) {
        sp.shard.resize(count);
        sp.place.resize(count);
      }
    } catch (const std::exception &e) {
      *error = std::string("splitting a batch: ") + e.what();
      return false;
    }
    uint8_t *shard = sp.shard.data();
    uint32_t *place = sp.place.data();
    // Two passes over contiguous parts of the batch, one part per thread of
    // the split pool for a large batch: each part hashes its packets and
    // counts, per shard, its packets and their bytes; then, from where those
    // sums put each part in each share, it writes its packets there.  Shares
    // keep input order.
    const unsigned parts = count < kParallelPackets ? 1 : pool_.threads();
    auto range_of = [&](unsigned part, uint32_t *first, uint32_t *last) {
      *first = static_cast<uint32_t>(uint64_t{count} * part / parts);
      *last = static_cast<uint32_t>(uint64_t{count} * (part + 1) / parts);
    };
    // Each part counts in its own locals (the parts' sums share cache lines).
    auto classify = [&](unsigned part) {
      uint32_t first, last;
      range_of(part, &first, &last);
      uint32_t packets[kMaxShards] = {};
      size_t bytes[kMaxShards] = {};
      for (uint32_t i = first; i < last; ++i) {
        GppResult r;
        GppTunnelInfo tunnel;
        process_packet(batch + descs[i].offset, descs[i].caplen, descs[i].wirelen,
                       header->linktype, descs[i].packet_number, descs[i].timestamp_ns, shard_cfg,
                       r, ClassifyStages::kInline, table, &tunnel);
        const uint32_t k = shard_of(r, n);
        shard[i] = static_cast<uint8_t>(k);
        packets[k]++;
        bytes[k] += BatchBuilder::subset_packet_size(batch, i);
      }
      std::copy(packets, packets + n, &part_packets_[part * n]);
      std::copy(bytes, bytes + n, &part_bytes_[part * n]);
    };
    if (!run_parts(parts, classify, error)) return false;
    // Each part's first place and data offset in each share.
    for (unsigned k = 0; k < n; ++k) {
      uint32_t packets = 0;
      size_t bytes = 0;
      for (unsigned part = 0; part < parts; ++part) {
        const uint32_t p = part_packets_[part * n + k];
        const size_t b = part_bytes_[part * n + k];
        part_packets_[part * n + k] = packets;
        part_bytes_[part * n + k] = bytes;
        packets += p;
        bytes += b;
      }
      share_packets_[k] = packets;
      share_data_[k] = bytes;
    }
    // The shares back to back in this slot's buffer, each 256-byte aligned.
    size_t used = 0;
    for (unsigned k = 0; k < n; ++k) {
      share_at_[k] = used;
      used += (gpp_batch_size(share_packets_[k], share_data_[k]) + 255) / 256 * 256;
    }
    if (used > slot_capacity_ || results_bytes(count, cfg) > records_capacity_) {
      // Nothing started: the engine goes on with the next batch.
      *error = "a batch of " + std::to_string(count) + " packets takes " + std::to_string(used) +
               " bytes of shares and " + std::to_string(results_bytes(count, cfg)) +
               " of records, more than the " + std::to_string(slot_capacity_) + " and " +
               std::to_string(records_capacity_) + " set aside for a batch (raise pool-size)";
      return false;
    }
    uint8_t *buffer = slot_buffers_[slot];
    auto copy = [&](unsigned part) {
      uint32_t first, last;
      range_of(part, &first, &last);
      uint32_t next[kMaxShards];
      size_t data_at[kMaxShards];
      std::copy(&part_packets_[part * n], &part_packets_[part * n] + n, next);
      std::copy(&part_bytes_[part * n], &part_bytes_[part * n] + n, data_at);
      for (uint32_t i = first; i < last; ++i) {
        const uint32_t k = shard[i];
        place[i] = next[k]++;
        BatchBuilder::write_subset_packet(batch, i, place[i], share_packets_[k], data_at[k],
                                          buffer + share_at_[k]);
        data_at[k] += BatchBuilder::subset_packet_size(batch, i);
      }
    };
    if (!run_parts(parts, copy, error)) return false;
    for (unsigned k = 0; k < n; ++k)
      BatchBuilder::write_subset_header(batch, share_packets_[k], share_data_[k],
                                        buffer + share_at_[k]);
    // The host's part ends here; the submits are the devices' work.  Each
    // device writes its share's records at its own place in the slot's
    // records (with decap each share's tunnel plane after its records); the
    // merge puts them in order into `results`.
    const uint64_t split_ns = now_ns() - start;
    uint32_t first_record = 0;
    auto *records = reinterpret_cast<uint8_t *>(slot_records_[slot]);
    for (unsigned k = 0; k < n; ++k) {
      Shard &s = *shards_[k];
      const uint32_t share = share_packets_[k];
      const size_t share_bytes = gpp_batch_size(share, share_data_[k]);
      std::string why;
      bool started;
      try {
        started = s.engine->submit(buffer + share_at_[k], share_bytes, share, cfg,
                                   reinterpret_cast<GppResult *>(records + results_bytes(first_record, cfg)),
                                   &why);
      } catch (const std::exception &e) {
        started = false; // the shares before it are on their devices: this engine is done
        why = e.what();
      }
      if (!started) return fail(k, why, error);
      sp.first[k] = first_record;
      sp.count[k] = share;
      first_record += share;
      s.packets += share;
    }
    try {
      std::lock_guard<std::mutex> lock(tickets_lock_);
      tickets_.push_back(Ticket{results, slot, count, cfg.decap != 0});
    } catch (const std::exception &e) {
      return fail(0, std::string("after every share started: ") + e.what(), error);
    }
    ++head_;
    std::lock_guard<std::mutex> lock(cost_lock_);
    cost_.batches++;
    cost_.split_ns += split_ns;
    return true;
  }

  bool wait_oldest(std::string *error) override {
    Ticket ticket;
    {
      std::lock_guard<std::mutex> lock(tickets_lock_);
      if (tickets_.empty()) {
        *error = "no batch outstanding";
        return false;
      }
      ticket = tickets_.front();
      tickets_.pop_front();
    }
    bool ok = true;
    for (size_t k = 0; k < shards_.size(); ++k) {
      std::string why;
      // Every device's share is waited for, also after one failed: each
      // engine keeps its own order.
      if (!shards_[k]->engine->wait_oldest(&why)) {
        if (ok) fail(static_cast<unsigned>(k), why, error);
        ok = false;
      }
    }
    if (!ok) return false;
    // The records lie share after share; each packet takes its own.
    const uint64_t merge_start = now_ns();
    const SlotPackets &sp = slot_packets_[ticket.slot];
    const auto *records = reinterpret_cast<const uint8_t *>(slot_records_[ticket.slot]);
    const size_t record_size = ticket.decap ? GPP_RESULTS_RECORD_SIZE_TUNNELS : GPP_RESULTS_RECORD_SIZE;
    GppTunnelInfo *tunnels = tunnel_plane(ticket.results, ticket.count);
    auto merge = [&](uint32_t first, uint32_t last) {
      for (uint32_t i = first; i < last; ++i) {
        const uint32_t k = sp.shard[i];
        const auto *share = reinterpret_cast<const GppResult *>(records + sp.first[k] * record_size);
        ticket.results[i] = share[sp.place[i]];
        if (ticket.decap) tunnels[i] = tunnel_plane(share, sp.count[k])[sp.place[i]];
      }
    };
    if (ticket.count < kParallelPackets) {
      merge(0, ticket.count);
    } else {
      try { // the pool's std::function may allocate: no exception leaves a wait
        merge_pool_.run_ranges(ticket.count, merge);
      } catch (const std::exception &e) {
        *error = std::string("merging a batch's records: ") + e.what();
        return false;
      }
    }
    std::lock_guard<std::mutex> lock(cost_lock_);
    cost_.merge_ns += now_ns() - merge_start;
    return true;
  }

  // The GPU time of the batch just waited for: its slowest share's (0
  // where the shares' engines keep no DeviceTiming).
  uint32_t last_device_ns() const override {
    uint32_t most = 0;
    for (const auto &s : shards_)
      if (const DeviceTiming *t = device_timing(*s->engine)) most = std::max(most, t->last_device_ns());
    return most;
  }
  // Its phases: each the latest over the shares, as within one engine.
  DevicePhases last_device_phases() const override {
    DevicePhases latest{};
    for (const auto &s : shards_) {
      const DeviceTiming *t = device_timing(*s->engine);
      if (!t) continue;
      const DevicePhases p = t->last_device_phases();
      for (size_t k = 0; k < latest.size(); ++k) latest[k] = std::max(latest[k], p[k]);
    }
    return latest;
  }

  bool idle(std::string *error) override {
    // After a failure some devices hold a batch no ticket covers: this
    // engine cannot go on, and saying so makes the element make a new one.
    if (const int device = failed_device_.load(); device != kNoFailure) {
      *error = "device " + std::to_string(device) + " failed earlier";
      return false;
    }
    for (size_t k = 0; k < shards_.size(); ++k) {
      std::string why;
      if (!shards_[k]->engine->idle(&why)) return fail(static_cast<unsigned>(k), why, error);
    }
    return true;
  }

  GpuCounters counters() const override {
    GpuCounters sum;
    for (const auto &s : shards_) {
      const GpuCounters c = s->engine->counters();
      sum.bytes_h2d += c.bytes_h2d;
      sum.bytes_d2h += c.bytes_d2h;
    }
    return sum;
  }

  ShardHostCost host_cost() const {
    std::lock_guard<std::mutex> lock(cost_lock_);
    return cost_;
  }

  std::vector<ShardFigures> figures() const {
    std::vector<ShardFigures> out;
    for (const auto &s : shards_) out.push_back({s->device_id, s->packets.load(), s->engine->counters()});
    return out;
  }

private:
  // Batches at least this large are split on the host's cores.
  static constexpr uint32_t kParallelPackets = 2048;

  struct Ticket {
    GppResult *results = nullptr;
    unsigned slot = 0;
    uint32_t count = 0;
    bool decap = false; // the records have their tunnel plane
  };
  // A slot's batch as split: each packet's shard and place in its share, and
  // where each share's records start in the slot's records.
  struct SlotPackets {
    std::vector<uint8_t> shard;
    std::vector<uint32_t> place;
    std::vector<uint32_t> first; // per shard
    std::vector<uint32_t> count; // per shard
  };

  // Runs part(0 .. parts) on the split pool (one part: on this thread);
  // false with why if the pool could not take the job (its std::function
  // may allocate): nothing has started on a device then.
  template <typename Part>
  bool run_parts(unsigned parts, const Part &part, std::string *error) {
    try {
      if (parts == 1) part(0u);
      else pool_.run(parts, part);
      return true;
    } catch (const std::exception &e) {
      *error = std::string("splitting a batch: ") + e.what();
      return false;
    }
  }

  bool fail(unsigned shard, const std::string &why, std::string *error) {
    const int device = shards_[shard]->device_id;
    failed_device_ = device;
    *error = "device " + std::to_string(device) + ": " + why;
    return false;
  }

  Mode mode_;
  WorkerPool pool_;       // the split (the submitting thread)
  WorkerPool merge_pool_; // the merge (the waiting thread: WorkerPool takes one caller)
  // Before the shards: their engines go first, while the buffers their
  // batches may still read exist.
  std::unique_ptr<HostArena> arena_;
  std::vector<uint8_t *> slot_buffers_; // per slot: the shares of its batch
  std::vector<GppResult *> slot_records_; // per slot: their records, share after share
  size_t slot_capacity_ = 0, records_capacity_ = 0;
  std::vector<std::unique_ptr<Shard>> shards_;
  unsigned slots_ = 1;
  uint64_t head_ = 0;
  // The submitting thread adds, the waiting thread takes (Engine's contract:
  // one of each).
  std::mutex tickets_lock_;
  std::deque<Ticket> tickets_;
  std::vector<SlotPackets> slot_packets_;
  // The split's sums: per part and shard (packets, then first place; bytes,
  // then first data offset), and per share.
  std::vector<uint32_t> part_packets_;
  std::vector<size_t> part_bytes_;
  std::vector<uint32_t> share_packets_;
  std::vector<size_t> share_data_, share_at_;
  static constexpr int kNoFailure = -1;
  std::atomic<int> failed_device_{kNoFailure}; // either thread sets it
  mutable std::mutex cost_lock_; // submit and wait run on different threads
  ShardHostCost cost_;
};

} // namespace

std::unique_ptr<Engine> make_sharded_engine(Mode mode, const EngineSettings &settings,
                                            const EngineFactory &make_one,
                                            const ArenaFactory &make_arena, std::string *error,
                                            const PersistentCapacity &capacity) {
  if (mode == Mode::Cpu) {
    *error = "mode cpu runs on the host: device-ids applies to the GPU modes";
    return nullptr;
  }
  if (settings.device_ids.size() > kMaxShards) {
    *error = "at most " + std::to_string(kMaxShards) + " device ids";
    return nullptr;
  }
  // Resident kernels on one device must all fit on it at once, or the last
  // would never start: each takes every SM unless told fewer, and a device
  // named k times holds k * persistent_blocks.
  std::vector<int> sorted = settings.device_ids;
  std::sort(sorted.begin(), sorted.end());
  for (auto run = sorted.begin(); mode == Mode::Persistent && run != sorted.end();) {
    const auto end = std::upper_bound(run, sorted.end(), *run);
    const uint64_t named = static_cast<uint64_t>(end - run);
    const int device = *run;
    run = end;
    if (named == 1) continue;
    if (settings.persistent_blocks == 0) {
      *error = "mode=persistent with a device named twice in device-ids needs persistent-blocks "
               "(each resident kernel otherwise takes every SM of the device, and the second "
               "would never start)";
      return nullptr;
    }
    if (!capacity) continue;
    unsigned most = 0;
    std::string why;
    if (!capacity(device, &most, &why)) {
      *error = "device " + std::to_string(device) + ": " + why;
      return nullptr;
    }
    if (named * settings.persistent_blocks > most) {
      *error = "device " + std::to_string(device) + " is named " + std::to_string(named) +
               " times in device-ids with persistent-blocks=" +
               std::to_string(settings.persistent_blocks) + ": " +
               std::to_string(named * settings.persistent_blocks) +
               " resident blocks, more than the " + std::to_string(most) +
               " it holds at once (the last kernels would never start)";
      return nullptr;
    }
  }
  auto engine = std::make_unique<ShardedEngine>(mode);
  for (int device : settings.device_ids) {
    EngineSettings one = settings;
    one.device_ids.clear();
    one.device_id = device;
    one.records_to_host = true; // the merge reads every share's records
    std::string why;
    std::unique_ptr<Engine> shard = make_one(mode, one, &why);
    if (!shard) {
      *error = "device " + std::to_string(device) + ": " + why;
      return nullptr;
    }
    engine->add(device, std::move(shard));
  }
  if (!engine->finish_setup(make_arena, settings.max_batch_bytes, error)) return nullptr;
  return engine;
}

ShardHostCost shard_host_cost(const Engine &engine) {
  const auto *sharded = dynamic_cast<const ShardedEngine *>(&engine);
  return sharded ? sharded->host_cost() : ShardHostCost{};
}

std::vector<ShardFigures> shard_figures(const Engine &engine) {
  const auto *sharded = dynamic_cast<const ShardedEngine *>(&engine);
  return sharded ? sharded->figures() : std::vector<ShardFigures>{};
}

} // namespace gpp
