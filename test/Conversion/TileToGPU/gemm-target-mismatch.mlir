// Layouts assigned for one target and lowered for another are refused, and
// so are targets without bf16/f16 mma.sync.
// RUN: hisa-opt %s --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu="chip=sm_80" -verify-diagnostics
// RUN: not hisa-opt %s --tile-assign-layouts="chip=sm_75" --tile-plan-shared-memory --convert-tile-to-gpu="chip=sm_75" 2>&1 | FileCheck %s --check-prefix=TURING
// TURING: error: convert-tile-to-gpu: unsupported target 'sm_75' (hisa compiles for sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a: the lowering emits PTX ISA 8.0 and cp.async)

tile.kernel @mismatch() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %b = tile.alloc : !tile.shared<[64, 64], bf16>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op accumulator does not have the mma.sync layout of target sm_80; run tile-assign-layouts with chip=sm_80}}
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
  }
}
