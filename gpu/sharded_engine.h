// Several GPUs as one engine (EngineSettings::device_ids with two or more
// entries): each batch's packets are split by flow, each share runs on its
// device's own engine of the chosen mode, and the records come back merged
// in input order, byte-identical to one device's.
//
// The shard of a packet is its symmetric RSS hash (the shared core's parse
// and Toeplitz hash, on the host, with the element's key) modulo the number
// of devices: both directions of a flow land on one device.  Packets without
// an IP 5-tuple (hash 0) go to the first.  A device may be named twice (on a
// one-GPU machine "0,0" runs the same code with two shards on device 0).
//
// The shares of each slot's batch and their records live in one portable
// pinned block allocated when the engine starts (sized by max_batch_bytes).
// The host splits a batch in two passes over its packets (hash and count,
// then write each packet into its share) and merges the records back, both
// on a worker pool for large batches.  Flow metering stays on the host
// (flow_device() is -1): the merged records feed one host table.  A device
// that fails is named in the error.  Host only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine.h"

namespace gpp {

using EngineFactory =
    std::function<std::unique_ptr<Engine>(Mode, const EngineSettings &, std::string *)>;
using ArenaFactory = std::function<std::unique_ptr<HostArena>(int, size_t, HostMemoryKind,
                                                              std::string *)>;
// The most blocks of the persistent kernel a device holds at once: false
// with a message when that cannot be known.
using PersistentCapacity = std::function<bool(int device_id, unsigned *blocks, std::string *)>;

// At most this many shards (device ids, repeats included).
constexpr unsigned kMaxShards = 64;

// The shard of a packet among `shards`, from its record as the core made it
// with symmetric_rss (both directions of a flow hash alike).
uint32_t shard_of(const GppResult &r, unsigned shards);

// An engine over settings.device_ids, its shards made by `make_one` (with
// device_id set and device_ids empty) and their buffers by `make_arena`;
// nullptr with a message on failure.  The GPU backends' make_gpu_engine
// calls it for two or more device ids.  In `persistent` mode, a device named
// k times must hold k * persistent_blocks resident blocks at once
// (`capacity`; not checked when empty), or the last kernels would never
// start: refused at once rather than at the first batch's answer timeout.
std::unique_ptr<Engine> make_sharded_engine(Mode mode, const EngineSettings &settings,
                                            const EngineFactory &make_one,
                                            const ArenaFactory &make_arena, std::string *error,
                                            const PersistentCapacity &capacity = {});

// Per device of a sharded engine: packets sent to it (for stats and tests).
struct ShardFigures {
  int device_id;
  uint64_t packets;
  GpuCounters traffic;
};
// The figures of `engine` if it is a sharded one, else empty.
std::vector<ShardFigures> shard_figures(const Engine &engine);

// The host's part of a sharded engine's work, summed over its batches:
// splitting (the hash of every packet, each share built in its device's
// buffer) and merging (records back in input order).
struct ShardHostCost {
  uint64_t batches = 0;
  uint64_t split_ns = 0, merge_ns = 0;
};
ShardHostCost shard_host_cost(const Engine &engine);

} // namespace gpp
