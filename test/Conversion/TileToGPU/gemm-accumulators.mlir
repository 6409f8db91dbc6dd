// f16 accumulators (f16 operands only): wgmma's .f16 accumulator and
// mma.sync's .f16 variant, two values to a 32-bit register.
// RUN: hisa-opt %s --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu="chip=sm_90a" | FileCheck %s --check-prefix=WGMMA
// RUN: hisa-opt %s --tile-assign-layouts="chip=sm_89" --tile-plan-shared-memory --convert-tile-to-gpu="chip=sm_89" | FileCheck %s --check-prefix=MMA

// WGMMA-LABEL: gpu.func @f16_accumulator
// WGMMA-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f16>, {{.*}}], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32)>
// MMA-LABEL: gpu.func @f16_accumulator
// MMA: llvm.inline_asm "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {$0, $1}, {$2, $3, $4, $5}, {$6, $7}, {$8, $9};", "=r,=r,r,r,r,r,r,r,r,r"
tile.kernel @f16_accumulator(%g: !tile.global<[?, ?], f16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], f16>
    %b = tile.alloc : !tile.shared<[64, 64], f16>
    %c = tile.alloc : !tile.frag<[64, 64], f16>
    %c0 = arith.constant 0 : index
    tile.gemm %a, %b, %c transpose_b clear_accum : !tile.shared<[64, 64], f16>, !tile.shared<[64, 64], f16> -> !tile.frag<[64, 64], f16>
    tile.copy %c to %g[%c0, %c0] : !tile.frag<[64, 64], f16> to !tile.global<[?, ?], f16>
  }
}
