#include "sharded_engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <mutex>

#include "batch_builder.h"
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

class ShardedEngine final : public Engine {
public:
  explicit ShardedEngine(Mode mode) : mode_(mode), pool_(0) {}

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
    records_capacity_ = max_batch_bytes / sizeof(GppResult) * sizeof(GppResult);
    arena_ = make_arena(shards_.front()->device_id,
                        slots_ * (slot_capacity_ + records_capacity_ + 512),
                        HostMemoryKind::Default, error);
    if (!arena_) return false;
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
    CoreConfig shard_cfg{};
    std::copy(cfg.rss_key, cfg.rss_key + kRssKeySize, shard_cfg.rss_key);
    shard_cfg.symmetric_rss = true;
    // The key's byte table (as the persistent kernel hashes): a lookup per
    // input byte instead of a bit loop.  Made again when the key changes.
    if (!rss_table_ || !std::equal(cfg.rss_key, cfg.rss_key + kRssKeySize, table_key_)) {
      if (!rss_table_) rss_table_ = std::make_unique<detail::RssTable>();
      rss_table_->fill(cfg.rss_key, 0, 1);
      std::copy(cfg.rss_key, cfg.rss_key + kRssKeySize, table_key_);
    }
    const detail::RssTable *table = rss_table_.get();
    shard_.resize(count);
    auto classify = [&](uint32_t first, uint32_t last) {
      for (uint32_t i = first; i < last; ++i) {
        GppResult r;
        process_packet(batch + descs[i].offset, descs[i].caplen, descs[i].wirelen,
                       header->linktype, descs[i].packet_number, descs[i].timestamp_ns, shard_cfg,
                       r, ClassifyStages::kInline, table);
        shard_[i] = static_cast<uint8_t>(shard_of(r, n));
      }
    };
    if (count < kParallelPackets) {
      classify(0, count);
    } else {
      pool_.run_ranges(count, classify);
    }
    // Each device's share as a batch of its own, in input order.
    Ticket ticket;
    ticket.results = results;
    ticket.slot = slot;
    ticket.index.resize(n);
    ticket.first.resize(n);
    ticket.count = count;
    for (uint32_t i = 0; i < count; ++i) ticket.index[shard_[i]].push_back(i);
    // The shares back to back in this slot's buffer, each 256-byte aligned.
    std::vector<size_t> bytes(n), at(n);
    size_t used = 0;
    for (unsigned k = 0; k < n; ++k) {
      at[k] = used;
      bytes[k] = BatchBuilder::subset_size(batch, ticket.index[k].data(),
                                           static_cast<uint32_t>(ticket.index[k].size()));
      used += (bytes[k] + 255) / 256 * 256;
    }
    if (used > slot_capacity_ || size_t{count} * sizeof(GppResult) > records_capacity_) {
      // Nothing started: the engine goes on with the next batch.
      *error = "a batch of " + std::to_string(count) + " packets takes " + std::to_string(used) +
               " bytes of shares and " + std::to_string(size_t{count} * sizeof(GppResult)) +
               " of records, more than the " + std::to_string(slot_capacity_) + " and " +
               std::to_string(records_capacity_) + " set aside for a batch (raise pool-size)";
      return false;
    }
    uint8_t *buffer = slot_buffers_[slot];
    // One copy of every packet is the sharding's main cost: the shares in
    // parallel for a large batch.
    auto copy_share = [&](unsigned k) {
      BatchBuilder::write_subset(batch, ticket.index[k].data(),
                                 static_cast<uint32_t>(ticket.index[k].size()), buffer + at[k]);
    };
    if (count < kParallelPackets) {
      for (unsigned k = 0; k < n; ++k) copy_share(k);
    } else {
      pool_.run(n, copy_share);
    }
    // The host's part ends here; the submits are the devices' work.  Each
    // device writes its share's records at its own place in the slot's
    // records; the merge puts them in order into `results`.
    const uint64_t split_ns = now_ns() - start;
    uint32_t first_record = 0;
    for (unsigned k = 0; k < n; ++k) {
      Shard &s = *shards_[k];
      const auto share = static_cast<uint32_t>(ticket.index[k].size());
      std::string why;
      bool started;
      try {
        started = s.engine->submit(buffer + at[k], bytes[k], share, cfg,
                                   slot_records_[slot] + first_record, &why);
      } catch (const std::exception &e) {
        started = false; // the shares before it are on their devices: this engine is done
        why = e.what();
      }
      if (!started) return fail(k, why, error);
      ticket.first[k] = first_record;
      first_record += share;
      s.packets += share;
    }
    try {
      std::lock_guard<std::mutex> lock(tickets_lock_);
      tickets_.push_back(std::move(ticket));
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
      ticket = std::move(tickets_.front());
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
    // The records lie share after share; each goes to its packet's place.
    const uint64_t merge_start = now_ns();
    for (size_t k = 0; k < shards_.size(); ++k) {
      const GppResult *records = slot_records_[ticket.slot] + ticket.first[k];
      const std::vector<uint32_t> &index = ticket.index[k];
      for (size_t j = 0; j < index.size(); ++j) ticket.results[index[j]] = records[j];
    }
    std::lock_guard<std::mutex> lock(cost_lock_);
    cost_.merge_ns += now_ns() - merge_start;
    return true;
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
    std::vector<std::vector<uint32_t>> index; // per shard: each record's place in the batch
    std::vector<uint32_t> first;              // per shard: where its records start in results
  };

  bool fail(unsigned shard, const std::string &why, std::string *error) {
    const int device = shards_[shard]->device_id;
    failed_device_ = device;
    *error = "device " + std::to_string(device) + ": " + why;
    return false;
  }

  Mode mode_;
  WorkerPool pool_;
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
  std::vector<uint8_t> shard_;              // per packet of the batch being split
  std::unique_ptr<detail::RssTable> rss_table_;
  uint8_t table_key_[kRssKeySize] = {};
  static constexpr int kNoFailure = -1;
  std::atomic<int> failed_device_{kNoFailure}; // either thread sets it
  mutable std::mutex cost_lock_; // submit and wait run on different threads
  ShardHostCost cost_;
};

} // namespace

std::unique_ptr<Engine> make_sharded_engine(Mode mode, const EngineSettings &settings,
                                            const EngineFactory &make_one,
                                            const ArenaFactory &make_arena, std::string *error) {
  if (mode == Mode::Cpu) {
    *error = "mode cpu runs on the host: device-ids applies to the GPU modes";
    return nullptr;
  }
  if (settings.device_ids.size() > kMaxShards) {
    *error = "at most " + std::to_string(kMaxShards) + " device ids";
    return nullptr;
  }
  // A resident kernel takes every SM of its device unless told fewer: a
  // second one on the same device would never start.
  std::vector<int> sorted = settings.device_ids;
  std::sort(sorted.begin(), sorted.end());
  if (mode == Mode::Persistent && settings.persistent_blocks == 0 &&
      std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    *error = "mode=persistent with a device named twice in device-ids needs persistent-blocks "
             "(each resident kernel otherwise takes every SM of the device, and the second "
             "would never start)";
    return nullptr;
  }
  auto engine = std::make_unique<ShardedEngine>(mode);
  for (int device : settings.device_ids) {
    EngineSettings one = settings;
    one.device_ids.clear();
    one.device_id = device;
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
