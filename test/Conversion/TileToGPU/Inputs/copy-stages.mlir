// release-ws.mlir's kernel with the gathered copy (b_tile) on two stage
// buffers of its own (`{tile.stages = 2}`) while the loop's other copies
// keep one: its buffer alternates by iteration parity on its own two pairs
// of mbarriers. It comes first in the body because the producer issues an
// iteration's copies in body order: at step t + 1 it gathers b's rows into
// the buffer step t - 1 used (released long since) before it waits for
// step t's a0 and a1 to be released. Same results as release_ws (a GPU
// test in python/tests/test_per_warpgroup.py).
tile.kernel @copy_stages(%a: !tile.global<[?, 64], bf16>,
                        %b: !tile.global<[?, 64], bf16>,
                        %idx: !tile.global<[?], i32>,
                        %out: !tile.global<[2, 64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %n = tile.dim %idx, 0 : !tile.global<[?], i32>
    %steps = arith.divui %n, %c64 : index
    %rows = tile.alloc : !tile.shared<[512], i32>
    %a0 = tile.alloc : !tile.shared<[64, 64], bf16>
    %a1 = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_tile = tile.alloc : !tile.shared<[64, 64], bf16>
    %x = tile.alloc : !tile.shared<[64, 64], f32>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    tile.copy %idx[%c0] to %rows
        : !tile.global<[?], i32> to !tile.shared<[512], i32>
    tile.per_warpgroup (%wg) {
      tile.clear %acc : !tile.frag<[64, 64], f32>
    }
    tile.pipelined %t = %c0 to %steps step %c1 num_stages = 1 warp_specialized {
      %row0 = arith.muli %t, %c128 : index
      %row1 = arith.addi %row0, %c64 : index
      %first = arith.muli %t, %c64 : index
      tile.copy %b rows(%rows[%first] : !tile.shared<[512], i32>) to %b_tile {tile.stages = 2}
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.copy %a[%row0, %c0] to %a0
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.copy %a[%row1, %c0] to %a1
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.per_warpgroup (%wg) unsynchronized {
        %a_own = tile.pick %wg [%a0, %a1] : !tile.shared<[64, 64], bf16>
        %is_first = arith.cmpi eq, %wg, %c0 : index
        scf.if %is_first {
          tile.gemm %a_own, %b_tile, %s transpose_b clear_accum
              : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16>
                -> !tile.frag<[64, 64], f32>
          tile.release %a_own : !tile.shared<[64, 64], bf16>
          tile.copy %s to %x
              : !tile.frag<[64, 64], f32> to !tile.shared<[64, 64], f32>
          tile.barrier id = 0 arrive_only
          tile.parallel (%i, %j) in [64, 64] {
            %v = tile.load %acc[%i, %j] : !tile.frag<[64, 64], f32>
            %w = tile.load %s[%i, %j] : !tile.frag<[64, 64], f32>
            %sum = arith.addf %v, %w : f32
            tile.store %sum, %acc[%i, %j] : !tile.frag<[64, 64], f32>
          }
          // x is free again once warpgroup 1 has read it.
          tile.barrier id = 1
        } else {
          tile.gemm %a_own, %b_tile, %acc transpose_b
              : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16>
                -> !tile.frag<[64, 64], f32>
          tile.release %a_own : !tile.shared<[64, 64], bf16>
          tile.release %b_tile : !tile.shared<[64, 64], bf16>
          tile.barrier id = 0
          tile.parallel (%i, %j) in [64, 64] {
            %v = tile.load %acc[%i, %j] : !tile.frag<[64, 64], f32>
            %w = tile.load %x[%i, %j] : !tile.shared<[64, 64], f32>
            %sum = arith.addf %v, %w : f32
            tile.store %sum, %acc[%i, %j] : !tile.frag<[64, 64], f32>
          }
          tile.barrier id = 1 arrive_only
        }
      }
    }
    tile.per_warpgroup (%wg) {
      tile.copy %acc to %out[%wg, %c0, %c0]
          : !tile.frag<[64, 64], f32> to !tile.global<[2, 64, 64], f32>
    }
  }
}
