#include "xdp_capture.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/ethtool.h>
#include <dirent.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include <gpupacket/packet-batch.h>

#include "interface_ioctl.h"
#include "spin_lock.h"

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

namespace gpp::capture {
namespace {

// Frames taken off the RX ring per look: one clock read stamps them all.
constexpr uint32_t kRxBurst = 64;
// Closed batches waiting for the consumer, per queue, before a queue's
// thread waits (its RX ring then fills and the kernel counts the drops).
constexpr size_t kReadyPerQueue = 4;
// Longest and shortest nap while a batch fills (see receive()).
constexpr uint64_t kMaxNapNs = 200 * 1000;
constexpr uint64_t kMinNapNs = 1000;
// Longest wait without a deadline: the thread looks at its state again.
constexpr uint64_t kIdleWaitNs = 100 * 1000 * 1000;
// Memory taken when a batch opens (see take_open_memory()): twice the last
// batch's size, at least this much.
constexpr size_t kOpenMemoryMinBytes = 16 << 10;
// Completion ring entries: nothing is sent, but the ring must exist.
constexpr uint32_t kCompletionRing = 64;

// libxdp and libbpf print to stderr; their lines are kept instead and the
// last ones told with an error.
thread_local std::string library_messages;
int keep_message(const char *format, va_list ap) {
  char line[512];
  vsnprintf(line, sizeof line, format, ap);
  library_messages += line;
  if (library_messages.size() > 4096) library_messages.erase(0, library_messages.size() - 4096);
  return 0;
}
int keep_libxdp(enum libxdp_print_level, const char *format, va_list ap) {
  return keep_message(format, ap);
}
int keep_libbpf(enum libbpf_print_level level, const char *format, va_list ap) {
  return level == LIBBPF_DEBUG ? 0 : keep_message(format, ap);
}

bool power_of_two(uint32_t v) { return v && !(v & (v - 1)); }

// The program that sends each receive queue's frames to its socket:
//   return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
// (a queue without a socket in the map passes its frames to the stack).
// Six instructions, so no BPF compiler is needed to build it.
constexpr char kProgramName[] = "gpp_xsk_redir"; // BPF names hold 15 characters

// Whether the program attached to `ifindex` is another capture's redirect
// program (another afxdpsrc on the same interface).
bool attached_is_ours(int ifindex) {
  uint32_t id = 0;
  if (bpf_xdp_query_id(ifindex, 0, &id) != 0 || !id) return false;
  const int fd = bpf_prog_get_fd_by_id(id);
  if (fd < 0) return false;
  bpf_prog_info info{};
  uint32_t len = sizeof info;
  const bool ours = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
                    strncmp(info.name, kProgramName, sizeof info.name) == 0;
  close(fd);
  return ours;
}

int load_redirect_program(int map_fd) {
  const bpf_insn insns[] = {
      // r2 = ctx->rx_queue_index (struct xdp_md, offset 16)
      {BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 16, 0},
      // r1 = the map (a 16-byte load of its fd)
      {BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd},
      {0, 0, 0, 0, 0},
      // r3 = XDP_PASS, the action where the queue has no socket
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, XDP_PASS},
      {BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_redirect_map},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  return bpf_prog_load(BPF_PROG_TYPE_XDP, kProgramName, "Dual BSD/GPL", insns,
                       sizeof insns / sizeof insns[0], nullptr);
}

// Attaches the program to `ifindex` in `mode` (XDP_FLAGS_DRV_MODE or
// _SKB_MODE), only where no program is: through a BPF link where the kernel
// has XDP links (Linux 5.9), so the program goes with the process even when
// it is killed (SIGKILL); else through netlink, where it stays until
// detached.  0 (and *link_fd where a link holds it) or a negative errno.
int attach_program(int ifindex, int prog_fd, uint32_t mode, int *link_fd) {
  bpf_link_create_opts opts{};
  opts.sz = sizeof opts;
  opts.flags = mode;
  const int fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &opts);
  if (fd >= 0) {
    *link_fd = fd;
    return 0;
  }
  if (-fd == EBUSY || -fd == EEXIST) return fd; // a program is there: netlink would say the same
  return bpf_xdp_attach(ifindex, prog_fd, mode | XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
}

std::string why_open_failed(const XdpSettings &s, uint32_t queue, int err, const char *step) {
  const std::string dev = "\"" + s.interface + "\"";
  std::string why;
  switch (err) {
  case EPERM:
  case EACCES:
    why = "No permission to capture on " + dev + " with AF_XDP: attaching the XDP program needs "
          "CAP_NET_ADMIN and CAP_BPF (or CAP_SYS_ADMIN), the sockets CAP_NET_RAW, and the "
          "UMEM a memlock limit (ulimit -l) that holds it or CAP_IPC_LOCK. Run as root or "
          "grant them (setcap cap_net_admin,cap_net_raw,cap_bpf,cap_ipc_lock+ep on the "
          "program)";
    break;
  case EBUSY:
    why = "Queue " + std::to_string(queue) + " of " + dev + " is taken by another AF_XDP "
          "socket (another afxdpsrc, or an AF_XDP program such as Suricata's)";
    break;
  case EEXIST:
    why = "Another XDP program is attached to " + dev + " (xdp-loader status " + s.interface +
          " shows it). Detach it (xdp-loader unload " + s.interface + " --all, or ip link set "
          "dev " + s.interface + " xdp off), or capture with pcapsrc device=" + s.interface;
    break;
  case ENOMEM:
  case ENOBUFS:
    why = "Not enough locked memory for the UMEM of queue " + std::to_string(queue) + " on " +
          dev + ": raise the memlock limit (ulimit -l) or lower frame-count or frame-size";
    break;
  case ERANGE:
    why = "The MTU of " + dev + " (or, on a veth, of its peer) is too large for native XDP "
          "(veth: about 3500 bytes at most): lower it, or use xdp-mode=generic";
    break;
  case EOPNOTSUPP:
    why = std::string("The driver of ") + dev + " does not support " +
          (s.attach_mode == XdpAttachMode::Native ? "native (driver) XDP: use xdp-mode=auto "
                                                    "or generic"
           : s.copy_mode == XdpCopyMode::ZeroCopy ? "zero-copy AF_XDP: use zero-copy=auto or off"
                                                  : "this AF_XDP set-up");
    break;
  default:
    why = "Could not capture on " + dev + " queue " + std::to_string(queue) + " with AF_XDP: " +
          strerror(err);
  }
  why += std::string(" (") + step + ": " + strerror(err);
  std::string said = library_messages;
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  if (!said.empty()) {
    const size_t last = said.rfind('\n');
    why += "; libxdp: " + said.substr(last == std::string::npos ? 0 : last + 1);
  }
  return why + ")";
}

} // namespace

bool parse_queue_list(const std::string &text, std::vector<uint32_t> *queues, bool *all,
                      std::string *error) {
  queues->clear();
  *all = text.empty() || text == "all";
  if (*all) return true;
  auto number = [](const std::string &s, uint32_t *v) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
      return false;
    *v = static_cast<uint32_t>(std::stoul(s));
    return true;
  };
  uint32_t count;
  if (text.find_first_of(",-") == std::string::npos) {
    if (!number(text, &count) || count == 0) {
      *error = "queues \"" + text + "\": expected all, a count of queues, or a list like 0,2,4-7";
      return false;
    }
    for (uint32_t q = 0; q < count; ++q) queues->push_back(q);
    return true;
  }
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    at = end + 1;
    if (item.empty()) {
      if (end == text.size()) break; // "3," names queue 3 alone
      *error = "queues \"" + text + "\": an empty item";
      return false;
    }
    const size_t dash = item.find('-');
    uint32_t lo, hi;
    if (!(dash == std::string::npos ? number(item, &lo) && (hi = lo, true)
                                    : number(item.substr(0, dash), &lo) &&
                                          number(item.substr(dash + 1), &hi)) ||
        hi < lo) {
      *error = "queues \"" + text + "\": \"" + item + "\" is not a queue or a range a-b";
      return false;
    }
    for (uint32_t q = lo; q <= hi; ++q) {
      for (uint32_t seen : *queues)
        if (seen == q) {
          *error = "queues \"" + text + "\": queue " + std::to_string(q) + " named twice";
          return false;
        }
      queues->push_back(q);
    }
  }
  return true;
}

namespace {

// The interface's receive (`rx`) or transmit queues by ETHTOOL_GCHANNELS
// (what `ethtool -l` shows as current), asked in this process's network
// namespace; 0 where the driver does not say (loopback).
uint32_t ethtool_queues(const std::string &interface, bool rx) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  ethtool_channels channels{};
  channels.cmd = ETHTOOL_GCHANNELS;
  const bool answered = ethtool_ask(fd, interface, &channels);
  close(fd);
  if (!answered) return 0;
  return (rx ? channels.rx_count : channels.tx_count) + channels.combined_count;
}

// Entries of /sys/class/net/IF/queues named PREFIX (3 characters) and a
// number: sysfs as mounted, which in a network namespace entered without
// mounting it anew (unshare -n, nsenter) shows another namespace's
// interfaces, hence only where ethtool does not answer.
uint32_t sysfs_queues(const std::string &interface, const char *prefix) {
  const std::string path = "/sys/class/net/" + interface + "/queues";
  DIR *dir = opendir(path.c_str());
  if (!dir) return 0;
  uint32_t count = 0;
  while (const dirent *e = readdir(dir))
    if (strncmp(e->d_name, prefix, 3) == 0) ++count;
  closedir(dir);
  return count;
}

// Receive (`rx`) or transmit queues: ethtool's answer, else sysfs's.
uint32_t interface_queues(const std::string &interface, bool rx) {
  const uint32_t n = ethtool_queues(interface, rx);
  return n ? n : sysfs_queues(interface, rx ? "rx-" : "tx-");
}

} // namespace

uint32_t interface_rx_queues(const std::string &interface) {
  return interface_queues(interface, true);
}

uint32_t interface_tx_queues(const std::string &interface) {
  return interface_queues(interface, false);
}

namespace {
// A batch header of `count` Ethernet frames (AF_XDP delivers them) and
// `total_size` bytes at `dst`; returns where its descriptors go.
GppPacketDesc *write_batch_header(uint8_t *dst, uint32_t count, uint64_t total_size) {
  auto *header = reinterpret_cast<GppBatchHeader *>(dst);
  *header = GppBatchHeader{};
  header->magic = GPP_BATCH_MAGIC;
  header->version = GPP_BATCH_VERSION;
  header->header_size = sizeof(GppBatchHeader);
  header->packet_count = count;
  header->linktype = GPP_LINKTYPE_ETHERNET;
  header->total_size = total_size;
  return reinterpret_cast<GppPacketDesc *>(dst + sizeof(GppBatchHeader));
}
} // namespace

// Outlives its queue while batches of frames in place are out: they point
// into it, and give their frames back through it.
struct XdpCapture::Mapping {
  void *base = MAP_FAILED;
  size_t bytes = 0;
  size_t slot_bytes = 0, umem_offset = 0; // kInPlaceSlots slots, then the UMEM
  int wake_fd = -1;                       // the queue thread's wake-ups (eventfd)
  std::shared_ptr<void> registration;     // XdpSettings::on_mapped's
  std::mutex mutex;
  std::vector<uint32_t> free_slots;
  std::vector<uint64_t> returned; // frames given back, for the queue's free list
  std::atomic<bool> has_returned{false};
  // Set by the queue's thread when it sleeps with its fill ring low: the
  // next batch given back wakes it to refill (otherwise it refills when it
  // next wakes, without a wake-up for each batch).
  std::atomic<bool> wake_on_return{false};
  std::condition_variable slot_freed;

  uint8_t *umem() const { return static_cast<uint8_t *>(base) + umem_offset; }
  uint8_t *slot(uint32_t i) const { return static_cast<uint8_t *>(base) + size_t(i) * slot_bytes; }
  ~Mapping() {
    // Unregistering may wait for the device to go idle (a resident
    // persistent kernel keeps it busy until its element stops it), and the
    // last batch may be freed on the very thread that would stop it: the
    // registration, then the memory, go on a thread of their own.
    auto unmap = [](std::shared_ptr<void> registration, void *base, size_t bytes) {
      registration.reset(); // before the memory goes
      munmap(base, bytes);
    };
    if (registration) {
      try {
        std::thread(unmap, std::move(registration), base, bytes).detach();
      } catch (...) { // no thread to be had: here, then
        unmap(std::move(registration), base, bytes);
      }
    } else if (base != MAP_FAILED) {
      munmap(base, bytes);
    }
    if (wake_fd >= 0) close(wake_fd);
  }
};

// The redirect program attached to one interface and its queue -> socket
// map, shared by every capture of this process on that interface, each with
// queues of its own (`queues`: those claimed); the last to go detaches it.
struct XdpCapture::Program {
  int ifindex = 0;
  pid_t pid = 0;             // the process that attached it (a forked child's is not its)
  uint32_t prog_id = 0;      // the kernel's id of the program
  int map_fd = -1, prog_fd = -1;
  uint32_t map_entries = 0;
  uint32_t attach_flags = 0; // XDP_FLAGS_DRV_MODE or _SKB_MODE once attached
  int link_fd = -1;          // the BPF link holding it, where attached by one
  std::set<uint32_t> queues; // under programs_mutex

  ~Program() {
    if (link_fd >= 0) {
      // Detached now, though a child forked since holds the link's fd too.
      bpf_link_detach(link_fd);
      close(link_fd);
    } else if (attach_flags) {
      // Only if the program attached is still ours.
      bpf_xdp_attach_opts opts{};
      opts.sz = sizeof opts;
      opts.old_prog_fd = prog_fd;
      bpf_xdp_detach(ifindex, attach_flags | XDP_FLAGS_REPLACE, &opts);
    }
    if (prog_fd >= 0) close(prog_fd);
    if (map_fd >= 0) close(map_fd);
  }
};

namespace {
// This process's programs by interface (interface_key); the mutex also
// guards each program's claimed queues, and is held while the last user
// lets one go (its detach), so that a capture opened meanwhile attaches anew
// rather than finding the old one still there.
// (Constant-initialised: usable before any constructor of the library ran.)
std::mutex programs_mutex;
// Held across fork(): a fork while another thread holds it would leave the
// child's copy locked, and the child's first afxdpsrc waiting for ever.
// Registered as the library loads, before any thread of it could fork.
[[maybe_unused]] const int programs_mutex_at_fork =
    pthread_atfork([] { programs_mutex.lock(); }, [] { programs_mutex.unlock(); },
                   [] { programs_mutex.unlock(); });
// An interface of this thread's network namespace: (the namespace's inode,
// the interface's index), as interface indexes are per namespace.
using InterfaceKey = std::pair<uint64_t, int>;
InterfaceKey interface_key(int ifindex) {
  struct stat ns{};
  const uint64_t netns = stat("/proc/thread-self/ns/net", &ns) == 0 ? uint64_t(ns.st_ino) : 0;
  return {netns, ifindex};
}
std::map<InterfaceKey, std::weak_ptr<XdpCapture::Program>> &programs() {
  static std::map<InterfaceKey, std::weak_ptr<XdpCapture::Program>> p;
  return p;
}

// Entries of the queue -> socket map where the interface's queue count is
// unknown: other captures of the process may add queues of their own.
constexpr uint32_t kMapEntriesUnknownQueues = 256;

// The program on `ifindex` for a capture of `ids` (queues of the interface,
// which has `have`, 0: unknown): this process's, where one of its captures
// is there already, its queues claimed if no other capture has them; else a
// new one, its map sized for every queue of the interface, attached only
// where no other program is (attach_program()): native first where allowed,
// auto falling back to generic (SKB) mode.  nullptr with `error` naming the
// fix.
std::shared_ptr<XdpCapture::Program> claim_program(const XdpSettings &s, int ifindex,
                                                   uint32_t have,
                                                   const std::vector<uint32_t> &ids,
                                                   std::string *error, std::string *warning) {
  const std::string dev = "\"" + s.interface + "\"";
  std::lock_guard<std::mutex> lock(programs_mutex);
  const InterfaceKey key = interface_key(ifindex);
  std::shared_ptr<XdpCapture::Program> p = programs()[key].lock();
  if (p && p->pid != getpid()) p.reset(); // the parent's, before a fork: not this process's
  if (p) {
    uint32_t attached = 0;
    if (bpf_xdp_query_id(ifindex, p->attach_flags, &attached) != 0 || attached != p->prog_id) {
      *error = "The XDP program that another afxdpsrc of this process attached to " + dev +
               " is no longer there (detached, or the interface was replaced): restart that "
               "afxdpsrc";
      return nullptr;
    }
    const bool native = p->attach_flags == XDP_FLAGS_DRV_MODE;
    if ((s.attach_mode == XdpAttachMode::Native && !native) ||
        (s.attach_mode == XdpAttachMode::Generic && native)) {
      *error = "Another afxdpsrc of this process captures on " + dev + " in " +
               (native ? "native" : "generic") + " XDP mode; captures of one interface share "
               "its program: give them the same xdp-mode (auto takes the one attached)";
      return nullptr;
    }
    for (uint32_t q : ids) {
      if (p->queues.count(q) || q >= p->map_entries) {
        *error = p->queues.count(q)
                     ? "Queue " + std::to_string(q) + " of " + dev + " is captured by another "
                       "afxdpsrc of this process: give each its own queues (queues=)"
                     : "Queue " + std::to_string(q) + " of " + dev + " is past the queues that "
                       "the afxdpsrc capturing there first made room for (" +
                       std::to_string(p->map_entries) + ")";
        return nullptr;
      }
    }
    if (s.attach_mode == XdpAttachMode::Auto && !native && warning->empty())
      *warning = "capturing " + dev + " in generic (SKB) mode, as the afxdpsrc of this process "
                 "already there does";
  } else {
    p = std::make_shared<XdpCapture::Program>();
    p->ifindex = ifindex;
    p->pid = getpid();
    // Room for every queue of the interface, where its count is known.
    uint32_t entries = have ? have : kMapEntriesUnknownQueues;
    for (uint32_t q : ids) entries = std::max(entries, q + 1);
    p->map_entries = entries;
    p->map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "gpp_xsks", sizeof(uint32_t),
                               sizeof(uint32_t), entries, nullptr);
    if (p->map_fd < 0) {
      *error = why_open_failed(s, ids.front(), errno, "the socket map");
      return nullptr;
    }
    p->prog_fd = load_redirect_program(p->map_fd);
    if (p->prog_fd < 0) {
      *error = why_open_failed(s, ids.front(), errno, "loading the XDP program");
      return nullptr;
    }
    bpf_prog_info info{};
    uint32_t info_len = sizeof info;
    if (bpf_obj_get_info_by_fd(p->prog_fd, &info, &info_len) == 0) p->prog_id = info.id;
    std::vector<uint32_t> attach;
    if (s.attach_mode != XdpAttachMode::Generic) attach.push_back(XDP_FLAGS_DRV_MODE);
    if (s.attach_mode != XdpAttachMode::Native) attach.push_back(XDP_FLAGS_SKB_MODE);
    for (size_t at = 0;; ++at) {
      const int rc = attach_program(ifindex, p->prog_fd, attach[at], &p->link_fd);
      if (!rc) {
        p->attach_flags = attach[at];
        break;
      }
      if (-rc == EBUSY || -rc == EEXIST) {
        *error = attached_is_ours(ifindex)
                     ? "An afxdpsrc of another process already captures on " + dev + ": the "
                       "captures of one interface must be in one process (several afxdpsrc "
                       "there may share it, each with queues of its own); if none runs, one "
                       "killed on a kernel without XDP links (before 5.9) left it: ip link "
                       "set dev " + s.interface + " xdp off"
                     : why_open_failed(s, ids.front(), EEXIST, "attaching the XDP program");
        return nullptr;
      }
      if (at + 1 < attach.size()) {
        *warning = "native XDP refused on " + dev + " (" + strerror(-rc) +
                   "): capturing in generic (SKB) mode, which costs more per packet; "
                   "xdp-mode=native makes this an error";
        continue;
      }
      *error = why_open_failed(s, ids.front(), -rc, "attaching the XDP program");
      return nullptr;
    }
    programs()[key] = p;
  }
  p->queues.insert(ids.begin(), ids.end());
  return p;
}

// A batch of frames in place: what release_in_place() gives back.
struct InPlaceBatch {
  std::shared_ptr<XdpCapture::Mapping> mapping;
  uint32_t slot = 0;
  std::vector<uint64_t> frames; // frame addresses in the UMEM
};
} // namespace

struct XdpCapture::Queue {
  uint32_t id = 0;
  std::shared_ptr<Mapping> mapping;
  void *area = nullptr; // the UMEM, in mapping
  size_t area_bytes = 0;
  uint32_t frame_size = 0;
  xsk_umem *umem = nullptr;
  xsk_socket *xsk = nullptr;
  xsk_ring_prod fill{};
  xsk_ring_cons completion{};
  xsk_ring_cons rx{};
  std::vector<uint64_t> free_frames; // frame addresses neither in the kernel nor held
  uint32_t hold_limit = 0;           // frames a batch may hold: the fill ring keeps the rest
  struct Held {
    uint64_t addr;
    uint32_t len;
    uint64_t ns;
  };
  std::vector<Held> held; // the batch being built: its frames, still in the UMEM
  uint64_t held_bytes = 0;
  uint64_t start_ns = 0; // monotonic: when the batch being built got its first frame
  uint64_t epoch = 0;    // XdpCapture::epoch_ then: a pause since drops the batch
  // Frames copied out: memory taken when the batch opened (none: dst
  // null), and whether the last batch closed at its deadline and its size.
  struct OpenMemory {
    void *memory = nullptr; // the caller's handle
    uint8_t *dst = nullptr;
    size_t bytes = 0;
  } open;
  bool last_at_deadline = false;
  size_t last_bytes = 0;
  uint32_t ring_size = 0;
  std::atomic<uint64_t> packets{0}, bytes{0};
  std::thread thread;

  ~Queue() {
    if (xsk) xsk_socket__delete(xsk);
    if (umem) xsk_umem__delete(umem);
  }

  // Frames from the free list into the fill ring, as many as it takes.
  void refill() {
    if (free_frames.empty()) return;
    // A reservation is all or nothing: ask for what the ring has room for.
    const uint32_t want = std::min<uint32_t>(
        xsk_prod_nb_free(&fill, static_cast<uint32_t>(free_frames.size())),
        static_cast<uint32_t>(free_frames.size()));
    if (!want) return;
    uint32_t idx;
    const uint32_t got = xsk_ring_prod__reserve(&fill, want, &idx);
    for (uint32_t i = 0; i < got; ++i) {
      *xsk_ring_prod__fill_addr(&fill, idx + i) = free_frames.back();
      free_frames.pop_back();
    }
    if (got) xsk_ring_prod__submit(&fill, got);
  }

  void release_held() {
    for (const Held &h : held) free_frames.push_back(h.addr);
    held.clear();
    held_bytes = 0;
  }
};

XdpCapture::XdpCapture(Allocate allocate, Discard discard, uint32_t capacity)
    : allocate_(std::move(allocate)), discard_(std::move(discard)), capacity_(capacity) {}

std::unique_ptr<XdpCapture> XdpCapture::open(const XdpSettings &s, Allocate allocate,
                                             Discard discard, std::string *error,
                                             std::string *warning) {
  library_messages.clear();
  // The process's own print functions come back when open() returns.
  struct RestorePrint {
    libxdp_print_fn_t xdp = libxdp_set_print(keep_libxdp);
    libbpf_print_fn_t bpf = libbpf_set_print(keep_libbpf);
    ~RestorePrint() {
      libxdp_set_print(xdp);
      libbpf_set_print(bpf);
    }
  } restore_print;
  const std::string dev = "\"" + s.interface + "\"";
  const int ifindex = s.interface.empty() ? 0 : static_cast<int>(if_nametoindex(s.interface.c_str()));
  if (!ifindex) {
    *error = "No network interface " + dev + ". List the interfaces with \"ip link\".";
    return nullptr;
  }
  if (!power_of_two(s.frame_size) || s.frame_size < 2048 || !power_of_two(s.frame_count) ||
      !power_of_two(s.ring_size) || s.ring_size > s.frame_count / 4) {
    // The fill ring takes 2 x ring-size frames; batches hold the rest.
    *error = "AF_XDP needs frame-size 2048 or a larger power of two, and frame-count and "
             "ring-size powers of two with ring-size at most a quarter of frame-count (got " +
             std::to_string(s.frame_size) + ", " + std::to_string(s.frame_count) + ", " +
             std::to_string(s.ring_size) + ")";
    return nullptr;
  }
  const uint32_t have = interface_rx_queues(s.interface);
  std::vector<uint32_t> ids = s.queues;
  if (ids.empty())
    for (uint32_t q = 0; q < (have ? have : 1); ++q) ids.push_back(q);
  for (uint32_t q : ids)
    if (have && q >= have) {
      *error = dev + " has " + std::to_string(have) + " receive queue" + (have == 1 ? "" : "s") +
               " (0-" + std::to_string(have - 1) + "): there is no queue " + std::to_string(q) +
               ". ethtool -l " + s.interface + " shows them; set queues to all or a list "
               "within them.";
      return nullptr;
    }

  std::unique_ptr<XdpCapture> cap(
      new XdpCapture(std::move(allocate), std::move(discard), s.batch_capacity_bytes));
  cap->busy_poll_ = s.busy_poll;
  cap->in_place_ = s.frames_in_place;
  cap->queue_ids_ = ids;

  cap->program_ = claim_program(s, ifindex, have, ids, error, warning);
  if (!cap->program_) return nullptr;
  cap->native_ = cap->program_->attach_flags == XDP_FLAGS_DRV_MODE;
  uint16_t bind = XDP_USE_NEED_WAKEUP;
  if (s.copy_mode == XdpCopyMode::ZeroCopy) bind |= XDP_ZEROCOPY;
  if (s.copy_mode == XdpCopyMode::Copy) bind |= XDP_COPY;
  // (Auto: neither flag, and the kernel binds zero-copy where the driver can.)

  for (size_t i = 0; i < ids.size(); ++i) {
    auto q = std::make_unique<Queue>();
    q->id = ids[i];
    q->frame_size = s.frame_size;
    q->ring_size = s.ring_size;
    q->area_bytes = size_t(s.frame_count) * s.frame_size;
    q->mapping = std::make_shared<Mapping>();
    Mapping &m = *q->mapping;
    if (s.frames_in_place) {
      // A slot holds the descriptors of the largest batch (hold_limit frames).
      const size_t page = 4096;
      m.slot_bytes = gpp_align_up(gpp_batch_data_start(s.frame_count - 2 * s.ring_size), page);
      m.umem_offset = m.slot_bytes * kInPlaceSlots;
      for (uint32_t i = kInPlaceSlots; i-- > 0;) m.free_slots.push_back(i);
    }
    m.bytes = m.umem_offset + q->area_bytes;
    if (s.frames_in_place && m.bytes > UINT32_MAX) { // descriptor offsets are 32-bit
      *error = "frames-in-place needs frame-count x frame-size below 4 GiB a queue (its "
               "descriptors' offsets are 32-bit): lower frame-count";
      return nullptr;
    }
    m.base = mmap(nullptr, m.bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (m.base == MAP_FAILED) {
      *error = why_open_failed(s, q->id, errno, "mmap of the UMEM");
      return nullptr;
    }
    q->area = m.umem();
    if (s.frames_in_place && s.on_mapped) m.registration = s.on_mapped(m.base, m.bytes);
    xsk_umem_config ucfg{};
    ucfg.fill_size = s.ring_size * 2;
    ucfg.comp_size = kCompletionRing;
    ucfg.frame_size = s.frame_size;
    ucfg.frame_headroom = 0;
    // The kernel frees a closed socket's hold on its queue a moment later
    // (deferred work): a queue still held is tried again for a while.
    int busy_tries = 0;
    for (;;) {
      int rc = xsk_umem__create(&q->umem, q->area, q->area_bytes, &q->fill, &q->completion, &ucfg);
      if (rc) {
        q->umem = nullptr;
        *error = why_open_failed(s, q->id, -rc, "xsk_umem__create");
        return nullptr;
      }
      xsk_socket_config scfg{};
      scfg.rx_size = s.ring_size;
      scfg.tx_size = 0;
      scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD; // ours is attached
      scfg.xdp_flags = cap->program_->attach_flags;
      scfg.bind_flags = bind;
      rc = xsk_socket__create(&q->xsk, s.interface.c_str(), q->id, q->umem, &q->rx, nullptr,
                              &scfg);
      if (!rc) rc = xsk_socket__update_xskmap(q->xsk, cap->program_->map_fd);
      if (!rc) break;
      if (q->xsk) xsk_socket__delete(q->xsk);
      q->xsk = nullptr;
      xsk_umem__delete(q->umem);
      q->umem = nullptr;
      if (-rc == EBUSY && busy_tries++ < kQueueBusyTries) {
        usleep(kQueueBusyWaitUs);
        library_messages.clear();
        continue;
      }
      *error = why_open_failed(s, q->id, -rc, "xsk_socket__create");
      return nullptr;
    }
    xdp_options options{};
    socklen_t len = sizeof options;
    if (getsockopt(xsk_socket__fd(q->xsk), SOL_XDP, XDP_OPTIONS, &options, &len) == 0)
      cap->zero_copy_ = (options.flags & XDP_OPTIONS_ZEROCOPY) != 0;
    if (s.busy_poll) {
      const int fd = xsk_socket__fd(q->xsk);
      int on = 1, usecs = 20, budget = static_cast<int>(kRxBurst);
      if (setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &on, sizeof on) ||
          setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &usecs, sizeof usecs) ||
          setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof budget)) {
        *error = why_open_failed(s, q->id, errno, "busy-poll socket options");
        return nullptr;
      }
    }
    m.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (m.wake_fd < 0) {
      *error = why_open_failed(s, q->id, errno, "eventfd");
      return nullptr;
    }
    for (uint32_t f = s.frame_count; f-- > 0;) q->free_frames.push_back(uint64_t(f) * s.frame_size);
    q->hold_limit = s.frame_count - ucfg.fill_size;
    q->held.reserve(q->hold_limit);
    q->refill();
    cap->queues_.push_back(std::move(q));
  }
  cap->device_mapped_ = s.frames_in_place;
  for (auto &q : cap->queues_) cap->device_mapped_ &= q->mapping->registration != nullptr;
  for (auto &q : cap->queues_) {
    Queue *queue = q.get();
    q->thread = std::thread([c = cap.get(), queue] { c->run_queue(*queue); });
  }
  return cap;
}

XdpCapture::~XdpCapture() {
  stop();
  queues_.clear(); // sockets (the kernel takes them out of the map), then UMEMs
  if (!program_) return;
  std::lock_guard<std::mutex> lock(programs_mutex);
  for (uint32_t q : queue_ids_) program_->queues.erase(q);
  program_.reset(); // the last user detaches it, under the lock
  for (auto it = programs().begin(); it != programs().end();)
    it = it->second.expired() ? programs().erase(it) : std::next(it);
}

void XdpCapture::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_threads();
  changed_.notify_all();
  for (auto &q : queues_)
    if (q->thread.joinable()) q->thread.join();
  drop_queued();
}

void XdpCapture::wake_threads() {
  for (auto &q : queues_) signal_eventfd(q->mapping->wake_fd);
}

// Whether something take() waits for happened (signals_ moved on from
// `seen`, read with the mutex held) while a batch was being built, spinning
// until it did, the batch was dropped, or `until_ns`.  A sleeping thread
// wakes some 5-20 us after the notify on a VM, which a busy-polling capture
// means to avoid.  The spin yields now and then: a queue's thread pinned to
// the same core then gets to close its batch.
bool XdpCapture::spin_for_batch(uint64_t seen, uint64_t until_ns) {
  for (uint32_t spins = 1; open_batches_.load() > 0; ++spins) {
    if (signals_.load(std::memory_order_acquire) != seen) return true;
    if ((spins & 63) == 0) {
      if (monotonic_clock_ns() >= until_ns) return false;
      if ((spins & 1023) == 0) sched_yield();
    }
    cpu_relax();
  }
  return signals_.load(std::memory_order_acquire) != seen;
}

XdpCapture::Take XdpCapture::take(XdpBatch *batch, uint64_t wait_ns) {
  const uint64_t until_ns = monotonic_clock_ns() + wait_ns;
  // Spinning for the mutex here and in queue_batch(): the queue's thread
  // still holds it when the signal this thread spins for comes, and a thread
  // that sleeps on a held mutex wakes microseconds later.
  auto lock = spin_lock(mutex_);
  if (busy_poll_) {
    // Sleep until a batch opens (the queue's thread then says so), spin
    // until it closes.
    while (!attention()) {
      const uint64_t now = monotonic_clock_ns();
      if (now >= until_ns) break;
      if (open_batches_.load() == 0) {
        // Sequentially consistent with the queue's thread, which counts the
        // batch, then looks at this flag: either it sees the flag and
        // notifies, or the predicate here sees the batch.
        consumer_asleep_.store(true);
        changed_.wait_for(lock, std::chrono::nanoseconds(until_ns - now),
                          [&] { return attention() || open_batches_.load() > 0; });
        consumer_asleep_.store(false);
        continue;
      }
      // Read before the mutex is let go: whatever take() has not seen in
      // attention() moves signals_ on from here.
      const uint64_t seen = signals_.load(std::memory_order_acquire);
      lock.unlock();
      spin_for_batch(seen, until_ns);
      spin_relock(lock);
    }
  }
  const uint64_t now = monotonic_clock_ns();
  return take_ready(lock, batch, std::chrono::steady_clock::now() +
                                     std::chrono::nanoseconds(until_ns > now ? until_ns - now : 0));
}

void XdpCapture::signal_consumer() {
  signals_.fetch_add(1, std::memory_order_release);
  changed_.notify_all();
}

std::vector<XdpQueueStats> XdpCapture::stats() const {
  std::vector<XdpQueueStats> all;
  for (const auto &q : queues_) {
    XdpQueueStats st;
    st.queue = q->id;
    st.packets = q->packets.load();
    st.bytes = q->bytes.load();
    xdp_statistics k{};
    socklen_t len = sizeof k;
    if (getsockopt(xsk_socket__fd(q->xsk), SOL_XDP, XDP_STATISTICS, &k, &len) == 0) {
      st.rx_dropped = k.rx_dropped;
      st.rx_invalid_descs = k.rx_invalid_descs;
      st.rx_ring_full = k.rx_ring_full;
      st.rx_fill_ring_empty = k.rx_fill_ring_empty_descs;
    }
    all.push_back(st);
  }
  return all;
}

// A batch that its deadline will close (the queue's last one was closed by
// its deadline) takes its memory when it opens: the deadline then has only
// the copy and the hand-over to wait for, not the allocator (2.0-2.5 us off
// the median capture-to-result of 3-frame batches on the H100 host,
// BENCHMARKS.md).  Twice the last batch's size,
// so a trickle holds little; a batch that outgrows it takes memory of its
// exact size at its close, as a batch filled by size always does.
void XdpCapture::take_open_memory(Queue &q) {
  if (in_place_ || q.open.dst || !q.last_at_deadline) return;
  const size_t bytes = std::min<size_t>(capacity_, std::max(2 * q.last_bytes, kOpenMemoryMinBytes));
  q.open.dst = allocate_(bytes, &q.open.memory);
  q.open.bytes = q.open.dst ? bytes : 0;
}

// Gives back memory taken at a batch's opening that no batch used.
void XdpCapture::drop_open_memory(Queue &q) {
  if (q.open.dst) discard_(std::exchange(q.open, {}).memory);
}

// Closes the batch being built: memory from the caller (taken when it
// opened, or now, of its exact size), each frame copied there once,
// numbers given in delivery order, and its frames back to the fill ring.
// `at_deadline`: its deadline closed it (not its size).
void XdpCapture::deliver(Queue &q, bool at_deadline) {
  const uint32_t n = static_cast<uint32_t>(q.held.size());
  if (!n) return;
  if (in_place_) {
    deliver_in_place(q);
    return;
  }
  size_t data = 0;
  for (const Queue::Held &h : q.held) data += gpp_align_up(h.len, GPP_PACKET_ALIGN);
  const size_t size = gpp_batch_size(n, data);
  if (q.open.bytes < size) drop_open_memory(q);
  const Queue::OpenMemory open = std::exchange(q.open, {});
  void *memory = open.memory;
  uint8_t *dst = open.dst ? open.dst : allocate_(size, &memory);
  q.last_at_deadline = at_deadline;
  q.last_bytes = size;
  if (!dst) {
    discarded_ += n;
    release(q);
    fail("no memory for a batch of " + std::to_string(size) + " bytes");
    return;
  }
  GppPacketDesc *descs = write_batch_header(dst, n, size);
  size_t at = gpp_batch_data_start(n);
  for (uint32_t i = 0; i < n; ++i) {
    const Queue::Held &h = q.held[i];
    descs[i] = GppPacketDesc{h.ns, 0, static_cast<uint32_t>(at), h.len, h.len, 0};
    memcpy(dst + at, xsk_umem__get_data(q.area, h.addr), h.len);
    const size_t padded = gpp_align_up(h.len, GPP_PACKET_ALIGN);
    memset(dst + at + h.len, 0, padded - h.len);
    at += padded;
  }
  XdpBatch batch = held_batch(q);
  batch.memory = memory;
  batch.size = size;
  q.release_held(); // still open (open_batches_) until queued or dropped below
  q.refill();
  queue_batch(q, batch, descs);
}

// The batch being built as closed, counted as captured; the caller sets
// where it lies.
XdpBatch XdpCapture::held_batch(Queue &q) {
  XdpBatch batch;
  batch.queue = q.id;
  batch.packets = static_cast<uint32_t>(q.held.size());
  batch.captured_bytes = q.held_bytes;
  batch.first_capture_ns = q.held.front().ns;
  batch.last_capture_ns = q.held.back().ns;
  q.packets += batch.packets;
  q.bytes += q.held_bytes;
  return batch;
}

// Hands a closed batch to the consumer once there is room, numbering its
// packets (`descs`) in that order; a pause or stop meanwhile gives it back.
void XdpCapture::queue_batch(Queue &q, XdpBatch batch, GppPacketDesc *descs) {
  auto lock = spin_lock(mutex_);
  changed_.wait(lock, [&] {
    return stopping_ || !running_ || q.epoch != epoch_ ||
           ready_.size() < kReadyPerQueue * queues_.size();
  });
  open_batches_.fetch_sub(1);
  if (stopping_ || !running_ || q.epoch != epoch_) {
    lock.unlock();
    discarded_ += batch.packets;
    give_back(batch);
    return;
  }
  queue_numbered(batch, descs);
}

// Closes the batch being built with its frames in place: its header and
// descriptors go into a free slot (waiting for one while every slot is out),
// and its frames stay out of the fill ring until release_in_place().
void XdpCapture::deliver_in_place(Queue &q) {
  const uint32_t n = static_cast<uint32_t>(q.held.size());
  Mapping &m = *q.mapping;
  auto gone = [&] { return stopping_ || !running_ || q.epoch != epoch_; };
  auto batch_memory = std::make_unique<InPlaceBatch>();
  batch_memory->mapping = q.mapping;
  batch_memory->frames.reserve(n);
  uint32_t slot = 0;
  {
    std::unique_lock<std::mutex> lock(m.mutex);
    // (stop() and pause() do not hold this mutex: a short wait looks again.)
    while (m.free_slots.empty() && !gone())
      m.slot_freed.wait_for(lock, std::chrono::milliseconds(1));
    if (m.free_slots.empty()) {
      lock.unlock();
      discarded_ += n;
      release(q);
      return;
    }
    slot = m.free_slots.back();
    m.free_slots.pop_back();
  }
  uint8_t *dst = m.slot(slot);
  const size_t batch_offset = dst - static_cast<uint8_t *>(m.base);
  const size_t to_umem = m.umem_offset - batch_offset;
  GppPacketDesc *descs = write_batch_header(dst, n, m.bytes - batch_offset);
  batch_memory->slot = slot;
  for (uint32_t i = 0; i < n; ++i) {
    const Queue::Held &h = q.held[i];
    uint64_t addr = h.addr;
    if (addr % GPP_PACKET_ALIGN) { // a driver's odd headroom: move it down within its frame
      const uint64_t aligned = addr & ~uint64_t(GPP_PACKET_ALIGN - 1);
      memmove(xsk_umem__get_data(q.area, aligned), xsk_umem__get_data(q.area, addr), h.len);
      addr = aligned;
    }
    descs[i] = GppPacketDesc{h.ns, 0, static_cast<uint32_t>(to_umem + addr), h.len, h.len, 0};
    batch_memory->frames.push_back(h.addr & ~uint64_t(q.frame_size - 1));
  }
  XdpBatch batch = held_batch(q);
  batch.memory = batch_memory.release();
  batch.data = dst;
  batch.device_mapped = m.registration != nullptr;
  batch.size = m.bytes - batch_offset;
  q.held.clear(); // the frames are the batch's now
  q.held_bytes = 0;
  queue_batch(q, batch, descs);
}

void XdpCapture::release_in_place(void *memory) {
  std::unique_ptr<InPlaceBatch> batch(static_cast<InPlaceBatch *>(memory));
  Mapping &m = *batch->mapping;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.returned.insert(m.returned.end(), batch->frames.begin(), batch->frames.end());
    m.free_slots.push_back(batch->slot);
    m.has_returned = true;
  }
  m.slot_freed.notify_one();
  // A thread asleep with its fill ring low refills now, not at its next
  // frame: a ring left empty gets none.
  if (m.wake_on_return.exchange(false)) signal_eventfd(m.wake_fd);
}

// Frames given back since the last look, onto the free list; whether there
// were any.
bool XdpCapture::take_returned(Queue &q) {
  Mapping &m = *q.mapping;
  if (!m.has_returned.load()) return false; // seq_cst: against wake_on_return (receive())
  std::lock_guard<std::mutex> lock(m.mutex);
  q.free_frames.insert(q.free_frames.end(), m.returned.begin(), m.returned.end());
  m.returned.clear();
  m.has_returned = false;
  return true;
}

// A batch nobody will take: its memory to the caller's Discard, or (frames
// in place) its frames and slot back to its queue.
void XdpCapture::give_back(const XdpBatch &batch) {
  if (in_place_)
    release_in_place(batch.memory);
  else
    discard_(batch.memory);
}

// Drops the batch being built (its frames back to the free list, memory
// taken for it back to the caller).
void XdpCapture::release(Queue &q) {
  drop_open_memory(q);
  if (q.held.empty()) return;
  q.release_held();
  open_batches_.fetch_sub(1);
}

void XdpCapture::run_queue(Queue &q) {
  // The batch deadline is a ppoll() timeout, which Linux may stretch by the
  // thread's timer slack (50 us by default): a batch then closed up to 50 us
  // after its batch-timeout.  1 us keeps the deadline.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
  // An exception here (an allocation) would end the process: it fails the
  // capture instead, which the consumer reports.
  try {
    receive(q);
  } catch (const std::exception &e) {
    fail(std::string("queue ") + std::to_string(q.id) + ": " + e.what());
  } catch (...) {
    fail("queue " + std::to_string(q.id) + ": an unknown exception");
  }
  if (!q.held.empty()) discarded_ += q.held.size();
  release(q);
}

void XdpCapture::receive(Queue &q) {
  const int fd = xsk_socket__fd(q.xsk);
  // Frames in place: those given back go into the fill ring; a zero-copy
  // driver that ran out of fill entries waits to be kicked.
  auto refill_returned = [&] {
    if (!take_returned(q)) return;
    q.refill();
    if (!busy_poll_ && xsk_ring_prod__needs_wakeup(&q.fill))
      recvfrom(fd, nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
  };
  while (!stopping_) {
    if (in_place_) refill_returned();
    // After a failure the queue only keeps its ring moving (frames dropped).
    const bool running = running_ && !failed_;
    if (!q.held.empty() && (!running || q.epoch != epoch_)) {
      discarded_ += q.held.size();
      release(q);
    }
    // Preferred busy polling: this call runs the driver's receive processing.
    if (busy_poll_) recvfrom(fd, nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
    uint32_t idx;
    const uint32_t got = xsk_ring_cons__peek(&q.rx, kRxBurst, &idx);
    if (got) {
      const uint64_t now = wall_clock_ns();
      const uint32_t limit = batch_packets_;
      for (uint32_t i = 0; i < got; ++i) {
        const xdp_desc *d = xsk_ring_cons__rx_desc(&q.rx, idx + i);
        if (!running) {
          q.free_frames.push_back(xsk_umem__extract_addr(d->addr) & ~uint64_t(q.frame_size - 1));
          ++discarded_;
          continue;
        }
        const bool opens = q.held.empty();
        if (opens) {
          q.start_ns = monotonic_clock_ns();
          q.epoch = epoch_;
        }
        // The frame's data starts at its offset: keep that address.
        q.held.push_back({xsk_umem__add_offset_to_addr(d->addr), d->len, now});
        q.held_bytes += d->len;
        if (opens) {
          open_batches_.fetch_add(1);
          if (busy_poll_ && consumer_asleep_.load()) { // it spins from here (take())
            std::lock_guard<std::mutex> lock(mutex_);
            changed_.notify_all();
          }
          take_open_memory(q);
        }
        if (q.held.size() >= limit || q.held.size() >= q.hold_limit ||
            (!in_place_ && gpp_batch_size(q.held.size() + 1, q.held_bytes +
                                                                 q.held.size() * GPP_PACKET_ALIGN +
                                                                 q.frame_size) > capacity_))
          deliver(q, /*at_deadline=*/false);
      }
      xsk_ring_cons__release(&q.rx, got);
      q.refill();
      // A zero-copy driver that ran out of fill entries waits to be kicked.
      if (!busy_poll_ && xsk_ring_prod__needs_wakeup(&q.fill))
        recvfrom(fd, nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
    }
    // The limits are read here, so a change applies to the batch being built.
    const uint64_t due_ns = q.start_ns + batch_timeout_ns_;
    if (!q.held.empty() && (q.held.size() >= batch_packets_ || monotonic_clock_ns() >= due_ns))
      deliver(q, /*at_deadline=*/q.held.size() < batch_packets_);
    if (got == kRxBurst || (got && busy_poll_)) continue;
    // Wait for frames, the batch deadline, or a wake-up.  With a batch begun
    // and frames coming fast, waking for each few of them costs more than
    // the frames: the thread then naps (waits for a wake-up only) until the
    // batch could be full at the rate its frames came so far, and the RX
    // ring holds what comes meanwhile (a nap never lasts long enough to fill
    // half the ring at that rate, nor more than kMaxNapNs).  A trickle waits
    // for its next frame as an empty queue does, up to the deadline.
    uint64_t wait_ns = kIdleWaitNs;
    bool nap = false;
    if (!q.held.empty()) {
      const uint64_t mono = monotonic_clock_ns();
      wait_ns = due_ns > mono ? due_ns - mono : 0;
      if (!wait_ns) continue;
      const uint64_t held = q.held.size(), limit = batch_packets_;
      const uint64_t spent = mono > q.start_ns ? mono - q.start_ns : 1;
      const uint64_t room = std::min<uint64_t>(limit > held ? limit - held : 1, q.ring_size / 2);
      const uint64_t fill_ns = spent / held * room; // ns a frame so far, times the room left
      if (fill_ns < std::min(wait_ns, kMaxNapNs)) {
        wait_ns = std::max<uint64_t>(fill_ns, kMinNapNs);
        nap = true;
      }
    }
    if (got && !nap) continue; // more may have come meanwhile: look again before sleeping
    if (busy_poll_ && !q.held.empty()) continue; // busy polling keeps driving the NIC
    if (in_place_) {
      // Below half its entries (ring_size of 2 x ring_size), the fill ring
      // wants the frames given back meanwhile.
      const uint32_t fill_size = 2 * q.ring_size;
      q.mapping->wake_on_return = fill_size - xsk_prod_nb_free(&q.fill, fill_size) < q.ring_size;
      refill_returned(); // given back before the flag was seen
    }
    pollfd fds[2] = {{fd, POLLIN, 0}, {q.mapping->wake_fd, POLLIN, 0}};
    const timespec ts = {time_t(wait_ns / 1000000000u), long(wait_ns % 1000000000u)};
    const int rc = nap ? ppoll(fds + 1, 1, &ts, nullptr) : ppoll(fds, 2, &ts, nullptr);
    if (rc < 0 && errno != EINTR) {
      fail(std::string("waiting for packets on queue ") + std::to_string(q.id) + ": " +
           strerror(errno));
      return;
    }
    if (fds[1].revents) drain_eventfd(q.mapping->wake_fd);
  }
}

} // namespace gpp::capture
