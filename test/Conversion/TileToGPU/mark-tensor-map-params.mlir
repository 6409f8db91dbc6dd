// RUN: hisa-opt %s -split-input-file --pass-pipeline="builtin.module(gpu.module(tile-mark-tensor-map-params))" -verify-diagnostics | FileCheck %s

// The last `tile.tensor_maps` parameters become 128-byte grid constants.
// CHECK-LABEL: llvm.func @two_maps
// CHECK-SAME: %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: i64,
// CHECK-SAME: %{{[a-z0-9]+}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %{{[a-z0-9]+}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
// CHECK-NOT: tile.tensor_maps
gpu.module @m {
  llvm.func @two_maps(%data: !llvm.ptr, %size: i64, %map0: !llvm.ptr, %map1: !llvm.ptr)
      attributes {nvvm.kernel, tile.tensor_maps = 2 : i64} {
    llvm.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{has fewer parameters than its 3 tensor maps}}
  llvm.func @too_few(%map: !llvm.ptr) attributes {nvvm.kernel, tile.tensor_maps = 3 : i64} {
    llvm.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{tensor map parameter #0 is not a pointer}}
  llvm.func @not_pointer(%map: i64) attributes {nvvm.kernel, tile.tensor_maps = 1 : i64} {
    llvm.return
  }
}
