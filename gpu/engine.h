// What the GStreamer side sees of the engines: a pinned host-memory arena and
// engines that run the packet core in any mode (cpu on host threads, the GPU
// modes on a CUDA device), behind one interface and one factory.  No CUDA types
// here, so gst-plugin/ compiles without the toolkit; builds without CUDA link
// gpu_unavailable.cpp, whose factories explain that GPU support is absent.
// Buffers given to an engine must be readable up to the next 16-byte
// boundary (the kernels load 16 bytes at a time); HostArena buffers are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "packet_core.h"

namespace gpp {

class FlowStore; // flow_meter.h

enum class Mode : int { Cpu = 0, Streams = 1, ZeroCopy = 2, Graph = 3, Persistent = 4 };

// The one table of modes: the element's enum (its nicks and gst-inspect
// text), mode names in messages and stats, the tests and the bench all read
// it.  Indexed by the Mode's value.
struct ModeInfo {
  Mode mode;
  const char *name; // property value, stats key prefix
  const char *description;
  // Honours EngineSettings::records_to_host=false on one device (the records
  // then stay on the GPU; Engine::writes_records).
  bool can_keep_records;
};
inline constexpr ModeInfo kModes[] = {
    {Mode::Cpu, "cpu", "The packet core on host threads (see cpu-threads)", false},
    {Mode::Streams, "streams",
     "GPU: async copy in, kernel, copy out on num-streams CUDA streams, several batches in "
     "flight (throughput)",
     true},
    {Mode::ZeroCopy, "zerocopy",
     "GPU: the kernel reads batches from and writes results to pinned host memory, no copies",
     true},
    {Mode::Graph, "graph",
     "GPU: copy-kernel-copy as a CUDA graph per stream, updated and replayed per batch (lower "
     "launch cost)",
     true},
    {Mode::Persistent, "persistent",
     "GPU: a resident kernel polls a work queue in mapped memory (lowest latency; keeps a host "
     "core and the GPU busy)",
     false},
};
constexpr int kModeCount = sizeof kModes / sizeof kModes[0];

constexpr bool modes_in_value_order() {
  for (int i = 0; i < kModeCount; ++i)
    if (static_cast<int>(kModes[i].mode) != i) return false;
  return true;
}
static_assert(modes_in_value_order(), "kModes is indexed by Mode");

inline const char *mode_name(Mode m) {
  const int i = static_cast<int>(m);
  return i >= 0 && i < kModeCount ? kModes[i].name : "?";
}

inline bool is_gpu_mode(Mode m) { return m != Mode::Cpu; }

// Whether an engine of `m` leaves its records on the GPU when told to
// (EngineSettings::records_to_host); several devices' shares never do.
inline bool mode_can_keep_records(Mode m) {
  const int i = static_cast<int>(m);
  return i >= 0 && i < kModeCount && kModes[i].can_keep_records;
}

// How the host learns that a batch is done.
enum class WaitStrategy : int {
  Spin = 0,  // poll without pause: lowest latency, one busy core
  Yield = 1, // poll, yielding the core between polls
  Block = 2  // sleep in the driver (blocking-sync events; persistent: short sleeps)
};

// Page-locked host memory for batches and results.
enum class HostMemoryKind : int {
  Default = 0,       // cudaHostAllocPortable (device-visible too: UVA maps all pinned memory)
  WriteCombined = 1, // faster H2D over PCIe, very slow for the CPU to read: input slots only
  Mapped = 2         // cudaHostAllocMapped, explicitly
};

// One cudaHostAlloc block, allocated once and carved into buffers with a
// first-fit free list.  Thread-safe.  Buffers are kAlign (256-byte) aligned.
class HostArena {
public:
  static constexpr size_t kAlign = 256;

  virtual ~HostArena() = default;
  // nullptr when no free range is large enough right now.
  virtual void *allocate(size_t bytes) = 0;
  virtual void release(void *ptr) = 0;
  virtual bool contains(const void *ptr) const = 0;
  virtual size_t capacity() const = 0;
  virtual size_t in_use() const = 0;
};

// Host memory made elsewhere (an AF_XDP UMEM, an anonymous mapping),
// page-locked and mapped for every device with cudaHostRegister, so the
// modes that read batches through the mapping (zerocopy, persistent) read a
// batch that lies in it where it is.  Destruction unregisters: it must come
// before the memory is unmapped.
class HostRegistration {
public:
  virtual ~HostRegistration() = default;
};
// nullptr with a reason when the memory cannot be registered, or when a
// device would need another address for it than the host's (kernels are
// given host addresses).  `bytes` and `base` page-aligned.
std::unique_ptr<HostRegistration> register_host_memory(void *base, size_t bytes,
                                                       std::string *error);

// Batches in flight in the GPU modes unless set otherwise: the element's
// num-streams default, the bench's --streams default; and at most (the
// persistent kernel's queue slots, gpu_engine.cpp checks).
constexpr unsigned kDefaultNumStreams = 4;
constexpr unsigned kMaxNumStreams = 64;
// The element's pool-size default (MiB of pinned memory for batches), and so
// the largest batch an engine is set up for unless told otherwise.
constexpr unsigned kDefaultPoolSizeMib = 64;

// The element's property defaults come from here (device-id, num-streams,
// persistent-blocks, wait-strategy, pool-size); cpu-threads is the
// exception: the element defaults to one thread (a batch's hand-out to
// several costs more than it saves below kMinPacketsPerThread packets each).
struct EngineSettings {
  unsigned cpu_threads = 0; // cpu: host threads, 0 = one per online core
  // cpu: submit() hands the batch to the engine's own thread and returns
  // (slots() > 1, wait_oldest() waits); false: it runs on the caller's
  // thread and is done when submit() returns (completes_inline()).
  bool cpu_pipelined = false;
  int device_id = 0;
  unsigned num_streams = kDefaultNumStreams; // streams / zerocopy / graph: batches in flight
  unsigned persistent_blocks = 0; // persistent: resident blocks, 0 = one per SM
  WaitStrategy wait = WaitStrategy::Spin;
  size_t max_batch_bytes = size_t{kDefaultPoolSizeMib} << 20; // persistent: device staging for one batch
  // streams, graph, zerocopy: false leaves the records on the device (no copy
  // back; zerocopy writes none), for runs that want only what the batches
  // leave there (a flow table; the element's packet-records=false).  The
  // other modes (mode_can_keep_records), and several devices (device_ids),
  // write them all the same (Engine::writes_records).
  bool records_to_host = true;
  // Two or more: every batch is sharded by flow over these devices, each
  // share on its own engine of the mode (sharded_engine.h); device_id is
  // then unused.  Empty: device_id alone.
  std::vector<int> device_ids;
};

// Whether an engine made with `a` for `mode` would differ from one made with
// `b`: only the settings the mode reads count.
inline bool same_engine_settings(Mode mode, const EngineSettings &a, const EngineSettings &b) {
  if (mode == Mode::Cpu)
    return a.cpu_threads == b.cpu_threads && a.cpu_pipelined == b.cpu_pipelined;
  // Several devices' shares always return their records, for the merge.
  const bool copies_records = mode_can_keep_records(mode) && a.device_ids.size() < 2;
  return a.device_id == b.device_id && a.num_streams == b.num_streams &&
         a.persistent_blocks == b.persistent_blocks && a.wait == b.wait &&
         (!copies_records || a.records_to_host == b.records_to_host) &&
         a.device_ids == b.device_ids;
}

// Bytes moved between host and device, by copy engines or by kernels reading
// and writing pinned host memory.
struct GpuCounters {
  uint64_t bytes_h2d = 0;
  uint64_t bytes_d2h = 0;
};

// Runs batches in one mode, the same interface for every mode.  Not
// thread-safe: one thread submits, one thread waits, in ticket order (tickets
// count up from 0); at most slots() may be outstanding.  For the GPU modes
// `batch` and `results` must lie in a HostArena made for the same device.
class Engine {
public:
  virtual ~Engine() = default;
  virtual Mode mode() const = 0;
  virtual unsigned slots() const = 0;
  // Whether submit() finishes the batch before it returns (cpu): the caller
  // then has its results at once and pushes them from its own thread, with no
  // hand-off; wait_oldest() only retires it.
  virtual bool completes_inline() const { return false; }
  // Whether submit() fills `results`: false only where
  // EngineSettings::records_to_host was off and the engine honours it
  // (streams, zerocopy, graph), whose records then stay on the device.
  virtual bool writes_records() const { return true; }

  // Starts a validated batch; returns false with a message on failure.
  // `results` holds results_bytes(packet_count, cfg): with cfg.decap the
  // engine fills the tunnel plane after the records too.
  virtual bool submit(const uint8_t *batch, size_t batch_size, uint32_t packet_count,
                      const CoreConfig &cfg, GppResult *results, std::string *error) = 0;
  // Waits for the oldest outstanding batch; its results are then in host memory.
  virtual bool wait_oldest(std::string *error) = 0;
  // Stops what runs between batches (persistent: the resident kernel, which
  // would keep a GPU and a host core polling) and keeps every allocation; the
  // next submit resumes.  For EOS and flushes, with nothing outstanding.
  virtual bool idle(std::string *error) {
    (void)error;
    return true;
  }
  // Flow metering where the batches run: from the next submit on, every
  // batch counts its records into `store` before it completes (the batch's
  // own kernel).  `store` must come from
  // make_device_flow_store(flow_device()).  False when this engine cannot
  // (cpu): the caller then meters results on the host.  nullptr detaches.
  virtual bool attach_flows(FlowStore *store) { return store == nullptr; }
  // The device whose memory a flow table for this engine belongs in, or -1
  // (host memory: cpu).
  virtual int flow_device() const { return -1; }
  // Safe to call from any thread.
  virtual GpuCounters counters() const = 0;
  // What the device measures of a batch (diagnostics): device_timing.h.
};

// Why GPU modes cannot run here, or "" when a device is usable.
std::string gpu_unavailable_reason(int device_id);
// CUDA devices this machine has (0 without any, or without the toolkit).
int gpu_device_count();

// Factories: nullptr with a message on failure (no device, out of memory...).
// make_engine() is the one the element uses: any mode.
std::unique_ptr<Engine> make_cpu_engine(unsigned threads, bool pipelined = false); // cpu_engine.cpp
std::unique_ptr<HostArena> make_host_arena(int device_id, size_t bytes, HostMemoryKind kind,
                                           std::string *error);
std::unique_ptr<Engine> make_gpu_engine(Mode mode, const EngineSettings &settings,
                                           std::string *error);

inline std::unique_ptr<Engine> make_engine(Mode mode, const EngineSettings &settings,
                                           std::string *error) {
  return mode == Mode::Cpu ? make_cpu_engine(settings.cpu_threads, settings.cpu_pipelined)
                           : make_gpu_engine(mode, settings, error);
}

// A flow table of `capacity` slots in device memory (flow_meter.h's
// FlowStore), for the engines of `device_id`; nullptr with a message on
// failure.
std::unique_ptr<FlowStore> make_device_flow_store(int device_id, uint32_t capacity,
                                                  std::string *error);

// Device memory in use on `device_id` (total - free), for leak checks; -1 if unknown.
int64_t device_memory_used(int device_id);

} // namespace gpp
