// RUN: hisa-opt %s -split-input-file --tile-assign-layouts -verify-diagnostics | FileCheck %s

// fp8 and f32 fragments of one shape share one layout: 16-element runs (16
// bytes of fp8) dealt to consecutive threads. The parallel over that shape
// gets it too; a rank-1 fragment of 128 elements over 128 threads gets one
// element per thread.
// CHECK-LABEL: tile.kernel @shared_layout
// CHECK: tile.alloc : !tile.frag<[64, 128], f8E4M3FN, #tile.frag_layout<threads = 128, values = 64, map = (d0, d1) -> (((d1 floordiv 16) * 2048 + d0 * 16 + d1 mod 16) floordiv 128, ((d1 floordiv 16) * 2048 + d0 * 16 + d1 mod 16) mod 128)>>
// CHECK: tile.alloc : !tile.frag<[64, 128], f32, #tile.frag_layout<threads = 128, values = 64, map = (d0, d1) -> (((d1 floordiv 16) * 2048 + d0 * 16 + d1 mod 16) floordiv 128
// CHECK: tile.alloc : !tile.frag<[128], f32, #tile.frag_layout<threads = 128, values = 1, map = (d0, d1) -> (d1 * 128 + d0)>>
// CHECK: tile.parallel (%{{.*}}, %{{.*}}) in [64, 128] attributes {layout = #tile.frag_layout<threads = 128, values = 64, map = (d0, d1) -> (((d1 floordiv 16) * 2048
tile.kernel @shared_layout() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.frag<[64, 128], f8E4M3FN>
    %b = tile.alloc : !tile.frag<[64, 128], f32>
    %c = tile.alloc : !tile.frag<[128], f32>
    tile.parallel (%i, %j) in [64, 128] {
      %x = tile.load %b[%i, %j] : !tile.frag<[64, 128], f32>
      tile.store %x, %b[%i, %j] : !tile.frag<[64, 128], f32>
    }
  }
}

// -----

// A domain with no fragment walks one element per thread per step, so that a
// warp's global accesses are contiguous.
// CHECK-LABEL: tile.kernel @no_fragments
// CHECK: tile.parallel (%{{.*}}, %{{.*}}) in [4, 1024] attributes {layout = #tile.frag_layout<threads = 256, values = 16, map = (d0, d1) -> ((d1 * 256 + d0) floordiv 1024, (d1 * 256 + d0) mod 1024)>}
tile.kernel @no_fragments(%out: !tile.global<[?, ?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %zero = arith.constant 0.0 : f32
    tile.parallel (%i, %j) in [4, 1024] {
      tile.store %zero, %out[%i, %j] : !tile.global<[?, ?], f32>
    }
  }
}

// -----

tile.kernel @broadcast_read() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %rows = tile.alloc : !tile.frag<[64], f32>
    %tile = tile.alloc : !tile.frag<[64, 64], f32>
    tile.parallel (%i, %j) in [64, 64] {
      // expected-error @+1 {{'tile.load' op accesses fragment [64] at indices other than the induction variables of the enclosing tile.parallel over [64, 64]; the element may live in another thread (read it from shared or global memory instead; a reduction of the parallel's fragment along one dimension may be read at the other induction variables)}}
      %x = tile.load %rows[%i] : !tile.frag<[64], f32>
      tile.store %x, %tile[%i, %j] : !tile.frag<[64, 64], f32>
    }
  }
}

// -----

tile.kernel @serial_fragment_read() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %c0 = arith.constant 0 : index
    %f = tile.alloc : !tile.frag<[64], f32>
    // expected-error @+1 {{'tile.load' op accesses a fragment outside tile.parallel; fragment elements are spread over the threads, so copy the fragment to shared memory or a local tile first}}
    %x = tile.load %f[%c0] : !tile.frag<[64], f32>
  }
}

// -----

tile.kernel @unbound() params {n = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    // expected-error @+1 {{'tile.alloc' op fragment shape [n] is not bound; run tile-bind-params first}}
    %f = tile.alloc : !tile.frag<[n], f32>
  }
}

// -----

// The gemm accumulator gets the wgmma layout; its operands the 128-byte
// swizzle.
// CHECK-LABEL: tile.kernel @gemm_layouts
// CHECK: tile.alloc {tile.swizzle = 128 : i64} : !tile.shared<[64, 128], f8E4M3FN>
// CHECK: tile.alloc {tile.swizzle = 128 : i64} : !tile.shared<[64, 128], f8E4M3FN>
// CHECK: tile.alloc : !tile.frag<[64, 64], f32, #tile.frag_layout<threads = 128, values = 32, map = (d0, d1) -> ((d1 floordiv 32) * 64 + (d0 floordiv 32) * 16 + (d0 mod 32) floordiv 4 + (((d1 mod 32) floordiv 2) mod 2) * 8, ((d1 mod 32) floordiv 4) * 8 + (d0 mod 4) * 2 + d1 mod 2)>>
tile.kernel @gemm_layouts() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[64, 128], f8E4M3FN>, !tile.shared<[64, 128], f8E4M3FN> -> !tile.frag<[64, 64], f32>
  }
}

// -----

// Two warpgroups: square splits M when it divides into 64-row blocks per
// warpgroup (warpgroup t / 128 adds 64 to the row), else N.
// CHECK-LABEL: tile.kernel @gemm_two_warpgroups
// CHECK: tile.alloc : !tile.frag<[128, 64], f32, #tile.frag_layout<threads = 256, values = 32, map = (d0, d1) -> ((d1 floordiv 32) * 64 + ((d0 floordiv 32) mod 4) * 16 + (d0 mod 32) floordiv 4 + (((d1 mod 32) floordiv 2) mod 2) * 8 + (d0 floordiv 128) * 64, ((d1 mod 32) floordiv 4) * 8 + (d0 mod 4) * 2 + d1 mod 2)>>
// CHECK: tile.alloc : !tile.frag<[64, 64], f32, #tile.frag_layout<threads = 256, values = 16, map = (d0, d1) -> ((d1 floordiv 16) * 64 + ((d0 floordiv 32) mod 4) * 16 + (d0 mod 32) floordiv 4 + (((d1 mod 16) floordiv 2) mod 2) * 8, ((d1 mod 16) floordiv 4) * 8 + (d0 mod 4) * 2 + d1 mod 2 + (d0 floordiv 128) * 32)>>
tile.kernel @gemm_two_warpgroups() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %a = tile.alloc : !tile.shared<[128, 128], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[128, 64], f32>
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[128, 128], f8E4M3FN>, !tile.shared<[64, 128], f8E4M3FN> -> !tile.frag<[128, 64], f32>
    %a2 = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %c2 = tile.alloc : !tile.frag<[64, 64], f32>
    tile.gemm %a2, %b, %c2 transpose_b : !tile.shared<[64, 128], f8E4M3FN>, !tile.shared<[64, 128], f8E4M3FN> -> !tile.frag<[64, 64], f32>
  }
}

// -----

tile.kernel @gemm_full_row_too_few_rows() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %a = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op with policy full_row cannot split an accumulator [64, 64] over 2 warpgroup(s) along M: each warpgroup needs M a multiple of 64 and N a multiple of 8}}
    tile.gemm %a, %b, %c transpose_b policy(full_row) : !tile.shared<[64, 128], f8E4M3FN>, !tile.shared<[64, 128], f8E4M3FN> -> !tile.frag<[64, 64], f32>
  }
}

// -----

tile.kernel @gemm_partial_warpgroup() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 192 {
    %a = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op with policy square needs whole warpgroups (a multiple of 128 threads), got 192 threads}}
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[64, 128], f8E4M3FN>, !tile.shared<[64, 128], f8E4M3FN> -> !tile.frag<[64, 64], f32>
  }
}

// -----

tile.kernel @gemm_too_wide() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[512, 128], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[64, 512], f32>
    // expected-error @+1 {{'tile.gemm' op with policy square gives each warpgroup 512 accumulator columns; wgmma computes at most 256 (split along N or use more warpgroups)}}
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[64, 128], f8E4M3FN>, !tile.shared<[512, 128], f8E4M3FN> -> !tile.frag<[64, 512], f32>
  }
}

// -----

// Rows of 64 and 32 bytes take the 64- and 32-byte swizzles.
// CHECK-LABEL: tile.kernel @gemm_narrow_rows
// CHECK: tile.alloc {tile.swizzle = 64 : i64} : !tile.shared<[64, 64], f8E4M3FN>
// CHECK: tile.alloc {tile.swizzle = 32 : i64} : !tile.shared<[64, 16], bf16>
tile.kernel @gemm_narrow_rows() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    tile.gemm %a, %a, %c transpose_b : !tile.shared<[64, 64], f8E4M3FN>, !tile.shared<[64, 64], f8E4M3FN> -> !tile.frag<[64, 64], f32>
    %h = tile.alloc : !tile.shared<[64, 16], bf16>
    tile.gemm %h, %h, %c transpose_b : !tile.shared<[64, 16], bf16>, !tile.shared<[64, 16], bf16> -> !tile.frag<[64, 64], f32>
  }
}

// -----

// A in registers takes wgmma's A-operand layout: per k16 step four 32-bit
// registers of two bf16 each (rows g and g + 8, columns 2q and 2q + 8).
// CHECK-LABEL: tile.kernel @gemm_register_a
// CHECK: tile.alloc : !tile.frag<[64, 32], bf16, #tile.frag_layout<threads = 128, values = 16, map = (d0, d1) -> ((d1 floordiv 16) * 64 + (d0 floordiv 32) * 16 + (d0 mod 32) floordiv 4 + ((d1 floordiv 2) mod 2) * 8, ((d1 floordiv 8) mod 2) * 16 + (d0 mod 4) * 2 + (((d1 floordiv 2) mod 4) floordiv 2) * 8 + d1 mod 2)>>
tile.kernel @gemm_register_a() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.frag<[64, 32], bf16>
    %b = tile.alloc : !tile.shared<[64, 32], bf16>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    tile.gemm %a, %b, %c transpose_b : !tile.frag<[64, 32], bf16>, !tile.shared<[64, 32], bf16> -> !tile.frag<[64, 64], f32>
  }
}

// -----

// A 16-bit A cast register by register from an accumulator of its shape
// (the score tile feeding the next gemm): the cast links the two, and
// wgmma's A-operand and accumulator layouts are the same layout, so both
// keep the accumulator's map.
// CHECK-LABEL: tile.kernel @gemm_register_a_same_shape
// CHECK: tile.alloc : !tile.frag<[64, 64], f32, #tile.frag_layout<threads = 128, values = 32, map = [[MAP:.*]]>>
// CHECK: tile.alloc : !tile.frag<[64, 64], bf16, #tile.frag_layout<threads = 128, values = 32, map = [[MAP]]>>
tile.kernel @gemm_register_a_same_shape() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %k = tile.alloc : !tile.shared<[64, 64], bf16>
    %v = tile.alloc : !tile.shared<[64, 64], bf16>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %o = tile.alloc : !tile.frag<[64, 64], f32>
    tile.gemm %q, %k, %s transpose_b : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.cast %s to %p : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
    tile.gemm %p, %v, %o transpose_b : !tile.frag<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
  }
}

// -----

// An 8-bit A holds four consecutive columns per register, the accumulator
// two. Nothing links them, so each fragment of the shared shape keeps its
// own layout (layouts are per linked class, not per shape).
// CHECK-LABEL: tile.kernel @gemm_register_a_8bit_beside_accumulator
// CHECK: tile.alloc : !tile.frag<[64, 64], f8E4M3FN, #tile.frag_layout<threads = 128, values = 32, map = (d0, d1) -> ({{.*}}, {{.*}} + d1 mod 4)>>
// CHECK: tile.alloc : !tile.frag<[64, 64], f32, #tile.frag_layout<threads = 128, values = 32, map = (d0, d1) -> ({{.*}}, {{.*}} + d1 mod 2)>>
tile.kernel @gemm_register_a_8bit_beside_accumulator() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.frag<[64, 64], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[64, 64], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    tile.gemm %a, %b, %c transpose_b : !tile.frag<[64, 64], f8E4M3FN>, !tile.shared<[64, 64], f8E4M3FN> -> !tile.frag<[64, 64], f32>
  }
}

// -----

// Row and column statistics of a square accumulator: both [64], each in
// the layout its reduction leaves (2 values a thread for the rows, 16 for
// the columns), and a parallel over the accumulator reads both.
// CHECK-LABEL: tile.kernel @row_and_column_statistics
// CHECK: tile.alloc : !tile.frag<[64], f32, #tile.frag_layout<threads = 128, values = 2,
// CHECK: tile.alloc : !tile.frag<[64], f32, #tile.frag_layout<threads = 128, values = 16,
tile.kernel @row_and_column_statistics() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    %rows = tile.alloc : !tile.frag<[64], f32>
    %cols = tile.alloc : !tile.frag<[64], f32>
    tile.gemm %a, %a, %s transpose_b : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.reduce sum %s to %rows dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    tile.reduce max %s to %cols dim = 0 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    tile.parallel (%i, %j) in [64, 64] {
      %x = tile.load %s[%i, %j] : !tile.frag<[64, 64], f32>
      %r = tile.load %rows[%i] : !tile.frag<[64], f32>
      %c = tile.load %cols[%j] : !tile.frag<[64], f32>
      %y = arith.subf %x, %r : f32
      %z = arith.subf %y, %c : f32
      tile.store %z, %s[%i, %j] : !tile.frag<[64, 64], f32>
    }
  }
}

// -----

// A view of a reduction's destination, written before the reduction
// fixes it: the view still shares the destination's registers (2 values a
// thread).
// CHECK-LABEL: tile.kernel @view_of_reduction
// CHECK: tile.alloc : !tile.frag<[64], f32, #tile.frag_layout<threads = 128, values = 2, map = [[ROWS:.*]]>>
// CHECK: tile.view %{{.*}} to !tile.frag<[8, 8], f32, #tile.frag_layout<threads = 128, values = 2,
tile.kernel @view_of_reduction(%out: !tile.global<[8, 8], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    %r = tile.alloc : !tile.frag<[64], f32>
    %w = tile.view %r : !tile.frag<[64], f32> to !tile.frag<[8, 8], f32>
    tile.gemm %a, %a, %c transpose_b : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.reduce sum %c to %r dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    tile.copy %w to %out : !tile.frag<[8, 8], f32> to !tile.global<[8, 8], f32>
  }
}

// -----

// A view shares its source's registers; a parallel linking it to an
// accumulator of another layout would read other elements.
tile.kernel @view_linked_to_another_layout(%out: !tile.global<[128, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %b = tile.alloc : !tile.shared<[128, 64], bf16>
    %c = tile.alloc : !tile.frag<[64, 128], f32>
    %c2 = tile.alloc : !tile.frag<[128, 64], f32>
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[64, 64], bf16>, !tile.shared<[128, 64], bf16> -> !tile.frag<[64, 128], f32>
    tile.gemm %b, %a, %c2 transpose_b : !tile.shared<[128, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[128, 64], f32>
    // expected-error @+1 {{'tile.view' op result [128, 64] shares its source's registers, but a tile.parallel, copy or cast links it to a fragment with another layout}}
    %v = tile.view %c : !tile.frag<[64, 128], f32> to !tile.frag<[128, 64], f32>
    tile.parallel (%i, %j) in [128, 64] {
      %x = tile.load %v[%i, %j] : !tile.frag<[128, 64], f32>
      %y = tile.load %c2[%i, %j] : !tile.frag<[128, 64], f32>
      %z = arith.addf %x, %y : f32
      tile.store %z, %c2[%i, %j] : !tile.frag<[128, 64], f32>
    }
  }
}

// -----

// A cast links an 8-bit A to an accumulator register by register: a real
// clash.
tile.kernel @gemm_register_a_8bit_cast_from_accumulator() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.frag<[64, 64], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[64, 64], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    %d = tile.alloc : !tile.frag<[64, 64], f32>
    tile.gemm %b, %b, %c transpose_b : !tile.shared<[64, 64], f8E4M3FN>, !tile.shared<[64, 64], f8E4M3FN> -> !tile.frag<[64, 64], f32>
    tile.cast %c to %a : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], f8E4M3FN>
    // expected-error @+1 {{'tile.gemm' op A fragment [64, 64] needs wgmma's A-operand layout, but a tile.parallel, copy or cast links it to a fragment with another layout (an 8-bit A cannot be cast from an accumulator register by register); fill A on its own}}
    tile.gemm %a, %b, %d transpose_b : !tile.frag<[64, 64], f8E4M3FN>, !tile.shared<[64, 64], f8E4M3FN> -> !tile.frag<[64, 64], f32>
  }
}

// -----

tile.kernel @gemm_odd_rows() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 24], bf16>
    %b = tile.alloc : !tile.shared<[64, 24], bf16>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op needs operand rows (the contiguous dimension) of 32, 64 or a multiple of 128 bytes (fp8: 32, 64, 128, 256...; bf16/f16: 16, 32, 64, 128... elements), got 48 bytes in [64, 24]}}
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[64, 24], bf16>, !tile.shared<[64, 24], bf16> -> !tile.frag<[64, 64], f32>
  }
}

// -----

// Rows wider than 128 bytes are stored in 128-byte swizzle panels: K-major
// bf16 rows of K = 128, and a transposed B whose rows are N = 256 wide.
// CHECK-LABEL: tile.kernel @gemm_panels
// CHECK: tile.alloc {tile.swizzle = 128 : i64} : !tile.shared<[64, 128], bf16>
// CHECK: tile.alloc {tile.swizzle = 128 : i64} : !tile.shared<[128, 256], bf16>
// CHECK: tile.alloc {tile.swizzle = 32 : i64} : !tile.shared<[64, 16], bf16>
// CHECK: tile.alloc {tile.swizzle = 32 : i64} : !tile.shared<[16, 16], bf16>
tile.kernel @gemm_panels() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 128], bf16>
    %b = tile.alloc : !tile.shared<[128, 256], bf16>
    %a2 = tile.alloc : !tile.shared<[64, 16], bf16>
    %b2 = tile.alloc : !tile.shared<[16, 16], bf16>
    %c = tile.alloc : !tile.frag<[64, 256], f32>
    %c2 = tile.alloc : !tile.frag<[64, 16], f32>
    tile.gemm %a, %b, %c : !tile.shared<[64, 128], bf16>, !tile.shared<[128, 256], bf16> -> !tile.frag<[64, 256], f32>
    tile.gemm %a2, %b2, %c2 : !tile.shared<[64, 16], bf16>, !tile.shared<[16, 16], bf16> -> !tile.frag<[64, 16], f32>
  }
}

// -----

// Reducing an accumulator over its columns stays within each thread and its
// lane neighbours: the destination takes the reduced layout (2 rows per
// thread, replicated over 4 lanes) and the results never leave registers.
// CHECK-LABEL: tile.kernel @accumulator_reduction
// CHECK: tile.alloc : !tile.frag<[64], f32, #tile.frag_layout<threads = 128, values = 2, map =
tile.kernel @accumulator_reduction() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    %r = tile.alloc : !tile.frag<[64], f32>
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[64, 128], f8E4M3FN>, !tile.shared<[64, 128], f8E4M3FN> -> !tile.frag<[64, 64], f32>
    tile.reduce sum %c to %r dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
  }
}

// -----

// A staging tile (a fragment copied in, every use a whole-tile copy to or
// from a fragment or global memory) gets the swizzle of a gemm operand of
// its shape (conflict-free stores of the fragment's pieces); a shared tile
// that a parallel also reads keeps its plain layout, as do one whose rows
// are no multiple of 128 bytes, one copied on into a local tile and one
// copied through a window (those copies address a plain array).
// CHECK-LABEL: tile.kernel @staging
// CHECK: tile.alloc {tile.swizzle = 128 : i64} : !tile.shared<[64, 128], bf16>
// CHECK: tile.alloc : !tile.shared<[64, 128], bf16>
// CHECK: tile.alloc : !tile.shared<[64, 40], bf16>
// CHECK: tile.alloc : !tile.shared<[8, 64], f32>
// CHECK: tile.alloc : !tile.shared<[64, 64], bf16>
tile.kernel @staging(%y: !tile.global<[64, 128], bf16>, %z: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %staged = tile.alloc : !tile.shared<[64, 128], bf16>
    %read = tile.alloc : !tile.shared<[64, 128], bf16>
    %narrow = tile.alloc : !tile.shared<[64, 40], bf16>
    %to_local = tile.alloc : !tile.shared<[8, 64], f32>
    %windowed = tile.alloc : !tile.shared<[64, 64], bf16>
    %small = tile.alloc : !tile.local<[8, 64], f32>
    %h = tile.alloc : !tile.frag<[8, 64], f32>
    %f = tile.alloc : !tile.frag<[64, 128], bf16>
    %g = tile.alloc : !tile.frag<[64, 40], bf16>
    %sums = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : bf16
    tile.fill %f, %one : !tile.frag<[64, 128], bf16>, bf16
    tile.fill %g, %one : !tile.frag<[64, 40], bf16>, bf16
    tile.copy %f to %staged : !tile.frag<[64, 128], bf16> to !tile.shared<[64, 128], bf16>
    tile.copy %staged to %y[%c0, %c0] : !tile.shared<[64, 128], bf16> to !tile.global<[64, 128], bf16>
    tile.copy %f to %read : !tile.frag<[64, 128], bf16> to !tile.shared<[64, 128], bf16>
    tile.parallel (%i) in [64] {
      %v = tile.load %read[%i, %c0] : !tile.shared<[64, 128], bf16>
      %w = arith.extf %v : bf16 to f32
      tile.store %w, %sums[%i] : !tile.frag<[64], f32>
    }
    tile.copy %g to %narrow : !tile.frag<[64, 40], bf16> to !tile.shared<[64, 40], bf16>
    tile.copy %narrow to %y[%c0, %c0] : !tile.shared<[64, 40], bf16> to !tile.global<[64, 128], bf16>
    tile.copy %sums to %z[%c0] : !tile.frag<[64], f32> to !tile.global<[64], f32>
    %zero = arith.constant 0.0 : f32
    tile.fill %h, %zero : !tile.frag<[8, 64], f32>, f32
    tile.copy %h to %to_local : !tile.frag<[8, 64], f32> to !tile.shared<[8, 64], f32>
    tile.copy %to_local to %small : !tile.shared<[8, 64], f32> to !tile.local<[8, 64], f32>
    tile.copy %f to %staged : !tile.frag<[64, 128], bf16> to !tile.shared<[64, 128], bf16>
    %part = tile.alloc : !tile.frag<[8, 64], bf16>
    tile.copy %windowed[%c0, %c0] to %part : !tile.shared<[64, 64], bf16> to !tile.frag<[8, 64], bf16>
    %half = tile.alloc : !tile.frag<[64, 64], bf16>
    tile.fill %half, %one : !tile.frag<[64, 64], bf16>, bf16
    tile.copy %half to %windowed : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
  }
}

// -----

// Staging tiles picked per warpgroup (sparse_attn_wg's epilogue): a pick
// whose every use is a whole-tile copy counts as its candidates' use, so
// both are swizzled. A pick that also chooses a tile that a parallel reads
// leaves all its candidates plain (the lowering addresses a pick through
// its first candidate's swizzle).
// CHECK-LABEL: tile.kernel @picked_staging
// CHECK: tile.alloc {tile.swizzle = 128 : i64} : !tile.shared<[64, 256], bf16>
// CHECK: tile.alloc {tile.swizzle = 128 : i64} : !tile.shared<[64, 256], bf16>
// CHECK: tile.alloc : !tile.shared<[64, 128], bf16>
// CHECK: tile.alloc : !tile.shared<[64, 128], bf16>
tile.kernel @picked_staging(%y: !tile.global<[64, 512], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %lo = tile.alloc : !tile.shared<[64, 256], bf16>
    %hi = tile.alloc : !tile.shared<[64, 256], bf16>
    %plain_lo = tile.alloc : !tile.shared<[64, 128], bf16>
    %plain_hi = tile.alloc : !tile.shared<[64, 128], bf16>
    %f = tile.alloc : !tile.frag<[64, 256], bf16>
    %g = tile.alloc : !tile.frag<[64, 128], bf16>
    %sums = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : bf16
    tile.per_warpgroup (%wg) {
      tile.fill %f, %one : !tile.frag<[64, 256], bf16>, bf16
      %staging = tile.pick %wg [%lo, %hi] : !tile.shared<[64, 256], bf16>
      tile.copy %f to %staging : !tile.frag<[64, 256], bf16> to !tile.shared<[64, 256], bf16>
      tile.copy %staging to %y[%c0, %c0] : !tile.shared<[64, 256], bf16> to !tile.global<[64, 512], bf16>
      tile.fill %g, %one : !tile.frag<[64, 128], bf16>, bf16
      %other = tile.pick %wg [%plain_lo, %plain_hi] : !tile.shared<[64, 128], bf16>
      tile.copy %g to %other : !tile.frag<[64, 128], bf16> to !tile.shared<[64, 128], bf16>
      tile.copy %other to %y[%c0, %c0] : !tile.shared<[64, 128], bf16> to !tile.global<[64, 512], bf16>
      tile.parallel (%i) in [64] {
        %v = tile.load %plain_hi[%i, %c0] : !tile.shared<[64, 128], bf16>
        %w = arith.extf %v : bf16 to f32
        tile.store %w, %sums[%i] : !tile.frag<[64], f32>
      }
    }
  }
}
