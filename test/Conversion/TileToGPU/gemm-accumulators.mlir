// Both tensor-core lowerings accumulate in f32 for now: an f16 accumulator
// is refused by name on every target rather than lowered wrongly.
// RUN: hisa-opt %s --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu="chip=sm_90a" -verify-diagnostics
// RUN: hisa-opt %s --tile-assign-layouts="chip=sm_89" --tile-plan-shared-memory --convert-tile-to-gpu="chip=sm_89" -verify-diagnostics

tile.kernel @f16_accumulator() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], f16>
    %b = tile.alloc : !tile.shared<[64, 64], f16>
    %c = tile.alloc : !tile.frag<[64, 64], f16>
    // expected-error @+1 {{'tile.gemm' op accumulates in 'f16', which is not supported yet (the wgmma and mma.sync lowerings accumulate in f32); use an f32 accumulator}}
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[64, 64], f16>, !tile.shared<[64, 64], f16> -> !tile.frag<[64, 64], f16>
  }
}
