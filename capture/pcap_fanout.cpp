#include "pcap_fanout.h"

#include <linux/if_packet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "spin_lock.h"

#ifndef PACKET_FANOUT_FLAG_UNIQUEID
#define PACKET_FANOUT_FLAG_UNIQUEID 0x2000
#endif

namespace gpp::capture {
namespace {

// Closed batches waiting for the consumer, per socket, before a socket's
// thread waits (its kernel ring then fills and the kernel counts the drops).
constexpr size_t kReadyPerSocket = 4;
// Longest wait without a deadline: the thread looks at its state again.
constexpr uint64_t kIdleWaitNs = 100 * 1000 * 1000;

uint32_t fanout_type(FanoutMode mode) {
  switch (mode) {
  case FanoutMode::LoadBalance:
    return PACKET_FANOUT_LB;
  case FanoutMode::Cpu:
    return PACKET_FANOUT_CPU;
  case FanoutMode::QueueMapping:
    return PACKET_FANOUT_QM;
  case FanoutMode::Rollover:
    return PACKET_FANOUT_ROLLOVER;
  case FanoutMode::HashDefrag:
    return PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_DEFRAG;
  case FanoutMode::Hash:
    break;
  }
  // Packets as they were on the wire: the fragments of a datagram hash on
  // its addresses alone, so they share a socket, maybe not its flow's.
  return PACKET_FANOUT_HASH;
}

// Joins `fd` to group `id`; 0 or an errno.
int join(int fd, uint32_t id, uint32_t type_flags) {
  const uint32_t arg = (id & 0xffff) | (type_flags << 16);
  return setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof arg) == 0 ? 0 : errno;
}

std::string why_join_failed(const PcapFanoutSettings &s, uint32_t socket, uint32_t id, int err) {
  const std::string dev = "\"" + s.socket.interface + "\"";
  const std::string group = "fanout group " + std::to_string(id);
  const std::string mode = fanout_mode_name(s.mode);
  switch (err) {
  case EINVAL:
    return "Socket " + std::to_string(socket) + " on " + dev + " could not join " + group +
           " in mode " + mode + ": the group exists with another mode (another capture, "
           "maybe another process, uses fanout-group=" + std::to_string(id) + " with another "
           "fanout-mode, or on another interface), or this kernel lacks fanout mode " + mode +
           ". Set fanout-group=0 (a group of its own) or another group, or the group's "
           "fanout-mode, or another fanout-mode (hash is on every kernel with fanout)";
  case ENOSPC:
    return group + " is full: lower fanout, or use another fanout-group";
  case ENOPROTOOPT:
    return "This kernel has no PACKET_FANOUT (Linux 3.1 and later do): capture with "
           "fanout=1";
  case EALREADY:
    return "Socket " + std::to_string(socket) + " on " + dev + " is in a fanout group already";
  default:
    return "Socket " + std::to_string(socket) + " on " + dev + " could not join " + group +
           ": " + strerror(err);
  }
}

} // namespace

const char *fanout_mode_name(FanoutMode mode) {
  switch (mode) {
  case FanoutMode::LoadBalance:
    return "lb";
  case FanoutMode::Cpu:
    return "cpu";
  case FanoutMode::QueueMapping:
    return "qm";
  case FanoutMode::Rollover:
    return "rollover";
  case FanoutMode::HashDefrag:
    return "hash-defrag";
  case FanoutMode::Hash:
    break;
  }
  return "hash";
}

struct PcapFanout::Socket {
  uint32_t index = 0;
  std::unique_ptr<PcapSocket> pcap;
  LiveBatch batch;
  uint64_t epoch = 0; // PcapFanout::epoch_ when the batch being built began
  int wake_fd = -1;   // eventfd: start/pause/stop and limit changes end its waits
  std::atomic<uint64_t> packets{0}, bytes{0};
  pcap_stat last{};   // the last pcap_stats answer
  std::thread thread;

  ~Socket() {
    if (wake_fd >= 0) close(wake_fd);
  }
};

PcapFanout::PcapFanout(Allocate allocate, Discard discard, size_t max_batch_bytes)
    : allocate_(std::move(allocate)), discard_(std::move(discard)),
      max_batch_bytes_(max_batch_bytes) {}

std::unique_ptr<PcapFanout> PcapFanout::open(const PcapFanoutSettings &s, Allocate allocate,
                                             Discard discard, PcapLiveError *error,
                                             std::string *warning) {
  if (s.sockets < 1 || s.sockets > kMaxFanout) {
    *error = {PcapLiveError::Kind::Fanout,
              "fanout=" + std::to_string(s.sockets) + ": a fanout has 1 to " +
                  std::to_string(kMaxFanout) + " sockets",
              ""};
    return nullptr;
  }
  if (s.group > 0xffff) {
    *error = {PcapLiveError::Kind::Fanout,
              "fanout-group=" + std::to_string(s.group) + ": a group id is 1 to 65535 (0: a "
              "group of its own)", ""};
    return nullptr;
  }
  std::unique_ptr<PcapFanout> fan(
      new PcapFanout(std::move(allocate), std::move(discard), s.max_batch_bytes));
  const uint32_t type_flags = fanout_type(s.mode);
  for (uint32_t i = 0; i < s.sockets; ++i) {
    auto sock = std::make_unique<Socket>();
    sock->index = i;
    std::string limitation; // the same for every socket: told once
    sock->pcap = PcapSocket::open(s.socket, error, &limitation);
    if (i == 0) *warning = limitation;
    if (!sock->pcap) return nullptr;
    sock->batch.linktype = sock->pcap->linktype();
    sock->batch.builder.reset(sock->batch.linktype);
    const int fd = pcap_fileno(sock->pcap->handle());
    int err;
    if (i == 0 && s.group == 0) {
      // A group id the kernel picks among free ones, read back for the
      // other sockets.  A kernel that picks none ignores the flag and keeps
      // it (joining group 0, maybe another capture's); one that picks drops
      // it from the group's flags.  EINVAL: the mode itself is refused.
      err = join(fd, 0, type_flags | PACKET_FANOUT_FLAG_UNIQUEID);
      uint32_t got = 0;
      socklen_t len = sizeof got;
      if (!err && getsockopt(fd, SOL_PACKET, PACKET_FANOUT, &got, &len) != 0) err = errno;
      if (!err && ((got >> 24) & (PACKET_FANOUT_FLAG_UNIQUEID >> 8))) {
        *error = {PcapLiveError::Kind::Fanout,
                  "This kernel cannot pick a free fanout group (no PACKET_FANOUT_FLAG_UNIQUEID): "
                  "set fanout-group to an id (1-65535) that no other capture on \"" +
                      s.socket.interface + "\" uses.",
                  "PACKET_FANOUT_FLAG_UNIQUEID ignored"};
        return nullptr;
      }
      if (err == EINVAL) {
        *error = {PcapLiveError::Kind::Fanout,
                  "This kernel refuses fanout-mode=" + std::string(fanout_mode_name(s.mode)) +
                      " on \"" + s.socket.interface + "\": choose another fanout-mode (hash "
                      "is the oldest).",
                  "setsockopt PACKET_FANOUT: " + std::string(strerror(err))};
        return nullptr;
      }
      fan->group_ = got & 0xffff;
    } else {
      if (i == 0) fan->group_ = s.group;
      err = join(fd, fan->group_, type_flags);
    }
    if (err) {
      *error = {PcapLiveError::Kind::Fanout, why_join_failed(s, i, fan->group_, err),
                std::string("setsockopt PACKET_FANOUT: ") + strerror(err)};
      return nullptr;
    }
    // Until it joined, the socket got every packet (so did the group):
    // those are dropped, as everything is before start().
    fan->discarded_ += sock->pcap->drain();
    sock->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (sock->wake_fd < 0) {
      *error = {PcapLiveError::Kind::Other, std::string("Could not create an eventfd: ") +
                                                strerror(errno), ""};
      return nullptr;
    }
    fan->sockets_.push_back(std::move(sock));
  }
  for (auto &sock : fan->sockets_) {
    Socket *one = sock.get();
    sock->thread = std::thread([f = fan.get(), one] { f->run_socket(*one); });
  }
  return fan;
}

PcapFanout::~PcapFanout() {
  stop();
  sockets_.clear(); // the handles, after their threads
}

void PcapFanout::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  wake_threads();
  for (auto &s : sockets_)
    if (s->thread.joinable()) {
      s->thread.join();
      // What the kernel still queues was received and will never be taken.
      discarded_ += s->pcap->drain();
    }
  drop_queued();
}

void PcapFanout::wake_threads() {
  for (auto &s : sockets_) signal_eventfd(s->wake_fd);
}

PcapFanout::Take PcapFanout::take(FanoutBatch *batch, uint64_t wait_ns) {
  auto lock = spin_lock(mutex_);
  return take_ready(lock, batch, std::chrono::steady_clock::now() +
                                     std::chrono::nanoseconds(wait_ns));
}

uint32_t PcapFanout::linktype() const { return sockets_.front()->pcap->linktype(); }

const char *PcapFanout::linktype_name() const { return sockets_.front()->pcap->linktype_name(); }

std::vector<FanoutSocketStats> PcapFanout::stats() {
  std::lock_guard<std::mutex> guard(stats_mutex_);
  std::vector<FanoutSocketStats> all;
  for (auto &s : sockets_) {
    pcap_stat now;
    if (s->pcap->stats(&now)) s->last = now;
    FanoutSocketStats st;
    st.packets = s->packets.load();
    st.bytes = s->bytes.load();
    st.received = s->last.ps_recv;
    st.dropped = s->last.ps_drop;
    st.if_dropped = s->last.ps_ifdrop;
    all.push_back(st);
  }
  return all;
}

// Drops the batch being built, counted as discarded.
void PcapFanout::drop_batch(Socket &s) {
  discarded_ += s.batch.packets();
  s.batch.drop();
}

// Writes the closed batch into memory from the caller and queues it once
// there is room, numbering its packets then; a pause or stop meanwhile
// gives it back.
void PcapFanout::deliver(Socket &s) {
  const uint32_t n = s.batch.packets();
  if (!n) return;
  const size_t size = s.batch.builder.size();
  FanoutBatch batch;
  uint8_t *dst = allocate_(size, &batch.memory);
  if (!dst) {
    drop_batch(s);
    fail("no memory for a batch of " + std::to_string(size) + " bytes");
    return;
  }
  s.batch.builder.write(dst);
  batch.socket = s.index;
  batch.packets = n;
  batch.size = size;
  batch.captured_bytes = s.batch.bytes;
  batch.first_capture_ns = s.batch.first_ts;
  batch.last_capture_ns = s.batch.last_ts;
  s.packets += n;
  s.bytes += s.batch.bytes;
  s.batch.drop();
  auto *descs = reinterpret_cast<GppPacketDesc *>(dst + sizeof(GppBatchHeader));
  auto lock = spin_lock(mutex_); // the consumer holds it briefly: no sleep for that
  changed_.wait(lock, [&] {
    return stopping_ || !running_ || s.epoch != epoch_ ||
           ready_.size() < kReadyPerSocket * sockets_.size();
  });
  if (stopping_ || !running_ || s.epoch != epoch_) {
    lock.unlock();
    discarded_ += n;
    discard_(batch.memory);
    return;
  }
  queue_numbered(batch, descs);
}

void PcapFanout::run_socket(Socket &s) {
  // The batch deadline is a ppoll() timeout, which Linux may stretch by the
  // thread's timer slack (50 us by default): 1 us keeps it (as XdpCapture).
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
  // An exception here (an allocation) would end the process: it fails the
  // capture instead, which the consumer reports.
  try {
    capture(s);
  } catch (const std::exception &e) {
    fail("socket " + std::to_string(s.index) + ": " + e.what());
  } catch (...) {
    fail("socket " + std::to_string(s.index) + ": an unknown exception");
  }
  drop_batch(s);
}

void PcapFanout::capture(Socket &s) {
  FillControl control;
  control.proceed = [&] {
    // The epoch before running_: a pause between the two reads then ends
    // this fill, and a batch never starts in a paused epoch's successor.
    const uint64_t epoch = epoch_;
    if (stopping_ || !running_ || failed_) return false;
    if (s.batch.packets() == 0) s.epoch = epoch; // a batch begun from here is of this epoch
    return s.epoch == epoch_;
  };
  control.limits = [this](uint32_t *packets, uint64_t *timeout_ns) {
    *packets = batch_packets_;
    *timeout_ns = batch_timeout_ns_;
  };
  control.wait_limit = [] { return kIdleWaitNs; };
  control.wake_fd = s.wake_fd;
  control.on_wake = [&] {
    drain_eventfd(s.wake_fd);
    return true; // proceed() looks at what changed
  };
  while (!stopping_) {
    if (running_ && !failed_) {
      if (s.batch.packets() && s.epoch != epoch_) drop_batch(s);
      // Packets captured before the start are not delivered: without
      // immediate mode the kernel hands over a block only once it is
      // closed, so the one open at the start still holds packets from
      // before it (PAUSED, and before this socket joined the group, when it
      // saw every packet the others saw too).
      const uint64_t starts = starts_;
      s.batch.follow_start(starts, start_wall_ns_, *s.pcap);
      std::string error;
      const Fill filled = s.pcap->fill(s.batch, control, max_batch_bytes_, &error);
      discarded_ += s.batch.take_skipped();
      switch (filled) {
      case Fill::Ready:
        deliver(s);
        break;
      case Fill::Failed:
        fail("capture on socket " + std::to_string(s.index) + " failed: " + error);
        return;
      case Fill::Stopped:
        break;
      }
      continue;
    }
    // Not delivering (before start, PAUSED, after another socket failed):
    // what arrives is read and dropped, as a camera does not deliver what
    // it saw while paused.
    drop_batch(s);
    discarded_ += s.pcap->drain();
    pollfd fds[2] = {{s.pcap->fd(), POLLIN, 0}, {s.wake_fd, POLLIN, 0}};
    const timespec ts = {time_t(kIdleWaitNs / 1000000000u), long(kIdleWaitNs % 1000000000u)};
    if (ppoll(fds, 2, &ts, nullptr) < 0 && errno != EINTR) {
      fail(std::string("waiting for packets: ") + strerror(errno));
      return;
    }
    if (fds[1].revents) drain_eventfd(s.wake_fd);
  }
}

} // namespace gpp::capture
