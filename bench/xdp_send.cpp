// gpupacket-xdp-send: a capture file's frames transmitted in a loop with
// AF_XDP, the sender of bench/live-capture-bench.py (tcpreplay, one sendto
// a packet, could not outrun the receivers there).
//
//   gpupacket-xdp-send --interface IF [--queues N] [--threads T] [--cores LIST]
//                      [--duration S | --count N] [--pps R] [--batch B] FILE
//
// FILE (pcap or pcapng, Ethernet) is read into memory once.  T threads
// (default N) send on transmit queues 0..N-1 of IF, thread i on queue i mod N,
// each pinned to the i-th core of LIST (e.g. 3,5-7; default: not pinned).
// Every thread has a socket and its own copy of the frames in its queue's
// UMEM, written before the clock starts: transmitting is only writing
// descriptors, one kick (sendto) per B of them (default 256) where the kernel
// asks for one (need-wakeup), and reading the completion ring.  The sockets
// are transmit-only, in copy mode (veth has no zero-copy), with no XDP
// program.  Threads on one queue share its UMEM and completion ring (the
// kernel allows one UMEM a queue); a completion's address tells whose frame
// it was.  More threads than queues is for a veth whose peer captures with
// native XDP: veth takes frames from transmit queue q to the peer's receive
// queue q, and attaches native XDP to a device only where its peer has no
// more transmit queues than the device has receive queues (afxdpsrc falls
// back to generic XDP otherwise).
// Without --pps the threads send as fast as they can; --pps R splits R
// packets a second over them, each pacing its share on the monotonic clock
// in bursts of what is due in 50 us (one frame at least, B at most).
// --duration S (default 1) stops after S seconds, --count N after N packets
// in all.
//
// Output, one line on stdout:
//   sent=N seconds=S pps=R cpu_s=C completed=N dropped=N again=N nobufs=N
//   kicks=N invalid=N unfinished=N threads=T queues=N batch=B tx_budget=K
// sent: frames the completion ring gave back, less those the device dropped
// (a kick that failed with EBUSY: the kernel completes the frame it could
// not send); seconds: from the start to the last completion; cpu_s: user +
// system time of the process over that span; again, nobufs: kicks that
// failed with EAGAIN (the kernel's budget a kick, tx_budget, was spent, the
// completion ring was full or the device queue stopped) or ENOBUFS, retried
// by the next kick; invalid: descriptors the kernel refused (none expected);
// unfinished: frames neither completed nor dropped 2 s after the end.
// Exit 0 when it sent, 1 on an error (no such interface or queue, no
// privileges, an unreadable file, every frame dropped), 2 bad usage.
#include <linux/if_xdp.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include <getopt.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "xdp_capture.h"
#include "xdp_send_frames.h"

#ifndef XDP_UMEM_UNALIGNED_CHUNK_FLAG
#define XDP_UMEM_UNALIGNED_CHUNK_FLAG (1 << 0)
#endif
// Linux 6.17's socket option: descriptors a copy-mode kick may send
// (32 before it, and by default).
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9
#endif

namespace {

using gppbench::SendFrames;

constexpr uint32_t kDefaultBudget = 32; // the kernel's budget a kick without the option
// Transmit ring entries: the frames a thread has in flight.
constexpr uint32_t kRing = 2048;
// A fill ring must exist; nothing is received.
constexpr uint32_t kFillRing = 64;
// How long the completions of frames already handed over are waited for.
constexpr uint64_t kDrainNs = 2000000000ull;
// A paced thread sends bursts of what is due in this long (at least one
// frame, at most a batch), sleeping between them where the wait is longer
// than kSpinNs (with a timer slack of kSlackNs) and spinning otherwise.
constexpr uint64_t kBurstNs = 50000;
constexpr uint64_t kSpinNs = 5000;
constexpr unsigned long kSlackNs = 1000;

struct Options {
  std::string interface, file;
  uint32_t queues = 1, threads = 0;
  std::vector<int> cores;
  double duration = 0;
  uint64_t count = 0;
  double pps = 0;
  uint32_t batch = 256;
};

std::atomic<bool> interrupted{false};

void on_signal(int) { interrupted = true; }

uint64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double cpu_seconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

constexpr char kUsage[] =
    "usage: gpupacket-xdp-send --interface IF [--queues N] [--threads T] [--cores LIST]\n"
    "                          [--duration S | --count N] [--pps R] [--batch B] FILE\n";

[[noreturn]] void usage(const std::string &why) {
  fprintf(stderr, "gpupacket-xdp-send: %s\n%s", why.c_str(), kUsage);
  exit(2);
}

[[noreturn]] void fail(const std::string &why) {
  fprintf(stderr, "gpupacket-xdp-send: %s\n", why.c_str());
  exit(1);
}

bool parse_number(const char *text, double *v) {
  char *end;
  errno = 0;
  *v = strtod(text, &end);
  return *text && !*end && !errno && std::isfinite(*v);
}

bool parse_count(const std::string &text, uint64_t *v) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  *v = strtoull(text.c_str(), nullptr, 10);
  return true;
}

// "3,5-7" -> 3 5 6 7 (a core may come again: threads then share it).
bool parse_cores(const std::string &text, std::vector<int> *cores) {
  std::istringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    const size_t dash = item.find('-');
    uint64_t lo, hi;
    if (!parse_count(item.substr(0, dash), &lo)) return false;
    hi = lo;
    if (dash != std::string::npos && !parse_count(item.substr(dash + 1), &hi)) return false;
    if (hi < lo || hi >= CPU_SETSIZE) return false;
    for (uint64_t c = lo; c <= hi; ++c) cores->push_back(static_cast<int>(c));
  }
  return !cores->empty() && text.back() != ',';
}

Options parse_options(int argc, char **argv) {
  static const option longs[] = {{"interface", required_argument, nullptr, 'i'},
                                 {"queues", required_argument, nullptr, 'q'},
                                 {"threads", required_argument, nullptr, 't'},
                                 {"cores", required_argument, nullptr, 'c'},
                                 {"duration", required_argument, nullptr, 'd'},
                                 {"count", required_argument, nullptr, 'n'},
                                 {"pps", required_argument, nullptr, 'r'},
                                 {"batch", required_argument, nullptr, 'b'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  Options o;
  uint64_t v;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "i:q:t:c:d:n:r:b:h", longs, nullptr)) != -1) {
    switch (c) {
    case 'i':
      o.interface = optarg;
      break;
    case 'q':
      if (!parse_count(optarg, &v) || v < 1 || v > 1024) usage("--queues: a count from 1 to 1024");
      o.queues = static_cast<uint32_t>(v);
      break;
    case 't':
      if (!parse_count(optarg, &v) || v < 1 || v > 1024) usage("--threads: a count from 1 to 1024");
      o.threads = static_cast<uint32_t>(v);
      break;
    case 'c':
      if (!parse_cores(optarg, &o.cores)) usage("--cores: a list of cores such as 3,5-7");
      break;
    case 'd':
      if (!parse_number(optarg, &o.duration) || o.duration <= 0) usage("--duration: seconds > 0");
      break;
    case 'n':
      if (!parse_count(optarg, &o.count) || o.count < 1) usage("--count: packets >= 1");
      break;
    case 'r':
      if (!parse_number(optarg, &o.pps) || o.pps < 0) usage("--pps: packets a second >= 0");
      break;
    case 'b':
      if (!parse_count(optarg, &v) || v < 1 || v > kRing)
        usage("--batch: descriptors a kick, 1 to " + std::to_string(kRing));
      o.batch = static_cast<uint32_t>(v);
      break;
    case 'h':
      fputs(kUsage, stdout);
      exit(0);
    default:
      usage(std::string("unknown option or missing value: ") + argv[optind - 1]);
    }
  }
  if (optind + 1 != argc) usage("one capture file expected");
  o.file = argv[optind];
  if (o.interface.empty()) usage("--interface is required");
  if (o.duration > 0 && o.count > 0) usage("--duration and --count exclude each other");
  if (o.duration == 0 && o.count == 0) o.duration = 1;
  if (!o.threads) o.threads = o.queues;
  if (o.threads < o.queues) usage("--threads: at least one a queue");
  if (!o.cores.empty() && o.cores.size() < o.threads)
    usage("--cores names fewer cores than there are threads");
  return o;
}

std::string why_setup_failed(const Options &o, uint32_t queue, size_t umem_bytes, int err,
                             const char *step) {
  const std::string dev = "\"" + o.interface + "\"";
  const std::string kib = std::to_string(umem_bytes >> 10) + " KiB";
  std::string why;
  switch (err) {
  case EPERM:
  case EACCES:
    why = "No permission to send on " + dev + " with AF_XDP: the sockets need CAP_NET_RAW "
          "(not CAP_NET_ADMIN: no XDP program is attached), and the UMEM (" + kib + " for queue " +
          std::to_string(queue) + ") a memlock limit (ulimit -l) that holds it or CAP_IPC_LOCK. "
          "Run as root or grant them (setcap cap_net_raw,cap_ipc_lock+ep on the program)";
    break;
  case ENOMEM:
  case ENOBUFS:
    why = "Not enough locked memory for the UMEM of queue " + std::to_string(queue) + " (" + kib +
          "): raise the memlock limit (ulimit -l), or send a smaller capture or with fewer threads";
    break;
  case EBUSY:
    why = "Queue " + std::to_string(queue) + " of " + dev + " is taken by another AF_XDP socket";
    break;
  case EAFNOSUPPORT:
    why = "This kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS)";
    break;
  default:
    why = "Could not open an AF_XDP socket on " + dev + " queue " + std::to_string(queue) + ": " +
          strerror(err);
  }
  // (libxdp and libbpf print their own lines on stderr before it.)
  return why + " (" + step + ": " + strerror(err) + ")";
}

struct Counts {
  uint64_t submitted = 0, completed = 0, dropped = 0, again = 0, nobufs = 0, kicks = 0;
  uint64_t invalid = 0, unfinished = 0, end_ns = 0;
};

// A thread's socket and counts; the completions of its frames are counted
// by whichever thread of its queue reads the completion ring.
struct Sender {
  uint32_t slot = 0; // its copy of the frames in the queue's UMEM
  int core = -1;
  uint64_t quota = UINT64_MAX;
  double pps = 0;
  xsk_socket *xsk = nullptr;
  xsk_ring_prod tx{};
  int fd = -1;
  uint32_t budget = kDefaultBudget;
  Counts c;
  alignas(64) std::atomic<uint64_t> completed{0};
  ~Sender() {
    if (xsk) xsk_socket__delete(xsk);
  }
};

// One transmit queue: the UMEM its threads share (a copy of the frames for
// each, so that a completion's address tells whose frame it was) and its
// completion ring, read by one thread at a time.
struct TxQueue {
  uint32_t id = 0;
  void *area = MAP_FAILED;
  size_t area_bytes = 0, copy_bytes = 0;
  xsk_umem *umem = nullptr;
  xsk_ring_prod fill{};
  xsk_ring_cons comp{};
  uint32_t comp_size = 0;
  std::mutex comp_lock;
  std::vector<Sender *> members;
  ~TxQueue() {
    if (umem) xsk_umem__delete(umem);
    if (area != MAP_FAILED) munmap(area, area_bytes);
  }

  void count_completions() {
    std::unique_lock<std::mutex> lock(comp_lock, std::defer_lock);
    if (members.size() > 1 && !lock.try_lock()) return; // another member reads it now
    uint32_t idx;
    const uint32_t n = xsk_ring_cons__peek(&comp, comp_size, &idx);
    if (!n) return;
    if (members.size() == 1) {
      xsk_ring_cons__release(&comp, n);
      members[0]->completed.fetch_add(n, std::memory_order_relaxed);
      return;
    }
    uint32_t per[64] = {};
    std::vector<uint32_t> more(members.size() > 64 ? members.size() : 0);
    uint32_t *counts = more.empty() ? per : more.data();
    for (uint32_t i = 0; i < n; ++i) ++counts[*xsk_ring_cons__comp_addr(&comp, idx + i) / copy_bytes];
    xsk_ring_cons__release(&comp, n);
    for (size_t m = 0; m < members.size(); ++m)
      if (counts[m]) members[m]->completed.fetch_add(counts[m], std::memory_order_relaxed);
  }
};

// The UMEM of `q` with a copy of the frames for each of its members, and
// their sockets; "" or why not.
std::string set_up_queue(const Options &o, const SendFrames &f, TxQueue &q) {
  q.copy_bytes = f.image.size();
  q.area_bytes = q.copy_bytes * q.members.size();
  q.area = mmap(nullptr, q.area_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (q.area == MAP_FAILED) return why_setup_failed(o, q.id, q.area_bytes, errno, "mmap of the UMEM");
  for (size_t m = 0; m < q.members.size(); ++m)
    memcpy(static_cast<uint8_t *>(q.area) + m * q.copy_bytes, f.image.data(), q.copy_bytes);
  // Room for every member's frames in flight.
  q.comp_size = kRing;
  while (q.comp_size < kRing * q.members.size()) q.comp_size *= 2;
  xsk_umem_config ucfg{};
  ucfg.fill_size = kFillRing;
  ucfg.comp_size = q.comp_size;
  ucfg.frame_size = f.chunk_size;
  ucfg.frame_headroom = 0;
  // Frames packed 64 bytes apart, not one a chunk: a copy of the whole
  // capture takes a few MiB.
  ucfg.flags = XDP_UMEM_UNALIGNED_CHUNK_FLAG;
  if (int rc = xsk_umem__create(&q.umem, q.area, q.area_bytes, &q.fill, &q.comp, &ucfg)) {
    q.umem = nullptr;
    return why_setup_failed(o, q.id, q.area_bytes, -rc, "xsk_umem__create");
  }
  xsk_socket_config scfg{};
  scfg.rx_size = 0;
  scfg.tx_size = kRing;
  scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD; // nothing is received
  scfg.xdp_flags = 0;
  scfg.bind_flags = XDP_USE_NEED_WAKEUP | XDP_COPY;
  for (Sender *s : q.members) {
    int rc = 0;
    // A socket closed a moment ago (the probe run before this one) may
    // still hold the queue: the kernel lets it go shortly; try again.
    for (int tries = 0;; ++tries) {
      rc = s == q.members.front()
               ? xsk_socket__create(&s->xsk, o.interface.c_str(), q.id, q.umem, nullptr, &s->tx,
                                    &scfg)
               : xsk_socket__create_shared(&s->xsk, o.interface.c_str(), q.id, q.umem, nullptr,
                                           &s->tx, &q.fill, &q.comp, &scfg);
      if (rc != -EBUSY || tries == gpp::capture::kQueueBusyTries) break;
      usleep(gpp::capture::kQueueBusyWaitUs);
    }
    if (rc) {
      s->xsk = nullptr;
      return why_setup_failed(o, q.id, q.area_bytes, -rc, "xsk_socket__create");
    }
    s->fd = xsk_socket__fd(s->xsk);
    // One kick sends a whole batch where the kernel allows it (Linux 6.17
    // and later); elsewhere a kick sends 32 and the next kick the rest.
    const unsigned want = std::max(kDefaultBudget, o.batch);
    if (want > kDefaultBudget &&
        setsockopt(s->fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &want, sizeof want) == 0)
      s->budget = want;
  }
  return "";
}

// A thread's sending, from start_ns until deadline_ns or its quota; "" or
// why it stopped.
std::string send_loop(const Options &o, const SendFrames &f, TxQueue &q, Sender &s,
                      uint64_t start_ns, uint64_t deadline_ns) {
  const auto &frames = f.frames;
  const size_t nframes = frames.size();
  const uint64_t base = uint64_t(s.slot) * q.copy_bytes;
  size_t next = (size_t(q.id) * 7919u + s.slot * 104729u) % nframes; // threads start apart
  uint64_t drain_until = 0;
  const uint64_t burst = std::clamp<uint64_t>(uint64_t(s.pps * kBurstNs * 1e-9), 1, o.batch);
  Counts &c = s.c;
  // Descriptors in the transmit ring the kernel has not taken yet.
  auto pending = [&s] { return xsk_prod_nb_free(&s.tx, kRing) < kRing; };
  for (;;) {
    q.count_completions();
    c.completed = s.completed.load(std::memory_order_relaxed);
    const uint64_t now = monotonic_ns();
    const uint64_t in_flight = c.submitted - c.completed;
    if (interrupted || now >= deadline_ns || c.submitted >= s.quota) {
      if (!drain_until) drain_until = now + kDrainNs;
      if (!in_flight || now >= drain_until) {
        c.end_ns = now;
        break;
      }
    } else {
      uint64_t want = std::min<uint64_t>({o.batch, s.quota - c.submitted, kRing - in_flight});
      if (s.pps > 0) {
        const double due = (now - start_ns) * 1e-9 * s.pps;
        const uint64_t allowed = due > c.submitted ? uint64_t(due) - c.submitted : 0;
        const uint64_t need = std::min(burst, s.quota - c.submitted);
        if (allowed < need) {
          const uint64_t wait = uint64_t((c.submitted + need - due) / s.pps * 1e9);
          if (wait > kSpinNs && !pending()) {
            const timespec ts{0, long(std::min<uint64_t>(wait, 999999999))};
            nanosleep(&ts, nullptr);
          }
          want = 0;
        } else {
          want = std::min(want, allowed);
        }
      }
      uint32_t idx;
      if (want && xsk_ring_prod__reserve(&s.tx, static_cast<uint32_t>(want), &idx)) {
        for (uint32_t i = 0; i < want; ++i) {
          xdp_desc *d = xsk_ring_prod__tx_desc(&s.tx, idx + i);
          d->addr = base + frames[next].addr;
          d->len = frames[next].len;
          d->options = 0;
          if (++next == nframes) next = 0;
        }
        xsk_ring_prod__submit(&s.tx, static_cast<uint32_t>(want));
        c.submitted += want;
      }
    }
    if (pending() && xsk_ring_prod__needs_wakeup(&s.tx)) {
      ++c.kicks;
      if (sendto(s.fd, nullptr, 0, MSG_DONTWAIT, nullptr, 0) < 0) {
        switch (errno) {
        case EAGAIN:
          ++c.again;
          break;
        case EBUSY:
          ++c.dropped; // the device dropped a frame, which the kernel completed
          break;
        case ENOBUFS:
          ++c.nobufs;
          break;
        case EINTR:
          break;
        case ENETDOWN:
          return "\"" + o.interface + "\" is down: ip link set " + o.interface + " up";
        default:
          return "sending on \"" + o.interface + "\" queue " + std::to_string(q.id) + ": " +
                 strerror(errno);
        }
      }
    }
  }
  xdp_statistics st{};
  socklen_t len = sizeof st;
  if (getsockopt(s.fd, SOL_XDP, XDP_STATISTICS, &st, &len) == 0) c.invalid = st.tx_invalid_descs;
  return "";
}

} // namespace

int main(int argc, char **argv) {
  const Options o = parse_options(argc, argv);
  SendFrames frames;
  std::string error;
  if (!load_send_frames(o.file, &frames, &error)) fail(error);
  if (frames.skipped_long)
    fprintf(stderr, "gpupacket-xdp-send: %llu frames longer than %llu bytes left out\n",
            (unsigned long long)frames.skipped_long, (unsigned long long)SendFrames::kPage);

  const std::string dev = "\"" + o.interface + "\"";
  if (!if_nametoindex(o.interface.c_str()))
    fail("No network interface " + dev + ". List the interfaces with \"ip link\".");
  // The kernel ignores a kick on a queue past the device's transmit queues:
  // nothing would be sent, and nothing said.
  const uint32_t have = gpp::capture::interface_tx_queues(o.interface);
  if (have && o.queues > have)
    fail(dev + " has " + std::to_string(have) + " transmit queue" + (have == 1 ? "" : "s") +
         ": --queues " + std::to_string(o.queues) + " needs as many (a veth: ip link add ... "
         "numtxqueues " + std::to_string(o.queues) + " numrxqueues " + std::to_string(o.queues) +
         ")");

  // The UMEMs are locked memory: no limit where allowed (root); otherwise
  // CAP_IPC_LOCK or the limit as it is.
  const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_MEMLOCK, &unlimited);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);

  // Queues before senders: the sockets close before their UMEMs.
  std::vector<std::unique_ptr<TxQueue>> queues;
  std::vector<std::unique_ptr<Sender>> senders;
  for (uint32_t q = 0; q < o.queues; ++q) {
    queues.push_back(std::make_unique<TxQueue>());
    queues.back()->id = q;
  }
  for (uint32_t t = 0; t < o.threads; ++t) {
    auto s = std::make_unique<Sender>();
    TxQueue &q = *queues[t % o.queues];
    s->slot = static_cast<uint32_t>(q.members.size());
    s->core = o.cores.empty() ? -1 : o.cores[t];
    s->quota = o.count ? o.count / o.threads + (t < o.count % o.threads) : UINT64_MAX;
    s->pps = o.pps / o.threads;
    q.members.push_back(s.get());
    senders.push_back(std::move(s));
  }
  for (auto &q : queues) {
    const std::string why = set_up_queue(o, frames, *q);
    if (!why.empty()) fail(why);
  }

  // Each thread pins itself, then waits for the common start.
  std::mutex lock;
  std::condition_variable changed;
  uint32_t ready = 0;
  bool go = false, give_up = false;
  uint64_t start_ns = 0, deadline_ns = UINT64_MAX;
  std::vector<std::string> errors(o.threads);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < o.threads; ++t)
    threads.emplace_back([&, t] {
      Sender &s = *senders[t];
      std::string why;
      if (s.core >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(s.core, &set);
        if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set))
          why = "cannot run on core " + std::to_string(s.core) + " (of " +
                std::to_string(std::thread::hardware_concurrency()) + " here): " + strerror(rc);
      }
      prctl(PR_SET_TIMERSLACK, kSlackNs); // pacing sleeps end on time
      {
        std::unique_lock<std::mutex> l(lock);
        errors[t] = why;
        ++ready;
        changed.notify_all();
        changed.wait(l, [&] { return go || give_up; });
        if (give_up) return;
      }
      errors[t] = send_loop(o, frames, *queues[t % o.queues], s, start_ns, deadline_ns);
    });
  double cpu0;
  {
    std::unique_lock<std::mutex> l(lock);
    changed.wait(l, [&] { return ready == o.threads; });
    for (const std::string &e : errors)
      if (!e.empty()) give_up = true;
    cpu0 = cpu_seconds();
    start_ns = monotonic_ns();
    if (o.duration > 0) deadline_ns = start_ns + uint64_t(o.duration * 1e9);
    go = true;
    changed.notify_all();
  }
  for (auto &t : threads) t.join();
  const double cpu = cpu_seconds() - cpu0;
  for (const std::string &e : errors)
    if (!e.empty()) fail(e);

  // Completions that came after a thread stopped looking.
  for (auto &q : queues) q->count_completions();
  Counts all;
  uint32_t budget = UINT32_MAX;
  for (const auto &s : senders) {
    const Counts &c = s->c;
    const uint64_t completed = s->completed.load();
    all.submitted += c.submitted;
    all.completed += completed;
    all.unfinished += c.submitted - std::min(c.submitted, completed);
    all.dropped += c.dropped;
    all.again += c.again;
    all.nobufs += c.nobufs;
    all.kicks += c.kicks;
    all.invalid += c.invalid;
    all.end_ns = std::max(all.end_ns, c.end_ns);
    budget = std::min(budget, s->budget);
  }
  const uint64_t sent = all.completed - std::min(all.completed, all.dropped);
  const double seconds = (all.end_ns - start_ns) * 1e-9;
  printf("sent=%llu seconds=%.6f pps=%.0f cpu_s=%.3f completed=%llu dropped=%llu again=%llu "
         "nobufs=%llu kicks=%llu invalid=%llu unfinished=%llu threads=%u queues=%u batch=%u "
         "tx_budget=%u\n",
         (unsigned long long)sent, seconds, seconds > 0 ? sent / seconds : 0.0, cpu,
         (unsigned long long)all.completed, (unsigned long long)all.dropped,
         (unsigned long long)all.again, (unsigned long long)all.nobufs,
         (unsigned long long)all.kicks, (unsigned long long)all.invalid,
         (unsigned long long)all.unfinished, o.threads, o.queues, o.batch, budget);
  if (!sent && all.dropped)
    fail(dev + " dropped every frame (a veth whose peer is down, or frames longer than its MTU)");
  return 0;
}
