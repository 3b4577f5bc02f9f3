// gpupacket-xdp-forward: attaches to one interface a native XDP program that
// redirects every frame to another, so that a veth behind the second receives
// XDP frames, as a NIC driver hands them to XDP, instead of socket buffers.
//
//   gpupacket-xdp-forward FROM TO
//
// live-capture-bench.py --xdp-frames sends on a veth pair whose far end, FROM,
// forwards this way into the receiving pair's near end, TO: the receiving
// veth then runs its XDP program on the frame as delivered (one copy into an
// AF_XDP socket's UMEM) where frames sent to it directly arrive as socket
// buffers that veth first copies into a page of its own (two copies).
// The program stays attached after this exits (netlink attachment); removing
// FROM removes it.  Both interfaces must be in this network namespace.
// Exit 0 when attached, 1 on an error (no such interface, no privileges,
// native XDP refused, a program already attached), 2 bad usage.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

[[noreturn]] void fail(const std::string &why, int code = 1) {
  fprintf(stderr, "gpupacket-xdp-forward: %s\n", why.c_str());
  exit(code);
}

// return bpf_redirect(TO, 0): every frame leaves through TO (XDP_ABORTED,
// i.e. dropped and traced, where TO cannot take XDP frames).
int load_forward_program(unsigned to_index) {
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, static_cast<int32_t>(to_index)},
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, 0, 0, 0},
      {BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_redirect},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  return bpf_prog_load(BPF_PROG_TYPE_XDP, "gpp_forward", "Dual BSD/GPL", insns,
                       sizeof insns / sizeof insns[0], nullptr);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3 || argv[1][0] == '-')
    fail("usage: gpupacket-xdp-forward FROM TO", argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2);
  const std::string from = argv[1], to = argv[2];
  const unsigned from_index = if_nametoindex(from.c_str()), to_index = if_nametoindex(to.c_str());
  if (!from_index || !to_index)
    fail("No network interface \"" + (from_index ? to : from) +
         "\" in this namespace. List the interfaces with \"ip link\".");
  // Programs are locked memory on kernels before 5.11: no limit where allowed.
  const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_MEMLOCK, &unlimited);
  const int fd = load_forward_program(to_index);
  if (fd < 0)
    fail(std::string("cannot load the XDP program: ") + strerror(-fd) +
         (fd == -EPERM ? " (needs CAP_BPF and CAP_NET_ADMIN, or root)" : ""));
  const int rc = bpf_xdp_attach(static_cast<int>(from_index), fd,
                                XDP_FLAGS_DRV_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
  close(fd); // the attachment holds the program
  if (rc < 0)
    fail("cannot attach native XDP to \"" + from + "\": " + strerror(-rc) +
         (rc == -EBUSY || rc == -EEXIST ? " (a program is already attached: ip link set dev " +
                                              from + " xdp off)"
                                        : ""));
  printf("attached: %s -> %s\n", from.c_str(), to.c_str());
  return 0;
}
