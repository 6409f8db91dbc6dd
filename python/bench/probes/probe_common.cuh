// probe_common.cuh -- what the standalone CUDA probes share: a checked CUDA
// call that exits with the call's text, and a 32-bit integer hash for
// reproducible pseudo-random patterns on host and device alike.
#ifndef HISA_PROBES_PROBE_COMMON_CUH
#define HISA_PROBES_PROBE_COMMON_CUH

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "CUDA error %s (%d) at %s:%d: %s\n  in: %s\n",           \
              cudaGetErrorName(e_), (int)e_, __FILE__, __LINE__,               \
              cudaGetErrorString(e_), #call);                                  \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

__host__ __device__ __forceinline__ uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

#endif // HISA_PROBES_PROBE_COMMON_CUH
