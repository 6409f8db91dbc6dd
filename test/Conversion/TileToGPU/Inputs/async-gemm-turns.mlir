// Asynchronous gemms (tile.gemm async, tile.wait_gemms) in the consumers'
// part of a warp-specialized loop, with FlashAttention-3's turns: each
// iteration, consumer warpgroup w waits at named barrier w, issues its two
// gemms, signals the other warpgroup's barrier, waits for the first gemm
// (pending = 1), then for both. Warpgroup 1 signals barrier 0 once before
// the loop; warpgroup 0 consumes the last signal after it. Per step t, with
// a_w = a[128 t + 64 w, +64] and b_t = b[64 t, +64]:
//   out[w, 0] = sum_t a_w b_t^T,  out[w, 1] = sum_t b_t a_w^T.
// A GPU test of the asynchronous gemms (python/tests/test_per_warpgroup.py).
tile.kernel @async_gemm_turns(%a: !tile.global<[?, 64], bf16>,
                              %b: !tile.global<[?, 64], bf16>,
                              %out: !tile.global<[2, 2, 64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %rows = tile.dim %b, 0 : !tile.global<[?, 64], bf16>
    %steps = arith.divui %rows, %c64 : index
    %a0 = tile.alloc : !tile.shared<[64, 64], bf16>
    %a1 = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_tile = tile.alloc : !tile.shared<[64, 64], bf16>
    %ab = tile.alloc : !tile.frag<[64, 64], f32>
    %ba = tile.alloc : !tile.frag<[64, 64], f32>
    tile.per_warpgroup (%wg) {
      tile.clear %ab : !tile.frag<[64, 64], f32>
      tile.clear %ba : !tile.frag<[64, 64], f32>
    }
    tile.per_warpgroup (%wg) unsynchronized {
      %is_second = arith.cmpi ne, %wg, %c0 : index
      scf.if %is_second {
        tile.barrier id = 0 arrive_only
      }
    }
    tile.pipelined %t = %c0 to %steps step %c1 num_stages = 2 warp_specialized {
      %row0 = arith.muli %t, %c128 : index
      %row1 = arith.addi %row0, %c64 : index
      %brow = arith.muli %t, %c64 : index
      tile.copy %a[%row0, %c0] to %a0
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.copy %a[%row1, %c0] to %a1
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.copy %b[%brow, %c0] to %b_tile
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.per_warpgroup (%wg) unsynchronized {
        %is_first = arith.cmpi eq, %wg, %c0 : index
        %a_own = tile.pick %wg [%a0, %a1] : !tile.shared<[64, 64], bf16>
        scf.if %is_first {
          tile.barrier id = 0
        } else {
          tile.barrier id = 1
        }
        tile.gemm %a_own, %b_tile, %ab transpose_b async
            : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16>
              -> !tile.frag<[64, 64], f32>
        tile.gemm %b_tile, %a_own, %ba transpose_b async
            : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16>
              -> !tile.frag<[64, 64], f32>
        scf.if %is_first {
          tile.barrier id = 1 arrive_only
        } else {
          tile.barrier id = 0 arrive_only
        }
        tile.wait_gemms pending = 1
        tile.wait_gemms
      }
    }
    tile.per_warpgroup (%wg) unsynchronized {
      %is_first = arith.cmpi eq, %wg, %c0 : index
      scf.if %is_first {
        tile.barrier id = 0
      }
    }
    tile.per_warpgroup (%wg) {
      tile.copy %ab to %out[%wg, %c0, %c0, %c0]
          : !tile.frag<[64, 64], f32> to !tile.global<[2, 2, 64, 64], f32>
      tile.copy %ba to %out[%wg, %c1, %c0, %c0]
          : !tile.frag<[64, 64], f32> to !tile.global<[2, 2, 64, 64], f32>
    }
  }
}
