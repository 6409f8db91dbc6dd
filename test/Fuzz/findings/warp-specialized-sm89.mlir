
// tile.call: a device function over a shape symbol.
func.func private @zero_all(%t: !tile.shared<[n], i32>) {
  %z = arith.constant 0 : i32
  tile.fill %t, %z : !tile.shared<[n], i32>, i32
  return
}

tile.kernel @calls() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %t = tile.alloc : !tile.shared<[16], i32>
    tile.call @zero_all(%t) : (!tile.shared<[16], i32>) -> ()
  }
}

// A warp-specialized pipeline prints its role split.
tile.kernel @warp_specialized(%k: !tile.global<[?, 64], bf16>, %n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 2 warp_specialized {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    }
  }
}
