// RUN: hisa-opt %s --tile-to-nvvm | hisa-translate --gpu-to-ptx | FileCheck %s

// A whole-tile copy from global into shared memory (MemoryOps.cpp) issues
// a thread's loads before its stores: 640 i32 over 256 threads is 3 pieces
// a thread (the last in half of them), all in flight at once.
tile.kernel @loads_first(%idx: !tile.global<[?, ?], i32>, %out: !tile.global<[?, 640], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %rows = tile.alloc : !tile.shared<[640], i32>
    %c0 = arith.constant 0 : index
    tile.copy %idx[%bx, %c0] to %rows : !tile.global<[?, ?], i32> to !tile.shared<[640], i32>
    tile.copy %rows to %out[%bx, %c0] : !tile.shared<[640], i32> to !tile.global<[?, 640], i32>
  }
}

// CHECK-LABEL: .entry loads_first
// CHECK-NOT: st.shared
// CHECK-COUNT-3: ld.global.b32
// CHECK-NOT: ld.global
// CHECK-COUNT-3: st.shared.b32
// CHECK: bar.sync
