// Warp-specialized pipelines (this file and warp-specialized-tma.mlir): a producer warpgroup (threads 128..255 of
// ws_gather, 256..383 of ws_tma) issues the copies of every stage, the
// launch's threads compute. out = sum over tiles t of A B_t^T, with B_t the
// t-th 64-row tile of b, gathered by row numbers (ws_gather, cp.async
// pieces of the producer's 128 threads, -1 rows reading zeros) or boxed
// (ws_tma, TMA from the producer's first thread). A GPU test
// (python/tests/test_warp_specialized.py) checks both against torch.
tile.kernel @ws_gather(%a: !tile.global<[64, 64], bf16>, %b: !tile.global<[?, 64], bf16>,
                       %rows: !tile.global<[?], i32>, %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
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
