// Warp collectives must be reached by all 32 lanes of a warp: control flow
// around them (in the parallel body or around the parallel) must decide the
// same way in every lane. What the lanes agree on (LaneUniformity.cpp):
// kernel arguments, block indices, sizes and parameters, constants, the
// warp index (quotients of the linear element index by multiples of 32),
// loads of shared or global memory at such addresses, and warp-wide results
// (votes, warp_scan totals); arithmetic modulo 2^width keeps only
// power-of-two divisibility. Registers, local arrays, lane ids and ops of
// unknown dialects differ between lanes.
// RUN: hisa-opt %s -split-input-file -verify-diagnostics

// Accepted: a per-warp segment loop (bounds from the warp index) holding a
// ballot, as top-k's tie pass does; a branch on a vote's result; a loop
// bound read from shared memory at the warp's index.
tile.kernel @per_warp_segments(%x: !tile.global<[?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %counts = tile.alloc : !tile.shared<[8], i32>
    tile.parallel (%t) in [512] {
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %lane = arith.remui %t, %c32 : index
      %warp = arith.divui %t, %c32 : index
      %warp_in_block = arith.remui %warp, %c1 : index
      %start = arith.muli %warp, %c64 : index
      %end = arith.addi %start, %c64 : index
      %sum = scf.for %j = %start to %end step %c32
          iter_args(%acc = %c0) -> (index) {
        %at = arith.addi %j, %lane : index
        %v = tile.load %x[%at] : !tile.global<[?], f32>
        %positive = arith.cmpf ogt, %v, %zero : f32
        %bits = tile.vote ballot %positive : i32
        %anyone = tile.vote any %positive : i1
        %next = scf.if %anyone -> (index) {
          %p, %total = tile.warp_scan sum %bits : i32
          %n = arith.index_cast %total : i32 to index
          %s = arith.addi %acc, %n : index
          scf.yield %s : index
        } else {
          scf.yield %acc : index
        }
        scf.yield %next : index
      }
      %bound_i32 = tile.load %counts[%warp_in_block] : !tile.shared<[8], i32>
      %bound = arith.index_cast %bound_i32 : i32 to index
      scf.for %k = %c0 to %bound step %c1 {
        %lane_i32 = arith.index_cast %lane : index to i32
        %b = tile.warp_broadcast %lane_i32, %lane_i32 : i32
      }
    }
  }
}

// -----

// A rows x 64 domain: the row index is the same in a warp's lanes.
tile.kernel @row_uniform() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %x = tile.alloc : !tile.shared<[4, 64], f32>
    tile.parallel (%i, %j) in [4, 64] {
      %c2 = arith.constant 2 : index
      %zero = arith.constant 0.0 : f32
      %even = arith.remui %i, %c2 : index
      %c0 = arith.constant 0 : index
      %is_even = arith.cmpi eq, %even, %c0 : index
      scf.if %is_even {
        %v = tile.load %x[%i, %j] : !tile.shared<[4, 64], f32>
        %p = arith.cmpf ogt, %v, %zero : f32
        %b = tile.vote ballot %p : i32
      }
    }
  }
}

// -----

tile.kernel @branch_on_lane() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    tile.parallel (%t) in [64] {
      %c16 = arith.constant 16 : index
      %low = arith.cmpi ult, %t, %c16 : index
      // expected-note @+1 {{this condition, bound or case differs between the lanes of a warp}}
      scf.if %low {
        %yes = arith.constant true
        // expected-error @+1 {{'tile.vote' op is reached by only some lanes of a warp}}
        %b = tile.vote ballot %yes : i32
      }
    }
  }
}

// -----

// Loops whose bounds differ between lanes: a start at the lane.
tile.kernel @loop_from_lane() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%t) in [32] {
      %c32 = arith.constant 32 : index
      %c100 = arith.constant 100 : index
      %lane = arith.remui %t, %c32 : index
      // expected-note @+1 {{this condition, bound or case differs between the lanes of a warp}}
      scf.for %j = %lane to %c100 step %c32 {
        %one = arith.constant 1 : i32
        // expected-error @+1 {{'tile.warp_scan' op is reached by only some lanes of a warp}}
        %p, %total = tile.warp_scan sum %one : i32
      }
    }
  }
}

// -----

// A condition from data each lane read at its own address.
tile.kernel @branch_on_data(%x: !tile.global<[?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%t) in [32] {
      %zero = arith.constant 0.0 : f32
      %v = tile.load %x[%t] : !tile.global<[?], f32>
      %positive = arith.cmpf ogt, %v, %zero : f32
      // expected-note @+1 {{this condition, bound or case differs between the lanes of a warp}}
      scf.if %positive {
        %c7 = arith.constant 7 : i32
        // expected-error @+1 {{'tile.warp_match' op is reached by only some lanes of a warp}}
        %m = tile.warp_match %c7 : i32
      }
    }
  }
}

// -----

// A loop that runs until a lane's own value is found: lanes leave it apart.
tile.kernel @while_on_prefix() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%t) in [32] {
      %one = arith.constant 1 : i32
      %limit = arith.constant 100 : i32
      %c0 = arith.constant 0 : i32
      // expected-note @+1 {{this condition, bound or case differs between the lanes of a warp}}
      %r = scf.while (%seen = %c0) : (i32) -> i32 {
        %more = arith.cmpi ult, %seen, %limit : i32
        scf.condition(%more) %seen : i32
      } do {
      ^bb0(%s: i32):
        // expected-error @+1 {{'tile.warp_scan' op is reached by only some lanes of a warp}}
        %prefix, %total = tile.warp_scan sum %one : i32
        %next = arith.addi %s, %prefix : i32
        scf.yield %next : i32
      }
    }
  }
}

// -----

// Carried through a loop: the total is warp-wide, so the same loop on it
// is accepted.
tile.kernel @while_on_total() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%t) in [32] {
      %one = arith.constant 1 : i32
      %limit = arith.constant 100 : i32
      %c0 = arith.constant 0 : i32
      %r = scf.while (%seen = %c0) : (i32) -> i32 {
        %more = arith.cmpi ult, %seen, %limit : i32
        scf.condition(%more) %seen : i32
      } do {
      ^bb0(%s: i32):
        %prefix, %total = tile.warp_scan sum %one : i32
        %next = arith.addi %s, %total : i32
        scf.yield %next : i32
      }
    }
  }
}

// -----

// Domains of rows narrower than a warp: the row index differs in a warp.
tile.kernel @narrow_rows() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%i, %j) in [4, 8] {
      %c0 = arith.constant 0 : index
      %first = arith.cmpi eq, %i, %c0 : index
      // expected-note @+1 {{this condition, bound or case differs between the lanes of a warp}}
      scf.if %first {
        %yes = arith.constant true
        // expected-error @+1 {{'tile.vote' op is reached by only some lanes of a warp}}
        %b = tile.vote all %yes : i1
      }
    }
  }
}

// -----

// Accepted: a lane-strided loop (every lane runs 1024 / 32 iterations), and
// per-warp loops bounded by a run-time size or a parameter.
tile.kernel @lane_strided_and_sizes(%x: !tile.global<[?], f32>) params {n = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    tile.parallel (%t) in [64] {
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c1024 = arith.constant 1024 : index
      %zero = arith.constant 0.0 : f32
      %lane = arith.remui %t, %c32 : index
      scf.for %j = %lane to %c1024 step %c32 {
        %v = tile.load %x[%j] : !tile.global<[?], f32>
        %p = arith.cmpf ogt, %v, %zero : f32
        %b = tile.vote ballot %p : i32
      }
      %size = tile.dim %x, 0 : !tile.global<[?], f32>
      %n = tile.param "n" : index
      scf.for %j = %c0 to %size step %c32 {
        scf.for %k = %c0 to %n step %c32 {
          %yes = arith.constant true
          %b = tile.vote ballot %yes : i32
        }
      }
    }
  }
}

// -----

// A value each thread read from its own local array, outside the parallel:
// it differs between threads.
tile.kernel @branch_on_local_outside() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %mine = tile.alloc : !tile.local<[1], i32>
    %c0 = arith.constant 0 : index
    tile.parallel (%t) in [32] {
      %t32 = arith.index_cast %t : index to i32
      tile.store %t32, %mine[%c0] : !tile.local<[1], i32>
    }
    %v = tile.load %mine[%c0] : !tile.local<[1], i32>
    tile.parallel (%t) in [32] {
      %c16 = arith.constant 16 : i32
      %low = arith.cmpi ult, %v, %c16 : i32
      // expected-note @+1 {{differs between the lanes of a warp}}
      scf.if %low {
        %yes = arith.constant true
        // expected-error @+1 {{'tile.vote' op is reached by only some lanes of a warp}}
        %b = tile.vote ballot %yes : i32
      }
    }
  }
}

// -----

// Ops of other dialects are lane-varying unless known (gpu.lane_id is Pure).
tile.kernel @branch_on_lane_id() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%t) in [32] {
      %lane = gpu.lane_id
      %c16 = arith.constant 16 : index
      %low = arith.cmpi ult, %lane, %c16 : index
      // expected-note @+1 {{differs between the lanes of a warp}}
      scf.if %low {
        %yes = arith.constant true
        // expected-error @+1 {{'tile.vote' op is reached by only some lanes of a warp}}
        %b = tile.vote ballot %yes : i32
      }
    }
  }
}

// -----

// Branches between blocks are not followed: a collective in a region of
// several blocks is refused.
tile.kernel @branch_in_execute_region() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%t) in [32] {
      %c16 = arith.constant 16 : index
      %low = arith.cmpi ult, %t, %c16 : index
      // expected-note @+1 {{differs between the lanes of a warp}}
      scf.execute_region {
        cf.cond_br %low, ^vote, ^done
      ^vote:
        %yes = arith.constant true
        // expected-error @+1 {{'tile.vote' op is reached by only some lanes of a warp}}
        %b = tile.vote ballot %yes : i32
        cf.br ^done
      ^done:
        scf.yield
      }
    }
  }
}

// -----

// Arithmetic wraps modulo 2^64: (t - 40) / 40 splits a warp (2^64 - 40 is
// 16 modulo 40); only power-of-two divisibility survives the wrap.
tile.kernel @wrapped_base() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%t) in [32] {
      %c40 = arith.constant 40 : index
      %cm40 = arith.constant -40 : index
      %rel = arith.subi %t, %c40 : index
      %chunk = arith.divui %rel, %c40 : index
      %chunk0 = arith.divui %cm40, %c40 : index
      %same = arith.cmpi eq, %chunk, %chunk0 : index
      // expected-note @+1 {{differs between the lanes of a warp}}
      scf.if %same {
        %yes = arith.constant true
        // expected-error @+1 {{'tile.vote' op is reached by only some lanes of a warp}}
        %b = tile.vote ballot %yes : i32
      }
    }
  }
}

// -----

// A zero extension of an i32 that wraps inside the warp (lane - 16).
tile.kernel @extension_across_the_wrap() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%t) in [32] {
      %t32 = arith.index_cast %t : index to i32
      %cm16 = arith.constant -16 : i32
      %x = arith.addi %t32, %cm16 : i32
      %wide = arith.extui %x : i32 to i64
      %lane = arith.extui %t32 : i32 to i64
      %d = arith.subi %wide, %lane : i64
      %cm16_64 = arith.constant -16 : i64
      %low_lanes = arith.cmpi ne, %d, %cm16_64 : i64
      // expected-note @+1 {{differs between the lanes of a warp}}
      scf.if %low_lanes {
        %yes = arith.constant true
        // expected-error @+1 {{'tile.vote' op is reached by only some lanes of a warp}}
        %b = tile.vote any %yes : i1
      }
    }
  }
}

// -----

// Accepted: each warpgroup's own loop (its index is the same in its
// lanes) and a branch on the row of a [4, 64] domain.
tile.kernel @per_warpgroup_rows(%x: !tile.global<[?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    tile.per_warpgroup (%wg) {
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %trips = arith.addi %wg, %c2 : index
      scf.for %k = %c0 to %trips step %c1 {
        tile.parallel (%i, %j) in [4, 64] {
          %zero = arith.constant 0.0 : f32
          %first = arith.cmpi eq, %i, %c0 : index
          scf.if %first {
            %v = tile.load %x[%j] : !tile.global<[?], f32>
            %p = arith.cmpf ogt, %v, %zero : f32
            %b = tile.vote ballot %p : i32
          }
        }
      }
    }
  }
}

// -----

// A branch on a value defined inside the branch itself (invalid: it does
// not dominate its use). The launch's verifier runs before dominance is
// checked, while the use is still the parser's unplaced forward reference:
// refused, not a crash (fuzz seed 20261220 found a segfault here).
tile.kernel @use_before_definition(%x: !tile.global<[?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    tile.parallel (%i, %j) in [4, 32] {
      %zero = arith.constant 0.0 : f32
      // expected-note @+1 {{this condition, bound or case differs between the lanes of a warp}}
      scf.if %p {
        %v = tile.load %x[%j] : !tile.global<[?], f32>
        %p = arith.cmpf ogt, %v, %zero : f32
        // expected-error @+1 {{'tile.vote' op is reached by only some lanes of a warp}}
        %b = tile.vote ballot %p : i32
      }
    }
  }
}
