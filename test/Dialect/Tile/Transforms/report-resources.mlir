// RUN: hisa-opt %s --tile-bind-params --tile-report-resources -o /dev/null | FileCheck %s
// RUN: not hisa-opt %s --tile-report-resources -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNBOUND
// RUN: not hisa-opt %s --tile-bind-params --tile-report-resources="features=-wgmma" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FEATURE
// The shared memory reported is what tile-plan-shared-memory allocates: for
// fp8_gemm, 4 stages of its 16 KiB + 32 KiB operand tiles plus 4 x 2 8-byte
// mbarriers, as tile-to-nvvm records it; without TMA there are no mbarriers.
// RUN: hisa-opt %kernels/fp8_gemm.mlir --tile-bind-params --tile-report-resources -o /dev/null | FileCheck %s --check-prefix=GEMM
// RUN: hisa-opt %kernels/fp8_gemm.mlir --tile-to-nvvm | FileCheck %s --check-prefix=GEMM-PLANNED
// RUN: hisa-opt %kernels/fp8_gemm.mlir --tile-bind-params --tile-report-resources="features=-tma" -o /dev/null | FileCheck %s --check-prefix=GEMM-NO-TMA

// 64x128 fp8 + 128 f32 shared = 8192 + 512 bytes declared; %b is never used
// (it takes no bytes), so the plan needs only %a's 8192 bytes. Fragments 64*64*4 + 64*4 = 16640
// bytes over 128 threads = 130 bytes per thread; local 2 x i32.
// CHECK: kernel @k threads=128 shared=8192B (declared: 2 tiles, 8704B) fragment=130B/thread local=8B/thread
// UNBOUND: error: 'tile.alloc' op has a shape with parameter names; run tile-bind-params before tile-report-resources
// FEATURE: error: tile-report-resources: unknown feature '-wgmma' (known: +tma, -tma, +narrow-indices, -narrow-indices, +elide-sync, -elide-sync)
// GEMM: kernel @fp8_gemm threads=256 shared=196672B (declared: 2 tiles, 49152B)
// GEMM-PLANNED: tile.shared_bytes = 196672
// GEMM-NO-TMA: kernel @fp8_gemm threads=256 shared=196608B (declared: 2 tiles, 49152B)
tile.kernel @k() params {n = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[n, 128], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[128], f32>
    %c = tile.alloc : !tile.frag<[n, 64], f32>
    %d = tile.alloc : !tile.frag<[n], f32>
    %e = tile.alloc : !tile.local<[2], i32>
    tile.clear %a : !tile.shared<[n, 128], f8E4M3FN>
  }
}
