// RUN: hisa-opt %s --tile-inline-functions | FileCheck %s

// A library body may use a dialect the kernel itself does not: this kernel
// has no math ops, @rope_rotate (kernels-dsl/lib/rope.mlir) has math.fma.
// The pass loads the dialects device functions use, so inlining does not
// depend on the passes that run before it.

func.func private @rope_rotate(f32, f32, f32, f32) -> (f32, f32)

// CHECK-LABEL: tile.kernel @rotate
// CHECK-NOT: func.call
// CHECK: math.fma
// CHECK: math.fma
tile.kernel @rotate(%x: !tile.global<[?, 2], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    %c = arith.constant 0.5 : f32
    %s = arith.constant 0.25 : f32
    tile.parallel (%i) in [32] {
      %re = tile.load %x[%i, %c0] : !tile.global<[?, 2], f32>
      %im = tile.load %x[%i, %c1] : !tile.global<[?, 2], f32>
      %re_out, %im_out = func.call @rope_rotate(%re, %im, %c, %s)
          : (f32, f32, f32, f32) -> (f32, f32)
      tile.store %re_out, %x[%i, %c0] : !tile.global<[?, 2], f32>
      tile.store %im_out, %x[%i, %c1] : !tile.global<[?, 2], f32>
    }
  }
}
