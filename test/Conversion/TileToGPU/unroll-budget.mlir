// convert-tile-to-gpu refuses a kernel whose unrolled code would exceed its
// budget (max-unrolled-ops), before building any of it, naming the largest
// part. Every DSL kernel specialization stays far below the default.
// RUN: hisa-opt %s -split-input-file --tile-bind-params --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu -verify-diagnostics
// RUN: not hisa-opt %s -split-input-file --tile-bind-params --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu="max-unrolled-ops=100" 2>&1 | FileCheck %s --check-prefix=SMALL

// A 256x256 shared tile over 32 threads: 2048 elements per thread, each
// with a 40-op body (load, 37 adds, store, yield): 81920 operations, with
// the fill and the rest over the default 65536.
tile.kernel @too_much() {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op would unroll to about 83971 operations per thread; the budget is 65536 (convert-tile-to-gpu max-unrolled-ops): use smaller tiles or fewer elements per thread}}
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[256, 256], i8>
    %zero = arith.constant 0 : i8
    tile.fill %s, %zero : !tile.shared<[256, 256], i8>, i8
    // expected-note @+1 {{the largest part, 81920 operations, unrolls here}}
    tile.parallel (%i, %j) in [256, 256] {
      %x = tile.load %s[%i, %j] : !tile.shared<[256, 256], i8>
      %a0 = arith.addi %x, %x : i8
      %a1 = arith.addi %a0, %x : i8
      %a2 = arith.addi %a1, %x : i8
      %a3 = arith.addi %a2, %x : i8
      %a4 = arith.addi %a3, %x : i8
      %a5 = arith.addi %a4, %x : i8
      %a6 = arith.addi %a5, %x : i8
      %a7 = arith.addi %a6, %x : i8
      %a8 = arith.addi %a7, %x : i8
      %a9 = arith.addi %a8, %x : i8
      %b0 = arith.addi %a9, %x : i8
      %b1 = arith.addi %b0, %x : i8
      %b2 = arith.addi %b1, %x : i8
      %b3 = arith.addi %b2, %x : i8
      %b4 = arith.addi %b3, %x : i8
      %b5 = arith.addi %b4, %x : i8
      %b6 = arith.addi %b5, %x : i8
      %b7 = arith.addi %b6, %x : i8
      %b8 = arith.addi %b7, %x : i8
      %b9 = arith.addi %b8, %x : i8
      %c0 = arith.addi %b9, %x : i8
      %cc1 = arith.addi %c0, %x : i8
      %c2 = arith.addi %cc1, %x : i8
      %c3 = arith.addi %c2, %x : i8
      %c4 = arith.addi %c3, %x : i8
      %c5 = arith.addi %c4, %x : i8
      %c6 = arith.addi %c5, %x : i8
      %c7 = arith.addi %c6, %x : i8
      %c8 = arith.addi %c7, %x : i8
      %c9 = arith.addi %c8, %x : i8
      %d0 = arith.addi %c9, %x : i8
      %d1 = arith.addi %d0, %x : i8
      %d2 = arith.addi %d1, %x : i8
      %d3 = arith.addi %d2, %x : i8
      %d4 = arith.addi %d3, %x : i8
      %d5 = arith.addi %d4, %x : i8
      %d6 = arith.addi %d5, %x : i8
      tile.store %d6, %s[%i, %j] : !tile.shared<[256, 256], i8>
    }
  }
}

// -----

// Far below the default budget; over a budget of 100.
// SMALL: error: 'tile.launch' op would unroll to about 514 operations per thread; the budget is 100
// SMALL: note: the largest part, 512 operations, unrolls here
tile.kernel @small() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %f = tile.alloc : !tile.frag<[128, 128], f32>
    tile.parallel (%i, %j) in [128, 128] {
      %x = tile.load %f[%i, %j] : !tile.frag<[128, 128], f32>
      %y = arith.mulf %x, %x : f32
      tile.store %y, %f[%i, %j] : !tile.frag<[128, 128], f32>
    }
  }
}
