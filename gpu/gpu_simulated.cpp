// A simulated GPU for tests on machines without one (CI).  It implements
// engine.h with ordinary memory and a worker thread that runs the CPU core
// after a random delay, so that batches finish at odd times: enough to drive
// gpupacketproc's asynchronous paths (ordering, events, flushes, mode and
// stream changes, the pinned pool) under the sanitizers.  Linked only into
// the test build of the plugin (tests/sim), never into the installed one.
//
// GPP_SIM_INSTANT=1: submit() computes the batch itself and wait_oldest()
// returns at once, no worker and no delay: what remains of a batch's time in
// the element is then the element's own cost (for profiling it anywhere).
//
// Faults, for the element's error paths (tests/sim/test_faults.cpp): the
// environment variable GPP_SIM_FAULT, read whenever an arena or engine is
// made, names one:
//   arena      the pinned allocation fails
//   register   registering host memory (register_host_memory) fails
//   engine     engine creation fails
//   throw      engine creation throws (std::runtime_error), as an allocation
//              deep in it could: the element must turn it into an error
//   submit:N   the engine's Nth submit fails (N from 1)
//   submit-throw:N  the engine's Nth submit throws (std::runtime_error), as a
//              rule set's upload that runs out of memory could
//   wait:N     the engine's Nth wait fails
//   idle:N     the engine's Nth idle (EOS, flush) fails, as a persistent
//              kernel that does not stop would
//   ...@D      (any of them) only on device D, e.g. submit:2@1: with device-ids
//              one device fails while the others go on
//   lost:N     the device is lost at the Nth submit: that batch fails at its
//              wait and every later submit fails, as after a real device loss
//              (batches submitted before it complete)
//
// GPP_SIM_LOG=FILE: each engine appends a line to FILE when it is made
// ("made MODE"), idled ("idle MODE") and destroyed ("destroyed MODE"), so a
// test can tell an engine kept across EOS and flushes from one remade.
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cpu_engine.h"
#include "engine.h"
#include "first_fit_arena.h"
#include "flow_meter.h"
#include "sharded_engine.h"

namespace gpp {
namespace {

// Resident blocks of the persistent kernel a simulated device holds at once:
// an H200's 132 SMs, one block each.
constexpr unsigned kSimulatedResidentBlocks = 132;

struct Fault {
  enum Kind { None, Arena, Register, Engine, Throw, Submit, SubmitThrow, Wait, Idle, Lost } kind = None;
  unsigned long at = 0; // Submit, Wait, Lost: which call, from 1
  int device = -1;       // "@D": only the engines of device D (several devices); -1: every one
};

// One line of the GPP_SIM_LOG file, if one is named.
void sim_log(const char *what, Mode mode) {
  const char *path = std::getenv("GPP_SIM_LOG");
  if (!path || !*path) return;
  if (FILE *f = std::fopen(path, "a")) {
    std::fprintf(f, "%s %s\n", what, mode_name(mode));
    std::fclose(f);
  }
}

Fault fault_from_env() {
  Fault f;
  const char *text = std::getenv("GPP_SIM_FAULT");
  if (!text || !*text) return f;
  const char *colon = std::strchr(text, ':');
  const std::string name(text, colon ? colon - text : std::strlen(text));
  f.at = colon ? std::strtoul(colon + 1, nullptr, 10) : 0;
  if (const char *at = std::strchr(text, '@')) f.device = std::atoi(at + 1);
  if (name == "arena") f.kind = Fault::Arena;
  else if (name == "register") f.kind = Fault::Register;
  else if (name == "engine") f.kind = Fault::Engine;
  else if (name == "throw") f.kind = Fault::Throw;
  else if (name == "submit") f.kind = Fault::Submit;
  else if (name == "submit-throw") f.kind = Fault::SubmitThrow;
  else if (name == "wait") f.kind = Fault::Wait;
  else if (name == "idle") f.kind = Fault::Idle;
  else if (name == "lost") f.kind = Fault::Lost;
  return f;
}

// The simulated device's flow table: a host table that the worker counts
// each batch into before the batch completes, and whose whole-table steps
// wait, like a device stream, for the updates queued before them.
class SimFlowStore final : public FlowStore {
public:
  explicit SimFlowStore(uint32_t capacity) : table_(capacity, 1) {}

  // A batch was submitted: its update is on the way.
  void queued() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++pending_;
  }
  // The batch's update, in submission order (one worker).
  void update(const GppResult *records, uint32_t count, const GppTunnelInfo *tunnels) {
    std::lock_guard<std::mutex> lock(mutex_);
    table_.add(records, count, tunnels);
    --pending_;
    settled_.notify_all();
  }

  int device() const override { return 0; }
  uint32_t capacity() const override { return table_.capacity(); }
  bool settle(FlowCounters &c, std::string *error) override {
    return with_table([&] { return table_.settle(c, error); });
  }
  bool end_flows(const FlowEndRule &rule, uint16_t seed, std::vector<GppFlowRecord> &out,
                 std::string *error) override {
    return with_table([&] { return table_.end_flows(rule, seed, out, error); });
  }
  bool live_ages(std::vector<FlowAge> &out, std::string *error) override {
    return with_table([&] { return table_.live_ages(out, error); });
  }
  bool rebuild(std::string *error) override {
    return with_table([&] { return table_.rebuild(error); });
  }
  bool read_slots(std::vector<FlowSlot> &out, std::string *error) override {
    return with_table([&] { return table_.read_slots(out, error); });
  }
  bool write_slots(const std::vector<FlowSlot> &slots, std::string *error) override {
    return with_table([&] { return table_.write_slots(slots, error); });
  }

private:
  template <typename Step> bool with_table(Step step) {
    std::unique_lock<std::mutex> lock(mutex_);
    settled_.wait(lock, [this] { return pending_ == 0; });
    return step();
  }

  std::mutex mutex_;
  std::condition_variable settled_;
  unsigned pending_ = 0;
  HostFlowStore table_;
};

class SimulatedEngine final : public Engine {
public:
  SimulatedEngine(Mode mode, const EngineSettings &s, Fault fault, bool instant)
      : mode_(mode), slots_(std::max(1u, s.num_streams)), fault_(fault), instant_(instant),
        records_to_host_(s.records_to_host || !mode_can_keep_records(mode)),
        worker_([this] { run(); }) {
    sim_log("made", mode);
  }

  ~SimulatedEngine() override {
    sim_log("destroyed", mode_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    worker_.join();
    // Batches never run: their flow updates are not coming.
    for (const Job &job : jobs_)
      if (!job.done && job.flows) job.flows->update(nullptr, 0, nullptr);
  }

  Mode mode() const override { return mode_; }
  unsigned slots() const override { return slots_; }
  // As the real engines (mode_can_keep_records).
  bool writes_records() const override { return records_to_host_; }
  // As the real engines: every mode's table is on the device.
  int flow_device() const override { return 0; }
  bool attach_flows(FlowStore *store) override {
    auto *sim_store = dynamic_cast<SimFlowStore *>(store);
    if (store && !sim_store) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    flows_ = sim_store;
    return true;
  }
  GpuCounters counters() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return counters_;
  }

  bool submit(const uint8_t *batch, size_t batch_size, uint32_t count, const CoreConfig &cfg,
              GppResult *results, std::string *error) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++submits_;
    if (fault_.kind == Fault::Lost && submits_ == fault_.at) lost_ = true;
    if (lost_ && submits_ > fault_.at) {
      *error = "simulated fault: the device was lost (submit " + std::to_string(submits_) + ")";
      return false;
    }
    if (fault_.kind == Fault::Submit && submits_ == fault_.at) {
      *error = "simulated fault: submit " + std::to_string(submits_) + " failed";
      return false;
    }
    if (fault_.kind == Fault::SubmitThrow && submits_ == fault_.at)
      throw std::runtime_error("simulated fault: submit " + std::to_string(submits_) + " threw");
    if (flows_) flows_->queued();
    // Records left "on the device" go to a buffer of the job's own; the
    // caller's is poisoned, so that a caller reading it anyway sees garbage
    // (as it would on a GPU), not the right answer by luck.
    std::shared_ptr<std::vector<GppResult>> device_records;
    if (!records_to_host_) {
      std::memset(static_cast<void *>(results), 0xa5, results_bytes(count, cfg));
      // Room for the tunnel plane after the records (176 / 128 records' worth).
      device_records = std::make_shared<std::vector<GppResult>>(
          results_bytes(count, cfg) / sizeof(GppResult) + 1);
      results = device_records->data();
    }
    if (instant_) {
      process_batch_range(batch, cfg, results, 0, count);
      if (flows_) flows_->update(results, count, cfg.decap ? tunnel_plane(results, count) : nullptr);
    }
    jobs_.push_back(Job{batch, cfg, results, count, instant_, submits_, flows_, device_records});
    counters_.bytes_h2d += batch_size;
    if (records_to_host_) counters_.bytes_d2h += results_bytes(count, cfg);
    if (!instant_) changed_.notify_all(); // the worker has nothing to do for instant ones
    return true;
  }

  bool wait_oldest(std::string *error) override {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !jobs_.empty() && jobs_.front().done; });
    const unsigned long submitted = jobs_.front().submit_index;
    jobs_.pop_front();
    ++waits_;
    if (lost_ && submitted >= fault_.at) {
      *error = "simulated fault: the device was lost (wait " + std::to_string(waits_) + ")";
      return false;
    }
    if (fault_.kind == Fault::Wait && waits_ == fault_.at) {
      *error = "simulated fault: wait " + std::to_string(waits_) + " failed";
      return false;
    }
    return true;
  }

  bool idle(std::string *error) override {
    sim_log("idle", mode_);
    std::lock_guard<std::mutex> lock(mutex_);
    ++idles_;
    if (fault_.kind == Fault::Idle && idles_ == fault_.at) {
      *error = "simulated fault: idle " + std::to_string(idles_) + " failed";
      return false;
    }
    return true;
  }

private:
  struct Job {
    const uint8_t *batch;
    CoreConfig cfg;
    GppResult *results;
    uint32_t count;
    bool done;
    unsigned long submit_index;
    SimFlowStore *flows; // counts the batch before it is done
    std::shared_ptr<std::vector<GppResult>> device_records; // results, without records_to_host
  };

  // Finishes jobs in order, each after 0..200 us, like a GPU queue would.
  void run() {
    std::mt19937 rng(12345);
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [this] { return stopping_ || next_pending() != nullptr; });
      if (stopping_) return;
      Job job = *next_pending();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
      process_batch_range(job.batch, job.cfg, job.results, 0, job.count);
      if (job.flows)
        job.flows->update(job.results, job.count,
                          job.cfg.decap ? tunnel_plane(job.results, job.count) : nullptr);
      lock.lock();
      next_pending()->done = true;
      changed_.notify_all();
    }
  }

  Job *next_pending() {
    for (Job &j : jobs_)
      if (!j.done) return &j;
    return nullptr;
  }

  Mode mode_;
  unsigned slots_;
  const Fault fault_;
  const bool instant_;
  const bool records_to_host_;
  unsigned long submits_ = 0, waits_ = 0, idles_ = 0;
  bool lost_ = false;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> jobs_;
  GpuCounters counters_;
  SimFlowStore *flows_ = nullptr;
  bool stopping_ = false;
  std::thread worker_;
};

} // namespace

// GPP_SIM_DEVICES=N: N simulated devices (default 1), for several-GPU runs.
int gpu_device_count() {
  const char *text = std::getenv("GPP_SIM_DEVICES");
  const int n = text ? std::atoi(text) : 1;
  return n > 0 ? n : 1;
}

std::string gpu_unavailable_reason(int device_id) {
  const int count = gpu_device_count();
  return device_id >= 0 && device_id < count
             ? ""
             : "device-id " + std::to_string(device_id) + " does not exist: the simulated GPU has " +
                   std::to_string(count) + " device(s) (GPP_SIM_DEVICES)";
}

std::unique_ptr<HostArena> make_host_arena(int device_id, size_t bytes, HostMemoryKind,
                                           std::string *error) {
  if (!(*error = gpu_unavailable_reason(device_id)).empty()) return nullptr;
  if (fault_from_env().kind == Fault::Arena) {
    *error = "simulated fault: cudaHostAlloc of " + std::to_string(bytes) + " bytes failed";
    return nullptr;
  }
  // mmap, like the driver's pinned allocations: freeing returns the pages at
  // once (malloc might keep them), so the tests' memory checks stay meaningful.
  void *base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    *error = "mmap of " + std::to_string(bytes) + " bytes failed";
    return nullptr;
  }
  return std::make_unique<FirstFitArena>(base, bytes, [](void *p, size_t n) { munmap(p, n); });
}

// The simulated devices read host memory anywhere: a registration is only
// its lifetime.  GPP_SIM_FAULT=register makes it fail, as a memlock limit would.
std::unique_ptr<HostRegistration> register_host_memory(void *, size_t bytes, std::string *error) {
  if (fault_from_env().kind == Fault::Register) {
    *error = "simulated fault: cudaHostRegister of " + std::to_string(bytes) + " bytes failed";
    return nullptr;
  }
  return std::make_unique<HostRegistration>();
}

std::unique_ptr<Engine> make_gpu_engine(Mode mode, const EngineSettings &settings,
                                           std::string *error) {
  if (settings.device_ids.size() > 1)
    return make_sharded_engine(mode, settings, make_gpu_engine, make_host_arena, error,
                               [](int, unsigned *blocks, std::string *) {
                                 *blocks = kSimulatedResidentBlocks;
                                 return true;
                               });
  if (!(*error = gpu_unavailable_reason(settings.device_id)).empty()) return nullptr;
  Fault fault = fault_from_env();
  if (fault.device >= 0 && fault.device != settings.device_id) fault = Fault{};
  if (fault.kind == Fault::Engine) {
    *error = "simulated fault: engine creation failed";
    return nullptr;
  }
  if (fault.kind == Fault::Throw) throw std::runtime_error("simulated fault: engine creation threw");
  const char *instant = std::getenv("GPP_SIM_INSTANT");
  return std::make_unique<SimulatedEngine>(mode, settings, fault,
                                           instant && std::strcmp(instant, "1") == 0);
}

std::unique_ptr<FlowStore> make_device_flow_store(int device_id, uint32_t capacity,
                                                  std::string *error) {
  if (!(*error = gpu_unavailable_reason(device_id)).empty()) return nullptr;
  return std::make_unique<SimFlowStore>(capacity);
}

int64_t device_memory_used(int) { return 0; }

} // namespace gpp
