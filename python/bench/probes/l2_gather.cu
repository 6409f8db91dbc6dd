// l2_gather.cu -- H200 micro-benchmark: achievable L2 -> shared-memory read
// bandwidth for a block-sparse-attention-like random tile gather.
//
// Key matrix K: N = 32768 rows x 128 bytes (fp8), 4 MB total -> L2-resident.
// Tile = 128 consecutive rows = 16 KB; there are N/128 = 256 tiles.
// Each 128-thread block handles "queries"; per query it gathers T = 64 tiles,
// tile index b = hash(query, t) & 255 (same pseudo-random pattern in every
// variant). Total traffic per launch: 32768 queries * 64 tiles * 16 KB
// = 2^35 B = 34.36 GB, identical for every row of the table.
//
// Variants:
//   cpasync        cp.async.cg.shared.global 16 B/thread/instr (8 per thread
//                  per tile), S-stage pipeline (commit_group/wait_group<S-2>,
//                  one __syncthreads per tile), trivial consumer: each thread
//                  reads one 4-byte word of a 512 B slice of the tile from smem.
//   ldg.cg         ld.global.cg.v4.u32 (L2 only, bypass L1) into registers and
//                  sum; "stg" column = U = tiles per register batch (8*U
//                  back-to-back 16-B loads per thread, next batch issued
//                  before the current one is summed).
//   ldg.ca         ld.global.v4.u32 default caching (L1 may hit -> can exceed L2).
//   *-persist      grid = numSMs * (achieved blocks/SM); each block loops over
//                  queries q = blockIdx.x, +gridDim.x, ... and its pipeline runs
//                  continuously across query boundaries.
//   occupancy      "nat" = no padding (smem = S*16 KB for cpasync, 0 for ldg);
//                  "padN" = dynamic smem padded so that N blocks fit per SM
//                  (N = 2, 4, 5). blk/SM column = value reported by
//                  cudaOccupancyMaxActiveBlocksPerMultiprocessor (marked '!'
//                  when it differs from the requested N, e.g. register-limited).
//
// Timing: 2 warm-up launches, then 5 timed launches (cudaEvent), median.
// Each row is checked against a host-computed checksum (check column).
//
// Build (repo root): python/bench/probes/build.sh
// Run   (repo root): python/bench/probes/l2_gather
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_common.cuh"

constexpr int N_ROWS = 32768;
constexpr int ROW_BYTES = 128;
constexpr int TILE_ROWS = 128;
constexpr int TILE_BYTES = TILE_ROWS * ROW_BYTES;          // 16384
constexpr int NTILES = N_ROWS / TILE_ROWS;                 // 256
constexpr int NTHREADS = 128;
constexpr int CHUNKS_PER_THREAD = TILE_BYTES / 16 / NTHREADS;  // 8
constexpr int NQ = 32768;                                  // queries
constexpr int T = 64;                                      // tiles per query
constexpr int NWARPS = NTHREADS / 32;
constexpr uint32_t SEED = 0x9E3779B9u;
constexpr int NWARM = 2;
constexpr int NRUNS = 5;
constexpr double TIME_BUDGET_S = 25.0;  // stop launching new rows past this

static_assert((NTILES & (NTILES - 1)) == 0, "NTILES must be a power of 2");
static_assert((T & (T - 1)) == 0, "T must be a power of 2");
static_assert(CHUNKS_PER_THREAD == 8, "expected 8 x 16 B per thread per tile");

__host__ __device__ __forceinline__ uint32_t tile_of(uint32_t q, uint32_t t) {
  return hash32(q * (uint32_t)T + t + SEED) & (uint32_t)(NTILES - 1);
}

// ------------------------------------------------------------------ PTX ----
__device__ __forceinline__ void cp_async16(uint32_t smem_addr, size_t gaddr) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr),
               "l"(gaddr)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
template <bool CG>
__device__ __forceinline__ uint4 ldg16(size_t gaddr) {
  uint4 v;
  if (CG)
    asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(gaddr));
  else
    asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(gaddr));
  return v;
}

__device__ __forceinline__ void block_out(uint32_t acc, uint32_t* out) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) out[blockIdx.x * NWARPS + (threadIdx.x >> 5)] = acc;
}

// Number of queries handled by this block (grid <= NQ always).
__device__ __forceinline__ int local_queries() {
  return (int)((NQ - 1 - blockIdx.x) / gridDim.x) + 1;
}

// ------------------------------------------------------ cp.async kernel ----
template <int S>
__global__ void __launch_bounds__(NTHREADS)
    k_cpasync(const uint8_t* __restrict__ K, uint32_t* __restrict__ out) {
  static_assert(S >= 2, "need >= 2 stages");
  extern __shared__ __align__(128) uint8_t smem[];
  const int tid = threadIdx.x;
  const int total = local_queries() * T;
  const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem);
  const size_t gbase = __cvta_generic_to_global(K);
  uint32_t acc = 0;

  auto issue = [&](int i) {
    if (i < total) {
      const uint32_t q = blockIdx.x + (uint32_t)(i / T) * gridDim.x;
      const uint32_t t = (uint32_t)(i % T);
      const size_t src = gbase + (size_t)tile_of(q, t) * TILE_BYTES;
      const uint32_t dst = sbase + (uint32_t)(i % S) * TILE_BYTES;
#pragma unroll
      for (int j = 0; j < CHUNKS_PER_THREAD; ++j) {
        const uint32_t off = (uint32_t)(j * NTHREADS + tid) * 16u;
        cp_async16(dst + off, src + off);
      }
    }
    cp_async_commit();  // always commit (possibly empty) to keep group counting uniform
  };

#pragma unroll
  for (int s = 0; s < S - 1; ++s) issue(s);

  for (int i = 0; i < total; ++i) {
    cp_async_wait<S - 2>();  // tile i has landed (for this thread's copies)
    __syncthreads();         // ... for all threads; buffer (i-1)%S is free
    issue(i + S - 1);        // refill the buffer consumed in iteration i-1
    const uint32_t t = (uint32_t)(i % T);
    const uint32_t* tile =
        reinterpret_cast<const uint32_t*>(smem + (size_t)(i % S) * TILE_BYTES);
    acc += tile[(t & 31u) * NTHREADS + tid];  // 512 B slice, conflict-free
  }
  cp_async_wait<0>();
  block_out(acc, out);
}

// --------------------------------------------------- global-load kernel ----
// Register double-buffering (load batch i+1 while summing batch i) is needed:
// with a plain "load U tiles, then sum" loop ptxas interleaves the adds and
// recycles destination registers, leaving only ~4-5 loads in flight per thread.
// With this form the SASS issues 8*U back-to-back LDG.128 per batch.
template <int U, bool CG>
__device__ __forceinline__ void ldg_batch(uint4 (&v)[U][CHUNKS_PER_THREAD],
                                          size_t gbase, int i, int tid) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int ii = i + u;
    const uint32_t q = blockIdx.x + (uint32_t)(ii / T) * gridDim.x;
    const uint32_t t = (uint32_t)(ii % T);
    const size_t src = gbase + (size_t)tile_of(q, t) * TILE_BYTES;
#pragma unroll
    for (int j = 0; j < CHUNKS_PER_THREAD; ++j)
      v[u][j] = ldg16<CG>(src + (size_t)(j * NTHREADS + tid) * 16u);
  }
}

template <int U, bool CG>
__global__ void __launch_bounds__(NTHREADS)
    k_ldg(const uint8_t* __restrict__ K, uint32_t* __restrict__ out) {
  static_assert(T % U == 0, "U must divide T");
  const int tid = threadIdx.x;
  const int total = local_queries() * T;  // multiple of T, hence of U
  const size_t gbase = __cvta_generic_to_global(K);
  uint32_t acc = 0;
  uint4 cur[U][CHUNKS_PER_THREAD], nxt[U][CHUNKS_PER_THREAD];
  ldg_batch<U, CG>(cur, gbase, 0, tid);
  for (int i = 0; i < total; i += U) {
    if (i + U < total) ldg_batch<U, CG>(nxt, gbase, i + U, tid);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < CHUNKS_PER_THREAD; ++j)
        acc += cur[u][j].x + cur[u][j].y + cur[u][j].z + cur[u][j].w;
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < CHUNKS_PER_THREAD; ++j) cur[u][j] = nxt[u][j];
  }
  block_out(acc, out);
}

// ----------------------------------------------------------------- host ----
typedef void (*KernFn)(const uint8_t*, uint32_t*);

struct Ctx {
  int nsm = 0;
  int smem_per_sm = 0;
  int reserved_per_block = 0;
  int max_dyn_per_block = 0;
  const uint8_t* dK = nullptr;
  uint32_t* dOut = nullptr;
  std::vector<uint32_t> hOut;
  cudaEvent_t e0, e1;
  std::chrono::steady_clock::time_point t_start;
  bool out_of_time = false;
};

// Dynamic smem so that exactly `bps` blocks fit per SM (by smem alone).
static int pad_smem_for(const Ctx& c, int bps) {
  int per = c.smem_per_sm / bps - c.reserved_per_block;
  per = (per / 1024) * 1024;
  return std::min(per, c.max_dyn_per_block);
}

static void print_header() {
  printf("%-16s %4s %5s %6s %7s %6s %8s %10s %8s  %s\n", "variant", "stg", "occ",
         "blk/SM", "grid", "smemKB", "GB", "ms(med)", "TB/s", "check");
  printf("----------------------------------------------------------------------"
         "----------------------\n");
}

static void run_cfg(Ctx& c, const char* name, int stg, KernFn kern, int need_smem,
                    int target_bps /*0 = natural*/, bool persistent,
                    uint32_t expected) {
  char occs[16];
  if (target_bps) snprintf(occs, sizeof occs, "pad%d", target_bps);
  else snprintf(occs, sizeof occs, "nat");
  char vname[64];
  snprintf(vname, sizeof vname, "%s%s", name, persistent ? "-persist" : "");

  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            c.t_start).count();
  if (el > TIME_BUDGET_S) {
    if (!c.out_of_time)
      printf("(time budget of %.0f s exceeded, skipping remaining rows)\n", TIME_BUDGET_S);
    c.out_of_time = true;
    return;
  }

  int dyn = need_smem;
  if (target_bps) {
    int pad = pad_smem_for(c, target_bps);
    if (need_smem > pad) {
      printf("%-16s %4d %5s   skip: needs %d KB smem/block, %d blocks/SM allows %d KB\n",
             vname, stg, occs, need_smem / 1024, target_bps, pad / 1024);
      return;
    }
    dyn = pad;
  }
  CK(cudaFuncSetAttribute((const void*)kern,
                          cudaFuncAttributeMaxDynamicSharedMemorySize, dyn));
  CK(cudaFuncSetAttribute((const void*)kern,
                          cudaFuncAttributePreferredSharedMemoryCarveout,
                          dyn > 0 ? (int)cudaSharedmemCarveoutMaxShared
                                  : (int)cudaSharedmemCarveoutDefault));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, (const void*)kern,
                                                   NTHREADS, (size_t)dyn));
  if (occ <= 0) {
    printf("%-16s %4d %5s   skip: occupancy 0 with %d B smem\n", vname, stg, occs, dyn);
    return;
  }
  const int grid = persistent ? std::min(NQ, c.nsm * occ) : NQ;

  for (int w = 0; w < NWARM; ++w) {
    kern<<<grid, NTHREADS, dyn>>>(c.dK, c.dOut);
    CK(cudaGetLastError());
  }
  CK(cudaDeviceSynchronize());

  std::vector<float> ms(NRUNS);
  for (int r = 0; r < NRUNS; ++r) {
    CK(cudaEventRecord(c.e0));
    kern<<<grid, NTHREADS, dyn>>>(c.dK, c.dOut);
    CK(cudaGetLastError());
    CK(cudaEventRecord(c.e1));
    CK(cudaEventSynchronize(c.e1));
    CK(cudaEventElapsedTime(&ms[r], c.e0, c.e1));
  }
  std::sort(ms.begin(), ms.end());
  const double med = ms[NRUNS / 2];

  const size_t nout = (size_t)grid * NWARPS;
  CK(cudaMemcpy(c.hOut.data(), c.dOut, nout * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  uint32_t got = 0;
  for (size_t k = 0; k < nout; ++k) got += c.hOut[k];

  const double bytes = (double)NQ * T * TILE_BYTES;
  const bool ok_occ = (target_bps == 0) || (occ == target_bps);
  printf("%-16s %4d %5s %5d%c %7d %6.1f %8.2f %10.3f %8.2f  %s\n", vname, stg, occs,
         occ, ok_occ ? ' ' : '!', grid, dyn / 1024.0, bytes / 1e9, med,
         bytes / (med * 1e-3) / 1e12, got == expected ? "ok" : "MISMATCH");
  fflush(stdout);
}

int main() {
  Ctx c;
  c.t_start = std::chrono::steady_clock::now();
  int dev = 0;
  CK(cudaSetDevice(dev));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, dev));
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&c.nsm, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&c.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  CK(cudaDeviceGetAttribute(&c.reserved_per_block, cudaDevAttrReservedSharedMemoryPerBlock, dev));
  CK(cudaDeviceGetAttribute(&c.max_dyn_per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  printf("device: %s  SMs=%d  L2=%.1f MB  smem/SM=%d B  reserved/block=%d B  "
         "max dyn smem/block=%d B\n",
         p.name, c.nsm, l2 / 1048576.0, c.smem_per_sm, c.reserved_per_block,
         c.max_dyn_per_block);
  printf("K: %d rows x %d B = %.1f MB (%d tiles of %d KB); %d queries x %d tiles; "
         "%d threads/block; median of %d runs after %d warm-up\n\n",
         N_ROWS, ROW_BYTES, (double)N_ROWS * ROW_BYTES / 1048576.0, NTILES,
         TILE_BYTES / 1024, NQ, T, NTHREADS, NRUNS, NWARM);

  // Host data + expected checksums.
  const size_t kbytes = (size_t)N_ROWS * ROW_BYTES;
  std::vector<uint32_t> hK(kbytes / 4);
  for (size_t k = 0; k < hK.size(); ++k) hK[k] = hash32((uint32_t)k * 2654435761u + 12345u);
  // chunk_sum[b][c]: sum of words c*128 .. c*128+127 of tile b (cp.async consumer)
  // tile_sum[b]:     sum of all 4096 words of tile b                (ldg variants)
  std::vector<uint32_t> chunk_sum((size_t)NTILES * 32, 0), tile_sum(NTILES, 0);
  const int wpt = TILE_BYTES / 4;
  for (int b = 0; b < NTILES; ++b)
    for (int w = 0; w < wpt; ++w) {
      uint32_t v = hK[(size_t)b * wpt + w];
      chunk_sum[(size_t)b * 32 + w / NTHREADS] += v;
      tile_sum[b] += v;
    }
  uint32_t exp_cp = 0, exp_ld = 0;
  for (uint32_t q = 0; q < (uint32_t)NQ; ++q)
    for (uint32_t t = 0; t < (uint32_t)T; ++t) {
      uint32_t b = tile_of(q, t);
      exp_cp += chunk_sum[(size_t)b * 32 + (t & 31u)];
      exp_ld += tile_sum[b];
    }

  uint8_t* dK = nullptr;
  CK(cudaMalloc(&dK, kbytes));
  CK(cudaMemcpy(dK, hK.data(), kbytes, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&c.dOut, (size_t)NQ * NWARPS * sizeof(uint32_t)));
  CK(cudaMemset(c.dOut, 0, (size_t)NQ * NWARPS * sizeof(uint32_t)));
  c.dK = dK;
  c.hOut.resize((size_t)NQ * NWARPS);
  CK(cudaEventCreate(&c.e0));
  CK(cudaEventCreate(&c.e1));

  const int occs[] = {0, 2, 4, 5};
  // (ldg U=4 is not included: double-buffered it needs >255 registers and spills.)
  print_header();

  // cp.async -> smem, S stages
  struct CpV { int s; KernFn k; };
  const CpV cpv[] = {{2, k_cpasync<2>}, {3, k_cpasync<3>}, {4, k_cpasync<4>}};
  for (int pers = 0; pers < 2; ++pers)
    for (const CpV& v : cpv)
      for (int o : occs)
        run_cfg(c, "cpasync", v.s, v.k, v.s * TILE_BYTES, o, pers != 0, exp_cp);
  printf("\n");

  // plain global loads into registers (stg column = tiles in flight per thread)
  struct LdV { const char* name; int u; KernFn k; };
  const LdV ldv[] = {{"ldg.cg", 1, k_ldg<1, true>},
                     {"ldg.cg", 2, k_ldg<2, true>},
                     {"ldg.ca", 2, k_ldg<2, false>}};
  for (int pers = 0; pers < 2; ++pers)
    for (const LdV& v : ldv)
      for (int o : occs)
        run_cfg(c, v.name, v.u, v.k, 0, o, pers != 0, exp_ld);

  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            c.t_start).count();
  printf("\ncolumns: stg = pipeline stages (cpasync) / tiles per register batch (ldg);"
         " occ = nat (no padding) or padN (smem padded for N blocks/SM);\n"
         "blk/SM = achieved per occupancy API ('!' = differs from N); "
         "GB = bytes gathered per launch / 1e9; TB/s = GB / median time.\n");
  printf("total wall time %.1f s\n", el);

  CK(cudaEventDestroy(c.e0));
  CK(cudaEventDestroy(c.e1));
  CK(cudaFree(dK));
  CK(cudaFree(c.dOut));
  return 0;
}
