// tile.per_warpgroup verifies but has no lowering yet: tile-to-nvvm says so
// with a diagnostic at the op instead of miscompiling it.
// RUN: hisa-opt %s --tile-to-nvvm -verify-diagnostics -o /dev/null

tile.kernel @owners(%out: !tile.global<[2], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %owner = tile.alloc : !tile.shared<[2], i32>
    // expected-error @+1 {{'tile.per_warpgroup' op is not lowered yet (its design: docs/proposals/per-warpgroup.md)}}
    tile.per_warpgroup (%wg) {
      %v = arith.index_cast %wg : index to i32
      tile.store %v, %owner[%wg] : !tile.shared<[2], i32>
    }
    tile.copy %owner to %out : !tile.shared<[2], i32> to !tile.global<[2], i32>
  }
}
