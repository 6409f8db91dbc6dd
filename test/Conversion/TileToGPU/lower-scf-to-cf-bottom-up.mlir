// RUN: hisa-opt %s --pass-pipeline="builtin.module(gpu.module(tile-lower-scf-to-cf-bottom-up))" | FileCheck %s

// Every scf op becomes branches, in the same structure convert-scf-to-cf
// gives (the ops after each if land in its continuation block).
// CHECK-LABEL: gpu.func @guarded
// CHECK-NOT: scf.
// CHECK: cf.cond_br %{{.*}}, ^[[THEN0:.*]], ^[[NEXT0:.*]]
// CHECK: ^[[THEN0]]:
// CHECK: memref.store
// CHECK: cf.br ^[[NEXT0]]
// CHECK: ^[[NEXT0]]:
// CHECK: arith.addi
// CHECK: cf.cond_br %{{.*}}, ^[[THEN1:.*]], ^[[NEXT1:.*]]
// CHECK: ^[[NEXT1]]:
// CHECK: cf.br ^[[HEADER:.*]](
// CHECK: ^[[HEADER]](%{{.*}}: index):
// CHECK: cf.cond_br
// CHECK-NOT: scf.
// CHECK: gpu.return
gpu.module @m {
  gpu.func @guarded(%p: i1, %q: i1, %n: index, %m: memref<4xi32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %v = arith.constant 7 : i32
    scf.if %p {
      memref.store %v, %m[%c0] : memref<4xi32>
    }
    %a = arith.addi %n, %c1 : index
    scf.if %q {
      memref.store %v, %m[%c1] : memref<4xi32>
    }
    scf.for %i = %c0 to %a step %c1 {
      memref.store %v, %m[%i] : memref<4xi32>
    }
    gpu.return
  }
}

// A function with an scf.while is left whole to convert-scf-to-cf (the
// while pattern is a dialect-conversion one the greedy driver applies only
// in part), the if inside it included.
// CHECK-LABEL: gpu.func @with_while
// CHECK: scf.while
// CHECK: scf.if
gpu.module @w {
  gpu.func @with_while(%a: i32, %p: i1, %m: memref<4xi32>) kernel {
    %c0 = arith.constant 0 : index
    %r:2 = scf.while (%x = %a, %q = %p) : (i32, i1) -> (i32, i1) {
      %c = arith.cmpi sgt, %x, %a : i32
      scf.condition(%c) %x, %q : i32, i1
    } do {
    ^bb0(%x: i32, %q: i1):
      scf.if %q {
        memref.store %x, %m[%c0] : memref<4xi32>
      }
      %f = arith.constant false
      scf.yield %x, %f : i32, i1
    }
    gpu.return
  }
}
