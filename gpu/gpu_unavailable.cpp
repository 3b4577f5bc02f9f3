// Builds without the CUDA toolkit: every GPU factory explains why it cannot help.
#include "engine.h"
#include "flow_meter.h"

namespace gpp {

static const char kNoCuda[] =
    "this gpupacket was built without the CUDA toolkit (meson -Dcuda=disabled, or no nvcc "
    "found); rebuild with the toolkit for GPU modes";

std::string gpu_unavailable_reason(int) { return kNoCuda; }

int gpu_device_count() { return 0; }

std::unique_ptr<HostArena> make_host_arena(int, size_t, HostMemoryKind, std::string *error) {
  *error = kNoCuda;
  return nullptr;
}

std::unique_ptr<HostRegistration> register_host_memory(void *, size_t, std::string *error) {
  *error = kNoCuda;
  return nullptr;
}

std::unique_ptr<Engine> make_gpu_engine(Mode, const EngineSettings &, std::string *error) {
  *error = kNoCuda;
  return nullptr;
}

std::unique_ptr<FlowStore> make_device_flow_store(int, uint32_t, std::string *error) {
  *error = kNoCuda;
  return nullptr;
}

int64_t device_memory_used(int) { return -1; }

} // namespace gpp
