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
  slots_ = DeviceMemory(static_cast<size_t>(capacity) * sizeof(FlowSlot));
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
  // Updates the engines queued may still run: the memory waits for them.
  if (stream_.get()) cuda_release(cudaStreamSynchronize(stream_.get()));
}

cudaError_t DeviceFlowStore::reserve(uint32_t max_packets) {
  cudaError_t e = cudaSetDevice(device_);
  if (e == cudaSuccess)
    e = slot_of_.reserve(static_cast<size_t>(std::max(max_packets, 1u)) * sizeof(uint32_t),
                         stream_.get());
  return e == cudaSuccess ? cudaStreamSynchronize(stream_.get()) : e;
}

cudaError_t DeviceFlowStore::launch_update(const GppResult *records, uint32_t count) {
  cudaError_t e = slot_of_.reserve(static_cast<size_t>(std::max(count, 1u)) * sizeof(uint32_t),
                                   stream_.get());
  if (e != cudaSuccess) return e;
  return launch_flow_update(view(), records, count, slot_of_.get<uint32_t>(),
                            counts_.get<FlowLaunchCounts>(), stream_.get());
}

cudaError_t DeviceFlowStore::update_after(cudaStream_t batch_stream, const GppResult *records,
                                          uint32_t count) {
  if (count == 0) return cudaSuccess;
  cudaError_t e;
  if ((e = cudaEventRecord(ready_.get(), batch_stream)) != cudaSuccess ||
      (e = cudaStreamWaitEvent(stream_.get(), ready_.get(), 0)) != cudaSuccess ||
      (e = launch_update(records, count)) != cudaSuccess ||
      (e = cudaEventRecord(done_.get(), stream_.get())) != cudaSuccess)
    return e;
  return cudaStreamWaitEvent(batch_stream, done_.get(), 0);
}

bool DeviceFlowStore::sync(const char *what, std::string *error) {
  const cudaError_t e = cudaStreamSynchronize(stream_.get());
  if (e == cudaSuccess) return true;
  if (error)
    *error = std::string("GPU flow table (") + what + "): " + cudaGetErrorName(e) + " (" +
             cudaGetErrorString(e) + ")";
  return false;
}

// Every step below runs on the table's stream after the updates queued
// before it, and waits for itself: sweeps are rare, and their callers need
// the answer.

bool DeviceFlowStore::settle(FlowCounters &c, std::string *error) {
  std::string why;
  auto *host = host_words_.get<FlowLaunchCounts>();
  if (!cuda_ok(cudaSetDevice(device_), "cudaSetDevice", &why) ||
      !cuda_ok(cudaMemcpyAsync(host, counts_.get(), sizeof *host, cudaMemcpyDeviceToHost,
                               stream_.get()),
               "cudaMemcpyAsync", &why) ||
      !cuda_ok(cudaMemsetAsync(counts_.get(), 0, counts_.size(), stream_.get()),
               "cudaMemsetAsync", &why)) {
    if (error) *error = "GPU flow table (counts): " + why;
    return false;
  }
  if (!sync("counts", error)) return false;
  c.packets_not_ip += host->not_ip;
  c.packets_untracked += host->no_room;
  c.flows_created += host->created;
  return true;
}

bool DeviceFlowStore::end_flows(const FlowEndRule &rule, uint16_t seed,
                                std::vector<GppFlowRecord> &out, std::string *error) {
  auto *count = reinterpret_cast<uint32_t *>(host_words_.get<uint8_t>() + sizeof(FlowLaunchCounts));
  std::string why;
  if (!cuda_ok(cudaSetDevice(device_), "cudaSetDevice", &why)) {
    if (error) *error = "GPU flow table (sweep): " + why;
    return false;
  }
  // A chunk of records at a time; a flow past the chunk stays live for the
  // next launch.
  do {
    if (!cuda_ok(cudaMemsetAsync(end_count_.get(), 0, sizeof(uint32_t), stream_.get()),
                 "cudaMemsetAsync", &why) ||
        !cuda_ok(launch_flow_end(view(), rule, seed, end_records_.get<GppFlowRecord>(),
                                 kEndChunk, end_count_.get<uint32_t>(), stream_.get()),
                 "launching the sweep", &why) ||
        !cuda_ok(cudaMemcpyAsync(count, end_count_.get(), sizeof(uint32_t),
                                 cudaMemcpyDeviceToHost, stream_.get()),
                 "cudaMemcpyAsync", &why)) {
      if (error) *error = "GPU flow table (sweep): " + why;
      return false;
    }
    if (!sync("sweep", error)) return false;
    const uint32_t got = std::min(*count, kEndChunk);
    if (got &&
        (!cuda_ok(cudaMemcpyAsync(host_records_.get(), end_records_.get(),
                                  got * sizeof(GppFlowRecord), cudaMemcpyDeviceToHost,
                                  stream_.get()),
                  "cudaMemcpyAsync", &why) ||
         !sync("sweep records", error))) {
      if (error && !why.empty()) *error = "GPU flow table (sweep): " + why;
      return false;
    }
    const auto *records = host_records_.get<GppFlowRecord>();
    out.insert(out.end(), records, records + got);
  } while (*count > kEndChunk);
  return true;
}

bool DeviceFlowStore::live_ages(std::vector<FlowAge> &out, std::string *error) {
  // Rare (a full table): temporary memory is fine here.
  try {
    GPP_CUDA_TRY(cudaSetDevice(device_));
    DeviceMemory ages(static_cast<size_t>(capacity_) * sizeof(FlowAge));
    auto *count = reinterpret_cast<uint32_t *>(host_words_.get<uint8_t>() + sizeof(FlowLaunchCounts));
    GPP_CUDA_TRY(cudaMemsetAsync(end_count_.get(), 0, sizeof(uint32_t), stream_.get()));
    GPP_CUDA_TRY(launch_flow_ages(view(), ages.get<FlowAge>(), end_count_.get<uint32_t>(),
                                  stream_.get()));
    GPP_CUDA_TRY(cudaMemcpyAsync(count, end_count_.get(), sizeof(uint32_t),
                                 cudaMemcpyDeviceToHost, stream_.get()));
    GPP_CUDA_TRY(cudaStreamSynchronize(stream_.get()));
    const size_t first = out.size();
    out.resize(first + *count);
    GPP_CUDA_TRY(cudaMemcpyAsync(out.data() + first, ages.get(), *count * sizeof(FlowAge),
                                 cudaMemcpyDeviceToHost, stream_.get()));
    GPP_CUDA_TRY(cudaStreamSynchronize(stream_.get()));
    return true;
  } catch (const CudaError &e) {
    if (error) *error = std::string("GPU flow table (eviction): ") + e.what();
    return false;
  }
}

bool DeviceFlowStore::rebuild(std::string *error) {
  try {
    GPP_CUDA_TRY(cudaSetDevice(device_));
    DeviceMemory fresh(slots_.size());
    GPP_CUDA_TRY(cudaMemsetAsync(fresh.get(), 0, fresh.size(), stream_.get()));
    GPP_CUDA_TRY(launch_flow_reinsert(view(), FlowTableView{fresh.get<FlowSlot>(), capacity_},
                                      stream_.get()));
    GPP_CUDA_TRY(cudaStreamSynchronize(stream_.get()));
    std::swap(slots_, fresh);
    return true;
  } catch (const CudaError &e) {
    if (error) *error = std::string("GPU flow table (rebuild): ") + e.what();
    return false;
  }
}

bool DeviceFlowStore::read_slots(std::vector<FlowSlot> &out, std::string *error) {
  out.resize(capacity_);
  std::string why;
  if (!cuda_ok(cudaSetDevice(device_), "cudaSetDevice", &why) ||
      !cuda_ok(cudaMemcpyAsync(out.data(), slots_.get(), slots_.size(), cudaMemcpyDeviceToHost,
                               stream_.get()),
               "cudaMemcpyAsync", &why)) {
    if (error) *error = "GPU flow table (read): " + why;
    return false;
  }
  return sync("read", error);
}

bool DeviceFlowStore::write_slots(const std::vector<FlowSlot> &slots, std::string *error) {
  if (slots.size() != capacity_) {
    if (error) *error = "flow table sizes differ";
    return false;
  }
  std::string why;
  if (!cuda_ok(cudaSetDevice(device_), "cudaSetDevice", &why) ||
      !cuda_ok(cudaMemcpyAsync(slots_.get(), slots.data(), slots_.size(), cudaMemcpyHostToDevice,
                               stream_.get()),
               "cudaMemcpyAsync", &why)) {
    if (error) *error = "GPU flow table (write): " + why;
    return false;
  }
  return sync("write", error);
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
