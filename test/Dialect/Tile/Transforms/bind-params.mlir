// RUN: hisa-opt %s --tile-bind-params | FileCheck %s --check-prefix=DEFAULT
// RUN: hisa-opt %s --tile-bind-params="params=heads=32,dim=64" | FileCheck %s --check-prefix=H32
// RUN: hisa-opt %s --tile-bind-params="params=block_q=4 kernel=second" | FileCheck %s --check-prefix=ONE

// DEFAULT-LABEL: tile.kernel @first
// DEFAULT-SAME: %{{.*}}: !tile.global<[?, 64, 128], f8E4M3FN>
// DEFAULT-SAME: params {block_q = 2, dim = 128, heads = 64}
// DEFAULT-NOT: tile.param
// DEFAULT: %[[BQ:.*]] = arith.constant 2 : index
// DEFAULT: arith.ceildivui %{{.*}}, %[[BQ]]
// DEFAULT: tile.alloc : !tile.shared<[128, 128], f8E4M3FN>
// DEFAULT: tile.parallel (%{{.*}}, %{{.*}}) in [128, 128]
// DEFAULT: %[[H:.*]] = arith.constant 64 : index
// DEFAULT: arith.addi %[[H]], %[[H]]

// H32-LABEL: tile.kernel @first
// H32-SAME: %{{.*}}: !tile.global<[?, 32, 64], f8E4M3FN>
// H32-SAME: params {block_q = 2, dim = 64, heads = 32}
// H32: tile.alloc : !tile.shared<[64, 64], f8E4M3FN>
// H32: tile.parallel (%{{.*}}, %{{.*}}) in [64, 64]
// H32: arith.constant 32 : index
tile.kernel @first(%q: !tile.global<[?, heads, dim], f8E4M3FN>)
    params {heads = 64, dim = 128, block_q = 2} {
  %m = tile.dim %q, 0 : !tile.global<[?, heads, dim], f8E4M3FN>
  %block_q = tile.param "block_q" : index
  %grid = arith.ceildivui %m, %block_q : index
  tile.launch (%bx) in (%grid) threads 128 {
    %s = tile.alloc : !tile.shared<[block_q*heads, dim], f8E4M3FN>
    tile.parallel (%i, %j) in [block_q*heads, dim] {
    }
    %h = tile.param "heads" : index
    %two_h = arith.addi %h, %h : index
  }
}

// Static dimensions of tile.dim fold away once bound.
// DEFAULT-LABEL: tile.kernel @second
// DEFAULT: %[[C:.*]] = arith.constant 64 : index
// DEFAULT: tile.launch (%{{.*}}) in (%[[C]]) threads 32
// ONE-LABEL: tile.kernel @first
// ONE-SAME: !tile.global<[?, heads, dim], f8E4M3FN>
// ONE-LABEL: tile.kernel @second
// ONE-SAME: params {block_q = 4, heads = 64}
// ONE: tile.alloc : !tile.frag<[4, 64], f32>
tile.kernel @second(%w: !tile.global<[?, heads], f32>) params {heads = 64, block_q = 1} {
  %h = tile.dim %w, 1 : !tile.global<[?, heads], f32>
  tile.launch (%bx) in (%h) threads 32 {
    %f = tile.alloc : !tile.frag<[block_q, heads], f32>
  }
}
