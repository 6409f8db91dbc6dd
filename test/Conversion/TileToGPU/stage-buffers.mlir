// A pipelined loop's multi-stage buffers are remapped to the iteration's
// stage only inside the loop body and only for the tile itself: a view of
// one, or a pick made outside the loop, would always address stage 0, so
// the lowering refuses both.
// RUN: hisa-opt %s -split-input-file --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu -verify-diagnostics

tile.kernel @view_of_stage_buffer(%a: !tile.global<[?, 64], f32>, %out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %a_s = tile.alloc : !tile.shared<[64, 64], f32>
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 {
      tile.copy %a[%t, %c0] to %a_s
          : !tile.global<[?, 64], f32> to !tile.shared<[64, 64], f32>
      // expected-error @+1 {{'tile.view' op views a shared tile that a pipelined loop fills in 2 stages; read the tile itself (views of stage buffers are not supported)}}
      %flat = tile.view %a_s : !tile.shared<[64, 64], f32> to !tile.shared<[4096], f32>
      %v = tile.load %flat[%c0] : !tile.shared<[4096], f32>
      tile.store %v, %out[%c0] : !tile.global<[64], f32>
    }
  }
}

// -----

tile.kernel @pick_of_stage_buffers_outside_the_loop(%a: !tile.global<[?, 64], f32>, %out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %a0 = tile.alloc : !tile.shared<[64, 64], f32>
    %a1 = tile.alloc : !tile.shared<[64, 64], f32>
    tile.per_warpgroup (%wg) {
      // expected-error @+1 {{'tile.pick' op picks a tile that a pipelined loop fills in 2 stages, outside that loop; pick inside the loop body}}
      %mine = tile.pick %wg [%a0, %a1] : !tile.shared<[64, 64], f32>
      %v = tile.load %mine[%c0, %c0] : !tile.shared<[64, 64], f32>
      tile.store %v, %out[%c0] : !tile.global<[64], f32>
    }
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 {
      tile.copy %a[%t, %c0] to %a0
          : !tile.global<[?, 64], f32> to !tile.shared<[64, 64], f32>
      tile.copy %a[%t, %c0] to %a1
          : !tile.global<[?, 64], f32> to !tile.shared<[64, 64], f32>
    }
  }
}
