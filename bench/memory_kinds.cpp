#include "memory_kinds.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "bench_common.h"
#include "bench_cuda.h"
#include "bench_engines.h"
#include "bench_kernels.h"

namespace gppbench {

namespace {

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};

// A host buffer of one kind, and the pointer the device uses for it.
struct HostBuffer {
  gpp::PinnedMemory pinned;
  std::unique_ptr<void, FreeDeleter> pageable;
  void *host = nullptr;
  void *device_view = nullptr; // mapped only

  HostBuffer(const std::string &kind, size_t bytes) {
    if (kind == "pageable") {
      pageable.reset(std::aligned_alloc(4096, bytes));
      if (!pageable) throw std::runtime_error("out of memory");
      host = pageable.get();
    } else {
      const unsigned flags = kind == "write-combined" ? cudaHostAllocWriteCombined
                             : kind == "mapped"       ? cudaHostAllocMapped
                                                      : cudaHostAllocDefault;
      pinned = gpp::PinnedMemory(bytes, flags);
      host = pinned.get();
      if (kind == "mapped") GPP_CUDA_TRY(cudaHostGetDevicePointer(&device_view, host, 0));
    }
    std::memset(host, 0x5a, bytes); // touch every page
  }
};

} // namespace

std::vector<MemoryKindResult> measure_memory_kinds(int device, const std::vector<size_t> &sizes,
                                                   unsigned repeats, double seconds_per_point,
                                                   void (*phase)(void *, const std::string &),
                                                   void *phase_arg) {
  std::vector<MemoryKindResult> out;
  if (sizes.empty()) return out;
  const size_t max_size = *std::max_element(sizes.begin(), sizes.end());
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) sms = 0;
  // Enough 256-thread blocks to keep many PCIe reads in flight.
  const unsigned copy_blocks = static_cast<unsigned>(std::max(1, sms) * 4);
  for (const char *kind : {"pinned", "pageable", "write-combined", "mapped"}) {
    phase(phase_arg, std::string("A: memory kinds, ") + kind);
    try {
      GPP_CUDA_TRY(cudaSetDevice(device));
      gpp::DeviceMemory dev(max_size);
      GPP_CUDA_TRY(cudaMemset(dev.get(), 0, max_size));
      HostBuffer host(kind, max_size);
      gpp::Stream stream;
      const bool mapped = std::strcmp(kind, "mapped") == 0;
      auto once = [&](size_t size, bool h2d) {
        const uint64_t t0 = now_ns();
        if (mapped)
          GPP_CUDA_TRY(h2d ? launch_copy_kernel(dev.get(), host.device_view, size, copy_blocks,
                                                stream.get())
                           : launch_copy_kernel(host.device_view, dev.get(), size, copy_blocks,
                                                stream.get()));
        else if (h2d)
          GPP_CUDA_TRY(cudaMemcpyAsync(dev.get(), host.host, size, cudaMemcpyHostToDevice,
                                       stream.get()));
        else
          GPP_CUDA_TRY(cudaMemcpyAsync(host.host, dev.get(), size, cudaMemcpyDeviceToHost,
                                       stream.get()));
        wait_stream_bounded(stream.get(), 30, kind);
        const uint64_t ns = now_ns() - t0;
        return ns ? static_cast<double>(size) / ns : kNaN; // bytes/ns = GB/s
      };
      for (size_t size : sizes) {
        MemoryKindResult r;
        r.kind = kind;
        r.bytes = size;
        for (bool h2d : {true, false}) {
          once(size, h2d); // warm-up
          std::vector<double> gbs;
          const uint64_t stop = now_ns() + static_cast<uint64_t>(seconds_per_point * 1e9);
          for (unsigned i = 0; i < repeats && (gbs.size() < 3 || now_ns() < stop); ++i)
            gbs.push_back(once(size, h2d));
          (h2d ? r.h2d_gbps : r.d2h_gbps) = median(gbs);
        }
        out.push_back(r);
      }
    } catch (const std::exception &e) {
      MemoryKindResult r;
      r.kind = kind;
      r.h2d_gbps = r.d2h_gbps = kNaN;
      r.error = e.what();
      out.push_back(r);
    }
  }
  return out;
}

} // namespace gppbench
