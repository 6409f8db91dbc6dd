// write_pattern.cu -- H200 micro-benchmark: is "writing -inf into half of every
// row costs as much as writing whole rows" caused by DRAM/L2 channel imbalance
// (address-bit mapping) or by per-row overhead?
//
// Matrix: 131072 rows x 1024 float columns, row-major (4096-byte rows, 537 MB).
// Every kernel pattern: one warp per row, grid-stride over rows, 256 thr/block,
// 8 blocks/SM, 16-byte float4 stores (scalar head/tail only where the start
// column is not a multiple of 4, i.e. in the causal pattern).
//
// Patterns 10-17 probe why causal (5) is ~1.6x slower per byte than the others:
//  A partial 32-byte sector writes (L2 read-modify-write with DRAM),
//  B warp store chunks 16-byte but not 128/512-byte aligned, C varying row lengths.
//  10/11/12: causal start rounded down to 8/32/128 floats (32/128/512-byte aligned).
//  13: causal start unrounded, warp chunks aligned to 512-byte boundaries.
//  14: as 13, the partial sector at start completed (read sector, write it whole).
//  15: variable row lengths, all multiples of 512 bytes (pseudo-random per row).
//  16: as 5 plus the real kernel's +inf edge writes (col 0 and col start-1).
//  17: as 14 (aligned chunks) plus edges, all boundary sectors completed.
// Buffers are initialised to float(row*7+col) before each correctness check, so
// kept values (notably those rewritten by 14/17) are verified to be unchanged.
//
// Build (repo root): python/bench/probes/build.sh
// Run   (repo root): python/bench/probes/write_pattern
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "probe_common.cuh"

constexpr int ROWS = 131072;
constexpr int COLS = 1024;
constexpr int LD_PAD = 1024 + 32;  // padded row stride for pattern 7
constexpr int NRUNS = 20;
constexpr int NWARM = 3;
constexpr uint32_t NEG_INF_BITS = 0xff800000u;
constexpr uint32_t POS_INF_BITS = 0x7f800000u;

enum Pat {
  P_FULL = 0,     // 1
  P_SECOND,       // 2
  P_FIRST,        // 3
  P_ALT,          // 4
  P_CAUSAL,       // 5
  P_CAUSAL_SHUF,  // 6
  P_SECOND_PAD,   // 7
  P_QUARTER,      // 8
  P_CONTIG_HALF,  // extra: full rows, but only rows 0..65535 (same bytes as 2, contiguous)
  P_C_SEC8,       // 10 causal, start rounded down to 8 floats (32 B sector aligned)
  P_C_ALN32,      // 11 causal, start rounded down to 32 floats (128 B aligned)
  P_C_ALN128,     // 12 causal, start rounded down to 128 floats (512 B aligned)
  P_C_CHUNK,      // 13 causal, unrounded start, 512 B aligned warp chunks
  P_C_SECCOMP,    // 14 as 13, partial start sector completed (read + full write)
  P_VARLEN,       // 15 variable lengths, multiples of 512 B
  P_C_EDGE,       // 16 as 5 + +inf edges at col 0 and col start-1 (lane 0 scalar)
  P_C_EDGECOMP,   // 17 as 14 + edges, all boundary sectors completed
  NPAT
};

static const char* kPatName[NPAT] = {
    "1 full rows, cols [0,1024)",
    "2 second half, cols [512,1024)",
    "3 first half, cols [0,512)",
    "4 alternating: even [0,512) odd [512,1024)",
    "5 causal: cols [m/128+1, 1024)",
    "6 causal, shuffled row order",
    "7 second half, row stride 1056 (padded)",
    "8 quarter: cols [256,768)",
    "X extra: full rows 0..65535 only (contiguous)",
    "10 causal, start rounded down to 8 fl (32B sector)",
    "11 causal, start rounded down to 32 fl (128B)",
    "12 causal, start rounded down to 128 fl (512B)",
    "13 causal, warp chunks 512B-aligned, scalar head",
    "14 as 13 + start sector completed (rewrites kept)",
    "15 var. lengths L=128*k, k=hash(m)%9, 512B-aligned",
    "16 as 5 + lane0 +inf at col 0 and col start-1",
    "17 as 14 + edges, 2-3 bndry sectors completed (rewr.)",
};

struct Range { int s, e; };

__host__ __device__ inline int causalStart(int m) {
  int s = m / 128 + 1;  // == ceil((m+1)/128)
  return s > COLS ? COLS : s;
}

// Column range written in physical row m for pattern p (independent of order).
__host__ __device__ inline Range rowRange(int p, int m) {
  switch (p) {
    case P_FULL: return {0, COLS};
    case P_SECOND:
    case P_SECOND_PAD: return {512, COLS};
    case P_FIRST: return {0, 512};
    case P_ALT: return (m & 1) ? Range{512, COLS} : Range{0, 512};
    case P_CAUSAL:
    case P_CAUSAL_SHUF:
    case P_C_CHUNK:
    case P_C_SECCOMP:
    case P_C_EDGE:
    case P_C_EDGECOMP: return {causalStart(m), COLS};
    case P_QUARTER: return {256, 768};
    case P_CONTIG_HALF: return (m < ROWS / 2) ? Range{0, COLS} : Range{0, 0};
    case P_C_SEC8: return {causalStart(m) & ~7, COLS};
    case P_C_ALN32: return {causalStart(m) & ~31, COLS};
    case P_C_ALN128: return {causalStart(m) & ~127, COLS};
    case P_VARLEN: {
      const int L = 128 * (int)((((uint32_t)m * 2654435761u) >> 7) % 9u);
      return {COLS - L, COLS};
    }
  }
  return {0, 0};
}

__host__ __device__ inline bool hasEdges(int p) { return p == P_C_EDGE || p == P_C_EDGECOMP; }

// Number of +inf edge columns in row m (col 0 and col start-1, deduplicated).
__host__ __device__ inline int numEdges(int p, int m) {
  if (!hasEdges(p)) return 0;
  return (causalStart(m) - 1 == 0) ? 1 : 2;
}

// Intended final value class of element (m, c): 0 keep, 1 -inf, 2 +inf.
__host__ __device__ inline int colAction(int p, int m, int c) {
  const Range r = rowRange(p, m);
  if (c >= r.s && c < r.e) return 1;
  if (hasEdges(p) && (c == 0 || c == r.s - 1)) return 2;
  return 0;
}

// Initial (kept) value of element (m, c); exact in f32 (< 2^24).
__host__ __device__ inline float initVal(int m, int c) { return (float)(m * 7 + c); }

__host__ __device__ inline uint32_t expectBits(int p, int m, int c) {
  const int act = colAction(p, m, c);
  if (act == 1) return NEG_INF_BITS;
  if (act == 2) return POS_INF_BITS;
  const float f = initVal(m, c);
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

// Bijection on [0, ROWS): odd multiplier mod 2^17.
__host__ __device__ inline int permRow(int i) {
  return (int)(((uint32_t)i * 0x9E3779B1u) & (uint32_t)(ROWS - 1));
}

template <int P>
__global__ void __launch_bounds__(256, 8)
writeKernel(float* __restrict__ A, int ld, int nrows) {
  const int lane = threadIdx.x & 31;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int nwarps = (gridDim.x * blockDim.x) >> 5;
  const float v = __uint_as_float(NEG_INF_BITS);
  const float4 v4 = make_float4(v, v, v, v);
  for (int i = warp; i < nrows; i += nwarps) {
    const int m = (P == P_CAUSAL_SHUF) ? permRow(i) : i;
    const Range r = rowRange(P, m);
    float* row = A + (size_t)m * ld;
    int a = (r.s + 3) & ~3; if (a > r.e) a = r.e;  // first 16B-aligned column
    int b = r.e & ~3;       if (b < a) b = a;      // end of float4 body
    if (lane < a - r.s) row[r.s + lane] = v;       // scalar head (<=3)
    if (lane < r.e - b) row[b + lane] = v;         // scalar tail (<=3)
    float4* row4 = reinterpret_cast<float4*>(row);
    for (int c = (a >> 2) + lane; c < (b >> 2); c += 32) row4[c] = v4;
    if (P == P_C_EDGE && lane == 0) {  // edge writes: single 4-byte stores
      const float pinf = __uint_as_float(POS_INF_BITS);
      row[0] = pinf;
      if (r.s - 1 != 0) row[r.s - 1] = pinf;
    }
  }
}

// Is 32-byte sector `sec` (cols [8*sec, 8*sec+8)) completed by read + full write?
template <int P>
__device__ inline bool isCompSector(int s, int sec) {
  if (P == P_C_SECCOMP) return (s & 7) != 0 && sec == (s >> 3);
  // 17: col 0's sector and col (s-1)'s sector; the start sector is the latter
  // when s % 8 != 0, and is fully -inf (no completion needed) when s % 8 == 0.
  if (P == P_C_EDGECOMP) return sec == 0 || sec == ((s - 1) >> 3);
  return false;
}

// Read float4 q of the row (ordinary load), set the columns that must change,
// keep the others, write the float4 back.
template <int P>
__device__ inline void completeQuad(float* row, int q, int m) {
  float4* row4 = reinterpret_cast<float4*>(row);
  float4 x = row4[q];
  const int c0 = q << 2;
  float* xs = reinterpret_cast<float*>(&x);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int act = colAction(P, m, c0 + j);
    if (act == 1) xs[j] = __uint_as_float(NEG_INF_BITS);
    else if (act == 2) xs[j] = __uint_as_float(POS_INF_BITS);
  }
  row4[q] = x;
}

// Patterns 13, 14, 17 (causal rows [s, COLS)): the warp walks 512-byte aligned
// chunks of 32 float4s starting at the chunk holding s (17: holding s-1).
// Float4s entirely before s: nothing; straddling s: scalar stores of [s, ..);
// float4s inside a completion sector (14/17): read, merge, full float4 write.
template <int P>
__global__ void __launch_bounds__(256, 8)
alignedKernel(float* __restrict__ A, int ld, int nrows) {
  const int lane = threadIdx.x & 31;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int nwarps = (gridDim.x * blockDim.x) >> 5;
  const float v = __uint_as_float(NEG_INF_BITS);
  const float4 v4 = make_float4(v, v, v, v);
  for (int m = warp; m < nrows; m += nwarps) {
    const int s = rowRange(P, m).s;  // end is COLS for all causal rows
    float* row = A + (size_t)m * ld;
    float4* row4 = reinterpret_cast<float4*>(row);
    const int lo = (P == P_C_EDGECOMP) ? s - 1 : s;
    const int base = (lo >> 7) << 7;  // first col of the 512 B chunk holding lo
    // 17: col 0's sector lies before the walked chunks -> complete it here.
    if (P == P_C_EDGECOMP && base > 0 && lane < 2) completeQuad<P>(row, lane, m);
    for (int q = (base >> 2) + lane; q < (COLS >> 2); q += 32) {
      const int c0 = q << 2;
      if (isCompSector<P>(s, c0 >> 3)) {
        completeQuad<P>(row, q, m);
      } else if (c0 >= s) {
        row4[q] = v4;
      } else if (c0 + 4 > s) {
        for (int c = s; c < c0 + 4; ++c) row[c] = v;  // 1-3 scalar stores
      }
    }
  }
}

// Fill the buffer with initVal (kept values that verification checks).
__global__ void initKernel(float* __restrict__ A, int ld) {
  const size_t n = (size_t)ROWS * ld;
  for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
       idx += (size_t)gridDim.x * blockDim.x)
    A[idx] = initVal((int)(idx / ld), (int)(idx % ld));
}

// Full check of the whole buffer: written range must be -inf, edges (16/17)
// +inf, all else the initial value initVal(m, c).
__global__ void verifyKernel(const float* __restrict__ A, int ld, int p,
                             unsigned long long* bad, unsigned long long* firstBad) {
  const size_t n = (size_t)ROWS * ld;
  for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
       idx += (size_t)gridDim.x * blockDim.x) {
    const int m = (int)(idx / ld), c = (int)(idx % ld);
    const uint32_t expect = expectBits(p, m, c);
    if (__float_as_uint(A[idx]) != expect) {
      if (atomicAdd(bad, 1ULL) == 0ULL) *firstBad = idx;
    }
  }
}

static void launchPattern(int p, float* buf, int ld, int grid, cudaStream_t s) {
  const int nrows = (p == P_CONTIG_HALF) ? ROWS / 2 : ROWS;
  switch (p) {
#define CASE(P) case P: writeKernel<P><<<grid, 256, 0, s>>>(buf, ld, nrows); break;
    CASE(P_FULL) CASE(P_SECOND) CASE(P_FIRST) CASE(P_ALT) CASE(P_CAUSAL)
    CASE(P_CAUSAL_SHUF) CASE(P_SECOND_PAD) CASE(P_QUARTER) CASE(P_CONTIG_HALF)
    CASE(P_C_SEC8) CASE(P_C_ALN32) CASE(P_C_ALN128) CASE(P_VARLEN) CASE(P_C_EDGE)
#undef CASE
#define CASE(P) case P: alignedKernel<P><<<grid, 256, 0, s>>>(buf, ld, nrows); break;
    CASE(P_C_CHUNK) CASE(P_C_SECCOMP) CASE(P_C_EDGECOMP)
#undef CASE
    default: fprintf(stderr, "bad pattern %d\n", p); exit(1);
  }
  CK(cudaGetLastError());
}

struct Stat { float med_us, min_us; };

template <typename F>
static Stat timeIt(F launch, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
  for (int i = 0; i < NWARM; ++i) launch();
  CK(cudaStreamSynchronize(s));
  std::vector<float> t(NRUNS);
  for (int i = 0; i < NRUNS; ++i) {
    CK(cudaEventRecord(e0, s));
    launch();
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = 0.f;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t[i] = ms * 1000.f;
  }
  std::sort(t.begin(), t.end());
  return {0.5f * (t[NRUNS / 2 - 1] + t[NRUNS / 2]), t[0]};
}

static void printRow(const char* name, double bytes, Stat st, const char* check) {
  printf("%-54s %9.1f %10.1f %10.1f %9.1f  %s\n", name, bytes / 1e6, st.med_us,
         st.min_us, bytes / st.med_us / 1e3, check);
}

int main() {
  int dev = 0;
  CK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  const int nsm = prop.multiProcessorCount;
  const int grid = nsm * 8;
  printf("Device: %s  (SMs=%d, L2=%.1f MB, global mem=%.1f GB, cc %d.%d)\n",
         prop.name, nsm, prop.l2CacheSize / 1e6, prop.totalGlobalMem / 1e9,
         prop.major, prop.minor);
  printf("Matrix: %d rows x %d float cols, row-major, %d B rows, %.1f MB. "
         "Writes -inf with float4 stores,\n", ROWS, COLS, COLS * 4,
         (double)ROWS * COLS * 4 / 1e6);
  printf("one warp per row, grid-stride, grid=%d blocks x 256 thr (8/SM). "
         "Time = median (and min) of %d runs after %d warm-ups.\n\n",
         grid, NRUNS, NWARM);

  const size_t nA = (size_t)ROWS * COLS, nP = (size_t)ROWS * LD_PAD;
  float *A = nullptr, *B = nullptr, *P = nullptr;
  CK(cudaMalloc(&A, nA * sizeof(float)));
  CK(cudaMalloc(&B, nA * sizeof(float)));
  CK(cudaMalloc(&P, nP * sizeof(float)));
  CK(cudaMemset(B, 0, nA * sizeof(float)));
  unsigned long long* dBad = nullptr;
  CK(cudaMalloc(&dBad, 2 * sizeof(unsigned long long)));

  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));

  // Rows sampled for the host-side spot check (whole row copied back).
  const int sampleRows[] = {0, 1, 2, 3, 127, 128, 129, 511, 895, 896, 1023, 1024,
                            4096, 16255, 16256, 16383, 16384, 65535, 65536,
                            98765, 130943, 130944, 131071};
  std::vector<float> hrow(LD_PAD);
  int nErrors = 0;

  printf("%-54s %9s %10s %10s %9s  %s\n", "pattern", "MB writ.", "median us",
         "min us", "GB/s", "check");
  printf("%s\n", std::string(106, '-').c_str());

  for (int p = 0; p < NPAT; ++p) {
    float* buf = (p == P_SECOND_PAD) ? P : A;
    const int ld = (p == P_SECOND_PAD) ? LD_PAD : COLS;

    // Bytes written = floats intended to change x 4 (order does not change the
    // set; for 14/17 the rewritten kept values are not counted).
    double floats = 0;
    for (int m = 0; m < ROWS; ++m) {
      Range r = rowRange(p, m);
      floats += (r.e - r.s) + numEdges(p, m);
    }
    const double bytes = floats * 4.0;

    // ---- correctness: init buffer to initVal, one launch, check everything ----
    initKernel<<<grid, 256, 0, s>>>(buf, ld);
    CK(cudaGetLastError());
    launchPattern(p, buf, ld, grid, s);
    CK(cudaMemsetAsync(dBad, 0, 2 * sizeof(unsigned long long), s));
    verifyKernel<<<grid, 256, 0, s>>>(buf, ld, p, dBad, dBad + 1);
    CK(cudaGetLastError());
    unsigned long long hBad[2] = {0, 0};
    CK(cudaMemcpyAsync(hBad, dBad, sizeof(hBad), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    long hostBad = 0;
    for (int m : sampleRows) {
      CK(cudaMemcpy(hrow.data(), buf + (size_t)m * ld, ld * sizeof(float),
                    cudaMemcpyDeviceToHost));
      for (int c = 0; c < ld; ++c) {
        uint32_t bits; memcpy(&bits, &hrow[c], 4);
        uint32_t expect = expectBits(p, m, c);
        if (bits != expect) {
          if (hostBad == 0)
            fprintf(stderr, "ERROR pattern '%s': row %d col %d = 0x%08x, expected 0x%08x\n",
                    kPatName[p], m, c, bits, expect);
          ++hostBad;
        }
      }
    }
    char check[128];
    if (hBad[0] || hostBad) {
      ++nErrors;
      snprintf(check, sizeof(check), "FAIL (%llu bad elems, first idx %llu; %ld bad in spot rows)",
               hBad[0], hBad[1], hostBad);
    } else {
      snprintf(check, sizeof(check), "ok");
    }

    // ---- timing ----
    Stat st = timeIt([&] { launchPattern(p, buf, ld, grid, s); }, s, e0, e1);
    printRow(kPatName[p], bytes, st, check);
  }

  // ---- ceilings ----
  printf("%s\n", std::string(106, '-').c_str());
  const size_t full = nA * sizeof(float);
  {
    Stat st = timeIt([&] { CK(cudaMemsetAsync(A, 0, full, s)); }, s, e0, e1);
    printRow("9a cudaMemsetAsync whole 537 MB", (double)full, st, "-");
  }
  {
    Stat st = timeIt([&] { CK(cudaMemsetAsync(A, 0, full / 2, s)); }, s, e0, e1);
    printRow("9b cudaMemsetAsync first 268 MB", (double)full / 2, st, "-");
  }
  {
    Stat st = timeIt([&] { CK(cudaMemcpyAsync(A, B, full, cudaMemcpyDeviceToDevice, s)); },
                     s, e0, e1);
    printRow("9c cudaMemcpyAsync D2D 537 MB (rd+wr = 2x)", 2.0 * full, st, "-");
  }
  // memset/memcpy sanity check: A should now equal B (all zeros).
  {
    float h[4] = {1, 1, 1, 1};
    CK(cudaMemcpy(h, A + nA / 2, sizeof(h), cudaMemcpyDeviceToHost));
    if (h[0] != 0.f || h[3] != 0.f) {
      fprintf(stderr, "ERROR: memset/memcpy result not zero\n");
      ++nErrors;
    }
  }

  printf("\nHow to read: patterns 2,3,4,7 and X write the same 268 MB as each other (half of 1).\n"
         " - If 2 is ~as slow as 1 but 3/4/7 are ~2x faster: address-bit -> channel/L2-slice\n"
         "   imbalance for the second row halves (padding in 7 / alternation in 4 rebalances).\n"
         " - If 2,3,4,7,8 are all ~as slow as 1 while X (contiguous half) and 9b are ~2x faster:\n"
         "   the cost is per row / partial-row writes, not channel mapping.\n"
         " - 6 vs 5: whether row processing order matters for the real (causal) workload.\n"
         " - 9a/9c: bandwidth ceilings (9c counts read+write bytes).\n"
         " - 10/11/12 vs 5: sector (A) vs 128/512 B chunk alignment (B) of the start.\n"
         " - 13 vs 5: aligned warp chunks alone; 14 vs 13: completing the partial sector.\n"
         " - 15 vs 12: varying row lengths (C) with everything 512 B aligned.\n"
         " - 16 vs 5: cost of the +inf edge writes; 17 vs 16/14: edges with completed sectors.\n"
         "   MB for 14/17 counts only floats that must change (same as 5/16).\n");

  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaStreamDestroy(s));
  CK(cudaFree(dBad));
  CK(cudaFree(P));
  CK(cudaFree(B));
  CK(cudaFree(A));
  if (nErrors) {
    fprintf(stderr, "%d pattern(s) FAILED verification\n", nErrors);
    return 2;
  }
  printf("All patterns verified.\n");
  return 0;
}
