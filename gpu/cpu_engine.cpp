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

void CpuEngine::process(const uint8_t *batch, const CoreConfig &cfg, GppResult *results) {
  const uint32_t count = reinterpret_cast<const GppBatchHeader *>(batch)->packet_count;
  const unsigned chunks =
      std::min<unsigned>(threads(), std::max(1u, count / kMinPacketsPerThread));
  const uint32_t per_chunk = (count + chunks - 1) / chunks;
  pool_.run(chunks, [&](unsigned chunk) {
    const uint32_t begin = std::min(count, chunk * per_chunk);
    process_batch_range(batch, cfg, results, begin, std::min(count, begin + per_chunk));
  });
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
