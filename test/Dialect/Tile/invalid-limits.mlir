// Sizes beyond what the target holds are refused by the verifiers, with the
// type, its size and the limit (docs/design.md, "Limits"), before any
// lowering allocates per element.
// RUN: hisa-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{the shared tile [1099511627776] of f32 needs 4398046511104 bytes; the limit is 232448 bytes of shared memory (the most a block may use on sm_90)}}
func.func private @shared_2_40(!tile.shared<[1099511627776], f32>)

// -----

// One byte over the limit.
// expected-error @+1 {{the shared tile [232449] of i8 needs 232449 bytes; the limit is 232448}}
func.func private @shared_one_over(!tile.shared<[232449], i8>)

// -----

// The largest shared tile a block may have.
func.func private @shared_largest(!tile.shared<[232448], i8>)

// -----

// Each fragment value takes a 32-bit register, even an fp8 one.
// expected-error @+1 {{the fragment [1024, 128] of f8E4M3FN needs 524288 bytes; the limit is 262144 bytes of registers (one SM's register file: 65536 32-bit registers)}}
func.func private @fragment_fp8(!tile.frag<[1024, 128], f8E4M3FN>)

// -----

// expected-error @+1 {{the fragment [1099511627776, 128] of f32 needs 562949953421312 bytes; the limit is 262144}}
func.func private @fragment_2_40(!tile.frag<[1099511627776, 128], f32>)

// -----

// The element count itself overflows int64.
// expected-error @+1 {{the fragment [4611686018427387904, 4] of f32 has more elements than int64 can count}}
func.func private @fragment_overflow(!tile.frag<[4611686018427387904, 4], f32>)

// -----

// expected-error @+1 {{the local tile [1099511627776] of f32 needs 4398046511104 bytes; the limit is 524288 bytes per thread (the local memory a thread may address)}}
func.func private @local_2_40(!tile.local<[1099511627776], f32>)

// -----

// expected-error @+1 {{the global tensor [?, 281474976710656] of f32 needs 1125899906842624 bytes; the limit is 281474976710656 bytes (the statically known dimensions; the limit keeps byte offsets within int64)}}
func.func private @global_huge(!tile.global<[?, 281474976710656], f32>)

// -----

// Global tensors may be as large as memory; `?` sizes are checked at launch.
func.func private @global_runtime(!tile.global<[?, ?, 128], f32>)

// -----

// expected-error @+1 {{fragment layout of 1024 threads x 65537 values is out of range (at most 1024 threads and 65536 values per thread)}}
func.func private @layout_values() attributes {l = #tile.frag_layout<threads = 1024, values = 65537, map = (t, v) -> (v)>}

// -----

tile.kernel @parallel_domain() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    // expected-error @+1 {{'tile.parallel' op domain [1099511627776, 128] has 140737488355328 elements; the limit is 262144 (the elements of the largest shared tile or fragment)}}
    tile.parallel (%i, %j) in [1099511627776, 128] {
    }
  }
}

// -----

tile.kernel @parallel_domain_overflow() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    // expected-error @+1 {{'tile.parallel' op domain [4611686018427387904, 4] has more than 2^63 elements}}
    tile.parallel (%i, %j) in [4611686018427387904, 4] {
    }
  }
}

// -----

// Each fragment fits the register file, but together they need more local
// memory per thread than a thread may address.
tile.kernel @per_thread() {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op fragments and local tiles need 786432 bytes per thread (32 threads); the limit is 524288 (the local memory a thread may address)}}
  tile.launch (%bx) in (%c1) threads 32 {
    %a = tile.alloc : !tile.local<[65536], f32>
    %b = tile.alloc : !tile.local<[65536], f32>
    %c = tile.alloc : !tile.local<[65536], f32>
  }
}

// -----

tile.kernel @stages_2_50(%n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.pipelined' op num_stages must be between 1 and 32, got 1125899906842625}}
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 1125899906842625 {
    }
  }
}

// -----

tile.kernel @stages_int64_max(%n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.pipelined' op num_stages must be between 1 and 32, got 9223372036854775807}}
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 9223372036854775807 {
    }
  }
}

// -----

tile.kernel @stages_33(%n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.pipelined' op num_stages must be between 1 and 32, got 33}}
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 33 {
    }
  }
}

// -----

tile.kernel @step_zero(%n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.pipelined' op step must be positive, got 0}}
    tile.pipelined %t = %c0 to %n step %c0 num_stages = 2 {
    }
  }
}

// -----

tile.kernel @step_negative(%n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    %m1 = arith.constant -1 : index
    // expected-error @+1 {{'tile.pipelined' op step must be positive, got -1}}
    tile.pipelined %t = %c0 to %n step %m1 num_stages = 1 {
    }
  }
}

// -----

// blocks x threads would wrap around int64.
tile.kernel @blocks_per_sm_huge() {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op blocks_per_sm must be at least 1 with at most 2048 threads per SM, got 4611686018427387904 blocks of 128 threads}}
  tile.launch (%bx) in (%c1) threads 128 blocks_per_sm 4611686018427387904 {
  }
}

// -----

// A shape with parameters is already refused when no binding could make it
// fit (parameters are at least 1); it is checked exactly once bound.
// expected-error @+1 {{the fragment [1099511627776, heads] of f32 needs at least 4398046511104 bytes; the limit is 262144}}
func.func private @symbolic_too_large(!tile.frag<[1099511627776, heads], f32>)

// -----

// expected-error @+1 {{the fragment [9223372036854775807, heads, 64] of f32 has more elements than int64 can count}}
func.func private @symbolic_overflow(!tile.frag<[9223372036854775807, heads, 64], f32>)

// -----

// A product of parameters whose coefficient alone is too large.
// expected-error @+1 {{the shared tile [4096*n, 64] of f32 needs at least 1048576 bytes; the limit is 232448}}
func.func private @coefficient_too_large(!tile.shared<[4096*n, 64], f32>)
