// Probe (fifty-third session; build with python/bench/probes/build.sh,
// run `compute-sanitizer --tool racecheck handover_racecheck MODE`).
// Is racecheck's model of bar.arrive the PTX one? Warpgroup 0 writes a
// shared row and arrives on named barrier 1; warpgroup 1 syncs on it and
// reads the row, then arrives on barrier 2, which warpgroup 0 syncs on
// before it writes the row again (the hand-over of sparse_attn_wg and
// release_ws under +elide-sync). Mode 1 adds a membar.cta before each
// arrive; mode 2 a warpgroup bar.sync after the writes (the default
// lowering's shape).
#include <cstdio>
#include <cuda_runtime.h>
__global__ void handover(float *out, int iters, int mode) {
  __shared__ float row[128];
  int tid = threadIdx.x, lane = tid & 127;
  float acc = 0.f;
  for (int t = 0; t < iters; ++t) {
    if (tid < 128) {
      if (t > 0) asm volatile("bar.sync 2, 256;" ::: "memory");
      row[lane] = float(t * 1000 + lane);
      if (mode == 2) asm volatile("bar.sync 3, 128;" ::: "memory");
      if (mode == 1) asm volatile("membar.cta;" ::: "memory");
      asm volatile("bar.arrive 1, 256;" ::: "memory");
    } else {
      asm volatile("bar.sync 1, 256;" ::: "memory");
      acc += row[(lane + 1) & 127];
      if (mode == 1) asm volatile("membar.cta;" ::: "memory");
      if (t + 1 < iters) asm volatile("bar.arrive 2, 256;" ::: "memory");
    }
  }
  out[tid] = acc;
}
#include <cstdlib>
int main(int argc, char **argv) {
  int only = argc > 1 ? atoi(argv[1]) : -1;
  float *out;
  cudaMalloc(&out, 256 * sizeof(float));
  for (int mode = 0; mode < 3; ++mode) {
    if (only >= 0 && mode != only) continue;
    handover<<<1, 256>>>(out, 8, mode);
    cudaError_t e = cudaDeviceSynchronize();
    float h[256];
    cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    double want = 0;
    for (int t = 0; t < 8; ++t) want += t * 1000 + 1;
    printf("mode %d: %s, thread 128 sum %.0f (want %.0f)\n", mode,
           cudaGetErrorString(e), h[128], want);
  }
  return 0;
}
