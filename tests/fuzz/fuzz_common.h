// Shared by the fuzz harnesses and their seed tool: how an input's first
// bytes choose what the harness does, so that seeds written by fuzz-seeds
// mean what the harness reads.
#pragma once

#include <cstddef>
#include <cstdint>

#include <gpupacket/packet-batch.h>

namespace gppfuzz {

// Packet-core input: [link type index][flags][frame bytes...].  Index 8 is a
// link type the core does not parse (its record must stay empty).
constexpr uint32_t kLinktypes[] = {GPP_LINKTYPE_ETHERNET, GPP_LINKTYPE_RAW, GPP_LINKTYPE_NULL,
                                   GPP_LINKTYPE_LOOP,     GPP_LINKTYPE_LINUX_SLL,
                                   GPP_LINKTYPE_IPV4,     GPP_LINKTYPE_IPV6,
                                   GPP_LINKTYPE_LINUX_SLL2, 147 /* USER0 */};
constexpr size_t kLinktypeCount = sizeof kLinktypes / sizeof kLinktypes[0];

// Flag bits of the packet-core input's second byte (its high nibble: bytes
// on the wire past the capture).  kFlagDecap walks into tunnels (CoreConfig
// decap with a GppTunnelInfo); kFlagVxlanLinux takes UDP 8472 as VXLAN too.
constexpr uint8_t kFlagVerifyL4 = 1, kFlagSymmetric = 2, kFlagDecap = 4, kFlagVxlanLinux = 8;

// Index of `linktype` in kLinktypes, or kLinktypeCount - 1 for any other.
inline uint8_t linktype_index(uint32_t linktype) {
  for (size_t i = 0; i + 1 < kLinktypeCount; ++i)
    if (kLinktypes[i] == linktype) return static_cast<uint8_t>(i);
  return static_cast<uint8_t>(kLinktypeCount - 1);
}

// DPI-loader input: [selection byte][pattern text...]; bit 0 of the first
// byte picks fast-pattern selection.
constexpr uint8_t kDpiFastPattern = 1;

} // namespace gppfuzz
