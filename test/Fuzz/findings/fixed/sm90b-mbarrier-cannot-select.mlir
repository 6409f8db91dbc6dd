tile.kernel @stream_mixed(%x: !tile.global<[?, 64], f32>, %y: !tile.global<[?, 2], f32>,
                          %out: !tile.global<[16, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %x_s = tile.alloc : !tile.shared<[16, 64], f32>
    %y_s = tile.alloc : !tile.shared<[16, 2], f32>
    %x_f = tile.alloc : !tile.frag<[16, 64], f32>
    %sum = tile.alloc : !tile.frag<[16, 64], f32>
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %n = tile.dim %x, 0 : !tile.global<[?, 64], f32>
    %tiles = arith.ceildivui %n, %c16 : index
    tile.pipelined %t = %c0 to %tiles step %c1 num_stages = 2 {
      %row = arith.muli %t, %c16 : index
      tile.copy %x[%row, %c0] to %x_s : !tile.global<[?, 64], f32> to !tile.shared<[16, 64], f32>
      tile.parallel (%i, %j) in [16, 64] {
        %a = tile.load %sum[%i, %j] : !tile.frag<[16, 64], f32>
        %b = tile.load %x_f[%i, %j] : !tile.frag<[16, 64], f32>
        %w = tile.load %y_s[%i, %c1] : !tile.shared<[16, 2], f32>
        %p = arith.mulf %b, %w : f32
      }
    }
    tile.copy %sum to %out[%c0, %c0] : !tile.frag<[16, 64], f32> to !tile.global<[16, 64], f32>
  }
}
