// The AF_XDP capture (capture/xdp_capture) without GStreamer: the queue
// list syntax, the set-up errors, and, as root in a network namespace of
// the test's own (its loopback, generic XDP), capture itself: every datagram
// sent arrives once, in order, as an Ethernet frame in a valid batch of the
// caller's memory, numbered from 1; PAUSED drops what arrives; a stop gives
// every batch's memory back; the XDP program is gone after destruction.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gpupacket/packet-batch.h>

#include "own_namespace.h"
#include "xdp_capture.h"

namespace {

using gpp::capture::XdpCapture;
using gpp::capture::XdpSettings;

std::vector<uint32_t> parse_ok(const std::string &text, bool *all = nullptr) {
  std::vector<uint32_t> queues;
  bool is_all = false;
  std::string error;
  EXPECT_TRUE(gpp::capture::parse_queue_list(text, &queues, &is_all, &error)) << text << ": " << error;
  if (all) *all = is_all;
  return queues;
}

TEST(XdpQueueList, AllCountListAndRanges) {
  bool all = false;
  EXPECT_TRUE(parse_ok("all", &all).empty());
  EXPECT_TRUE(all);
  EXPECT_TRUE(parse_ok("", &all).empty());
  EXPECT_TRUE(all);
  EXPECT_EQ(parse_ok("4", &all), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_FALSE(all);
  EXPECT_EQ(parse_ok("0,2,4-7"), (std::vector<uint32_t>{0, 2, 4, 5, 6, 7}));
  EXPECT_EQ(parse_ok("3,"), (std::vector<uint32_t>{3}));
  EXPECT_EQ(parse_ok("3-3"), (std::vector<uint32_t>{3}));
  EXPECT_EQ(parse_ok("5,1"), (std::vector<uint32_t>{5, 1}));
}

TEST(XdpQueueList, BadTextSaysWhy) {
  for (const char *bad : {"x", "0", "2-1", "1,1", ",", "1,,2", "-", "1-", "a-3", "1234567"}) {
    std::vector<uint32_t> queues;
    bool all = true;
    std::string error;
    EXPECT_FALSE(gpp::capture::parse_queue_list(bad, &queues, &all, &error)) << bad;
    EXPECT_NE(error.find(std::string("\"") + bad + "\""), std::string::npos) << error;
  }
}

XdpCapture::Allocate heap_allocate(std::atomic<int> *live) {
  return [live](size_t size, void **memory) -> uint8_t * {
    auto *p = new uint8_t[size];
    *memory = p;
    ++*live;
    return p;
  };
}
XdpCapture::Discard heap_discard(std::atomic<int> *live) {
  return [live](void *memory) {
    delete[] static_cast<uint8_t *>(memory);
    --*live;
  };
}

std::string open_error(const XdpSettings &s) {
  std::atomic<int> live{0};
  std::string error, warning;
  auto cap = XdpCapture::open(s, heap_allocate(&live), heap_discard(&live), &error, &warning);
  EXPECT_EQ(cap, nullptr);
  return error;
}

TEST(XdpCaptureOpen, ErrorsNameTheFix) {
  XdpSettings s;
  s.interface = "gpp-no-such0";
  EXPECT_NE(open_error(s).find("No network interface \"gpp-no-such0\""), std::string::npos);
  s.interface = "lo";
  s.frame_size = 3000;
  EXPECT_NE(open_error(s).find("frame-size"), std::string::npos);
  s = XdpSettings{};
  s.interface = "lo";
  s.ring_size = s.frame_count / 2;
  EXPECT_NE(open_error(s).find("ring-size at most a quarter of frame-count"), std::string::npos);
  s = XdpSettings{};
  s.interface = "lo";
  const uint32_t have = gpp::capture::interface_rx_queues("lo");
  ASSERT_GT(have, 0u);
  s.queues = {have + 4};
  const std::string why = open_error(s);
  EXPECT_NE(why.find("there is no queue " + std::to_string(have + 4)), std::string::npos) << why;
  EXPECT_NE(why.find("has " + std::to_string(have) + " receive queue"), std::string::npos) << why;
}

// Sends `count` UDP datagrams to 127.0.0.1:port, each carrying its index.
void send_datagrams(uint16_t port, uint32_t first, uint32_t count) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (uint32_t i = first; i < first + count; ++i) {
    char payload[32];
    snprintf(payload, sizeof payload, "gpp-xdp-%08u", i);
    ASSERT_EQ(sendto(fd, payload, strlen(payload), 0, reinterpret_cast<sockaddr *>(&to), sizeof to),
              static_cast<ssize_t>(strlen(payload)));
  }
  close(fd);
}

// The index a captured frame carries, or -1 for any other frame.
long datagram_index(const uint8_t *frame, uint32_t len) {
  static const char tag[] = "gpp-xdp-";
  if (len < 14 + 20 + 8 + 16) return -1;
  const uint8_t *payload = frame + len - 16;
  if (memcmp(payload, tag, 8) != 0) return -1;
  return strtol(std::string(reinterpret_cast<const char *>(payload) + 8, 8).c_str(), nullptr, 10);
}

// Takes batches until `want` datagrams arrived or 5 s passed; checks each batch.
void take_datagrams(XdpCapture &cap, uint32_t want, std::vector<long> *seen,
                    uint64_t *next_number, std::atomic<int> *live) {
  for (int waits = 0; seen->size() < want && waits < 50;) {
    gpp::capture::XdpBatch b;
    const auto got = cap.take(&b, 100000000);
    if (got == XdpCapture::Take::Timeout) {
      ++waits;
      continue;
    }
    ASSERT_EQ(got, XdpCapture::Take::Batch) << cap.error();
    const auto *batch = static_cast<const uint8_t *>(b.memory);
    char why[256];
    ASSERT_TRUE(gpp_batch_validate(batch, b.size, why, sizeof why)) << why;
    const auto *h = reinterpret_cast<const GppBatchHeader *>(batch);
    EXPECT_EQ(h->linktype, 1u);
    EXPECT_EQ(h->packet_count, b.packets);
    EXPECT_EQ(b.first_number, *next_number);
    const GppPacketDesc *d = gpp_batch_descs(batch);
    for (uint32_t i = 0; i < b.packets; ++i) {
      EXPECT_EQ(d[i].packet_number, (*next_number)++);
      EXPECT_EQ(d[i].caplen, d[i].wirelen);
      EXPECT_GE(d[i].timestamp_ns, b.first_capture_ns);
      const long index = datagram_index(batch + d[i].offset, d[i].caplen);
      if (index >= 0) seen->push_back(index);
    }
    delete[] static_cast<uint8_t *>(b.memory);
    --*live;
  }
}

// Runs `body` in a network namespace of its own (its loopback); the test
// skips where that or AF_XDP is not permitted.
template <typename Body> void in_own_namespace(Body body) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: a network namespace and an XDP program";
  const int probe = socket(AF_XDP, SOCK_RAW, 0);
  if (probe < 0) GTEST_SKIP() << "AF_XDP sockets are not permitted here: " << strerror(errno);
  close(probe);
  gpp::test::in_own_namespace(body);
}

// Either way of waiting: sleeping (the default), and busy polling, where
// take() spins while a batch is being built.
class XdpCaptureLoopback : public ::testing::TestWithParam<bool> {};

TEST_P(XdpCaptureLoopback, EveryDatagramOnceInOrderThenNothingLeft) {
  const bool busy_poll = GetParam();
  in_own_namespace([busy_poll] {
    std::atomic<int> live{0};
    XdpSettings s;
    s.interface = "lo";
    s.queues = {0};
    s.busy_poll = busy_poll;
    // The RX ring holds every burst sent below, however slow the thread
    // (AddressSanitizer): nothing is dropped for want of room.
    s.frame_count = 4096;
    s.ring_size = 1024;
    std::string error, warning;
    {
      auto cap = XdpCapture::open(s, heap_allocate(&live), heap_discard(&live), &error, &warning);
      ASSERT_NE(cap, nullptr) << error;
      // Loopback has no native XDP: auto falls back to generic and says so.
      EXPECT_FALSE(cap->native());
      EXPECT_NE(warning.find("generic"), std::string::npos) << warning;
      EXPECT_FALSE(cap->zero_copy());
      uint32_t prog_id = 0;
      ASSERT_EQ(bpf_xdp_query_id(if_nametoindex("lo"), XDP_FLAGS_SKB_MODE, &prog_id), 0);
      EXPECT_NE(prog_id, 0u);
      // A second capture of the same queue is refused, naming it.
      std::string busy;
      EXPECT_EQ(XdpCapture::open(s, heap_allocate(&live), heap_discard(&live), &busy, &warning),
                nullptr);
      EXPECT_NE(busy.find("Queue 0 of \"lo\" is captured by another afxdpsrc of this process"),
                std::string::npos) << busy;

      // Before start(): what arrives is dropped, counted.
      send_datagrams(9999, 0, 10);
      for (int i = 0; i < 200 && cap->discarded() < 10; ++i) usleep(10000);
      EXPECT_EQ(cap->discarded(), 10u);
      cap->set_batch_limits(32, 200000);
      cap->start();
      std::vector<long> seen;
      uint64_t next_number = 1;
      send_datagrams(9999, 100, 300);
      take_datagrams(*cap, 300, &seen, &next_number, &live);
      ASSERT_EQ(seen.size(), 300u);
      for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], long(100 + i));

      // Paused: nothing is delivered; started again: only what came after.
      cap->pause();
      send_datagrams(9999, 1000, 50);
      gpp::capture::XdpBatch b;
      EXPECT_EQ(cap->take(&b, 300000000), XdpCapture::Take::Timeout);
      cap->start();
      seen.clear();
      send_datagrams(9999, 2000, 40);
      take_datagrams(*cap, 40, &seen, &next_number, &live);
      ASSERT_EQ(seen.size(), 40u);
      EXPECT_EQ(seen.front(), 2000);
      const auto stats = cap->stats();
      ASSERT_EQ(stats.size(), 1u);
      EXPECT_GE(stats[0].packets, 340u);
      EXPECT_EQ(stats[0].rx_invalid_descs, 0u);

      // New limits apply to the batch being built: a batch begun under a 5 s
      // timeout leaves soon after the timeout drops to 1 ms, and one held
      // under 256 packets as soon as the size drops below what it holds.
      for (const bool by_size : {false, true}) {
        cap->set_batch_limits(256, 5000000000ull);
        send_datagrams(9999, 4000, 10);
        EXPECT_EQ(cap->take(&b, 300000000), XdpCapture::Take::Timeout);
        const auto changed = std::chrono::steady_clock::now();
        cap->set_batch_limits(by_size ? 4 : 256, by_size ? 5000000000ull : 1000000);
        ASSERT_EQ(cap->take(&b, 2000000000), XdpCapture::Take::Batch) << by_size;
        EXPECT_LT(std::chrono::steady_clock::now() - changed, std::chrono::milliseconds(500));
        EXPECT_EQ(b.packets, 10u);
        next_number += b.packets;
        delete[] static_cast<uint8_t *>(b.memory);
        --live;
      }
      // A pause drops the batch being built, even when start() follows at
      // once (before the queue's thread looked).
      cap->set_batch_limits(256, 5000000000ull);
      send_datagrams(9999, 5000, 7);
      usleep(100000);
      cap->pause();
      cap->start();
      cap->set_batch_limits(256, 1000000);
      // With no batch being built the consumer sleeps, busy polling or not
      // (a batch counted open after the pause dropped it would keep it spinning).
      timespec cpu0{}, cpu1{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
      EXPECT_EQ(cap->take(&b, 300000000), XdpCapture::Take::Timeout);
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
      const double cpu_ms = (cpu1.tv_sec - cpu0.tv_sec) * 1e3 + (cpu1.tv_nsec - cpu0.tv_nsec) / 1e6;
      EXPECT_LT(cpu_ms, 100.0) << "take() spun through a 300 ms wait with nothing being built";

      // interrupt() ends a take at once, resume() lets it wait again.
      cap->interrupt();
      EXPECT_EQ(cap->take(&b, 1000000000), XdpCapture::Take::Interrupted);
      cap->resume();

      // Batches queued at the stop go back through discard.
      send_datagrams(9999, 3000, 64);
      usleep(200000);
    }
    EXPECT_EQ(live.load(), 0) << "batch memory not given back";
    uint32_t prog_id = 1;
    ASSERT_EQ(bpf_xdp_query_id(if_nametoindex("lo"), XDP_FLAGS_SKB_MODE, &prog_id), 0);
    EXPECT_EQ(prog_id, 0u) << "the XDP program outlived the capture";
  });
}

INSTANTIATE_TEST_SUITE_P(Waits, XdpCaptureLoopback, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool> &p) {
                           return p.param ? "BusyPoll" : "Sleeping";
                         });

// Memory for a batch that its deadline will close is taken when the batch
// opens (its deadline then waits for no allocator), after a batch closed
// by its deadline only; it is larger than the batch, which says its own
// size; a batch that outgrows it gets memory of its exact size at its
// close, and what it did not use goes back.
TEST(XdpCaptureMemory, TakenWhenADeadlineWillCloseTheBatch) {
  in_own_namespace([] {
    std::atomic<int> live{0};
    std::mutex lock;
    std::vector<size_t> sizes; // every allocation, in order
    auto allocate = [&](size_t size, void **memory) -> uint8_t * {
      std::lock_guard<std::mutex> guard(lock);
      sizes.push_back(size);
      return heap_allocate(&live)(size, memory);
    };
    auto allocations = [&] {
      std::lock_guard<std::mutex> guard(lock);
      return sizes.size();
    };
    auto last_size = [&] {
      std::lock_guard<std::mutex> guard(lock);
      return sizes.back();
    };
    XdpSettings s;
    s.interface = "lo";
    s.queues = {0};
    s.frame_count = 4096;
    s.ring_size = 1024;
    std::string error, warning;
    {
      auto cap = XdpCapture::open(s, allocate, heap_discard(&live), &error, &warning);
      ASSERT_NE(cap, nullptr) << error;
      const uint64_t timeout_ns = 400000000; // 400 ms: long enough to look inside
      cap->set_batch_limits(256, timeout_ns);
      cap->start();
      std::vector<long> seen;
      uint64_t next_number = 1;
      gpp::capture::XdpBatch b;
      auto take_one = [&](uint32_t want) {
        seen.clear();
        take_datagrams(*cap, want, &seen, &next_number, &live);
        ASSERT_EQ(seen.size(), want);
      };
      // Nothing closed yet: the first batch takes its memory at its close.
      send_datagrams(9999, 0, 1);
      usleep(150000);
      EXPECT_EQ(allocations(), 0u);
      take_one(1);
      ASSERT_EQ(allocations(), 1u);
      const size_t one_packet = last_size();

      // Closed by its deadline: the next batch has its memory while open,
      // at least 16 KiB, and says its own, smaller size.
      send_datagrams(9999, 1, 1);
      usleep(150000);
      EXPECT_EQ(cap->take(&b, 0), XdpCapture::Take::Timeout) << "the batch closed early";
      ASSERT_EQ(allocations(), 2u) << "no memory taken when the batch opened";
      EXPECT_GE(last_size(), size_t(16) << 10);
      ASSERT_EQ(cap->take(&b, 2 * timeout_ns), XdpCapture::Take::Batch);
      EXPECT_EQ(b.size, one_packet);
      char why[256];
      EXPECT_TRUE(gpp_batch_validate(static_cast<const uint8_t *>(b.memory), b.size, why,
                                     sizeof why)) << why;
      EXPECT_EQ(b.packets, 1u);
      next_number += b.packets;
      delete[] static_cast<uint8_t *>(b.memory);
      --live;
      EXPECT_EQ(allocations(), 2u);

      // A batch that outgrows it: memory of its exact size at its close,
      // the unused memory back; every datagram there once.
      send_datagrams(9999, 2, 1);
      usleep(100000);
      ASSERT_EQ(allocations(), 3u);
      const size_t taken_at_open = last_size();
      send_datagrams(9999, 3, 250);
      take_one(251);
      ASSERT_EQ(allocations(), 4u);
      EXPECT_GT(last_size(), taken_at_open);
      for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], long(2 + i));
      EXPECT_EQ(live.load(), 0) << "the memory taken at the opening was not given back";

      // Closed by its size: the next batch takes its memory at its close.
      cap->set_batch_limits(4, timeout_ns);
      send_datagrams(9999, 300, 4);
      take_one(4);
      const size_t before = allocations();
      send_datagrams(9999, 304, 1);
      usleep(150000);
      EXPECT_EQ(allocations(), before) << "memory taken at the opening after a batch filled by size";
      take_one(1);
      EXPECT_EQ(allocations(), before + 1);

      // A batch open at the stop gives its memory back (checked below).
      send_datagrams(9999, 305, 1);
      usleep(100000);
      EXPECT_EQ(allocations(), before + 2);
    }
    EXPECT_EQ(live.load(), 0) << "batch memory not given back";
  });
}

// Frames in place: a batch is a descriptor slot ahead of the UMEM whose
// packets are the frames themselves, in one mapping that on_mapped saw; a
// batch's frames are not received into again until it is given back, more
// packets than the UMEM has frames pass when batches are given back, a
// thread whose slots are all out waits for one, and the mapping (and what
// on_mapped returned) outlives the capture while a batch is out.
TEST(XdpCaptureInPlace, FramesComeBackOnlyWhenReleased) {
  in_own_namespace([] {
    XdpSettings s;
    s.interface = "lo";
    s.queues = {0};
    // The RX ring holds every burst sent below, however slow the thread
    // (AddressSanitizer); the fill ring takes 512 frames, batches may hold 1536.
    s.frame_count = 2048;
    s.ring_size = 256;
    s.frames_in_place = true;
    const uint8_t *mapped = nullptr;
    size_t mapped_bytes = 0;
    auto unregistered = std::make_shared<std::atomic<bool>>(false);
    s.on_mapped = [&](void *base, size_t bytes) -> std::shared_ptr<void> {
      mapped = static_cast<const uint8_t *>(base);
      mapped_bytes = bytes;
      return std::shared_ptr<void>(new int(0), [unregistered](void *p) {
        delete static_cast<int *>(p);
        *unregistered = true;
      });
    };
    std::string error, warning;
    auto cap = XdpCapture::open(s, nullptr, nullptr, &error, &warning);
    ASSERT_NE(cap, nullptr) << error;
    ASSERT_NE(mapped, nullptr);
    EXPECT_TRUE(cap->frames_in_place());
    uint64_t next_number = 1;
    // Takes batches until `want` datagrams came (or 5 s): each is checked
    // and kept; returns the datagrams' indexes in order.
    auto take = [&](uint32_t want, std::vector<gpp::capture::XdpBatch> *kept) {
      std::vector<long> seen;
      for (int waits = 0; seen.size() < want && waits < 50;) {
        gpp::capture::XdpBatch b;
        const auto got = cap->take(&b, 100000000);
        if (got == XdpCapture::Take::Timeout) {
          ++waits;
          continue;
        }
        EXPECT_EQ(got, XdpCapture::Take::Batch) << cap->error();
        if (got != XdpCapture::Take::Batch) break;
        char why[256];
        EXPECT_TRUE(gpp_batch_validate(b.data, b.size, why, sizeof why)) << why;
        EXPECT_GE(b.data, mapped);
        EXPECT_EQ(b.data + b.size, mapped + mapped_bytes) << "a batch runs to the mapping's end";
        EXPECT_TRUE(b.device_mapped);
        const GppPacketDesc *d = gpp_batch_descs(b.data);
        for (uint32_t i = 0; i < b.packets; ++i) {
          EXPECT_EQ(d[i].packet_number, next_number++);
          const long index = datagram_index(b.data + d[i].offset, d[i].caplen);
          if (index >= 0) seen.push_back(index);
        }
        kept->push_back(b);
      }
      return seen;
    };
    auto indexes = [](const gpp::capture::XdpBatch &b) {
      std::vector<long> out;
      const GppPacketDesc *d = gpp_batch_descs(b.data);
      for (uint32_t i = 0; i < b.packets; ++i) {
        const long index = datagram_index(b.data + d[i].offset, d[i].caplen);
        if (index >= 0) out.push_back(index);
      }
      return out;
    };
    auto in_order = [](const std::vector<long> &seen, long first, size_t count) {
      if (seen.size() != count) return false;
      for (size_t i = 0; i < count; ++i)
        if (seen[i] != first + long(i)) return false;
      return true;
    };

    // A batch for each burst below (closed by size): slots to spare.
    cap->set_batch_limits(200, 2000000000ull);
    cap->start();
    // 800 frames out, then 200 more: none of them may land in a frame the
    // first batches hold.
    std::vector<gpp::capture::XdpBatch> first, second;
    for (long at = 0; at < 800; at += 200) {
      send_datagrams(9999, at, 200);
      EXPECT_TRUE(in_order(take(200, &first), at, 200)) << at;
    }
    send_datagrams(9999, 800, 200);
    take(200, &second); // any lost for want of frames are counted
    std::vector<long> again;
    for (const auto &b : first)
      for (long i : indexes(b)) again.push_back(i);
    EXPECT_TRUE(in_order(again, 0, 800)) << "a frame was received into while its batch was out";
    const auto st = cap->stats();
    ASSERT_EQ(st.size(), 1u);
    uint64_t second_packets = 0;
    for (const auto &b : second) second_packets += b.packets;
    EXPECT_EQ(second_packets + st[0].rx_dropped + st[0].rx_ring_full, 200u)
        << "frames lost for want of free ones are counted";
    for (const auto &b : first) XdpCapture::release_in_place(b.memory);
    for (const auto &b : second) XdpCapture::release_in_place(b.memory);

    // Given back, frames carry on: 2.5 x the UMEM's frames pass.
    cap->set_batch_limits(128, 2000000000ull);
    for (uint32_t round = 0; round < 40; ++round) {
      std::vector<gpp::capture::XdpBatch> kept;
      send_datagrams(9999, 10000 + round * 128, 128);
      EXPECT_TRUE(in_order(take(128, &kept), 10000 + round * 128, 128)) << "round " << round;
      for (const auto &b : kept) XdpCapture::release_in_place(b.memory);
    }

    // Every frame out: what comes is lost (counted); a queue asleep with its
    // fill ring empty is woken by the frames given back and refills at
    // once, rather than at its next look (100 ms) or its next frame (none
    // comes with an empty fill ring).
    {
      std::vector<gpp::capture::XdpBatch> all;
      cap->set_batch_limits(200, 2000000000ull);
      for (long at = 0; at < 2000; at += 200) {
        send_datagrams(9999, 40000 + at, 200);
        take(200, &all);
      }
      uint64_t out = 0;
      for (const auto &b : all) out += b.packets;
      EXPECT_GE(out, 2000u - 48) << "most of the UMEM's 2048 frames out";
      const uint64_t lost_before = cap->stats()[0].rx_dropped;
      // Closed by a short deadline, the few frames left go out in a few
      // batches: one a frame would take more slots than are left (the
      // queue would then hold its last batch until a slot came back).
      cap->set_batch_limits(200, 200000);
      send_datagrams(9999, 50000, 64); // the few frames left, then none to receive into
      for (gpp::capture::XdpBatch b; cap->take(&b, 150000000) == XdpCapture::Take::Batch;) {
        next_number += b.packets; // held too, so that every frame is out
        all.push_back(b);
      }
      EXPECT_GT(cap->stats()[0].rx_dropped, lost_before) << "frames lost for want of free ones";
      for (const auto &b : all) XdpCapture::release_in_place(b.memory);
      usleep(5000);
      const auto sent = std::chrono::steady_clock::now();
      send_datagrams(9999, 60000, 1);
      std::vector<gpp::capture::XdpBatch> woken;
      EXPECT_TRUE(in_order(take(1, &woken), 60000, 1));
      EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::milliseconds(50))
          << "the queue refilled only at its next look";
      for (const auto &b : woken) XdpCapture::release_in_place(b.memory);
    }

    // Every slot out: the queue waits for one, and goes on once one is back.
    cap->set_batch_limits(1, 200000);
    std::vector<gpp::capture::XdpBatch> slots;
    send_datagrams(9999, 20000, gpp::capture::kInPlaceSlots);
    EXPECT_TRUE(in_order(take(gpp::capture::kInPlaceSlots, &slots), 20000,
                         gpp::capture::kInPlaceSlots));
    send_datagrams(9999, 30000, 1);
    gpp::capture::XdpBatch b;
    EXPECT_EQ(cap->take(&b, 300000000), XdpCapture::Take::Timeout) << "a batch without a slot";
    XdpCapture::release_in_place(slots.back().memory);
    slots.pop_back();
    std::vector<gpp::capture::XdpBatch> late;
    EXPECT_TRUE(in_order(take(1, &late), 30000, 1));
    for (const auto &k : late) XdpCapture::release_in_place(k.memory);

    // The capture goes; the batches still out stay readable until given back.
    cap.reset();
    EXPECT_FALSE(*unregistered) << "the mapping went while batches pointed into it";
    for (size_t i = 0; i < slots.size(); ++i) {
      char why[256];
      EXPECT_TRUE(gpp_batch_validate(slots[i].data, slots[i].size, why, sizeof why)) << why;
      EXPECT_TRUE(in_order(indexes(slots[i]), 20000 + long(i), 1));
      XdpCapture::release_in_place(slots[i].memory);
    }
    // Unregistered and unmapped on a thread of its own (an unregistration
    // may wait for the device).
    for (int i = 0; i < 200 && !*unregistered; ++i) usleep(10000);
    EXPECT_TRUE(*unregistered) << "the mapping outlived its last batch";
  });
}

// Settings of a capture of `interface` that opens fast: small UMEMs, generic XDP.
XdpSettings small_generic(const char *interface) {
  XdpSettings s;
  s.interface = interface;
  s.frame_count = 256;
  s.ring_size = 64;
  s.attach_mode = gpp::capture::XdpAttachMode::Generic;
  return s;
}

TEST(XdpCaptureCycles, OpenCloseCyclesLeaveNoProgramOrDescriptor) {
  in_own_namespace([] {
    const auto count_fds = [] {
      int n = 0;
      for (int fd = 0; fd < 4096; ++fd) n += fcntl(fd, F_GETFD) != -1;
      return n;
    };
    std::atomic<int> live{0};
    XdpSettings s = small_generic("lo");
    const int before = count_fds();
    for (int i = 0; i < 50; ++i) {
      std::string error, warning;
      auto cap = XdpCapture::open(s, heap_allocate(&live), heap_discard(&live), &error, &warning);
      ASSERT_NE(cap, nullptr) << "open " << i << ": " << error;
      EXPECT_TRUE(warning.empty()) << warning;
      if (i % 2) cap->start();
      send_datagrams(9999, 0, 5);
    }
    EXPECT_EQ(count_fds(), before);
    EXPECT_EQ(live.load(), 0);
    s.attach_mode = gpp::capture::XdpAttachMode::Native;
    std::string error, warning;
    auto cap = XdpCapture::open(s, heap_allocate(&live), heap_discard(&live), &error, &warning);
    EXPECT_EQ(cap, nullptr);
    EXPECT_NE(error.find("native"), std::string::npos) << error;
  });
}

// Several captures of one process on one interface, each with queues of its
// own, share its program: the second finds it there, a queue taken twice or
// another XDP mode is refused naming why, and the program stays until the
// last capture goes.
TEST(XdpCaptureShared, CapturesOfOneInterfaceShareItsProgram) {
  in_own_namespace([] {
    ASSERT_EQ(system("ip link add gppq0 numrxqueues 2 numtxqueues 2 type veth peer name gppq1 "
                     "numrxqueues 2 numtxqueues 2 && ip link set gppq0 up && "
                     "ip link set gppq1 up"), 0);
    const int ifindex = static_cast<int>(if_nametoindex("gppq1"));
    const auto attached = [ifindex] {
      uint32_t id = 0;
      return bpf_xdp_query_id(ifindex, 0, &id) == 0 ? id : 0u;
    };
    std::atomic<int> live{0};
    XdpSettings s = small_generic("gppq1");
    std::string error, warning;
    s.queues = {0};
    auto first = XdpCapture::open(s, heap_allocate(&live), heap_discard(&live), &error, &warning);
    ASSERT_NE(first, nullptr) << error;
    const uint32_t program = attached();
    ASSERT_NE(program, 0u);
    s.queues = {1};
    auto second = XdpCapture::open(s, heap_allocate(&live), heap_discard(&live), &error, &warning);
    ASSERT_NE(second, nullptr) << error;
    EXPECT_EQ(attached(), program) << "the second capture attached a program of its own";

    s.queues = {1};
    EXPECT_EQ(XdpCapture::open(s, heap_allocate(&live), heap_discard(&live), &error, &warning),
              nullptr);
    EXPECT_NE(error.find("Queue 1 of \"gppq1\" is captured by another afxdpsrc of this process"),
              std::string::npos) << error;
    s.queues = {};
    s.attach_mode = gpp::capture::XdpAttachMode::Native;
    EXPECT_EQ(XdpCapture::open(s, heap_allocate(&live), heap_discard(&live), &error, &warning),
              nullptr);
    EXPECT_NE(error.find("generic XDP mode"), std::string::npos) << error;

    first.reset();
    EXPECT_EQ(attached(), program) << "the program went with the first capture";
    second.reset();
    EXPECT_EQ(attached(), 0u) << "the program outlived the last capture";
    // ... and the next capture attaches anew.
    // (queues=all: both of the veth's, found by ethtool here, where /sys
    // still shows the parent namespace's interfaces.)
    s.attach_mode = gpp::capture::XdpAttachMode::Generic;
    s.queues = {};
    auto again = XdpCapture::open(s, heap_allocate(&live), heap_discard(&live), &error, &warning);
    ASSERT_NE(again, nullptr) << error;
    EXPECT_EQ(again->queues().size(), 2u);
    EXPECT_NE(attached(), 0u);
    again.reset();
    EXPECT_EQ(live.load(), 0);
  });
}

// A fork while another thread opens and closes captures (holding the
// process's program registry at times): the child's own capture opens or
// fails at once, never waits for a registry lock that no thread of the
// child will let go.
TEST(XdpCaptureFork, ChildOpensWhileAThreadAttaches) {
#if defined(__SANITIZE_ADDRESS__) // GCC
#define GPP_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) // clang
#define GPP_UNDER_ASAN 1
#endif
#endif
#ifdef GPP_UNDER_ASAN
  // Before LLVM 18 (llvm/llvm-project#75290; GCC 12's libasan is older) the
  // sanitizer's allocator held no lock across fork(): a child forked while
  // the other thread allocates can wait on it for ever, whatever our code does.
  GTEST_SKIP() << "under AddressSanitizer a fork while another thread allocates may leave the "
                  "child waiting on the sanitizer's allocator lock; the normal build runs this test";
#endif
  in_own_namespace([] {
    std::atomic<int> live{0};
    std::atomic<bool> stop{false};
    std::atomic<int> cycles{0};
    const XdpSettings s = small_generic("lo");
    {
      std::string error, warning;
      ASSERT_NE(XdpCapture::open(s, heap_allocate(&live), heap_discard(&live), &error, &warning),
                nullptr) << error;
    }
    std::thread cycler([&] {
      while (!stop) {
        std::string error, warning;
        auto cap = XdpCapture::open(s, heap_allocate(&live), heap_discard(&live), &error, &warning);
        cycles += cap != nullptr; // (refused while a child's capture is there)
      }
    });
    for (int waited = 0; cycles.load() < 2 && waited < 5000; ++waited) usleep(1000);
    const int cycles_before = cycles.load();
    int hung = 0;
    for (int i = 0; i < 40; ++i) {
      fflush(nullptr);
      const pid_t child = fork();
      if (child < 0) {
        ADD_FAILURE() << "fork: " << strerror(errno);
        break;
      }
      if (child == 0) {
        alarm(5); // a child waiting on the registry's lock ends here
        std::string error, warning;
        std::atomic<int> child_live{0};
        auto cap = XdpCapture::open(s, heap_allocate(&child_live), heap_discard(&child_live),
                                    &error, &warning);
        cap.reset(); // opened (nothing attached just then) or refused (the parent's program): both fine
        _exit(0);
      }
      int status = 0;
      hung += waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      usleep(3000);
    }
    stop = true;
    cycler.join();
    EXPECT_EQ(hung, 0) << "children that never opened their capture (of 40)";
    EXPECT_GT(cycles.load(), cycles_before) << "the thread opened no capture while the children did";
    EXPECT_EQ(live.load(), 0);
  });
}

} // namespace
