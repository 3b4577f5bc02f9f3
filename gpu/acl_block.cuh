// The ACL stage run by a whole thread block over records it holds in shared
// memory.  One thread walking a packet's tuples one after another waits for a
// chain of dependent memory loads per tuple (measured on the H200: 23.5 us for
// one packet against 1k rules); here the block's threads take the (packet,
// tuple) probes between them and combine each packet's hits with a
// shared-memory min, so a packet costs about one probe's latency.  The first
// match is the smallest matching rule index whatever order tuples are probed
// in (acl.h), so records equal acl_apply()'s byte for byte.
#pragma once

#include "acl.h"

namespace gpp {

// Every thread of the block calls it, after the records are complete and
// visible (__syncthreads); `best` is shared scratch of at least `n` words.
// Fills acl_rule / acl_action of records[0..n) and ends with a barrier.
__device__ inline void acl_apply_block(const uint8_t *blob, uint8_t default_action,
                                       GppResult *records, uint32_t n, uint32_t *best) {
  const AclView v(blob);
  const uint32_t tuples = v.h->tuple_count;
  for (uint32_t p = threadIdx.x; p < n; p += blockDim.x) best[p] = kAclNoRule;
  __syncthreads();
  // Neighbouring threads take neighbouring tuples of one packet: its record
  // is a shared-memory broadcast and the tuple array stays in L1.
  for (uint32_t item = threadIdx.x; item < n * tuples; item += blockDim.x) {
    const uint32_t p = item / tuples;
    const GppResult &r = records[p];
    if (!acl_classifiable(r)) continue;
    const uint32_t hit = acl_probe(v, item - p * tuples, r, acl_ports(r), kAclNoRule);
    if (hit != kAclNoRule) atomicMin(&best[p], hit);
  }
  __syncthreads();
  for (uint32_t p = threadIdx.x; p < n; p += blockDim.x)
    acl_set_result(blob, best[p], default_action, records[p]);
  __syncthreads();
}

} // namespace gpp
