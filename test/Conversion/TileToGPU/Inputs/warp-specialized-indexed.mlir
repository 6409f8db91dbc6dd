// A warp-specialized loop whose copies start at rows read from a shared
// tile the consumers wrote before the loop (HISA's stage 2 walks its key
// blocks this way): the producer warpgroup reads the index tile itself.
// ws_indexed_written writes that tile inside the loop, so the producer
// could read it before the consumers' write: refused.
tile.kernel @ws_indexed(%blocks: !tile.global<[8], i32>,
                        %a: !tile.global<[64, 64], bf16>,
                        %k: !tile.global<[?, 64], bf16>,
                        %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %index_tile = tile.alloc : !tile.shared<[8], i32>
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    tile.copy %blocks[%c0] to %index_tile : !tile.global<[8], i32> to !tile.shared<[8], i32>
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.fill %acc, %zero : !tile.frag<[64, 64], f32>, f32
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %block = tile.load %index_tile[%t] : !tile.shared<[8], i32>
      %block_index = arith.index_cast %block : i32 to index
      %first = arith.muli %block_index, %c64 : index
      tile.copy %k[%first, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %a_s, %k_s, %acc transpose_b
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}

// -----

tile.kernel @ws_indexed_written(%blocks: !tile.global<[8], i32>,
                                %a: !tile.global<[64, 64], bf16>,
                                %k: !tile.global<[?, 64], bf16>,
                                %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %index_tile = tile.alloc : !tile.shared<[8], i32>
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1 : i32
    tile.copy %blocks[%c0] to %index_tile : !tile.global<[8], i32> to !tile.shared<[8], i32>
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.fill %acc, %zero : !tile.frag<[64, 64], f32>, f32
    // expected-error @+1 {{in a warp_specialized loop needs a value the producer warpgroup cannot recompute}}
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %block = tile.load %index_tile[%t] : !tile.shared<[8], i32>
      %next = arith.addi %block, %one : i32
      tile.store %next, %index_tile[%t] : !tile.shared<[8], i32>
      %block_index = arith.index_cast %block : i32 to index
      %first = arith.muli %block_index, %c64 : index
      tile.copy %k[%first, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %a_s, %k_s, %acc transpose_b
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}

// -----

// The same through a view written in the loop: aliases are refused too.
tile.kernel @ws_indexed_view(%blocks: !tile.global<[8], i32>,
                             %a: !tile.global<[64, 64], bf16>,
                             %k: !tile.global<[?, 64], bf16>,
                             %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %index_tile = tile.alloc : !tile.shared<[8], i32>
    %index_rows = tile.view %index_tile : !tile.shared<[8], i32> to !tile.shared<[2, 4], i32>
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1 : i32
    tile.copy %blocks[%c0] to %index_tile : !tile.global<[8], i32> to !tile.shared<[8], i32>
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.fill %acc, %zero : !tile.frag<[64, 64], f32>, f32
    // expected-error @+1 {{in a warp_specialized loop needs a value the producer warpgroup cannot recompute}}
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %block = tile.load %index_tile[%t] : !tile.shared<[8], i32>
      %next = arith.addi %block, %one : i32
      tile.store %next, %index_rows[%c0, %c0] : !tile.shared<[2, 4], i32>
      %block_index = arith.index_cast %block : i32 to index
      %first = arith.muli %block_index, %c64 : index
      tile.copy %k[%first, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %a_s, %k_s, %acc transpose_b
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}
