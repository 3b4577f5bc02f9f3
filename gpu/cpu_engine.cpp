#include "cpu_engine.h"

#include "engine.h"

#include <algorithm>

#include <gpupacket/packet-batch.h>

namespace gpp {

void process_batch_range(const uint8_t *batch, const CoreConfig &cfg, GppResult *results,
                         uint32_t begin, uint32_t end) {
  const auto *header = reinterpret_cast<const GppBatchHeader *>(batch);
  const GppPacketDesc *descs = gpp_batch_descs(batch);
  for (uint32_t i = begin; i < end; ++i) {
    const GppPacketDesc &d = descs[i];
    process_packet(batch + d.offset, d.caplen, d.wirelen, header->linktype,
                   d.packet_number, d.timestamp_ns, cfg, results[i]);
  }
}

CpuEngine::CpuEngine(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(threads - 1);
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back(&CpuEngine::worker_loop, this, i);
}

CpuEngine::~CpuEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto &t : workers_) t.join();
}

void CpuEngine::run_chunk(const Job &job, unsigned chunk) const {
  const uint32_t per_chunk = (job.packet_count + job.chunks - 1) / job.chunks;
  const uint32_t begin = std::min(job.packet_count, chunk * per_chunk);
  const uint32_t end = std::min(job.packet_count, begin + per_chunk);
  process_batch_range(job.batch, *job.cfg, job.results, begin, end);
}

void CpuEngine::process(const uint8_t *batch, const CoreConfig &cfg, GppResult *results) {
  const uint32_t count = reinterpret_cast<const GppBatchHeader *>(batch)->packet_count;
  const unsigned chunks =
      std::min<unsigned>(threads(), std::max(1u, count / kMinPacketsPerThread));
  if (chunks <= 1) {
    process_batch_range(batch, cfg, results, 0, count);
    return;
  }
  Job job{batch, &cfg, results, count, chunks};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = job;
    pending_ = chunks - 1;
    ++generation_;
  }
  work_ready_.notify_all();
  run_chunk(job, 0);
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [this] { return pending_ == 0; });
}

void CpuEngine::worker_loop(unsigned index) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    const Job job = job_;
    if (index >= job.chunks) continue;
    lock.unlock();
    run_chunk(job, index);
    lock.lock();
    if (--pending_ == 0) work_done_.notify_one();
  }
}

namespace {

// mode=cpu as an Engine: the batch is done when submit() returns.
class CpuModeEngine final : public Engine {
public:
  explicit CpuModeEngine(unsigned threads) : cpu_(threads) {}
  Mode mode() const override { return Mode::Cpu; }
  unsigned slots() const override { return 1; }
  bool completes_inline() const override { return true; }
  bool submit(const uint8_t *batch, size_t, uint32_t, const CoreConfig &cfg, GppResult *results,
              std::string *) override {
    cpu_.process(batch, cfg, results);
    return true;
  }
  bool wait_oldest(std::string *) override { return true; }
  GpuCounters counters() const override { return {}; }

private:
  CpuEngine cpu_;
};

} // namespace

std::unique_ptr<Engine> make_cpu_engine(unsigned threads) {
  return std::make_unique<CpuModeEngine>(threads);
}

} // namespace gpp
