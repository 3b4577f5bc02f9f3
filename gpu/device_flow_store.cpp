#include "device_flow_store.h"

#include <algorithm>

namespace gpp {
namespace {
// The device, made current first: the members after it are made on it.
int select_device(int device) {
  GPP_CUDA_TRY(cudaSetDevice(device));
  return device;
}
} // namespace

DeviceFlowStore::DeviceFlowStore(int device, uint32_t capacity)
    : device_(select_device(device)), capacity_(capacity) {
  // Loaded now, not at a first launch that might wait for another
  // element's resident kernel to end.
  GPP_CUDA_TRY(preload_flow_kernels());
  GPP_CUDA_TRY(slots_.reserve(static_cast<size_t>(capacity) * sizeof(FlowSlot), stream_.get()));
  counts_ = DeviceMemory(sizeof(FlowLaunchCounts));
  end_records_ = DeviceMemory(kEndChunk * sizeof(GppFlowRecord));
  end_count_ = DeviceMemory(sizeof(uint32_t));
  host_records_ = PinnedMemory(kEndChunk * sizeof(GppFlowRecord), cudaHostAllocPortable);
  host_words_ = PinnedMemory(sizeof(FlowLaunchCounts) + sizeof(uint32_t), cudaHostAllocPortable);
  GPP_CUDA_TRY(cudaMemsetAsync(slots_.get(), 0, slots_.size(), stream_.get()));
  GPP_CUDA_TRY(cudaMemsetAsync(counts_.get(), 0, counts_.size(), stream_.get()));
  GPP_CUDA_TRY(cudaStreamSynchronize(stream_.get()));
}

DeviceFlowStore::~DeviceFlowStore() {
  // Batches the engines queued may still count into the table: the memory
  // waits for them; and a resident kernel that reads the table stops first
  // (freeing device memory would otherwise wait for it for ever).
  std::string ignored;
  if (step_guard_->before) step_guard_->before(&ignored);
  if (stream_.get() && after_batches() == cudaSuccess)
    cuda_release(cudaStreamSynchronize(stream_.get()));
}

cudaError_t DeviceFlowStore::counted_on(cudaStream_t batch_stream) {
  auto known = std::find_if(batch_streams_.begin(), batch_streams_.end(),
                            [&](const BatchStream &b) { return b.stream == batch_stream; });
  if (known == batch_streams_.end()) {
    // Streams of engines gone (mode switches) are forgotten once their
    // last batch is done.
    if (batch_streams_.size() >= kMaxBatchStreams)
      batch_streams_.erase(std::remove_if(batch_streams_.begin(), batch_streams_.end(),
                                          [](const BatchStream &b) {
                                            return cudaEventQuery(b.counted.get()) == cudaSuccess;
                                          }),
                           batch_streams_.end());
    try {
      batch_streams_.push_back(BatchStream{batch_stream, Event(cudaEventDisableTiming)});
    } catch (const CudaError &e) {
      return e.code();
    }
    known = batch_streams_.end() - 1;
  }
  return cudaEventRecord(known->counted.get(), batch_stream);
}

cudaError_t DeviceFlowStore::update_on(cudaStream_t batch_stream, const GppResult *records,
                                       uint32_t count, const GppTunnelInfo *tunnels) {
  if (count == 0) return cudaSuccess;
  const cudaError_t e = launch_flow_update(batch_target(), records, tunnels, count, batch_stream);
  return e == cudaSuccess ? counted_on(batch_stream) : e;
}

cudaError_t DeviceFlowStore::after_batches() {
  for (const BatchStream &b : batch_streams_) {
    const cudaError_t e = cudaStreamWaitEvent(stream_.get(), b.counted.get(), 0);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// Every step below runs on the table's stream after the batches counted
// before it and waits for itself: sweeps are rare, their callers need the
// answer, and the batches queued after a step see what it did.  Errors
// leave as "GPU flow table (step): what failed: CUDA's words".

bool DeviceFlowStore::begin(std::string *why) {
  if (step_guard_->before && !step_guard_->before(why)) return false;
  return cuda_ok(cudaSetDevice(device_), "cudaSetDevice", why) &&
         cuda_ok(after_batches(), "waiting for the batches counted so far", why);
}

bool DeviceFlowStore::copy_sync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                                std::string *why) {
  return cuda_ok(cudaMemcpyAsync(dst, src, bytes, kind, stream_.get()), "cudaMemcpyAsync", why) &&
         cuda_ok(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize", why);
}

bool DeviceFlowStore::failed(const char *step, const std::string &why, std::string *error) {
  if (error) *error = std::string("GPU flow table (") + step + "): " + why;
  return false;
}

uint32_t *DeviceFlowStore::host_count() {
  return reinterpret_cast<uint32_t *>(host_words_.get<uint8_t>() + sizeof(FlowLaunchCounts));
}

bool DeviceFlowStore::settle(FlowCounters &c, std::string *error) {
  std::string why;
  auto *host = host_words_.get<FlowLaunchCounts>();
  if (!begin(&why) ||
      !cuda_ok(cudaMemcpyAsync(host, counts_.get(), sizeof *host, cudaMemcpyDeviceToHost,
                               stream_.get()),
               "cudaMemcpyAsync", &why) ||
      !cuda_ok(cudaMemsetAsync(counts_.get(), 0, counts_.size(), stream_.get()),
               "cudaMemsetAsync", &why) ||
      !cuda_ok(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize", &why))
    return failed("counts", why, error);
  c.packets_not_ip += host->not_ip;
  c.packets_untracked += host->no_room;
  c.flows_created += host->created;
  return true;
}

bool DeviceFlowStore::end_flows(const FlowEndRule &rule, uint16_t seed,
                                std::vector<GppFlowRecord> &out, std::string *error) {
  uint32_t *count = host_count();
  std::string why;
  if (!begin(&why)) return failed("sweep", why, error);
  // A chunk of records at a time; a flow past the chunk stays live for the
  // next launch.
  do {
    if (!cuda_ok(cudaMemsetAsync(end_count_.get(), 0, sizeof(uint32_t), stream_.get()),
                 "cudaMemsetAsync", &why) ||
        !cuda_ok(launch_flow_end(view(), rule, seed, end_records_.get<GppFlowRecord>(),
                                 kEndChunk, end_count_.get<uint32_t>(), stream_.get()),
                 "launching the sweep", &why) ||
        !copy_sync(count, end_count_.get(), sizeof(uint32_t), cudaMemcpyDeviceToHost, &why))
      return failed("sweep", why, error);
    const uint32_t got = std::min(*count, kEndChunk);
    if (got && !copy_sync(host_records_.get(), end_records_.get(), got * sizeof(GppFlowRecord),
                          cudaMemcpyDeviceToHost, &why))
      return failed("sweep records", why, error);
    const auto *records = host_records_.get<GppFlowRecord>();
    out.insert(out.end(), records, records + got);
  } while (*count > kEndChunk);
  return true;
}

bool DeviceFlowStore::live_ages(std::vector<FlowAge> &out, std::string *error) {
  std::string why;
  if (!begin(&why)) return failed("eviction", why, error);
  // Rare (a full table): temporary memory, stream-ordered on the table's
  // stream (cudaMalloc and cudaFree would wait for every stream's batches).
  StreamOrderedMemory ages;
  uint32_t *count = host_count();
  if (!cuda_ok(ages.reserve(static_cast<size_t>(capacity_) * sizeof(FlowAge), stream_.get()),
               "cudaMallocAsync", &why) ||
      !cuda_ok(cudaMemsetAsync(end_count_.get(), 0, sizeof(uint32_t), stream_.get()),
               "cudaMemsetAsync", &why) ||
      !cuda_ok(launch_flow_ages(view(), ages.get<FlowAge>(), end_count_.get<uint32_t>(),
                                stream_.get()),
               "launching the age scan", &why) ||
      !copy_sync(count, end_count_.get(), sizeof(uint32_t), cudaMemcpyDeviceToHost, &why))
    return failed("eviction", why, error);
  const size_t first = out.size();
  out.resize(first + *count);
  if (!copy_sync(out.data() + first, ages.get(), *count * sizeof(FlowAge), cudaMemcpyDeviceToHost,
                 &why))
    return failed("eviction", why, error);
  return true;
}

bool DeviceFlowStore::rebuild(std::string *error) {
  std::string why;
  if (!begin(&why)) return failed("rebuild", why, error);
  // The new table, stream-ordered like the one it replaces (which is freed
  // on the same stream once the reinsert has read it).
  StreamOrderedMemory fresh;
  if (!cuda_ok(fresh.reserve(slots_.size(), stream_.get()), "cudaMallocAsync", &why) ||
      !cuda_ok(cudaMemsetAsync(fresh.get(), 0, fresh.size(), stream_.get()), "cudaMemsetAsync",
               &why) ||
      !cuda_ok(launch_flow_reinsert(view(), FlowTableView{fresh.get<FlowSlot>(), capacity_},
                                    stream_.get()),
               "launching the reinsert", &why) ||
      !cuda_ok(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize", &why))
    return failed("rebuild", why, error);
  std::swap(slots_, fresh);
  return true;
}

bool DeviceFlowStore::read_slots(std::vector<FlowSlot> &out, std::string *error) {
  out.resize(capacity_);
  std::string why;
  if (!begin(&why) ||
      !copy_sync(out.data(), slots_.get(), slots_.size(), cudaMemcpyDeviceToHost, &why))
    return failed("read", why, error);
  return true;
}

bool DeviceFlowStore::write_slots(const std::vector<FlowSlot> &slots, std::string *error) {
  if (slots.size() != capacity_) {
    if (error) *error = "flow table sizes differ";
    return false;
  }
  std::string why;
  if (!begin(&why) ||
      !copy_sync(slots_.get(), slots.data(), slots_.size(), cudaMemcpyHostToDevice, &why))
    return failed("write", why, error);
  return true;
}

std::unique_ptr<FlowStore> make_device_flow_store(int device_id, uint32_t capacity,
                                                  std::string *error) {
  try {
    return std::make_unique<DeviceFlowStore>(device_id, capacity);
  } catch (const std::exception &e) {
    *error = std::string("could not put a flow table of ") + std::to_string(capacity) +
             " slots (" + std::to_string(static_cast<size_t>(capacity) * sizeof(FlowSlot) >> 20) +
             " MiB) on CUDA device " + std::to_string(device_id) + ": " + e.what();
    return nullptr;
  }
}

} // namespace gpp
