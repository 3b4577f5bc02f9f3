// Live capture through libpcap (capture/pcap_live) without GStreamer, as root
// in a network namespace of the test's own (its loopback): after a start, the
// packets a socket captured before it are skipped, but never for longer than
// its stale window, whatever the wall clock did.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "live_clock.h"
#include "own_namespace.h"
#include "pcap_live.h"

namespace {

using namespace gpp::capture;
constexpr uint64_t kMs = 1000000;

// A start stamped an hour after the packets' capture times, as when the wall
// clock is stepped back an hour after the start: every packet then looks
// captured before it.  The skip must still end within the socket's stale
// window (a second in immediate mode), not an hour later.
TEST(PcapLive, ASkipEndsWithinTheStaleWindowWhenTheWallClockSteppedBack) {
  gpp::test::in_own_namespace([] {
    PcapLiveSettings settings;
    settings.interface = "lo";
    settings.filter = "udp port 9";
    PcapLiveError error;
    std::string warning;
    std::unique_ptr<PcapSocket> socket = PcapSocket::open(settings, &error, &warning);
    ASSERT_TRUE(socket) << error.message << " (" << error.detail << ")";
    LiveBatch batch;
    batch.linktype = socket->linktype();
    batch.builder.reset(batch.linktype);
    const uint64_t started = monotonic_clock_ns();
    ASSERT_TRUE(batch.follow_start(1, wall_clock_ns() + 3600 * 1000 * kMs, *socket));

    std::atomic<bool> sending{true};
    std::thread sender([&sending] {
      const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(9);
      to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      while (sending) {
        sendto(fd, "x", 1, 0, reinterpret_cast<const sockaddr *>(&to), sizeof to);
        usleep(5000);
      }
      close(fd);
    });
    FillControl control;
    control.proceed = [started] { return monotonic_clock_ns() - started < 3000 * kMs; };
    control.limits = [](uint32_t *packets, uint64_t *timeout_ns) {
      *packets = 1;
      *timeout_ns = kMs;
    };
    control.wait_limit = [] { return 10 * kMs; };
    control.on_wake = [] { return true; };
    std::string why;
    const Fill fill = socket->fill(batch, control, 1 << 20, &why);
    const uint64_t delivered_after = monotonic_clock_ns() - started;
    sending = false;
    sender.join();

    const uint64_t window = socket->stale_window_ns();
    ASSERT_EQ(fill, Fill::Ready) << "nothing delivered within 3 s of the start: " << why;
    EXPECT_EQ(batch.packets(), 1u);
    // A datagram every 5 ms for the window's second: skipped, and counted.
    EXPECT_GT(batch.take_skipped(), 50u);
    EXPECT_GE(delivered_after, window - 10 * kMs);
    EXPECT_LT(delivered_after, window + 500 * kMs);
  });
}

} // namespace
