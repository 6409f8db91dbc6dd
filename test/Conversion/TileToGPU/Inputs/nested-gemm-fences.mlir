// Nested gemms in pipelined loops that must keep a fence (review of the
// nested-gemm fencing): a cp.async loop whose only gemm sits in an scf.if
// (the iteration's fence must be there), a gemm in an scf.for that writes
// its operand after it (its next pass reads those writes), and a gemm after
// a nested global-to-shared copy (not a staged copy).
tile.kernel @gemm_in_if(%a: !tile.global<[64, 64], bf16>,
                        %k: !tile.global<[?, 64], bf16>,
                        %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.clear %acc : !tile.frag<[64, 64], f32>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 {
      %rows = arith.muli %t, %c64 : index
      tile.copy %k[%rows, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      %early = arith.cmpi ult, %t, %c4 : index
      scf.if %early {
        tile.gemm %k_s, %a_s, %acc transpose_b
            : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      }
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}

// -----

tile.kernel @gemm_in_for(%a: !tile.global<[64, 64], bf16>,
                         %k: !tile.global<[?, 64], bf16>,
                         %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %x_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    tile.copy %a[%c0, %c0] to %x_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.clear %acc : !tile.frag<[64, 64], f32>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %rows = arith.muli %t, %c64 : index
      tile.copy %k[%rows, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      scf.for %j = %c0 to %c2 step %c1 {
        tile.gemm %k_s, %x_s, %acc transpose_b
            : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
        tile.parallel (%i, %h) in [64, 64] {
          %v = tile.load %acc[%i, %h] : !tile.frag<[64, 64], f32>
          %b = arith.truncf %v : f32 to bf16
          tile.store %b, %x_s[%i, %h] : !tile.shared<[64, 64], bf16>
        }
      }
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}

// -----

tile.kernel @copy_before_nested_gemm(%a: !tile.global<[64, 64], bf16>,
                                     %k: !tile.global<[?, 64], bf16>,
                                     %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    tile.clear %acc : !tile.frag<[64, 64], f32>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %rows = arith.muli %t, %c64 : index
      tile.copy %k[%rows, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      %early = arith.cmpi ult, %t, %c4 : index
      scf.if %early {
        tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
        tile.gemm %k_s, %a_s, %acc transpose_b
            : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      }
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}
