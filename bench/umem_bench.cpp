// gpupacket-umem-bench: should the GPU read AF_XDP packets where the kernel
// wrote them?  afxdpsrc copies each frame from its UMEM into a contiguous
// batch in pinned memory; the alternative registers the UMEM itself with
// CUDA (cudaHostRegisterMapped) and hands the GPU descriptors only.  This
// measures both side by side, and the device-memory path of mode=streams,
// for batches of 4096 and 256 packets of 64, 512 and 1500 bytes, with the GPU
// reading each packet's headers (128 bytes) or all of it; then the one-off
// cost of registering a queue's UMEM.  Results are checked against the CPU.
//
//   gpupacket-umem-bench [--quick] [--device N] [--out DIR]
#include <sys/mman.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gpupacket/packet-batch.h>

#include "bench_common.h"
#include "bench_cuda.h"
#include "cuda_util.h"
#include "engine.h"
#include "umem_kernels.h"

namespace {

using gppbench::ReadSpan;
using gppbench::UmemDesc;
using gppbench::now_ns;

constexpr int kExitSkip = 77;
// One afxdpsrc queue's UMEM with the element's defaults.
constexpr uint32_t kFrameSize = 4096;
constexpr uint32_t kFrameCount = 8192;
constexpr size_t kAreaBytes = size_t(kFrameSize) * kFrameCount;
// Where a received packet starts in its frame: XDP_PACKET_HEADROOM (afxdpsrc
// asks for no headroom of its own).
constexpr uint32_t kPacketOffset = 256;
constexpr uint32_t kBatchSizes[] = {4096, 256};
constexpr uint32_t kPacketSizes[] = {64, 512, 1500};
constexpr uint32_t kMaxBatch = 4096;
constexpr uint32_t kMaxPacket = 1500;
constexpr size_t kHugePage = size_t(2) << 20;
constexpr double kWaitTimeout_s = 30;

struct Options {
  bool quick = false;
  int device = 0;
  std::string out;
  std::string command_line;
  // Each (batch, packet size) point runs until every path has done at least
  // min_batches measured batches and `seconds` have passed.
  unsigned min_batches = 200;
  double seconds = 0.3;
  unsigned register_runs = 5;
};

void usage(FILE *f) {
  std::fprintf(f,
               "usage: gpupacket-umem-bench [--quick] [--device N] [--out DIR]\n"
               "  --quick     at least 20 batches a point instead of 200 (seconds, not tens)\n"
               "  --device N  CUDA device (default 0)\n"
               "  --out DIR   write DIR/report.md and DIR/report.csv\n");
}

bool parse(int argc, char **argv, Options *o) {
  for (int i = 0; i < argc; ++i) o->command_line += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      o->quick = true;
      o->min_batches = 20;
      o->seconds = 0.03;
      o->register_runs = 3;
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      std::exit(0);
    } else if (a == "--device" || a == "--out") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpupacket-umem-bench: %s needs a value\n", a.c_str());
        return false;
      }
      const char *v = argv[++i];
      if (a == "--out") {
        o->out = v;
        continue;
      }
      char *end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (*end || n < 0 || n > 64) {
        std::fprintf(stderr, "gpupacket-umem-bench: --device is 0-64, not %s\n", v);
        return false;
      }
      o->device = static_cast<int>(n);
    } else {
      std::fprintf(stderr, "gpupacket-umem-bench: unknown option %s\n", a.c_str());
      usage(stderr);
      return false;
    }
  }
  return true;
}

// ---- the UMEM-like area ----------------------------------------------------------

enum class Pages { Small, Huge };

const char *pages_name(Pages p) { return p == Pages::Small ? "4 KiB pages" : "THP"; }

// Bytes of [begin, begin + bytes) that /proc/self/smaps counts as
// AnonHugePages (0 where THP is off).
size_t huge_bytes_in(const void *begin, size_t bytes) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(begin), hi = lo + bytes;
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool inside = false;
  size_t kb = 0;
  while (std::getline(f, line)) {
    unsigned long long start = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (line.find(':') == std::string::npos || line.find('-') < line.find(':')) {
      if (head >> std::hex >> start >> dash >> end && dash == '-') {
        inside = start < hi && end > lo;
        continue;
      }
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) kb += std::strtoull(line.c_str() + 14, nullptr, 10);
  }
  return std::min(kb * 1024, bytes);
}

// An anonymous mapping of kFrameCount frames, as afxdpsrc maps each queue's
// UMEM, on small pages (MADV_NOHUGEPAGE, whatever the host's THP setting) or
// on transparent huge pages where the host gives them (2 MiB aligned,
// MADV_HUGEPAGE); every page touched.  register_mapped() makes it host memory
// the GPU reads through the mapping.
class UmemArea {
public:
  explicit UmemArea(Pages pages) : pages_(pages) {
    map_bytes_ = kAreaBytes + (pages == Pages::Huge ? kHugePage : 0);
    map_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map_ == MAP_FAILED) {
      map_ = nullptr;
      throw std::runtime_error(std::string("mmap of a 32 MiB area: ") + std::strerror(errno));
    }
    auto *at = static_cast<uint8_t *>(map_);
    if (pages == Pages::Huge)
      at = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(at) + kHugePage - 1) &
                                       ~(kHugePage - 1));
    host_ = at;
    // Advice only: a kernel without THP leaves the area on small pages, and
    // huge_bytes() says so.
    (void)madvise(host_, kAreaBytes, pages == Pages::Huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    std::memset(host_, 0, kAreaBytes);
  }
  ~UmemArea() {
    if (device_) gpp::cuda_release(cudaHostUnregister(host_));
    if (map_) munmap(map_, map_bytes_);
  }
  UmemArea(const UmemArea &) = delete;
  UmemArea &operator=(const UmemArea &) = delete;

  // cudaHostRegister(cudaHostRegisterMapped); its wall time in ns.
  uint64_t register_mapped() {
    const uint64_t t0 = now_ns();
    GPP_CUDA_TRY(cudaHostRegister(host_, kAreaBytes, cudaHostRegisterMapped));
    const uint64_t took = now_ns() - t0;
    void *device = nullptr;
    const cudaError_t e = cudaHostGetDevicePointer(&device, host_, 0);
    if (e != cudaSuccess) {
      gpp::cuda_release(cudaHostUnregister(host_));
      GPP_CUDA_TRY(e);
    }
    device_ = static_cast<uint8_t *>(device);
    return took;
  }
  // cudaHostUnregister; its wall time in ns.
  uint64_t unregister() {
    const uint64_t t0 = now_ns();
    device_ = nullptr;
    GPP_CUDA_TRY(cudaHostUnregister(host_));
    return now_ns() - t0;
  }

  uint8_t *host() const { return host_; }
  const uint8_t *device() const { return device_; }
  Pages pages() const { return pages_; }
  size_t huge_bytes() const { return huge_bytes_in(host_, kAreaBytes); }

private:
  Pages pages_;
  void *map_ = nullptr;
  size_t map_bytes_ = 0;
  uint8_t *host_ = nullptr;
  uint8_t *device_ = nullptr;
};

// ---- the paths -------------------------------------------------------------------------

enum class Path { GatherMapped, UmemSmall, UmemHuge, GatherH2D };
constexpr Path kPaths[] = {Path::GatherMapped, Path::UmemSmall, Path::UmemHuge, Path::GatherH2D};

const char *path_name(Path p) {
  switch (p) {
  case Path::GatherMapped: return "gather+mapped";
  case Path::UmemSmall: return "umem-mapped 4K";
  case Path::UmemHuge: return "umem-mapped THP";
  case Path::GatherH2D: return "gather+H2D";
  }
  return "?";
}

bool gathers(Path p) { return p == Path::GatherMapped || p == Path::GatherH2D; }

const char *span_name(ReadSpan s) { return s == ReadSpan::Headers ? "headers" : "whole"; }

// The capture thread's copy (XdpCapture::deliver): header, then each frame's
// packet after its descriptor's place, zero-padded to GPP_PACKET_ALIGN.
// Returns the batch's size.
size_t gather(uint8_t *dst, const uint8_t *area, const UmemDesc *rx, uint32_t n) {
  size_t data = 0;
  for (uint32_t i = 0; i < n; ++i) data += gpp_align_up(rx[i].len, GPP_PACKET_ALIGN);
  const size_t size = gpp_batch_size(n, data);
  auto *header = reinterpret_cast<GppBatchHeader *>(dst);
  *header = GppBatchHeader{};
  header->magic = GPP_BATCH_MAGIC;
  header->version = GPP_BATCH_VERSION;
  header->header_size = sizeof(GppBatchHeader);
  header->packet_count = n;
  header->linktype = GPP_LINKTYPE_ETHERNET;
  header->total_size = size;
  auto *descs = reinterpret_cast<GppPacketDesc *>(dst + sizeof(GppBatchHeader));
  size_t at = gpp_batch_data_start(n);
  for (uint32_t i = 0; i < n; ++i) {
    descs[i] = GppPacketDesc{1700000000000000000ull + i, 0, static_cast<uint32_t>(at), rx[i].len,
                             rx[i].len, 0};
    std::memcpy(dst + at, area + rx[i].addr, rx[i].len);
    const size_t padded = gpp_align_up(rx[i].len, GPP_PACKET_ALIGN);
    std::memset(dst + at + rx[i].len, 0, padded - rx[i].len);
    at += padded;
  }
  return size;
}

// Per-batch figures of one path and span at one point.
struct Samples {
  std::vector<double> cpu_ns, copy_ns, kernel_ns, e2e_ns;
  uint64_t checked = 0, differ = 0;
};

struct PointResult {
  uint32_t batch = 0, packet = 0;
  Path path{};
  ReadSpan span{};
  double cpu_ns = 0, copy_ns = 0, kernel_ns = 0, e2e_ns = 0; // medians a batch
  size_t batches = 0;
  uint64_t checked = 0, differ = 0;
  bool skipped = false;
};

// Everything the measurements share: the areas, the packets as they arrive,
// the batch and descriptor memory, the stream and events.
class Bench {
public:
  explicit Bench(const Options &o)
      : o_(o), small_(Pages::Small), huge_(Pages::Huge), wire_(kAreaBytes),
        batch_host_(gpp_batch_size(kMaxBatch, size_t(kMaxBatch) * gpp_align_up(kMaxPacket, GPP_PACKET_ALIGN)),
                    cudaHostAllocMapped | cudaHostAllocPortable),
        batch_dev_(batch_host_.size()),
        descs_host_(kMaxBatch * sizeof(UmemDesc), cudaHostAllocMapped | cudaHostAllocPortable),
        results_(kMaxBatch * sizeof(uint32_t)), results_host_(kMaxBatch),
        copy_start_(cudaEventDefault), kernel_start_(cudaEventDefault), kernel_end_(cudaEventDefault) {
    first_register_ns_ = small_.register_mapped();
    huge_.register_mapped();
    GPP_CUDA_TRY(cudaHostGetDevicePointer(&batch_mapped_, batch_host_.get(), 0));
    GPP_CUDA_TRY(cudaHostGetDevicePointer(&descs_mapped_, descs_host_.get(), 0));
    // What the NIC delivers: random bytes in every frame.
    std::mt19937_64 rng(20261205);
    for (size_t i = 0; i + 8 <= wire_.size(); i += 8) {
      const uint64_t v = rng();
      std::memcpy(&wire_[i], &v, 8);
    }
    // Frames in the order a fill ring recycles them: shuffled.
    order_.resize(kFrameCount);
    std::iota(order_.begin(), order_.end(), 0u);
    std::shuffle(order_.begin(), order_.end(), rng);
  }

  uint64_t first_register_ns() const { return first_register_ns_; }
  size_t huge_bytes() const { return huge_.huge_bytes(); }

  // Every path and span at one point, interleaved batch by batch.
  std::vector<PointResult> measure(uint32_t batch, uint32_t packet) {
    // Batch k takes window k % windows of the frame order.
    const uint32_t windows = kFrameCount / batch;
    std::vector<std::vector<UmemDesc>> rx(windows);
    std::vector<std::vector<uint32_t>> reference[2];
    for (int s = 0; s < 2; ++s) reference[s].resize(windows);
    for (uint32_t w = 0; w < windows; ++w)
      for (uint32_t i = 0; i < batch; ++i) {
        const uint64_t addr = uint64_t(order_[w * batch + i]) * kFrameSize + kPacketOffset;
        rx[w].push_back(UmemDesc{addr, packet, 0});
        for (int s = 0; s < 2; ++s)
          reference[s][w].push_back(gppbench::xor_fold(
              &wire_[addr], gppbench::span_bytes(static_cast<ReadSpan>(s), packet)));
      }
    struct Variant {
      Path path;
      ReadSpan span;
      Samples samples;
    };
    std::vector<Variant> variants;
    const bool have_huge = huge_bytes() > 0;
    for (Path p : kPaths)
      if (p != Path::UmemHuge || have_huge)
        for (ReadSpan s : {ReadSpan::Headers, ReadSpan::Whole}) variants.push_back({p, s, {}});
    const uint64_t start = now_ns();
    uint32_t stamp = 0;
    // Iteration 0 is the warm-up.
    for (unsigned it = 0;; ++it) {
      if (it > o_.min_batches && now_ns() - start >= o_.seconds * 1e9) break;
      for (Variant &v : variants)
        run_batch(v.path, v.span, rx[it % windows], reference[int(v.span)][it % windows], ++stamp,
                  it ? &v.samples : nullptr);
    }
    std::vector<PointResult> out;
    for (Path p : kPaths)
      for (ReadSpan s : {ReadSpan::Headers, ReadSpan::Whole}) {
        PointResult r;
        r.batch = batch;
        r.packet = packet;
        r.path = p;
        r.span = s;
        const auto found = std::find_if(variants.begin(), variants.end(), [&](const Variant &v) {
          return v.path == p && v.span == s;
        });
        if (found == variants.end()) {
          r.skipped = true;
        } else {
          const Samples &m = found->samples;
          r.cpu_ns = gppbench::median(m.cpu_ns);
          r.copy_ns = gppbench::median(m.copy_ns);
          r.kernel_ns = gppbench::median(m.kernel_ns);
          r.e2e_ns = gppbench::median(m.e2e_ns);
          r.batches = m.e2e_ns.size();
          r.checked = m.checked;
          r.differ = m.differ;
        }
        out.push_back(r);
      }
    return out;
  }

private:
  // The batch's packets arrive in their frames (the kernel's copy into the
  // UMEM in copy mode: the CPU's caches hold them, as they would), each with
  // its first word XORed with `stamp`, so that a read of an earlier batch's
  // bytes cannot pass the check.  Not timed.
  void arrive(uint8_t *area, const std::vector<UmemDesc> &rx, uint32_t stamp) {
    for (const UmemDesc &d : rx) {
      std::memcpy(area + d.addr, &wire_[d.addr], d.len);
      uint32_t first;
      std::memcpy(&first, area + d.addr, 4);
      first ^= stamp;
      std::memcpy(area + d.addr, &first, 4);
    }
  }

  void run_batch(Path path, ReadSpan span, const std::vector<UmemDesc> &rx,
                 const std::vector<uint32_t> &reference, uint32_t stamp, Samples *samples) {
    const uint32_t n = static_cast<uint32_t>(rx.size());
    UmemArea &area = path == Path::UmemHuge ? huge_ : small_;
    arrive(area.host(), rx, stamp);
    cudaStream_t stream = stream_.get();
    GPP_CUDA_TRY(cudaMemsetAsync(results_.get(), 0, n * sizeof(uint32_t), stream));
    gppbench::wait_stream_bounded(stream, kWaitTimeout_s, "clearing the results");

    const uint64_t t0 = now_ns();
    size_t batch_size = 0;
    if (gathers(path))
      batch_size = gather(batch_host_.get<uint8_t>(), area.host(), rx.data(), n);
    else
      std::memcpy(descs_host_.get(), rx.data(), n * sizeof(UmemDesc));
    const uint64_t t1 = now_ns();
    if (path == Path::GatherH2D) {
      GPP_CUDA_TRY(cudaEventRecord(copy_start_.get(), stream));
      GPP_CUDA_TRY(cudaMemcpyAsync(batch_dev_.get(), batch_host_.get(), batch_size,
                                   cudaMemcpyHostToDevice, stream));
    }
    GPP_CUDA_TRY(cudaEventRecord(kernel_start_.get(), stream));
    auto *results = results_.get<uint32_t>();
    switch (path) {
    case Path::GatherMapped:
      GPP_CUDA_TRY(gppbench::launch_read_batch(batch_mapped_, n, span, results, stream));
      break;
    case Path::GatherH2D:
      GPP_CUDA_TRY(gppbench::launch_read_batch(batch_dev_.get(), n, span, results, stream));
      break;
    case Path::UmemSmall:
    case Path::UmemHuge:
      GPP_CUDA_TRY(gppbench::launch_read_umem(area.device(), static_cast<const UmemDesc *>(descs_mapped_),
                                              n, span, results, stream));
      break;
    }
    GPP_CUDA_TRY(cudaEventRecord(kernel_end_.get(), stream));
    gppbench::wait_stream_bounded(stream, kWaitTimeout_s, path_name(path));
    const uint64_t t2 = now_ns();

    GPP_CUDA_TRY(cudaMemcpy(results_host_.data(), results, n * sizeof(uint32_t),
                            cudaMemcpyDeviceToHost));
    uint64_t differ = 0;
    for (uint32_t i = 0; i < n; ++i)
      if (results_host_[i] != (reference[i] ^ stamp)) {
        if (!differ && reported_differences_ < 5) {
          ++reported_differences_;
          std::fprintf(stderr,
                       "gpupacket-umem-bench: %s %s, %u x %u B: packet %u (frame at %llu) "
                       "read 0x%08x, the CPU 0x%08x\n",
                       path_name(path), span_name(span), n, rx[i].len, i,
                       static_cast<unsigned long long>(rx[i].addr), results_host_[i],
                       reference[i] ^ stamp);
        }
        ++differ;
      }
    if (!samples) return;
    float kernel_ms = 0, copy_ms = 0;
    GPP_CUDA_TRY(cudaEventElapsedTime(&kernel_ms, kernel_start_.get(), kernel_end_.get()));
    if (path == Path::GatherH2D)
      GPP_CUDA_TRY(cudaEventElapsedTime(&copy_ms, copy_start_.get(), kernel_start_.get()));
    samples->cpu_ns.push_back(double(t1 - t0));
    samples->kernel_ns.push_back(kernel_ms * 1e6);
    if (path == Path::GatherH2D) samples->copy_ns.push_back(copy_ms * 1e6);
    samples->e2e_ns.push_back(double(t2 - t0));
    samples->checked += n;
    samples->differ += differ;
  }

  const Options &o_;
  UmemArea small_, huge_;
  std::vector<uint8_t> wire_;
  std::vector<uint32_t> order_;
  gpp::PinnedMemory batch_host_;
  gpp::DeviceMemory batch_dev_;
  gpp::PinnedMemory descs_host_;
  gpp::DeviceMemory results_;
  std::vector<uint32_t> results_host_;
  gpp::Stream stream_;
  gpp::Event copy_start_, kernel_start_, kernel_end_;
  void *batch_mapped_ = nullptr;
  void *descs_mapped_ = nullptr;
  uint64_t first_register_ns_ = 0;
  unsigned reported_differences_ = 0;
};

// ---- the one-off costs ----------------------------------------------------------------

struct OneOff {
  std::string what;
  std::vector<double> ms;
};

// cudaHostRegister / cudaHostUnregister of fresh 32 MiB areas (pages already
// touched, as xsk_umem__create leaves them), and for comparison what the
// element's pool pays for the same bytes (cudaHostAlloc / cudaFreeHost).
std::vector<OneOff> measure_one_offs(unsigned runs) {
  std::vector<OneOff> out;
  for (Pages pages : {Pages::Small, Pages::Huge}) {
    OneOff reg{std::string("cudaHostRegister(Mapped), ") + pages_name(pages), {}};
    OneOff unreg{std::string("cudaHostUnregister, ") + pages_name(pages), {}};
    for (unsigned i = 0; i < runs; ++i) {
      UmemArea area(pages);
      reg.ms.push_back(area.register_mapped() / 1e6);
      unreg.ms.push_back(area.unregister() / 1e6);
    }
    out.push_back(reg);
    out.push_back(unreg);
  }
  OneOff alloc{"cudaHostAlloc(Mapped | Portable)", {}}, free_host{"cudaFreeHost", {}};
  for (unsigned i = 0; i < runs; ++i) {
    void *p = nullptr;
    const uint64_t t0 = now_ns();
    GPP_CUDA_TRY(cudaHostAlloc(&p, kAreaBytes, cudaHostAllocMapped | cudaHostAllocPortable));
    const uint64_t t1 = now_ns();
    GPP_CUDA_TRY(cudaFreeHost(p));
    alloc.ms.push_back((t1 - t0) / 1e6);
    free_host.ms.push_back((now_ns() - t1) / 1e6);
  }
  out.push_back(alloc);
  out.push_back(free_host);
  return out;
}

// ---- the report ----------------------------------------------------------------------------

std::string first_line(const std::string &path, const std::string &prefix = "") {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}

std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string per_second(double count, double ns, double scale) {
  return ns > 0 ? gppbench::fmt(count / ns * 1e9 / scale, 2) : "-";
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parse(argc, argv, &o)) return 2;
  const std::string why = gpp::gpu_unavailable_reason(o.device);
  if (!why.empty()) {
    std::printf("SKIP: %s\n", why.c_str());
    return kExitSkip;
  }
  int can_map = 0, can_register = 0;
  cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, o.device);
  cudaDeviceGetAttribute(&can_register, cudaDevAttrHostRegisterSupported, o.device);
  if (!can_map || !can_register) {
    std::printf("SKIP: device %d cannot %s\n", o.device,
                !can_map ? "map host memory (cudaDevAttrCanMapHostMemory is 0)"
                         : "register host memory (cudaDevAttrHostRegisterSupported is 0)");
    return kExitSkip;
  }
  cudaDeviceProp prop{};
  int driver = 0, runtime = 0;
  std::vector<gppbench::Table> tables;
  std::vector<std::string> errors;
  std::ostringstream csv;
  csv << "section,batch_packets,packet_bytes,path,reads,metric,value,unit\n";
  auto csv_row = [&](const char *section, uint32_t batch, uint32_t packet, const std::string &path,
                     const std::string &reads, const char *metric, double value, const char *unit) {
    char v[64];
    std::snprintf(v, sizeof v, "%.6g", value);
    csv << section << ',' << batch << ',' << packet << ',' << gppbench::csv_escape(path) << ','
        << reads << ',' << metric << ',' << v << ',' << unit << '\n';
  };
  std::string meta;
  try {
    GPP_CUDA_TRY(cudaSetDevice(o.device));
    GPP_CUDA_TRY(cudaFree(nullptr)); // the context, before anything is timed
    GPP_CUDA_TRY(cudaGetDeviceProperties(&prop, o.device));
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
    char pci[32];
    std::snprintf(pci, sizeof pci, "%04x:%02x:%02x.0", prop.pciDomainID, prop.pciBusID,
                  prop.pciDeviceID);
    const std::string sys = std::string("/sys/bus/pci/devices/") + pci + "/";
    const std::string speed = first_line(sys + "current_link_speed"),
                      width = first_line(sys + "current_link_width");
    struct utsname un{};
    uname(&un);
    std::string cpu = first_line("/proc/cpuinfo", "model name");
    if (cpu.find(": ") != std::string::npos) cpu = cpu.substr(cpu.find(": ") + 2);
    const std::string thp_setting = first_line("/sys/kernel/mm/transparent_hugepage/enabled");
    meta += "- **date**: " + gppbench::now_utc_text() + "\n";
    meta += "- **command**: `" + o.command_line + "`\n";
    meta += "- **GPU**: " + std::string(prop.name) + " (device " + std::to_string(o.device) +
            ", PCI " + pci + (speed.empty() ? "" : ", link " + speed + " x" + width) + ", " +
            std::to_string(prop.multiProcessorCount) + " SMs, sm_" + std::to_string(prop.major) +
            std::to_string(prop.minor) + ")\n";
    meta += "- **CUDA driver / runtime**: " + version_text(driver) + " / " + version_text(runtime) + "\n";
    const std::string module = first_line("/proc/driver/nvidia/version");
    if (!module.empty()) meta += "- **NVIDIA kernel module**: " + module + "\n";
    meta += "- **host**: " + std::string(un.nodename) + ", " + cpu + ", " +
            std::to_string(std::thread::hardware_concurrency()) + " hardware threads, Linux " +
            un.release + "\n";
    std::printf("gpupacket-umem-bench: %s, CUDA driver %s, %s run\n", prop.name,
                version_text(driver).c_str(), o.quick ? "quick" : "full");
    std::fflush(stdout);

    Bench bench(o);
    const size_t huge = bench.huge_bytes();
    meta += "- **transparent huge pages**: " + (thp_setting.empty() ? "unknown" : thp_setting) +
               "; the THP area holds " + gppbench::fmt(huge / double(1 << 20), 0) +
               " of its 32 MiB in huge pages" +
               (huge ? "" : " (its rows are skipped: the host gives it none)") + "\n";
    meta += "- **settings**: " + std::string(o.quick ? "quick" : "full") + " run, at least " +
            std::to_string(o.min_batches) + " measured batches of every path and " +
            gppbench::fmt(o.seconds, 2) + " s a point\n";

    std::vector<PointResult> all;
    for (uint32_t batch : kBatchSizes) {
      gppbench::Table t;
      t.id = "read-" + std::to_string(batch);
      t.title = std::to_string(batch) + "-packet batches: medians a batch";
      t.header = {"bytes", "path", "reads", "CPU ns/pkt", "CPU GB/s", "H2D us", "kernel us",
                  "kernel Mpps", "kernel GB/s", "e2e us", "e2e Mpps", "batches", "checked"};
      for (uint32_t packet : kPacketSizes) {
        std::fprintf(stderr, "gpupacket-umem-bench: %u x %u B\n", batch, packet);
        for (const PointResult &r : bench.measure(batch, packet)) {
          all.push_back(r);
          const std::string path = path_name(r.path), reads = span_name(r.span);
          if (r.skipped) {
            t.rows.push_back({std::to_string(packet), path, reads, "skipped: no huge pages"});
            continue;
          }
          const double read_bytes = double(batch) * gppbench::span_bytes(r.span, packet);
          const double cpu_bytes = double(batch) * packet;
          const bool g = gathers(r.path);
          t.rows.push_back({std::to_string(packet), path, reads,
                            gppbench::fmt(r.cpu_ns / batch, 1),
                            g ? per_second(cpu_bytes, r.cpu_ns, 1e9) : "-",
                            r.path == Path::GatherH2D ? gppbench::fmt_us(r.copy_ns) : "-",
                            gppbench::fmt_us(r.kernel_ns), per_second(batch, r.kernel_ns, 1e6),
                            per_second(read_bytes, r.kernel_ns, 1e9), gppbench::fmt_us(r.e2e_ns),
                            per_second(batch, r.e2e_ns, 1e6), std::to_string(r.batches),
                            std::to_string(r.checked) +
                                (r.differ ? " (" + std::to_string(r.differ) + " DIFFER)" : "")});
          csv_row("read", batch, packet, path, reads, "cpu_ns_per_packet", r.cpu_ns / batch, "ns");
          if (g) csv_row("read", batch, packet, path, reads, "cpu_gbps", cpu_bytes / r.cpu_ns, "GB/s");
          if (r.path == Path::GatherH2D)
            csv_row("read", batch, packet, path, reads, "h2d_us", r.copy_ns / 1e3, "us");
          csv_row("read", batch, packet, path, reads, "kernel_us", r.kernel_ns / 1e3, "us");
          csv_row("read", batch, packet, path, reads, "kernel_mpps", batch / r.kernel_ns * 1e3, "Mpps");
          csv_row("read", batch, packet, path, reads, "kernel_gbps", read_bytes / r.kernel_ns, "GB/s");
          csv_row("read", batch, packet, path, reads, "e2e_us", r.e2e_ns / 1e3, "us");
          csv_row("read", batch, packet, path, reads, "e2e_mpps", batch / r.e2e_ns * 1e3, "Mpps");
          csv_row("read", batch, packet, path, reads, "batches", double(r.batches), "");
          csv_row("read", batch, packet, path, reads, "packets_checked", double(r.checked), "");
          csv_row("read", batch, packet, path, reads, "packets_differ", double(r.differ), "");
          if (r.differ)
            errors.push_back(path + " " + reads + ", " + std::to_string(batch) + " x " +
                             std::to_string(packet) + " B: " + std::to_string(r.differ) +
                             " packets read differently from the CPU");
        }
      }
      t.notes = {"CPU: the capture thread's part (gather: packets into the pinned batch; umem: "
                 "descriptors into mapped memory), one thread; CPU GB/s: packet bytes copied",
                 "kernel: cudaEvent time of the read kernel; kernel GB/s: packet bytes it read "
                 "(headers: the first 128), descriptors not counted",
                 "e2e: one batch at a time, from the CPU's first copy to the stream's completion "
                 "(H2D included), on the host clock"};
      tables.push_back(t);
      std::fputs(("\n" + gppbench::Report::render_text(t)).c_str(), stdout);
      std::fflush(stdout);
    }

    // Side by side: end-to-end a batch per path, and the in-place read's ratio
    // to today's gather.
    gppbench::Table side;
    side.id = "side-by-side";
    side.title = "End to end, us a batch (lower is better)";
    side.header = {"batch", "bytes", "reads"};
    for (Path p : kPaths) side.header.push_back(path_name(p));
    side.header.push_back("umem 4K / gather+mapped");
    for (uint32_t batch : kBatchSizes)
      for (uint32_t packet : kPacketSizes)
        for (ReadSpan s : {ReadSpan::Headers, ReadSpan::Whole}) {
          std::vector<std::string> row = {std::to_string(batch), std::to_string(packet), span_name(s)};
          double e2e[4] = {};
          for (const PointResult &r : all)
            if (r.batch == batch && r.packet == packet && r.span == s)
              e2e[int(r.path)] = r.skipped ? std::numeric_limits<double>::quiet_NaN() : r.e2e_ns;
          for (double v : e2e) row.push_back(gppbench::fmt_us(v));
          row.push_back(gppbench::fmt(e2e[int(Path::UmemSmall)] / e2e[int(Path::GatherMapped)], 2));
          side.rows.push_back(row);
        }
    side.notes = {"one batch at a time: the CPU's part plus the GPU's; a capture that overlaps "
                  "them is bounded by the larger (CPU ns/pkt and kernel us above)"};
    tables.push_back(side);
    std::fputs(("\n" + gppbench::Report::render_text(side)).c_str(), stdout);

    gppbench::Table once;
    once.id = "one-off";
    once.title = "One-off costs of a 32 MiB area (8192 x 4096 B, one queue), ms";
    once.header = {"call", "median", "max", "runs"};
    once.rows.push_back({"first cudaHostRegister(Mapped) of the run, 4 KiB pages",
                         gppbench::fmt(bench.first_register_ns() / 1e6, 2), "-", "1"});
    csv_row("one-off", 0, 0, "first cudaHostRegister(Mapped), 4 KiB pages", "", "once_ms",
            bench.first_register_ns() / 1e6, "ms");
    for (const OneOff &c : measure_one_offs(o.register_runs)) {
      const double med = gppbench::median(c.ms), most = *std::max_element(c.ms.begin(), c.ms.end());
      once.rows.push_back({c.what, gppbench::fmt(med, 2), gppbench::fmt(most, 2),
                           std::to_string(c.ms.size())});
      csv_row("one-off", 0, 0, c.what, "", "median_ms", med, "ms");
      csv_row("one-off", 0, 0, c.what, "", "max_ms", most, "ms");
    }
    once.notes = {"each run on a fresh anonymous mapping, every page touched first"};
    tables.push_back(once);
    std::fputs(("\n" + gppbench::Report::render_text(once)).c_str(), stdout);
  } catch (const std::exception &e) {
    errors.push_back(e.what());
  }
  for (const std::string &e : errors) std::fprintf(stderr, "gpupacket-umem-bench: ERROR: %s\n", e.c_str());

  if (!o.out.empty()) {
    std::ostringstream md;
    md << "# AF_XDP frames read in place (mapped UMEM) against a gathered batch\n\n" << meta
       << "- **status**: " << (errors.empty() ? "complete" : "FAILED") << "\n\n"
       << "Each point: B packets of one size, each in its own 4096-byte frame of a 32 MiB "
          "anonymous mapping (8192 frames: one afxdpsrc queue's UMEM) at offset 256 "
          "(XDP_PACKET_HEADROOM), the frames in a shuffled order as a fill ring recycles them; "
          "batch k takes the k-th window of that order. Before every batch its packets are "
          "written into their frames and stamped (untimed: the kernel's copy in copy mode, so "
          "the CPU's caches hold them). Paths, one batch at a time, interleaved batch by batch:\n\n"
          "- **gather+mapped** (afxdpsrc today, then mode=zerocopy/persistent): one thread copies "
          "the packets into a packet-batch in cudaHostAlloc'd memory as XdpCapture::deliver "
          "does; the kernel reads the batch's descriptors and packets through the mapping.\n"
          "- **umem-mapped 4K / THP**: the area itself cudaHostRegister'ed (Mapped), on 4 KiB "
          "pages or transparent huge pages; the thread copies 16-byte descriptors (struct "
          "xdp_desc: offset, length) into mapped pinned memory; the kernel reads them and each "
          "packet in place.\n"
          "- **gather+H2D** (mode=streams): the same gather, cudaMemcpyAsync of the batch to "
          "device memory, the kernel reads it there.\n\n"
          "The kernel XOR-folds the bytes it reads with 16-byte loads: **headers** the first 128 "
          "bytes (8 threads a packet), **whole** every byte (a warp a packet), one 32-bit answer "
          "a packet into device memory; every batch's answers are checked against the CPU's. "
          "Figures are medians over the batches after a warm-up one.\n\n";
    for (const gppbench::Table &t : tables) md << gppbench::Report::render_markdown(t);
    if (!errors.empty()) {
      md << "## Errors\n\n";
      for (const std::string &e : errors) md << "- " << e << "\n";
    }
    const std::string cmd = "mkdir -p '" + o.out + "'";
    if (std::system(cmd.c_str()) != 0 || !(std::ofstream(o.out + "/report.md") << md.str()) ||
        !(std::ofstream(o.out + "/report.csv") << csv.str())) {
      std::fprintf(stderr, "gpupacket-umem-bench: cannot write %s/report.{md,csv}\n", o.out.c_str());
      return 1;
    }
  }
  return errors.empty() ? 0 : 1;
}
