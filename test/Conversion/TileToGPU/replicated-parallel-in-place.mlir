// RUN: hisa-opt %s --split-input-file --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu -verify-diagnostics

// A [64] loop in a launch with a row statistic of a wgmma accumulator runs
// on the statistic's layout (layouts are shared by shape), which gives each
// row to the four lanes of a quad. An in-place update of shared memory
// there would race between those copies (one may read what another
// already wrote): the lowering refuses it.
tile.kernel @in_place_on_replicated_rows(%a: !tile.global<[64, 32], f16>, %g: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_tile = tile.alloc : !tile.shared<[64, 32], f16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %rows = tile.alloc : !tile.frag<[64], f32>
    // expected-note @+1 {{the tile read and written}}
    %s = tile.alloc : !tile.shared<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_tile : !tile.global<[64, 32], f16> to !tile.shared<[64, 32], f16>
    tile.copy %g to %s : !tile.global<[64], f32> to !tile.shared<[64], f32>
    tile.gemm %a_tile, %a_tile, %acc transpose_b clear_accum : !tile.shared<[64, 32], f16>, !tile.shared<[64, 32], f16> -> !tile.frag<[64, 64], f32>
    tile.reduce max %acc to %rows dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    // expected-error @+1 {{'tile.parallel' op reads and writes the same shared tile, but its layout gives an element to 4 threads, which all run the body}}
    tile.parallel (%i) in [64] {
      %m = tile.load %rows[%i] : !tile.frag<[64], f32>
      %old = tile.load %s[%i] : !tile.shared<[64], f32>
      %new = arith.addf %old, %m : f32
      tile.store %new, %s[%i] : !tile.shared<[64], f32>
    }
    tile.copy %s to %g : !tile.shared<[64], f32> to !tile.global<[64], f32>
  }
}

// -----

// The same update into another tile is accepted: every copy reads the
// unchanged source and writes the same value.
tile.kernel @into_another_tile(%a: !tile.global<[64, 32], f16>, %g: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_tile = tile.alloc : !tile.shared<[64, 32], f16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %rows = tile.alloc : !tile.frag<[64], f32>
    %s = tile.alloc : !tile.shared<[64], f32>
    %t = tile.alloc : !tile.shared<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_tile : !tile.global<[64, 32], f16> to !tile.shared<[64, 32], f16>
    tile.copy %g to %s : !tile.global<[64], f32> to !tile.shared<[64], f32>
    tile.gemm %a_tile, %a_tile, %acc transpose_b clear_accum : !tile.shared<[64, 32], f16>, !tile.shared<[64, 32], f16> -> !tile.frag<[64, 64], f32>
    tile.reduce max %acc to %rows dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    tile.parallel (%i) in [64] {
      %m = tile.load %rows[%i] : !tile.frag<[64], f32>
      %old = tile.load %s[%i] : !tile.shared<[64], f32>
      %new = arith.addf %old, %m : f32
      tile.store %new, %t[%i] : !tile.shared<[64], f32>
    }
    tile.copy %t to %g : !tile.shared<[64], f32> to !tile.global<[64], f32>
  }
}

// -----

// An in-place update over a layout with one thread per element (here 64 of
// the 128 threads, the rest idle) is accepted.
tile.kernel @in_place_one_thread_per_element(%g: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[64], f32>
    %two = arith.constant 2.0 : f32
    tile.copy %g to %s : !tile.global<[64], f32> to !tile.shared<[64], f32>
    tile.parallel (%i) in [64] {
      %old = tile.load %s[%i] : !tile.shared<[64], f32>
      %new = arith.mulf %old, %two : f32
      tile.store %new, %s[%i] : !tile.shared<[64], f32>
    }
    tile.copy %s to %g : !tile.shared<[64], f32> to !tile.global<[64], f32>
  }
}
