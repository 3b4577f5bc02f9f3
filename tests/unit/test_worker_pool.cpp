// WorkerPool (gpu/worker_pool.h): every chunk runs exactly once, however
// the chunks compare with the threads, job after job.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "worker_pool.h"

namespace {

TEST(WorkerPool, EveryChunkOnceWhateverTheirNumber) {
  gpp::WorkerPool pool(4);
  ASSERT_EQ(4u, pool.threads());
  for (unsigned chunks : {0u, 1u, 3u, 4u, 5u, 17u, 1000u}) {
    std::vector<std::atomic<int>> runs(chunks);
    pool.run(chunks, [&](unsigned c) { runs[c]++; });
    for (unsigned c = 0; c < chunks; ++c) EXPECT_EQ(1, runs[c].load()) << chunks << " chunks";
  }
}

// run_ranges: the parts cover [0, count) exactly once, whatever count is.
TEST(WorkerPool, RangesCoverEveryIndexOnce) {
  gpp::WorkerPool pool(4);
  for (uint32_t count : {0u, 1u, 3u, 4u, 5u, 4097u}) {
    std::vector<std::atomic<int>> hits(count);
    pool.run_ranges(count, [&](uint32_t first, uint32_t last) {
      for (uint32_t i = first; i < last; ++i) hits[i]++;
    });
    for (uint32_t i = 0; i < count; ++i) EXPECT_EQ(1, hits[i].load()) << count << " items";
  }
}

TEST(WorkerPool, ChunksUpToTheThreadsRunOnThreadsOfTheirOwn) {
  gpp::WorkerPool pool(4);
  std::atomic<int> arrived{0};
  std::vector<std::thread::id> ids(4);
  // Each chunk waits until all four have started: only four threads at once
  // get past it.
  pool.run(4, [&](unsigned c) {
    ids[c] = std::this_thread::get_id();
    arrived++;
    while (arrived.load() < 4) std::this_thread::yield();
  });
  EXPECT_EQ(4u, std::set<std::thread::id>(ids.begin(), ids.end()).size());
}

TEST(WorkerPool, ManyJobsInARow) {
  gpp::WorkerPool pool(3);
  std::atomic<long> sum{0};
  for (int job = 0; job < 2000; ++job) pool.run(3, [&](unsigned c) { sum += c + 1; });
  EXPECT_EQ(2000 * 6, sum.load());
}

// Workers poll for a while after a job, then sleep: jobs that come at once,
// after a pause longer than the polling, and with fewer chunks than
// threads (workers left out) must each run every chunk once.
TEST(WorkerPool, JobsBothWhileWorkersPollAndAfterTheySlept) {
  gpp::WorkerPool pool(4);
  long want = 0;
  std::atomic<long> sum{0};
  for (int job = 0; job < 300; ++job) {
    const unsigned chunks = 1 + job % 6;
    pool.run(chunks, [&](unsigned c) { sum += c + 1; });
    want += long{chunks} * (chunks + 1) / 2;
    if (job % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(want, sum.load());
}

} // namespace
