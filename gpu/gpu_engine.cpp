// GPU engines and the pinned host arena (host code; CUDA runtime API only).
#include <dlfcn.h>
#include <emmintrin.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "cuda_util.h"
#include "device_flow_store.h"
#include "device_timing.h"
#include "engine.h"
#include "first_fit_arena.h"
#include "packet_kernels.h"
#include "sharded_engine.h"

namespace gpp {
namespace {

// Written by the submitting thread, read by whoever asks for stats.
class AtomicCounters {
public:
  void add(uint64_t h2d, uint64_t d2h) {
    h2d_.fetch_add(h2d, std::memory_order_relaxed);
    d2h_.fetch_add(d2h, std::memory_order_relaxed);
  }
  GpuCounters get() const {
    return {h2d_.load(std::memory_order_relaxed), d2h_.load(std::memory_order_relaxed)};
  }

private:
  std::atomic<uint64_t> h2d_{0}, d2h_{0};
};

std::string size_text(size_t bytes) {
  return std::to_string(bytes) + " bytes (" + std::to_string(bytes >> 20) + " MiB)";
}

// ---- waiting for the GPU ------------------------------------------------

bool wait_event(cudaEvent_t event, WaitStrategy wait, std::string *error) {
  cudaError_t e;
  if (wait == WaitStrategy::Block) {
    e = cudaEventSynchronize(event);
  } else {
    while ((e = cudaEventQuery(event)) == cudaErrorNotReady)
      if (wait == WaitStrategy::Yield) sched_yield();
  }
  if (e != cudaSuccess) {
    *error = std::string("GPU batch failed: ") + cudaGetErrorName(e) + " (" +
             cudaGetErrorString(e) + ")";
    return false;
  }
  return true;
}

// ---- rule and pattern sets on the device ----------------------------------

// Keeps the device copy of one kind of classification blob (ACL rules, DPI
// automata): uploaded once per set (blobs carry a generation number), not
// per batch, after `quiesce` saw every batch that may read the old one finish
// (for a persistent kernel, quiesce also stops it).  Allocation and release
// are stream-ordered: cudaMalloc/cudaFree could wait for every kernel on the
// device, a persistent kernel of another element included.
class DeviceBlob {
public:
  template <typename Quiesce>
  bool translate(const uint8_t *&ptr, uint64_t generation, uint32_t size, const char *what,
                 Quiesce &&quiesce, std::string *error) {
    if (!ptr) return true;
    if (generation != generation_) {
      if (!quiesce(error)) return false;
      generation_ = 0;
      // A plain cudaMemcpy from pageable memory may return before the data
      // reaches the device: copy on a stream of our own and wait for it.
      std::string why;
      if (!cuda_ok(blob_.reserve(size, upload_.get()), "cudaMallocAsync", &why) ||
          !cuda_ok(cudaMemcpyAsync(blob_.get(), ptr, size, cudaMemcpyHostToDevice, upload_.get()),
                   "cudaMemcpyAsync", &why) ||
          !cuda_ok(cudaStreamSynchronize(upload_.get()), "cudaStreamSynchronize", &why)) {
        *error = std::string("uploading the ") + what + ": " + why;
        return false;
      }
      generation_ = generation;
    }
    ptr = blob_.get<uint8_t>();
    return true;
  }

private:
  Stream upload_;
  StreamOrderedMemory blob_; // after upload_: released before it
  uint64_t generation_ = 0;
};

// The ACL and DPI sets of a config, on the device.
class DeviceSets {
public:
  template <typename Quiesce>
  bool translate(CoreConfig &cfg, Quiesce &&quiesce, std::string *error) {
    if (cfg.acl) {
      const auto *h = reinterpret_cast<const AclBlobHeader *>(cfg.acl);
      if (!acl_.translate(cfg.acl, h->generation, h->total_size, "ACL rule set", quiesce, error))
        return false;
    }
    if (cfg.dpi) {
      const auto *h = reinterpret_cast<const DpiBlobHeader *>(cfg.dpi);
      if (!dpi_.translate(cfg.dpi, h->generation, h->total_size, "DPI patterns", quiesce, error))
        return false;
    }
    return true;
  }

private:
  DeviceBlob acl_, dpi_;
};

// ---- streams, zerocopy and graph: one CUDA stream per slot ---------------

// A batch in flight: its stream, completion event, and device buffers.
struct StreamSlot {
  Stream stream;
  Event done;
  StreamOrderedMemory batch;   // streams / graph, on `stream`
  StreamOrderedMemory results; // streams / graph, on `stream`
  GraphExec graph;      // graph
  cudaGraphNode_t h2d = nullptr, kernel = nullptr, d2h = nullptr;
  void *kernel_func = nullptr; // the graph's kernel (which build: packet_kernels.cu)
  ProcessKernelArgs args; // graph: kernel node arguments (stable address)

  explicit StreamSlot(unsigned event_flags) : done(event_flags) {}
};

class StreamEngine final : public Engine {
public:
  // A slot's device buffers are sized here for a slot's share of
  // max_batch_bytes (at most kPresizeBytes); a larger batch grows them with
  // the stream-ordered allocator, which never waits for other kernels.
  static constexpr size_t kPresizeBytes = 8u << 20;

  StreamEngine(Mode mode, const EngineSettings &s)
      : mode_(mode), wait_(s.wait), device_(s.device_id), records_to_host_(s.records_to_host) {
    const unsigned flags = cudaEventDisableTiming |
                           (s.wait == WaitStrategy::Block ? cudaEventBlockingSync : 0);
    const unsigned count = std::max(1u, s.num_streams);
    const size_t presize = std::min(kPresizeBytes, s.max_batch_bytes / count);
    for (unsigned i = 0; i < count; ++i) {
      slots_.push_back(std::make_unique<StreamSlot>(flags));
      if (mode != Mode::ZeroCopy) {
        StreamSlot &slot = *slots_.back();
        // Results: 128 bytes a packet, at most ~2x the batch (64-byte frames).
        GPP_CUDA_TRY(slot.batch.reserve(presize, slot.stream.get()));
        GPP_CUDA_TRY(slot.results.reserve(2 * presize, slot.stream.get()));
        // Stream-ordered: ready before the first batch without waiting for
        // other kernels (another element's persistent one never ends).
        GPP_CUDA_TRY(cudaStreamSynchronize(slot.stream.get()));
      }
    }
  }

  Mode mode() const override { return mode_; }
  unsigned slots() const override { return static_cast<unsigned>(slots_.size()); }
  bool writes_records() const override { return records_to_host_; }
  GpuCounters counters() const override { return counters_.get(); }
  int flow_device() const override { return device_; }
  bool attach_flows(FlowStore *store) override {
    auto *device_store = dynamic_cast<DeviceFlowStore *>(store);
    if (store && (!device_store || device_store->device() != device_)) return false;
    flows_ = device_store;
    if (flows_) *flows_->step_guard() = {}; // its steps run beside these kernels
    return true;
  }

  bool submit(const uint8_t *batch, size_t batch_size, uint32_t count, const CoreConfig &cfg,
              GppResult *results, std::string *error) override {
    // The streaming thread may not be the one that made the engine: CUDA's
    // current device is per thread.
    if (!cuda_ok(cudaSetDevice(device_), "cudaSetDevice", error)) return false;
    CoreConfig device_cfg = cfg;
    if (!sets_.translate(device_cfg, [this](std::string *err) { return quiesce(err); }, error))
      return false;
    const uint32_t acl_tuples = acl_tuple_count(cfg.acl);
    StreamSlot &slot = *slots_[head_ % slots_.size()];
    const size_t results_size = results_bytes(count, cfg);
    cudaStream_t st = slot.stream.get();
    // With a flow table, the batch kernel counts each packet into it.
    const FlowDeviceTarget flows = flows_ ? flows_->batch_target() : FlowDeviceTarget{};
    bool ok = true;
    if (count == 0) {
      // Nothing to compute; the event still marks the slot's place in order.
    } else if (mode_ == Mode::ZeroCopy) {
      ok = cuda_ok(launch_process_batch_zerocopy(batch, count, device_cfg, acl_tuples,
                                                 records_to_host_ ? results : nullptr, st, flows),
                   "launching the zero-copy kernel", error) &&
           counted(st, error);
    } else {
      // Device buffers grow to the largest batch seen (the slot is idle here).
      ok = cuda_ok(slot.batch.reserve(batch_size, st), "growing a slot's batch buffer", error) &&
           cuda_ok(slot.results.reserve(std::max(results_size, sizeof(GppResult)), st),
                   "growing a slot's results buffer", error);
      if (ok && mode_ == Mode::Streams)
        ok = cuda_ok(cudaMemcpyAsync(slot.batch.get(), batch, batch_size, cudaMemcpyHostToDevice,
                                     st),
                     "copying a batch to the device", error) &&
             cuda_ok(launch_process_batch(slot.batch.get<uint8_t>(), count, device_cfg,
                                          acl_tuples, slot.results.get<GppResult>(), st, flows),
                     "launching the kernel", error) &&
             counted(st, error) &&
             (!records_to_host_ ||
              cuda_ok(cudaMemcpyAsync(results, slot.results.get(), results_size,
                                      cudaMemcpyDeviceToHost, st),
                      "copying results to the host", error));
      else if (ok)
        ok = replay_graph(slot, batch, batch_size, count, device_cfg, acl_tuples, flows, results,
                          results_size, error) &&
             counted(st, error);
    }
    if (!ok || !cuda_ok(cudaEventRecord(slot.done.get(), st), "cudaEventRecord", error))
      return false;
    // Copy engines (streams, graph) or the kernel over PCIe (zerocopy) move these.
    counters_.add(batch_size, records_to_host_ ? results_size : 0);
    ++head_; // only a started batch takes a place in the order
    return true;
  }

  bool wait_oldest(std::string *error) override {
    if (!cuda_ok(cudaSetDevice(device_), "cudaSetDevice", error)) return false;
    StreamSlot &slot = *slots_[tail_++ % slots_.size()];
    return wait_event(slot.done.get(), wait_, error);
  }

private:
  // With a flow table attached: tells it the batch queued on `st` counts
  // into it (its sweeps wait for that).
  bool counted(cudaStream_t st, std::string *error) {
    return !flows_ || cuda_ok(flows_->counted_on(st), "marking a batch for the GPU flow table",
                              error);
  }

  // Waits for every batch in flight (before the ACL blob they read goes away).
  bool quiesce(std::string *error) {
    for (auto &slot : slots_)
      if (!cuda_ok(cudaStreamSynchronize(slot->stream.get()), "cudaStreamSynchronize", error))
        return false;
    return true;
  }

  // The copy-kernel-copy sequence is built once per slot, instantiated once,
  // and each batch only updates its three nodes (cheap: DESIGN.md measured
  // 1.7 us of CPU for the three updates) before a replay.  Built node by node
  // rather than captured so the node handles are at hand.
  bool replay_graph(StreamSlot &slot, const uint8_t *batch, size_t batch_size, uint32_t count,
                    const CoreConfig &cfg, uint32_t acl_tuples, const FlowDeviceTarget &flows,
                    GppResult *results, size_t results_size, std::string *error) {
    slot.args.batch = slot.batch.get<uint8_t>();
    slot.args.packet_count = count;
    slot.args.cfg = cfg;
    slot.args.acl_tuples = acl_tuples;
    slot.args.flows = flows;
    slot.args.results = slot.results.get<GppResult>();
    cudaKernelNodeParams kernel_params;
    make_process_kernel_node(&slot.args, &kernel_params);
    // A set with DPI and one without launch different builds of the kernel:
    // a graph is built again for the other (the slot is idle here).
    if (slot.graph.get() && kernel_params.func != slot.kernel_func) slot.graph = GraphExec();
    slot.kernel_func = kernel_params.func;
    // Empty batches never get here: graphs cannot hold zero-byte copies.
    const size_t d2h_size = results_size;
    GppResult *d2h_dst = results;
    if (!slot.graph.get()) {
      cudaGraph_t graph = nullptr;
      if (!cuda_ok(cudaGraphCreate(&graph, 0), "cudaGraphCreate", error)) return false;
      cudaGraphExec_t exec = nullptr;
      // Without records to the host (flows only) the graph ends at the kernel.
      const bool built =
          cuda_ok(cudaGraphAddMemcpyNode1D(&slot.h2d, graph, nullptr, 0, slot.batch.get(), batch,
                                           batch_size, cudaMemcpyHostToDevice),
                  "adding the graph's copy in", error) &&
          cuda_ok(cudaGraphAddKernelNode(&slot.kernel, graph, &slot.h2d, 1, &kernel_params),
                  "adding the graph's kernel", error) &&
          (!records_to_host_ ||
           cuda_ok(cudaGraphAddMemcpyNode1D(&slot.d2h, graph, &slot.kernel, 1, d2h_dst,
                                            slot.results.get(), d2h_size, cudaMemcpyDeviceToHost),
                   "adding the graph's copy out", error)) &&
          cuda_ok(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate", error);
      slot.graph = GraphExec(graph, exec); // owns what was made, also on failure
      if (!built) return false;
    } else {
      cudaGraphExec_t exec = slot.graph.get();
      if (!cuda_ok(cudaGraphExecMemcpyNodeSetParams1D(exec, slot.h2d, slot.batch.get(), batch,
                                                      batch_size, cudaMemcpyHostToDevice),
                   "updating the graph's copy in", error) ||
          !cuda_ok(cudaGraphExecKernelNodeSetParams(exec, slot.kernel, &kernel_params),
                   "updating the graph's kernel", error) ||
          (records_to_host_ &&
           !cuda_ok(cudaGraphExecMemcpyNodeSetParams1D(exec, slot.d2h, d2h_dst,
                                                       slot.results.get(), d2h_size,
                                                       cudaMemcpyDeviceToHost),
                    "updating the graph's copy out", error)))
        return false;
    }
    return cuda_ok(cudaGraphLaunch(slot.graph.get(), slot.stream.get()), "cudaGraphLaunch", error);
  }

  Mode mode_;
  WaitStrategy wait_;
  int device_;
  bool records_to_host_;
  DeviceSets sets_;
  std::vector<std::unique_ptr<StreamSlot>> slots_;
  uint64_t head_ = 0, tail_ = 0;
  AtomicCounters counters_;
  DeviceFlowStore *flows_ = nullptr;
};

// ---- persistent ---------------------------------------------------------

class PersistentEngine final : public Engine, public DeviceTiming {
public:
  // A batch takes microseconds to milliseconds; far longer means the kernel hangs.
  static constexpr std::chrono::seconds kAnswerTimeout{10};

  PersistentEngine(const EngineSettings &s, size_t max_batch_bytes)
      : wait_(s.wait), device_(s.device_id) {
    unsigned max_blocks = 0;
    GPP_CUDA_TRY(persistent_max_blocks(s.device_id, &max_blocks));
    int sms = 0;
    GPP_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, s.device_id));
    blocks_ = s.persistent_blocks ? s.persistent_blocks : static_cast<unsigned>(sms);
    if (blocks_ > max_blocks)
      throw std::runtime_error("persistent-blocks=" + std::to_string(blocks_) +
                               " exceeds the " + std::to_string(max_blocks) +
                               " blocks that can be resident at once on this GPU");
    static_assert(kPersistentMaxSlots == kMaxNumStreams, "a queue slot for every batch in flight");
    slots_ = std::min(kPersistentMaxSlots, std::max(1u, s.num_streams));
    control_ = PinnedMemory(sizeof(PersistentControl), cudaHostAllocMapped | cudaHostAllocPortable);
    std::memset(control_.get(), 0, sizeof(PersistentControl));
    state_ = DeviceMemory(sizeof(PersistentDeviceState));
    // 16-byte multiple: the kernel stages whole 16-byte words.  A job's size
    // travels in 32 bits.
    batch_capacity_ =
        std::min<size_t>((std::max<size_t>(max_batch_bytes, 1 << 16) + 15) & ~size_t{15},
                         UINT32_MAX & ~15u);
    batch_staging_ = DeviceMemory(batch_capacity_ * slots_);
    GPP_CUDA_TRY(cudaHostGetDevicePointer(reinterpret_cast<void **>(&device_control_),
                                          control_.get(), 0));
    idle_sleep_ns_ = s.wait == WaitStrategy::Spin ? 0 : 500;
    // The kernel starts with the first batch, when the core settings are known.
  }

  ~PersistentEngine() override {
    release_step_guard();
    // A kernel that does not stop (a bug, or a GPU taken away) must not hang
    // the pipeline's teardown: then the memory it may still touch is
    // deliberately leaked.  Never throws.
    std::string error;
    if (!stop_kernel(&error)) {
      new PinnedMemory(std::move(control_));
      new DeviceMemory(std::move(state_));
      new DeviceMemory(std::move(batch_staging_));
      new DeviceSets(std::move(sets_));
      new Stream(std::move(stream_));
    }
  }

  Mode mode() const override { return Mode::Persistent; }
  unsigned slots() const override { return slots_; }
  GpuCounters counters() const override { return counters_.get(); }
  // The flow table on the device: the resident kernel counts each job's
  // packets into it.  Kernels launched beside the resident one, on another
  // stream, do not run (seen on the H200), so the table's steps (sweeps,
  // eviction, rebuilds: rare) stop the kernel first; the next batch
  // relaunches it, with the table where it is then.
  int flow_device() const override { return device_; }
  bool attach_flows(FlowStore *store) override {
    auto *device_store = dynamic_cast<DeviceFlowStore *>(store);
    if (store && (!device_store || device_store->device() != device_)) return false;
    release_step_guard();
    flows_ = device_store;
    if (flows_) {
      step_guard_ = flows_->step_guard();
      step_guard_->owner = this;
      step_guard_->before = [this](std::string *error) { return finish_and_stop(error); };
    }
    return true;
  }

  bool submit(const uint8_t *batch, size_t batch_size, uint32_t count, const CoreConfig &cfg,
              GppResult *results, std::string *error) override {
    if (batch_size > batch_capacity_) {
      *error = "batch of " + size_text(batch_size) +
               " exceeds the persistent kernel's staging (" + size_text(batch_capacity_) +
               "); raise pool-size";
      return false;
    }
    if (count == kPersistentStopJob) { // that count means "stop" to the kernel
      *error = "a batch of " + std::to_string(count) + " packets cannot be posted";
      return false;
    }
    const uint64_t batch_bits = reinterpret_cast<uintptr_t>(batch);
    const uint64_t results_bits = reinterpret_cast<uintptr_t>(results);
    if ((batch_bits | results_bits) >> kPersistentTagShift) {
      *error = "pinned buffers above 2^48 cannot be posted to the persistent kernel";
      return false;
    }
    // New rule sets or settings: finish the batches in flight, then restart
    // the kernel with them (a fresh launch also has clean L1 caches).
    // Posting a batch makes no CUDA call; this slow path does (and the
    // streaming thread may not be the one that made the engine).
    auto drain = [this](std::string *err) { return finish_and_stop(err); };
    CoreConfig device_cfg = cfg;
    if (!sets_.translate(device_cfg, drain, error)) return false;
    const FlowDeviceTarget flows = flows_ ? flows_->batch_target() : FlowDeviceTarget{};
    if (running_ &&
        (!same_config(device_cfg, running_cfg_) || !same_flows(flows, running_flows_)) &&
        !drain(error))
      return false;
    if (!running_ && !start_kernel(device_cfg, flows, acl_tuple_count(cfg.acl), error)) return false;

    const uint64_t ticket = head_++;
    write_inline(control()->jobs[ticket % slots_], ticket, batch, static_cast<uint32_t>(batch_size));
    post(ticket, count, static_cast<uint32_t>(batch_size),
         reinterpret_cast<const GppBatchHeader *>(batch)->linktype, batch_bits, results_bits);
    counters_.add(batch_size, results_bytes(count, cfg));
    return true;
  }

  // EOS, flush: the kernel stops polling; its staging, control block and
  // device sets stay for the next submit, which relaunches it.
  bool idle(std::string *error) override {
    return !running_ || (cuda_ok(cudaSetDevice(device_), "cudaSetDevice", error) &&
                         stop_kernel(error));
  }

  bool wait_oldest(std::string *error) override {
    const uint64_t ticket = tail_++;
    if (!wait_answer(ticket, /*poll_stream=*/true, error)) return false;
    const int32_t job_error = control()->jobs[ticket % slots_].answer.error;
    last_device_ns_.store(control()->jobs[ticket % slots_].answer.device_ns,
                          std::memory_order_relaxed);
    static_assert(kPersistentPhases == std::tuple_size<DevicePhases>::value,
                  "PersistentPhases are DeviceTiming::last_device_phases");
    for (int k = 0; k < kPersistentPhases; ++k)
      last_phases_[k].store(control()->jobs[ticket % slots_].phases.ns[k], std::memory_order_relaxed);
    if (job_error != kPersistentOk) {
      *error = "persistent kernel refused a batch (error " + std::to_string(job_error) + ")";
      return false;
    }
    return true;
  }

private:
  PersistentControl *control() { return control_.get<PersistentControl>(); }
  uint32_t last_device_ns() const override {
    return last_device_ns_.load(std::memory_order_relaxed);
  }
  DevicePhases last_device_phases() const override {
    DevicePhases ns;
    for (size_t k = 0; k < ns.size(); ++k) ns[k] = last_phases_[k].load(std::memory_order_relaxed);
    return ns;
  }

  static bool same_flows(const FlowDeviceTarget &a, const FlowDeviceTarget &b) {
    return a.table.slots == b.table.slots && a.table.capacity == b.table.capacity &&
           a.counts == b.counts;
  }

  static bool same_config(const CoreConfig &a, const CoreConfig &b) {
    return std::memcmp(a.rss_key, b.rss_key, sizeof a.rss_key) == 0 &&
           a.symmetric_rss == b.symmetric_rss && a.verify_l4_checksum == b.verify_l4_checksum &&
           a.acl_default_action == b.acl_default_action && a.acl == b.acl && a.dpi == b.dpi &&
           a.decap == b.decap && a.vxlan_ports[0] == b.vxlan_ports[0] &&
           a.vxlan_ports[1] == b.vxlan_ports[1];
  }

  // Posts job `ticket`: its batch (written before) and then its two words,
  // each tagged with the ticket.
  void post(uint64_t ticket, uint32_t count, uint32_t batch_size, uint32_t linktype,
            uint64_t batch_bits, uint64_t results_bits) {
    write_job(control()->jobs[ticket % slots_], ticket, count, batch_size, linktype, batch_bits,
              results_bits);
  }

  // A small batch into `job`'s inline words (PersistentJob), before its
  // two words announce it.
  static void write_inline(PersistentJob &job, uint64_t ticket, const uint8_t *batch,
                           uint32_t batch_size) {
    const uint32_t words = persistent_inline_words(batch_size);
    const uint32_t tag = persistent_inline_tag(ticket);
    for (uint32_t i = 0; i < words; ++i) {
      const uint32_t at = i * kPersistentInlineWordBytes;
      const uint32_t n = std::min(kPersistentInlineWordBytes, batch_size - at);
      uint32_t word[4] = {0, 0, 0, tag};
      std::memcpy(word, batch + at, n);
      store16(&job.inline_words[i], word);
    }
  }

  // Writes `job`'s words as those of job `ticket`.
  static void write_job(PersistentJob &job, uint64_t ticket, uint32_t count, uint32_t batch_size,
                        uint32_t linktype, uint64_t batch_bits, uint64_t results_bits) {
    const uint32_t tag = static_cast<uint32_t>(ticket + 1);
    const uint64_t tag16 = static_cast<uint64_t>(tag & 0xffffu) << kPersistentTagShift;
    const PersistentJobBuffers buffers{batch_bits | tag16, results_bits | tag16};
    const PersistentJobHead head{tag, count, batch_size, linktype};
    std::atomic_thread_fence(std::memory_order_release);
    store16(&job.buffers, &buffers);
    store16(&job.head, &head);
  }

  // One 16-byte store (movdqa): atomic on x86 CPUs with AVX, so the kernel
  // never reads half a word.
  static void store16(void *dst, const void *src) {
    static_assert(sizeof(PersistentJobHead) == 16 && sizeof(PersistentJobBuffers) == 16 &&
                      sizeof(uint4) == 16,
                  "job words are 16 bytes");
    __m128i v;
    std::memcpy(&v, src, 16);
    _mm_store_si128(static_cast<__m128i *>(dst), v);
  }

  bool start_kernel(const CoreConfig &cfg, const FlowDeviceTarget &flows, uint32_t acl_tuples,
                    std::string *error) {
    {
      std::string why;
      if (!cuda_ok(cudaSetDevice(device_), "cudaSetDevice", &why) ||
          !cuda_ok(cudaMemsetAsync(state_.get(), 0, sizeof(PersistentDeviceState), stream_.get()),
                   "cudaMemsetAsync", &why)) {
        *error = "starting the persistent kernel: " + why;
        return false;
      }
      // The last stop job sits in this ticket's slot, tagged as this ticket:
      // retag both its words as the ticket before, which no kernel awaits.
      write_job(control()->jobs[head_ % slots_], head_ - 1, 0, 0, 0, 0, 0);
      PersistentLaunch launch{};
      launch.control = device_control_;
      launch.state = state_.get<PersistentDeviceState>();
      launch.batch_staging = batch_staging_.get<uint8_t>();
      launch.batch_capacity = batch_capacity_;
      launch.first_ticket = head_;
      launch.slots = slots_;
      launch.blocks = blocks_;
      launch.idle_sleep_ns = idle_sleep_ns_;
      launch.acl_chunk_packets = persistent_acl_chunk_packets(acl_tuples);
      launch.cfg = cfg;
      launch.flows = flows;
      if (!cuda_ok(launch_persistent(launch, stream_.get()), "launching", &why)) {
        *error = "starting the persistent kernel: " + why;
        return false;
      }
    }
    running_ = true;
    running_cfg_ = cfg;
    running_flows_ = flows;
    return true;
  }

  // Asks the kernel to exit, after the jobs posted before, and waits for it
  // (bounded).
  bool stop_kernel(std::string *error) {
    if (!running_) return true;
    // The stop job's slot must be free: its last job answered.
    if (head_ >= slots_ && !wait_answer(head_ - slots_, /*poll_stream=*/true, error)) return false;
    post(head_, kPersistentStopJob, 0, 0, 0, 0);
    const auto deadline = std::chrono::steady_clock::now() + kAnswerTimeout;
    cudaError_t e;
    while ((e = cudaStreamQuery(stream_.get())) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() > deadline) {
        *error = "persistent kernel did not stop within " +
                 std::to_string(kAnswerTimeout.count()) + " s";
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    running_ = false;
    return cuda_ok(e, "persistent kernel", error);
  }

  // Waits until the kernel has answered job `ticket`.
  bool wait_answer(uint64_t ticket, bool poll_stream, std::string *error) {
    auto *done =
        reinterpret_cast<std::atomic<uint64_t> *>(&control()->jobs[ticket % slots_].answer.done);
    // A health check (is the kernel still alive? too late?) costs a driver
    // call of microseconds: once a millisecond, never on the fast path.
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto next_check = start + std::chrono::milliseconds(1);
    for (unsigned spins = 0; done->load(std::memory_order_acquire) < ticket + 1; ++spins) {
      if ((spins & 255) == 255 && clock::now() >= next_check) {
        next_check = clock::now() + std::chrono::milliseconds(1);
        // The kernel may have died (e.g. a fault): then the stream reports it.
        const cudaError_t e = poll_stream ? cudaStreamQuery(stream_.get()) : cudaErrorNotReady;
        // A kernel that answered and was then stopped (a restart by the
        // submitting thread meanwhile) has ended normally for this job.
        if (e == cudaSuccess && done->load(std::memory_order_acquire) >= ticket + 1) break;
        if (e != cudaErrorNotReady)
          return cuda_ok(e == cudaSuccess ? cudaErrorLaunchFailure : e,
                       "persistent kernel stopped unexpectedly", error);
        if (clock::now() - start > kAnswerTimeout) {
          *error = "persistent kernel did not answer batch " + std::to_string(ticket) +
                   " within " + std::to_string(kAnswerTimeout.count()) + " s";
          return false;
        }
      }
      if (wait_ == WaitStrategy::Yield) sched_yield();
      else if (wait_ == WaitStrategy::Block) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return true;
  }

  // The flow table's steps no longer stop this engine's kernel (the table
  // may outlive the engine, or the engine the table).
  void release_step_guard() {
    if (step_guard_ && step_guard_->owner == this) *step_guard_ = {};
    step_guard_.reset();
  }

  // Finishes the batches in flight (their results stay for wait_oldest),
  // then stops the kernel; the next submit relaunches it.
  bool finish_and_stop(std::string *error) {
    return cuda_ok(cudaSetDevice(device_), "cudaSetDevice", error) && quiesce(error) &&
           stop_kernel(error);
  }

  // Waits until the kernel has answered every submitted job (results stay
  // for wait_oldest to collect).
  bool quiesce(std::string *error) {
    for (uint64_t t = tail_.load(); t < head_; ++t)
      if (!wait_answer(t, running_, error)) return false;
    return true;
  }

  WaitStrategy wait_;
  int device_;
  DeviceSets sets_;
  unsigned blocks_ = 0;
  unsigned slots_ = 0;
  unsigned idle_sleep_ns_ = 0;
  Stream stream_;
  PinnedMemory control_;
  PersistentControl *device_control_ = nullptr;
  DeviceMemory state_;
  size_t batch_capacity_ = 0; // per slot
  DeviceMemory batch_staging_;
  bool running_ = false;
  CoreConfig running_cfg_{};
  FlowDeviceTarget running_flows_{};
  DeviceFlowStore *flows_ = nullptr;
  std::shared_ptr<DeviceFlowStore::StepGuard> step_guard_;
  uint64_t head_ = 0;             // submitting thread
  std::atomic<uint64_t> tail_{0}; // waiting thread; quiesce reads it
  std::atomic<uint32_t> last_device_ns_{0};
  std::atomic<uint32_t> last_phases_[kPersistentPhases] = {};
  AtomicCounters counters_;
};

// Why the NVIDIA driver's user-space library cannot be loaded ("" if it
// can): without it the runtime reports cudaErrorInsufficientDriver, whose
// text ("driver version is insufficient") would send a user to upgrade a
// driver that is not there.
std::string driver_library_missing() {
  void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib) {
    dlclose(lib);
    return "";
  }
  const char *why = dlerror();
  return why ? why : "libcuda.so.1 cannot be loaded";
}

} // namespace

std::string gpu_unavailable_reason(int device_id) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorInsufficientDriver) {
    const std::string missing = driver_library_missing();
    if (!missing.empty())
      return "no usable NVIDIA driver, so no CUDA GPU here (" + missing + ")";
  }
  if (e == cudaErrorNoDevice)
    return "the NVIDIA driver sees no CUDA device (cudaErrorNoDevice; check CUDA_VISIBLE_DEVICES "
           "if it is set)";
  if (e != cudaSuccess)
    return std::string("CUDA could not initialise: ") + cudaGetErrorName(e) + " (" +
           cudaGetErrorString(e) + ")";
  if (device_id < 0 || device_id >= count)
    return "device-id " + std::to_string(device_id) + " does not exist: this machine has " +
           std::to_string(count) + " CUDA device(s)";
  return "";
}

std::unique_ptr<HostArena> make_host_arena(int device_id, size_t bytes, HostMemoryKind kind,
                                           std::string *error) {
  std::string why = gpu_unavailable_reason(device_id);
  if (!why.empty()) {
    *error = why;
    return nullptr;
  }
  unsigned flags = cudaHostAllocPortable;
  if (kind == HostMemoryKind::WriteCombined) flags |= cudaHostAllocWriteCombined;
  if (kind == HostMemoryKind::Mapped) flags |= cudaHostAllocMapped;
  try {
    GPP_CUDA_TRY(cudaSetDevice(device_id));
    void *base = nullptr;
    GPP_CUDA_TRY(cudaHostAlloc(&base, bytes, flags));
    return std::make_unique<FirstFitArena>(base, bytes,
                                           [](void *p, size_t) { cuda_release(cudaFreeHost(p)); });
  } catch (const CudaError &e) {
    *error = "cudaHostAlloc of " + size_text(bytes) + " failed: " + e.what() +
             " (the limit is the host's lockable memory: ulimit -l and free RAM)";
    return nullptr;
  }
}

namespace {
class CudaHostRegistration final : public HostRegistration {
public:
  explicit CudaHostRegistration(void *base) : base_(base) {}
  ~CudaHostRegistration() override { cuda_release(cudaHostUnregister(base_)); }

private:
  void *base_;
};
} // namespace

std::unique_ptr<HostRegistration> register_host_memory(void *base, size_t bytes,
                                                       std::string *error) {
  std::string why = gpu_unavailable_reason(0);
  if (!why.empty()) {
    *error = why;
    return nullptr;
  }
  cudaError_t rc = cudaHostRegister(base, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
  if (rc != cudaSuccess) {
    *error = std::string("cudaHostRegister of ") + size_text(bytes) + " failed: " +
             cudaGetErrorString(rc) + " (the limit is the host's lockable memory: ulimit -l)";
    return nullptr;
  }
  auto registration = std::make_unique<CudaHostRegistration>(base);
  // Kernels get host addresses: every device must see the memory there.
  int current = 0;
  cudaGetDevice(&current);
  struct RestoreDevice {
    int device;
    ~RestoreDevice() { cuda_release(cudaSetDevice(device)); }
  } restore{current};
  const int devices = gpu_device_count();
  for (int d = 0; d < devices; ++d) {
    int same = 0;
    void *device_address = nullptr;
    if (cudaDeviceGetAttribute(&same, cudaDevAttrCanUseHostPointerForRegisteredMem, d) !=
            cudaSuccess ||
        !same || cudaSetDevice(d) != cudaSuccess ||
        cudaHostGetDevicePointer(&device_address, base, 0) != cudaSuccess ||
        device_address != base) {
      cudaGetLastError();
      *error = "device " + std::to_string(d) + " cannot read registered host memory at its host "
               "address";
      return nullptr;
    }
  }
  return registration;
}

int gpu_device_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

std::unique_ptr<Engine> make_gpu_engine(Mode mode, const EngineSettings &settings,
                                           std::string *error) {
  if (settings.device_ids.size() > 1)
    return make_sharded_engine(
        mode, settings, make_gpu_engine, make_host_arena, error,
        [](int device, unsigned *blocks, std::string *why) {
          cudaError_t e = cudaSetDevice(device); // the occupancy query is the current device's
          if (e == cudaSuccess) e = persistent_max_blocks(device, blocks);
          if (e != cudaSuccess) *why = std::string("resident blocks: ") + cudaGetErrorString(e);
          return e == cudaSuccess;
        });
  std::string why = gpu_unavailable_reason(settings.device_id);
  if (!why.empty()) {
    *error = why;
    return nullptr;
  }
  try {
    GPP_CUDA_TRY(cudaSetDevice(settings.device_id));
    GPP_CUDA_TRY(preload_kernels());
    if (mode == Mode::Persistent)
      return std::make_unique<PersistentEngine>(settings, settings.max_batch_bytes);
    if (mode == Mode::Cpu) {
      *error = "mode cpu has no GPU engine";
      return nullptr;
    }
    return std::make_unique<StreamEngine>(mode, settings);
  } catch (const std::exception &e) {
    *error = e.what();
    return nullptr;
  }
}

int64_t device_memory_used(int device_id) {
  size_t free_bytes = 0, total = 0;
  if (cudaSetDevice(device_id) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total) != cudaSuccess)
    return -1;
  return static_cast<int64_t>(total - free_bytes);
}

} // namespace gpp
