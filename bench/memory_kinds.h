// Section A of gpupacket-bench: host-device bandwidth by kind of host memory
// (pinned, pageable, write-combined, mapped) and transfer size.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gppbench {

struct MemoryKindResult {
  std::string kind;   // "pinned", "pageable", "write-combined", "mapped"
  size_t bytes = 0;
  double h2d_gbps = 0, d2h_gbps = 0; // 1e9 bytes/s, median; NaN when not measured
  std::string error;
};

// For each kind and size: `repeats` timed transfers each way (fewer once
// `seconds_per_point` is spent, at least 3), host wall clock from the call
// to completion (cudaStreamQuery polled, bounded).  Copies: cudaMemcpyAsync
// between the host buffer and device memory; mapped: a copy kernel reading
// (H2D) or writing (D2H) the mapped host buffer through its device pointer.
// `phase` is called before each kind (for the watchdog).
std::vector<MemoryKindResult> measure_memory_kinds(int device, const std::vector<size_t> &sizes,
                                                   unsigned repeats, double seconds_per_point,
                                                   void (*phase)(void *, const std::string &),
                                                   void *phase_arg);

} // namespace gppbench
