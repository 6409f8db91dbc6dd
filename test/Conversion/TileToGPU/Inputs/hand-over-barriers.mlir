// A hand-over (warpgroup 0's copy into x, which no warpgroup reads back)
// between a parallel that reads the warpgroup's own tile and one that
// writes it reversed: the copy has no warpgroup barriers, so the writer
// keeps its own (another thread read the element it overwrites).
tile.kernel @hand_over_then_write(%a: !tile.global<[2, 64], f32>, %out: !tile.global<[2, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %t0 = tile.alloc : !tile.shared<[64], f32>
    %t1 = tile.alloc : !tile.shared<[64], f32>
    %x = tile.alloc : !tile.shared<[64], f32>
    %f = tile.alloc : !tile.frag<[64], f32>
    %g = tile.alloc : !tile.frag<[64], f32>
    tile.per_warpgroup (%wg) {
      %mine = tile.pick %wg [%t0, %t1] : !tile.shared<[64], f32>
      tile.copy %a[%wg, %c0] to %mine : !tile.global<[2, 64], f32> to !tile.shared<[64], f32>
      tile.parallel (%i) in [64] {
        %v = tile.load %mine[%i] : !tile.shared<[64], f32>
        tile.store %v, %f[%i] : !tile.frag<[64], f32>
      }
      %is0 = arith.cmpi eq, %wg, %c0 : index
      scf.if %is0 {
        tile.copy %f to %x : !tile.frag<[64], f32> to !tile.shared<[64], f32>
      }
      tile.parallel (%i) in [64] {
        %c63 = arith.constant 63 : index
        %r = arith.subi %c63, %i : index
        %v = tile.load %f[%i] : !tile.frag<[64], f32>
        tile.store %v, %mine[%r] : !tile.shared<[64], f32>
      }
      tile.copy %mine to %g : !tile.shared<[64], f32> to !tile.frag<[64], f32>
      tile.copy %g to %out[%wg, %c0] : !tile.frag<[64], f32> to !tile.global<[2, 64], f32>
    }
  }
}
