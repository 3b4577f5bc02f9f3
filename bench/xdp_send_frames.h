// The frames of a capture file packed into one image, as gpupacket-xdp-send
// writes it into every UMEM (apart from xdp_send.cpp: <pcap/pcap.h> and the
// kernel's <linux/bpf.h>, which libxdp needs, both define struct bpf_insn).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gppbench {

struct SendFrames {
  // Frames start on a cache line and never straddle a page; the image is
  // whole pages and at least one chunk.
  static constexpr uint64_t kAlign = 64;
  static constexpr uint64_t kPage = 4096;
  std::vector<uint8_t> image;
  struct Frame {
    uint64_t addr; // offset in the image
    uint32_t len;
  };
  std::vector<Frame> frames;
  uint32_t chunk_size = 2048; // the UMEM's: 2048, or 4096 where a frame is longer
  uint64_t skipped_long = 0;  // frames longer than a page, left out
};

// Every frame of FILE (pcap or pcapng through libpcap, Ethernet) in file
// order; false with the reason in `error`.
bool load_send_frames(const std::string &file, SendFrames *out, std::string *error);

} // namespace gppbench
