// A pipelined loop whose body writes a shared tile that the next
// iteration's gemm reads (acc cast back into p_s): even with every staged
// copy on TMA, each iteration needs the proxy fence and barrier at its top.
tile.kernel @k(%a: !tile.global<[?, 64], bf16>, %c: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %p_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %n = tile.dim %a, 0 : !tile.global<[?, 64], bf16>
    %steps = arith.ceildivui %n, %c64 : index
    tile.clear %acc : !tile.frag<[64, 64], f32>
    tile.cast %acc to %p_s : !tile.frag<[64, 64], f32> to !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %steps step %c1 num_stages = 2 {
      %row = arith.muli %t, %c64 : index
      tile.copy %a[%row, %c0] to %a_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %a_s, %p_s, %acc transpose_b
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.cast %acc to %p_s : !tile.frag<[64, 64], f32> to !tile.shared<[64, 64], bf16>
    }
    tile.copy %acc to %c[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}
