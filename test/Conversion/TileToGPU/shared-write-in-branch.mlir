// RUN: hisa-opt %s --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu | FileCheck %s

// A shared write in a branch inside a loop (ParallelOp.cpp
// mayRaceWithEarlierReads): the previous iteration's read after it in the
// same branch (another thread's element) needs a barrier before the write.
tile.kernel @write_in_branch_in_loop(%out: !tile.global<[128], f32>, %n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[128], f32>
    %f = tile.alloc : !tile.frag<[128], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c127 = arith.constant 127 : index
    %one = arith.constant 1.0 : f32
    scf.for %t = %c0 to %c4 step %c1 {
      %go = arith.cmpi ult, %t, %n : index
      scf.if %go {
        tile.parallel (%i) in [128] {
          tile.store %one, %s[%i] : !tile.shared<[128], f32>
        }
        tile.parallel (%i) in [128] {
          %j = arith.subi %c127, %i : index
          %v = tile.load %s[%j] : !tile.shared<[128], f32>
          tile.store %v, %f[%i] : !tile.frag<[128], f32>
        }
      }
    }
    tile.copy %f to %out[%c0] : !tile.frag<[128], f32> to !tile.global<[128], f32>
  }
}

// CHECK-LABEL: gpu.func @write_in_branch_in_loop
// CHECK: scf.for
// CHECK: scf.if
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: memref.store {{.*}} : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: gpu.barrier
