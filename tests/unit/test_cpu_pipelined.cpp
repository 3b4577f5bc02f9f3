// The pipelined mode=cpu engine (make_cpu_engine(threads, true), what
// EngineSettings::cpu_pipelined makes): batches
// submitted ahead of their waits come back byte-identical to the core run
// in place, in submission order, on every thread count; and it is destroyed
// cleanly idle, after work and with its runner asleep.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include <gpupacket/packet-batch.h>

#include "batch_builder.h"
#include "core_harness.h"
#include "cpu_engine.h"
#include "engine.h"
#include "traffic_gen.h"

namespace {

struct Batch {
  std::vector<uint8_t> bytes;
  std::vector<GppResult> reference;
  uint32_t count = 0;
};

// Batches of mixed traffic, of sizes that do and do not split over threads.
std::vector<Batch> make_batches(const gpp::CoreConfig &cfg) {
  gpp::TrafficSpec spec;
  gpp::TrafficGenerator generator(spec);
  gpp::BatchBuilder builder;
  std::vector<Batch> batches;
  uint64_t number = 1;
  for (uint32_t size : {1u, 37u, 1024u, 3001u, 0u, 4096u, 513u}) {
    builder.reset(GPP_LINKTYPE_ETHERNET);
    for (uint32_t i = 0; i < size; ++i, ++number) {
      const std::vector<uint8_t> &frame = generator.next();
      builder.add(frame.data(), uint32_t(frame.size()), uint32_t(frame.size()), number * 1000,
                  number);
    }
    Batch b;
    b.bytes = builder.finish();
    b.count = size;
    b.reference.resize(size);
    gpp::process_batch_range(b.bytes.data(), cfg, b.reference.data(), 0, size);
    batches.push_back(std::move(b));
  }
  return batches;
}

class PipelinedCpu : public ::testing::TestWithParam<unsigned> {};

TEST_P(PipelinedCpu, BatchesAheadOfTheirWaitsAreByteIdentical) {
  const gpp::CoreConfig cfg = gpptest::make_config(true, false);
  const std::vector<Batch> batches = make_batches(cfg);
  std::string error;
  auto engine = gpp::make_cpu_engine(GetParam(), true);
  ASSERT_TRUE(engine);
  EXPECT_FALSE(engine->completes_inline());
  ASSERT_EQ(gpp::kPipelinedCpuSlots, engine->slots());

  std::deque<std::pair<const Batch *, std::vector<GppResult>>> in_flight;
  auto retire = [&] {
    ASSERT_TRUE(engine->wait_oldest(&error)) << error;
    const auto &[batch, out] = in_flight.front();
    if (batch->count) {
      ASSERT_EQ(0, std::memcmp(out.data(), batch->reference.data(),
                               batch->count * sizeof(GppResult)));
    }
    in_flight.pop_front();
  };
  for (int round = 0; round < 20; ++round) {
    for (const Batch &b : batches) {
      if (in_flight.size() == engine->slots()) retire();
      // Poisoned records (an empty batch has none: no memset on a null pointer).
      GppResult poison;
      std::memset(static_cast<void *>(&poison), 0xa5, sizeof poison);
      in_flight.emplace_back(&b, std::vector<GppResult>(b.count, poison));
      ASSERT_TRUE(engine->submit(b.bytes.data(), b.bytes.size(), b.count, cfg,
                                 in_flight.back().second.data(), &error))
          << error;
    }
    // Now and then a pause long enough for the runner to fall asleep.
    if (round % 5 == 4) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  while (!in_flight.empty()) retire();
}

INSTANTIATE_TEST_SUITE_P(Threads, PipelinedCpu, ::testing::Values(1u, 2u, 4u));

TEST(PipelinedCpuEngine, DestroyedIdleAndAsleep) {
  { auto idle = gpp::make_cpu_engine(2, true); }
  auto engine = gpp::make_cpu_engine(2, true);
  ASSERT_TRUE(engine);
  std::this_thread::sleep_for(std::chrono::milliseconds(5)); // the runner sleeps
  engine.reset();
}

TEST(PipelinedCpuEngine, InlineAndPipelinedAreDifferentEngines) {
  gpp::EngineSettings a, b;
  b.cpu_pipelined = true;
  EXPECT_FALSE(gpp::same_engine_settings(gpp::Mode::Cpu, a, b));
  EXPECT_TRUE(gpp::make_cpu_engine(1)->completes_inline());
}

} // namespace
