// What an engine's device measures of the batches it runs, for diagnostics
// (gpupacket-bench splits a batch's latency with it); not part of Engine,
// which the element drives.  An engine that times its batches on the device
// implements DeviceTiming beside Engine (persistent; several devices' engine,
// from its shares'), and device_timing() finds it.  Host only, no CUDA types.
#pragma once

#include <array>
#include <cstdint>

#include "engine.h"

namespace gpp {

// A batch's GPU time by phase (DeviceTiming::last_device_phases), in this order.
constexpr const char *kDevicePhaseNames[] = {"woken", "staged", "classified", "written"};
using DevicePhases = std::array<uint32_t, sizeof(kDevicePhaseNames) / sizeof(kDevicePhaseNames[0])>;

class DeviceTiming {
public:
  virtual ~DeviceTiming() = default;
  // GPU-side time of the batch Engine::wait_oldest() last returned, in ns,
  // where the device measures it (persistent: from the kernel seeing the job
  // to its answer); 0 elsewhere.  The rest of a batch's latency is the host
  // and PCIe.  Read on the thread that waits.
  virtual uint32_t last_device_ns() const = 0;
  // Where that time went (persistent: the latest block's end of each phase
  // of kDevicePhaseNames, ns after the kernel saw the job); all 0 elsewhere.
  virtual DevicePhases last_device_phases() const = 0;
};

// The device timing of `engine`, or nullptr where it keeps none.
inline const DeviceTiming *device_timing(const Engine &engine) {
  return dynamic_cast<const DeviceTiming *>(&engine);
}

} // namespace gpp
