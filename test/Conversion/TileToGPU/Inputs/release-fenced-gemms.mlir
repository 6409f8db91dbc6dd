// A warp-specialized loop whose copies are released one by one
// (tile.release): each 128-row key tile as two 64-row TMA copies, both
// gemms issued asynchronously at the top of the body, each half released
// once its gemm is done.
tile.kernel @release_fenced_gemms(%a: !tile.global<[64, 64], bf16>,
                                  %k: !tile.global<[?, 64], bf16>,
                                  %out: !tile.global<[1024], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_lo = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_hi = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc_lo = tile.alloc : !tile.frag<[64, 64], f32>
    %acc_hi = tile.alloc : !tile.frag<[64, 64], f32>
    %sums_lo = tile.alloc : !tile.frag<[64], f32>
    %sums_hi = tile.alloc : !tile.frag<[64], f32>
    %keys = tile.alloc : !tile.shared<[1024], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %row0 = arith.muli %t, %c128 : index
      %row_hi = arith.addi %row0, %c64 : index
      tile.copy %k[%row0, %c0] to %k_lo : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.copy %k[%row_hi, %c0] to %k_hi : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_lo, %a_s, %acc_lo transpose_b clear_accum async
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.gemm %k_hi, %a_s, %acc_hi transpose_b clear_accum async
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.wait_gemms pending = 1
      tile.release %k_lo : !tile.shared<[64, 64], bf16>
      tile.reduce sum %acc_lo to %sums_lo dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.wait_gemms
      tile.release %k_hi : !tile.shared<[64, 64], bf16>
      tile.reduce sum %acc_hi to %sums_hi dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.parallel (%i) in [64] {
        %v = tile.load %sums_lo[%i] : !tile.frag<[64], f32>
        %slot = arith.addi %row0, %i : index
        tile.store %v, %keys[%slot] : !tile.shared<[1024], f32>
        %w = tile.load %sums_hi[%i] : !tile.frag<[64], f32>
        %slot_hi = arith.addi %row_hi, %i : index
        tile.store %w, %keys[%slot_hi] : !tile.shared<[1024], f32>
      }
    }
    tile.copy %keys to %out[%c0] : !tile.shared<[1024], f32> to !tile.global<[1024], f32>
  }
}
