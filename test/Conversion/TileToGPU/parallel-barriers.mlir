// RUN: hisa-opt %s -split-input-file --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu | FileCheck %s

// Write after read: a parallel that writes a shared tile waits for the
// block when an earlier op, since the last barrier, read that tile (here a
// partner's element, as v4_compress's RoPE does before its Hadamard
// transform overwrites the tile); compute-sanitizer's racecheck reported
// the missing barrier. The parallel that writes ends with a barrier too.
// CHECK-LABEL: gpu.func @partner_then_overwrite
// CHECK: memref.store {{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: gpu.barrier
// CHECK: memref.load {{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: memref.load {{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: workgroup
// CHECK: gpu.barrier
// CHECK-NOT: workgroup
// CHECK: memref.store {{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: gpu.barrier
tile.kernel @partner_then_overwrite(%out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    %t = tile.alloc : !tile.shared<[64], f32>
    %r = tile.alloc : !tile.frag<[64], f32>
    tile.parallel (%i) in [64] {
      %v = arith.index_cast %i : index to i32
      %f = arith.sitofp %v : i32 to f32
      tile.store %f, %t[%i] : !tile.shared<[64], f32>
    }
    tile.parallel (%i) in [64] {
      %c1_i = arith.constant 1 : index
      %j = arith.xori %i, %c1_i : index
      %a = tile.load %t[%i] : !tile.shared<[64], f32>
      %b = tile.load %t[%j] : !tile.shared<[64], f32>
      %s = arith.addf %a, %b : f32
      tile.store %s, %r[%i] : !tile.frag<[64], f32>
    }
    tile.parallel (%i) in [64] {
      %s = tile.load %r[%i] : !tile.frag<[64], f32>
      tile.store %s, %t[%i] : !tile.shared<[64], f32>
    }
    %c0 = arith.constant 0 : index
    tile.copy %t to %out[%c0] : !tile.shared<[64], f32> to !tile.global<[64], f32>
  }
}

// -----

// The read happened before a parallel that wrote shared memory (and ended
// with a barrier): no barrier of its own before the write.
// CHECK-LABEL: gpu.func @read_before_a_barrier
// CHECK: memref.store {{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: memref.load
// CHECK-NEXT: memref.store {{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: gpu.barrier
tile.kernel @read_before_a_barrier(%out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    %t = tile.alloc : !tile.shared<[64], f32>
    %u = tile.alloc : !tile.shared<[64], f32>
    tile.parallel (%i) in [64] {
      %a = tile.load %t[%i] : !tile.shared<[64], f32>
      tile.store %a, %u[%i] : !tile.shared<[64], f32>
    }
    tile.parallel (%i) in [64] {
      %a = tile.load %u[%i] : !tile.shared<[64], f32>
      tile.store %a, %t[%i] : !tile.shared<[64], f32>
    }
    %c0 = arith.constant 0 : index
    tile.copy %t to %out[%c0] : !tile.shared<[64], f32> to !tile.global<[64], f32>
  }
}

// -----

// In a loop, the previous iteration's reads after the write count too:
// the next iteration's write waits for them.
// CHECK-LABEL: gpu.func @loop_carried
// CHECK: scf.for
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: memref.store {{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: gpu.barrier
tile.kernel @loop_carried(%out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    %t = tile.alloc : !tile.shared<[64], f32>
    %r = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    tile.fill %r, %zero : !tile.frag<[64], f32>, f32
    scf.for %step = %c0 to %c4 step %c1 {
      tile.parallel (%i) in [64] {
        %v = tile.load %r[%i] : !tile.frag<[64], f32>
        tile.store %v, %t[%i] : !tile.shared<[64], f32>
      }
      tile.parallel (%i) in [64] {
        %c1_i = arith.constant 1 : index
        %j = arith.xori %i, %c1_i : index
        %b = tile.load %t[%j] : !tile.shared<[64], f32>
        tile.store %b, %r[%i] : !tile.frag<[64], f32>
      }
    }
    tile.copy %r to %out[%c0] : !tile.frag<[64], f32> to !tile.global<[64], f32>
  }
}

// -----

// A read through a view of the tile counts as a read of the tile.
// CHECK-LABEL: gpu.func @through_a_view
// CHECK: memref.load {{.*}} : memref<2x32xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: workgroup
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: memref.store {{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
tile.kernel @through_a_view(%out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    %t = tile.alloc : !tile.shared<[64], f32>
    %r = tile.alloc : !tile.frag<[2, 32], f32>
    %v = tile.view %t : !tile.shared<[64], f32> to !tile.shared<[2, 32], f32>
    tile.parallel (%a, %b) in [2, 32] {
      %x = tile.load %v[%a, %b] : !tile.shared<[2, 32], f32>
      tile.store %x, %r[%a, %b] : !tile.frag<[2, 32], f32>
    }
    tile.parallel (%i) in [64] {
      %f = arith.constant 1.0 : f32
      tile.store %f, %t[%i] : !tile.shared<[64], f32>
    }
    %c0 = arith.constant 0 : index
    tile.copy %t to %out[%c0] : !tile.shared<[64], f32> to !tile.global<[64], f32>
  }
}

// -----

// In a pipelined body, a read and a later write of a shared tile are
// separated by a barrier; the loop's own staged (cp.async) copies between
// them end with none and do not count as one.
// CHECK-LABEL: gpu.func @staged_copy_between
// CHECK: scf.for
// CHECK: memref.load {{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: memref.store
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: workgroup
// CHECK: memref.store {{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
tile.kernel @staged_copy_between(%in: !tile.global<[?, 64], f32>, %out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    %t = tile.alloc : !tile.shared<[64], f32>
    %stage = tile.alloc : !tile.shared<[1, 64], f32>
    %r = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    tile.fill %r, %zero : !tile.frag<[64], f32>, f32
    tile.pipelined %i = %c0 to %c4 step %c1 num_stages = 2 {
      tile.parallel (%j) in [64] {
        %c1_j = arith.constant 1 : index
        %p = arith.xori %j, %c1_j : index
        %x = tile.load %t[%p] : !tile.shared<[64], f32>
        tile.store %x, %r[%j] : !tile.frag<[64], f32>
      }
      tile.copy %in[%i, %c0] to %stage : !tile.global<[?, 64], f32> to !tile.shared<[1, 64], f32>
      tile.parallel (%j) in [64] {
        %v = tile.load %r[%j] : !tile.frag<[64], f32>
        tile.store %v, %t[%j] : !tile.shared<[64], f32>
      }
    }
    tile.copy %r to %out[%c0] : !tile.frag<[64], f32> to !tile.global<[64], f32>
  }
}
