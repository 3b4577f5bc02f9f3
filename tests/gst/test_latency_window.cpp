// The stats' latency window: nearest-rank percentiles over the last 4096
// samples, checked against a sort of the same samples.
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "latencywindow.h"

int main() {
  int failures = 0;
  auto expect = [&](const char *what, uint64_t got, uint64_t want) {
    if (got != want) {
      std::printf("FAIL %s: %llu, want %llu\n", what, (unsigned long long)got,
                  (unsigned long long)want);
      failures++;
    }
  };
  LatencyWindow w;
  expect("empty window", w.percentile(99), 0);
  for (uint64_t v : {30, 10, 20}) w.add(v);
  expect("p50 of 10,20,30", w.percentile(50), 20);
  expect("p99 of 10,20,30", w.percentile(99), 30);
  expect("p1 of 10,20,30", w.percentile(1), 10);

  // 10,000 samples: the window keeps the last 4096.
  std::mt19937_64 rng(7);
  std::vector<uint64_t> all;
  w.clear();
  for (int i = 0; i < 10000; ++i) {
    all.push_back(rng() % 1000000);
    w.add(all.back());
  }
  std::vector<uint64_t> last(all.end() - LatencyWindow::kCapacity, all.end());
  std::sort(last.begin(), last.end());
  for (double p : {50.0, 99.0, 99.9, 100.0}) {
    const size_t rank = std::min(last.size(), static_cast<size_t>(p / 100 * last.size() + 0.999999));
    char what[64];
    std::snprintf(what, sizeof what, "p%g of the last 4096 of 10000", p);
    expect(what, w.percentile(p), last[rank - 1]);
  }
  std::printf(failures ? "%d FAILED\n" : "PASS\n", failures);
  return failures ? 1 : 0;
}
