// RUN: hisa-opt %s --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu | FileCheck %s

// A staging tile (swizzled by tile-assign-layouts) keeps 16-byte pieces
// whole: an f32 fragment whose shape it shares with a bf16 one has 8-value
// (32-byte) runs, stored into the tile as two 16-byte pieces each, through
// the swizzled (1-D) view; the copy out reads 16-byte pieces too. No
// wgmma reads the tile, so its stores need no async-proxy fence.
// CHECK-LABEL: gpu.func @staged_f32
// CHECK-NOT: vector<8xf32>, {{.*}}workgroup
// CHECK: vector.store {{.*}} : memref<4096xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-NOT: vector<8xf32>, {{.*}}workgroup
// CHECK-NOT: nvvm.fence.proxy
// CHECK: gpu.barrier
// CHECK: vector.load {{.*}} : memref<4096xf32, #gpu.address_space<workgroup>>, vector<4xf32>
tile.kernel @staged_f32(%y: !tile.global<[64, 64], f32>, %z: !tile.global<[64, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %staging = tile.alloc : !tile.shared<[64, 64], f32>
    %f = tile.alloc : !tile.frag<[64, 64], f32>
    %g = tile.alloc : !tile.frag<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    tile.fill %f, %one : !tile.frag<[64, 64], f32>, f32
    tile.cast %f to %g : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
    tile.copy %g to %z[%c0, %c0] : !tile.frag<[64, 64], bf16> to !tile.global<[64, 64], bf16>
    tile.copy %f to %staging : !tile.frag<[64, 64], f32> to !tile.shared<[64, 64], f32>
    tile.copy %staging to %y[%c0, %c0] : !tile.shared<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}
