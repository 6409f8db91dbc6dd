// A warp-specialized loop whose trip count the kernel computes (HISA's
// stage 2 over query pairs walks the union of two queries' key blocks):
// the consumers store it to a shared tile before the loop and load it; the
// producer warpgroup loads it again after the roles' rendezvous.
// ws_trip_count_rewritten writes that tile after the loop, where the
// consumers could overwrite it before the producer reads it: refused.
tile.kernel @ws_trip_count(%count: !tile.global<[1], i32>,
                           %a: !tile.global<[64, 64], bf16>,
                           %k: !tile.global<[?, 64], bf16>,
                           %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %trip_tile = tile.alloc : !tile.shared<[1], i32>
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    tile.parallel (%i) in [1] {
      %n = tile.load %count[%i] : !tile.global<[1], i32>
      tile.store %n, %trip_tile[%i] : !tile.shared<[1], i32>
    }
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.fill %acc, %zero : !tile.frag<[64, 64], f32>, f32
    %trips_i32 = tile.load %trip_tile[%c0] : !tile.shared<[1], i32>
    %trips = arith.index_cast %trips_i32 : i32 to index
    tile.pipelined %t = %c0 to %trips step %c1 num_stages = 2 warp_specialized {
      %first = arith.muli %t, %c64 : index
      tile.copy %k[%first, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %a_s, %k_s, %acc transpose_b
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}

// -----

tile.kernel @ws_trip_count_rewritten(%count: !tile.global<[1], i32>,
                                     %a: !tile.global<[64, 64], bf16>,
                                     %k: !tile.global<[?, 64], bf16>,
                                     %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %trip_tile = tile.alloc : !tile.shared<[1], i32>
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %none = arith.constant 0 : i32
    tile.parallel (%i) in [1] {
      %n = tile.load %count[%i] : !tile.global<[1], i32>
      tile.store %n, %trip_tile[%i] : !tile.shared<[1], i32>
    }
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.fill %acc, %zero : !tile.frag<[64, 64], f32>, f32
    %trips_i32 = tile.load %trip_tile[%c0] : !tile.shared<[1], i32>
    %trips = arith.index_cast %trips_i32 : i32 to index
    // expected-error @+1 {{in a warp_specialized loop needs a value the producer warpgroup cannot recompute}}
    tile.pipelined %t = %c0 to %trips step %c1 num_stages = 2 warp_specialized {
      %first = arith.muli %t, %c64 : index
      tile.copy %k[%first, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %a_s, %k_s, %acc transpose_b
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
    tile.parallel (%i) in [1] {
      tile.store %none, %trip_tile[%i] : !tile.shared<[1], i32>
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}
