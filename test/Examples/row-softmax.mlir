// The row softmax of docs/design.md ("A first kernel"), lowered to PTX and
// assembled: y[r, :] = softmax(x[r, :]) over rows of n f32 values.
// RUN: hisa-translate --tile-to-ptx %s -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: hisa-opt %s --tile-to-nvvm="params=n=4096" | hisa-translate --gpu-to-ptx | FileCheck %s --check-prefix=N4096
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// One block of 128 threads per row; n must be a power of two (tile.reduce).
tile.kernel @row_softmax(%x: !tile.global<[?, n], f32>,
                         %y: !tile.global<[?, n], f32>)
    params {n = 1024} {
  %rows = tile.dim %x, 0 : !tile.global<[?, n], f32>
  tile.launch (%row) in (%rows) threads 128 {
    // The row, spread over the block's registers.
    %v = tile.alloc : !tile.frag<[n], f32>
    // A reduction into a local tile leaves its result in every thread.
    %stat = tile.alloc : !tile.local<[1], f32>
    %c0 = arith.constant 0 : index
    %log2e = arith.constant 1.44269504 : f32
    %one = arith.constant 1.0 : f32
    tile.copy %x[%row, %c0] to %v : !tile.global<[?, n], f32> to !tile.frag<[n], f32>
    tile.reduce max %v to %stat dim = 0 : !tile.frag<[n], f32> to !tile.local<[1], f32>
    %max = tile.load %stat[%c0] : !tile.local<[1], f32>
    %shift = arith.mulf %max, %log2e : f32
    // exp(a - max) as exp2(a * log2e - max * log2e): one fma and one
    // ex2.approx.ftz per element (math.exp goes through libdevice's expf).
    tile.parallel (%j) in [n] {
      %a = tile.load %v[%j] : !tile.frag<[n], f32>
      %scaled = arith.mulf %a, %log2e : f32
      %arg = arith.subf %scaled, %shift : f32
      %e = math.exp2 %arg : f32
      tile.store %e, %v[%j] : !tile.frag<[n], f32>
    }
    tile.reduce sum %v to %stat dim = 0 : !tile.frag<[n], f32> to !tile.local<[1], f32>
    %sum = tile.load %stat[%c0] : !tile.local<[1], f32>
    %inv = arith.divf %one, %sum : f32
    tile.parallel (%j) in [n] {
      %e = tile.load %v[%j] : !tile.frag<[n], f32>
      %p = arith.mulf %e, %inv : f32
      tile.store %p, %v[%j] : !tile.frag<[n], f32>
    }
    tile.copy %v to %y[%row, %c0] : !tile.frag<[n], f32> to !tile.global<[?, n], f32>
  }
}

// 16-byte loads of the row; the maximum across lanes (xor shuffles), then
// across the 4 warps (a barrier around the shared scratch).
// CHECK:      .entry row_softmax(
// CHECK:      .maxntid 128, 1, 1
// CHECK:      ld.global.v4.b32
// CHECK:      max.NaN.f32
// CHECK:      shfl.sync.bfly.b32
// CHECK:      bar.sync
// CHECK:      fma.rn.f32
// CHECK-NEXT: ex2.approx.ftz.f32
// CHECK:      shfl.sync.bfly.b32
// One IEEE reciprocal, then multiplies.
// CHECK:      rcp.rn.f32
// CHECK-NOT:  div.rn.f32
// CHECK:      st.global.v4.b32

// n = 4096: 32 values a thread, still 16-byte accesses.
// N4096:      .entry row_softmax(
// N4096:      ld.global.v4.b32
// N4096:      ex2.approx.ftz.f32
// N4096:      st.global.v4.b32

// PTXAS:      0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
