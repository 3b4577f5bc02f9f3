// GPP_HOST_DEVICE marks the code compiled for both processors (the packet
// core, the ACL and DPI stages): __host__ __device__ under nvcc, nothing in
// a host compiler.  The one definition every shared header includes.
#pragma once

#if defined(__CUDACC__)
#define GPP_HOST_DEVICE __host__ __device__
#else
#define GPP_HOST_DEVICE
#endif
