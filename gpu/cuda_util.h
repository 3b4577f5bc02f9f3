// RAII owners for CUDA runtime objects and the error conventions of gpu/:
// set-up paths throw CudaError (file:line and cudaGetErrorName); per-batch
// paths return a status (cuda_ok) and never call cudaMalloc or cudaFree
// (which wait for every kernel on the device).  Host-only; compiled only
// when CUDA is enabled.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

namespace gpp {

class CudaError : public std::runtime_error {
public:
  CudaError(cudaError_t code, const char *what, const char *file, int line)
      : std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " +
                           cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")"),
        code_(code) {}
  cudaError_t code() const { return code_; }

private:
  cudaError_t code_;
};

#define GPP_CUDA_TRY(call)                                                                     \
  do {                                                                                         \
    const cudaError_t gpp_status_ = (call);                                                    \
    if (gpp_status_ != cudaSuccess) throw ::gpp::CudaError(gpp_status_, #call, __FILE__, __LINE__); \
  } while (0)

// Per-batch paths return a status: true, or false with `what` and the CUDA
// error in *error.
inline bool cuda_ok(cudaError_t e, const char *what, std::string *error) {
  if (e == cudaSuccess) return true;
  *error = std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  return false;
}

// Teardown never throws; at process exit the runtime may already be gone
// (cudaErrorCudartUnloading), which is fine to ignore.  Any other failure
// (a lost device, a sticky kernel fault) is reported on stderr: this library
// has no log of its own, and a teardown error hidden here would surface
// later as a mystery.
inline void cuda_release(cudaError_t e) noexcept {
  if (e == cudaSuccess || e == cudaErrorCudartUnloading) return;
  std::fprintf(stderr, "gpupacket: CUDA teardown failed: %s (%s)\n", cudaGetErrorName(e),
               cudaGetErrorString(e));
}

// Move-only owner of a cudaStream_t.
class Stream {
public:
  Stream() { GPP_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_) cuda_release(cudaStreamDestroy(stream_));
  }
  Stream(Stream &&o) noexcept : stream_(std::exchange(o.stream_, nullptr)) {}
  Stream &operator=(Stream &&o) noexcept {
    std::swap(stream_, o.stream_);
    return *this;
  }
  cudaStream_t get() const { return stream_; }

private:
  cudaStream_t stream_ = nullptr;
};

// Move-only owner of a cudaEvent_t (timing off: cheaper to record and query).
class Event {
public:
  explicit Event(unsigned flags = cudaEventDisableTiming) {
    GPP_CUDA_TRY(cudaEventCreateWithFlags(&event_, flags));
  }
  ~Event() {
    if (event_) cuda_release(cudaEventDestroy(event_));
  }
  Event(Event &&o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
  Event &operator=(Event &&o) noexcept {
    std::swap(event_, o.event_);
    return *this;
  }
  cudaEvent_t get() const { return event_; }

private:
  cudaEvent_t event_ = nullptr;
};

// Move-only owner of memory that `Free` releases (device or pinned host).
template <cudaError_t (*Free)(void *)> class CudaMemory {
public:
  CudaMemory() = default;
  CudaMemory(CudaMemory &&o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  CudaMemory &operator=(CudaMemory &&o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~CudaMemory() {
    if (ptr_) cuda_release(Free(ptr_));
  }
  template <typename T = void> T *get() const { return static_cast<T *>(ptr_); }
  size_t size() const { return bytes_; }

protected:
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Device memory from cudaMalloc.
class DeviceMemory : public CudaMemory<cudaFree> {
public:
  DeviceMemory() = default;
  explicit DeviceMemory(size_t bytes) {
    if (bytes) GPP_CUDA_TRY(cudaMalloc(&ptr_, bytes));
    bytes_ = bytes;
  }
};

// Device memory from the stream-ordered allocator (cudaMallocAsync /
// cudaFreeAsync on `stream`, which must outlive it): unlike cudaMalloc and
// cudaFree it never waits for kernels running on the device.
class StreamOrderedMemory {
public:
  StreamOrderedMemory() = default;
  StreamOrderedMemory(StreamOrderedMemory &&o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), stream_(o.stream_), bytes_(std::exchange(o.bytes_, 0)) {}
  StreamOrderedMemory &operator=(StreamOrderedMemory &&o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(stream_, o.stream_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~StreamOrderedMemory() {
    if (ptr_) cuda_release(cudaFreeAsync(ptr_, stream_));
  }
  // Makes room for at least `bytes` on `stream` (what was there is lost);
  // the CUDA status, no exception (per-batch paths use it too).
  cudaError_t reserve(size_t bytes, cudaStream_t stream) {
    if (bytes <= bytes_ && stream == stream_) return cudaSuccess;
    *this = StreamOrderedMemory(); // free first: lower peak use
    void *p = nullptr;
    const cudaError_t e = cudaMallocAsync(&p, bytes, stream);
    if (e != cudaSuccess) return e;
    ptr_ = p;
    stream_ = stream;
    bytes_ = bytes;
    return cudaSuccess;
  }
  template <typename T = void> T *get() const { return static_cast<T *>(ptr_); }
  size_t size() const { return bytes_; }

private:
  void *ptr_ = nullptr;
  cudaStream_t stream_ = nullptr;
  size_t bytes_ = 0;
};

// Pinned host memory from cudaHostAlloc.
class PinnedMemory : public CudaMemory<cudaFreeHost> {
public:
  PinnedMemory() = default;
  PinnedMemory(size_t bytes, unsigned flags) {
    GPP_CUDA_TRY(cudaHostAlloc(&ptr_, bytes, flags));
    bytes_ = bytes;
  }
};

// Move-only owner of an instantiated CUDA graph and the graph it came from.
class GraphExec {
public:
  GraphExec() = default;
  GraphExec(cudaGraph_t graph, cudaGraphExec_t exec) : graph_(graph), exec_(exec) {}
  ~GraphExec() {
    if (exec_) cuda_release(cudaGraphExecDestroy(exec_));
    if (graph_) cuda_release(cudaGraphDestroy(graph_));
  }
  GraphExec(GraphExec &&o) noexcept
      : graph_(std::exchange(o.graph_, nullptr)), exec_(std::exchange(o.exec_, nullptr)) {}
  GraphExec &operator=(GraphExec &&o) noexcept {
    std::swap(graph_, o.graph_);
    std::swap(exec_, o.exec_);
    return *this;
  }
  cudaGraphExec_t get() const { return exec_; }

private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

} // namespace gpp
