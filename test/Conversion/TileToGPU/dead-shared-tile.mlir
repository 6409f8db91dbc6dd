// RUN: hisa-opt %s --tile-to-nvvm | FileCheck %s

// A shared tile nothing uses gets no bytes; in a launch with no other
// shared tile there is no shared memory at all, and the tile lowers to
// nothing (it was refused as "shared tile has no offset").
tile.kernel @dead_shared_tile(%y: !tile.global<[128], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %unused = tile.alloc : !tile.shared<[64], f32>
    %one = arith.constant 1.0 : f32
    tile.parallel (%i) in [128] {
      tile.store %one, %y[%i] : !tile.global<[128], f32>
    }
  }
}

// CHECK-LABEL: llvm.func @dead_shared_tile
// CHECK-NOT: addr_space = 3
// CHECK: llvm.store
