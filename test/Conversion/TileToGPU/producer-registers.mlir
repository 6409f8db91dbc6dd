// RUN: hisa-opt %s --split-input-file --tile-to-nvvm --verify-diagnostics | hisa-translate --gpu-to-ptx | FileCheck %s

// A warp-specialized launch at four blocks per SM has 256 x 64 registers a
// block. A producer that only issues TMA boxes keeps 40 of them, which
// leaves its consumers 88 (block_sparse_topk_tokens at four blocks per SM);
// a gathering producer keeps 72 and would leave 56, so that launch is
// refused below.

// CHECK-LABEL: .entry tma_four_blocks(
// CHECK: .maxntid 256, 1, 1
// CHECK: .minnctapersm 4
// CHECK: setmaxnreg.inc.sync.aligned.u32 88;
// CHECK: setmaxnreg.dec.sync.aligned.u32 40;
// CHECK: cp.async.bulk.tensor
tile.kernel @tma_four_blocks(%a: !tile.global<[64, 64], bf16>, %b: !tile.global<[?, 64], bf16>,
                             %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 blocks_per_sm 4 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %n = tile.dim %b, 0 : !tile.global<[?, 64], bf16>
    %tiles = arith.divui %n, %c64 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.fill %acc, %zero : !tile.frag<[64, 64], f32>, f32
    tile.pipelined %t = %c0 to %tiles step %c1 num_stages = 2 warp_specialized {
      %first = arith.muli %t, %c64 : index
      tile.copy %b[%first, %c0] to %b_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %a_s, %b_s, %acc transpose_b
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}

// -----

tile.kernel @gather_four_blocks(%a: !tile.global<[64, 64], bf16>, %b: !tile.global<[?, 64], bf16>,
                                %rows: !tile.global<[?], i32>, %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{a warp-specialized launch of 128 threads at 4 blocks per SM has 64 registers a thread, which leaves its consumers 56 beside the producer's 72}}
  tile.launch (%bx) in (%c1) threads 128 blocks_per_sm 4 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %rows_s = tile.alloc : !tile.shared<[256], i32>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    tile.copy %rows[%c0] to %rows_s : !tile.global<[?], i32> to !tile.shared<[256], i32>
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.fill %acc, %zero : !tile.frag<[64, 64], f32>, f32
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 warp_specialized {
      %first = arith.muli %t, %c64 : index
      tile.copy %b rows(%rows_s[%first] : !tile.shared<[256], i32>) to %b_s
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %a_s, %b_s, %acc transpose_b
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}
