// RUN: hisa-opt %s -split-input-file --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu | FileCheck %s

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

// -----

// The first iteration's write comes right after a read before the loop,
// although a barrier later in the body orders the later iterations.
tile.kernel @write_after_read_before_loop(%out: !tile.global<[128], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[128], f32>
    %u = tile.alloc : !tile.shared<[128], f32>
    %f = tile.alloc : !tile.frag<[128], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c127 = arith.constant 127 : index
    %one = arith.constant 1.0 : f32
    tile.parallel (%i) in [128] {
      %j = arith.subi %c127, %i : index
      %v = tile.load %s[%j] : !tile.shared<[128], f32>
      tile.store %v, %f[%i] : !tile.frag<[128], f32>
    }
    scf.for %t = %c0 to %c4 step %c1 {
      tile.parallel (%i) in [128] {
        tile.store %one, %s[%i] : !tile.shared<[128], f32>
      }
      tile.fill %u, %one : !tile.shared<[128], f32>, f32
    }
    tile.copy %f to %out[%c0] : !tile.frag<[128], f32> to !tile.global<[128], f32>
  }
}

// CHECK-LABEL: gpu.func @write_after_read_before_loop
// CHECK: memref.load %{{.*}} : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: memref.store {{.*}} : memref<128xf32, #gpu.address_space<workgroup>>

// -----

// (Review of the twenty-sixth session.) A write in an scf.while's body
// after the condition read the tile in the same iteration.
tile.kernel @while_before(%out: !tile.global<[128], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[128], i32>
    %f = tile.alloc : !tile.frag<[128], i32>
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %ten = arith.constant 10 : i32
    tile.fill %s, %zero : !tile.shared<[128], i32>, i32
    %r = scf.while (%it = %c0) : (index) -> index {
      %v = tile.load %s[%c0] : !tile.shared<[128], i32>
      %go = arith.cmpi slt, %v, %ten : i32
      scf.condition(%go) %it : index
    } do {
    ^bb0(%it: index):
      tile.parallel (%i) in [128] {
        %o = tile.load %s[%i] : !tile.shared<[128], i32>
        %p = arith.addi %o, %one : i32
        tile.store %p, %s[%i] : !tile.shared<[128], i32>
      }
      %n = arith.addi %it, %c1 : index
      scf.yield %n : index
    }
    tile.parallel (%i) in [128] {
      %v = tile.load %s[%i] : !tile.shared<[128], i32>
      tile.store %v, %f[%i] : !tile.frag<[128], i32>
    }
    tile.copy %f to %out[%c0] : !tile.frag<[128], i32> to !tile.global<[128], i32>
  }
}

// CHECK-LABEL: gpu.func @while_before
// CHECK: scf.while
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<128xi32, #gpu.address_space<workgroup>>
// CHECK: } do {
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: memref.store {{.*}} : memref<128xi32, #gpu.address_space<workgroup>>
