// RUN: hisa-opt %s -split-input-file --tile-inline-functions -verify-diagnostics

tile.kernel @unknown(%out: !tile.global<[1], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %v = arith.constant 1 : i32
    // expected-error @+1 {{calls @no_such_function, which has no body here or in hisa's device library}}
    %w = func.call @no_such_function(%v) : (i32) -> i32
  }
}
func.func private @no_such_function(i32) -> i32

// -----

func.func private @forever(%x: i32) -> i32 {
  // expected-error @+1 {{more than 32 levels deep: device functions must not be recursive}}
  %y = func.call @forever(%x) : (i32) -> i32
  return %y : i32
}

tile.kernel @recursive(%out: !tile.global<[1], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %v = arith.constant 1 : i32
    %w = func.call @forever(%v) : (i32) -> i32
  }
}

// -----

func.func private @branchy(%x: i32) -> i32 {
  cf.br ^next
^next:
  return %x : i32
}

tile.kernel @multi_block(%out: !tile.global<[1], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %v = arith.constant 1 : i32
    // expected-error @+1 {{whose body has several blocks; device functions use structured control flow (scf) only}}
    %w = func.call @branchy(%v) : (i32) -> i32
  }
}

// -----

func.func private @helper(%x: i32) -> i32 {
  return %x : i32
}

func.func @host(%x: i32) -> i32 {
  // expected-error @+1 {{calls a device function outside a tile.launch}}
  %y = func.call @helper(%x) : (i32) -> i32
  return %y : i32
}

// -----

// Tile ops verify inside a device function (not outside one).
func.func private @fills(%t: !tile.shared<[32], i32>) {
  %z = arith.constant 0 : i32
  tile.fill %t, %z : !tile.shared<[32], i32>, i32
  return
}

func.func @not_device(%t: !tile.shared<[32], i32>) {
  %z = arith.constant 0 : i32
  // expected-error @+1 {{must be nested in a tile.launch (or a device function)}}
  tile.fill %t, %z : !tile.shared<[32], i32>, i32
  return
}

// -----

// An atomic in a device function is checked where the call is inlined: here
// outside any tile.parallel.
func.func private @count(%hist: !tile.shared<[32], i32>, %bin: index) {
  %one = arith.constant 1 : i32
  // expected-error @+1 {{'tile.atomic' op must be in a tile.parallel body (one atomic per element of its domain)}}
  %old = tile.atomic add %one, %hist[%bin] : !tile.shared<[32], i32>
  return
}

tile.kernel @atomic_outside_parallel(%out: !tile.global<[1], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %hist = tile.alloc : !tile.shared<[32], i32>
    %c0 = arith.constant 0 : index
    func.call @count(%hist, %c0) : (!tile.shared<[32], i32>, index) -> ()
  }
}
