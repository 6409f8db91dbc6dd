// RUN: hisa-opt %s -split-input-file --tile-inline-functions | FileCheck %s

// A device function with tile ops on a shared tile it is given, called from
// a launch body; it calls another function; both are inlined and erased.
// A library function (@select_key, declared here) is linked in and inlined
// inside a tile.parallel body.

func.func private @double(%x: i32) -> i32 {
  %sum = arith.addi %x, %x : i32
  return %sum : i32
}

func.func private @fill_doubled(%t: !tile.shared<[n], i32>, %v: i32) {
  %d = func.call @double(%v) : (i32) -> i32
  tile.fill %t, %d : !tile.shared<[n], i32>, i32
  return
}

func.func private @select_key(f32) -> i32

tile.kernel @user(%x: !tile.global<[?], f32>, %out: !tile.global<[?], i32>)
    params {n = 128} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %t = tile.alloc : !tile.shared<[n], i32>
    %seven = arith.constant 7 : i32
    func.call @fill_doubled(%t, %seven) : (!tile.shared<[n], i32>, i32) -> ()
    tile.parallel (%i) in [n] {
      %v = tile.load %x[%i] : !tile.global<[?], f32>
      %key = func.call @select_key(%v) : (f32) -> i32
      tile.store %key, %out[%i] : !tile.global<[?], i32>
    }
  }
}

// CHECK-NOT: func.func
// CHECK-LABEL: tile.kernel @user
// CHECK: %[[T:.*]] = tile.alloc : !tile.shared<[n], i32>
// CHECK: %[[SEVEN:.*]] = arith.constant 7 : i32
// CHECK: %[[D:.*]] = arith.addi %[[SEVEN]], %[[SEVEN]] : i32
// CHECK: tile.fill %[[T]], %[[D]]
// CHECK: tile.parallel
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.cmpf ogt
// CHECK-NOT: func.call
// CHECK-NOT: func.func

// -----

// A module without calls is left as it is.
// CHECK-LABEL: tile.kernel @plain
tile.kernel @plain(%out: !tile.global<[1], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
  }
}

// -----

// Per-element ops (an atomic, a ballot) in a device function called from a
// tile.parallel body: the function verifies on its own and the inlined ops
// are in the parallel body.

func.func private @count_key(%key: i32, %hist: !tile.shared<[256], i32>) -> i32 {
  %one = arith.constant 1 : i32
  %c24 = arith.constant 24 : i32
  %digit = arith.shrui %key, %c24 : i32
  %bin = arith.index_cast %digit : i32 to index
  %old = tile.atomic add %one, %hist[%bin] : !tile.shared<[256], i32>
  %zero = arith.constant 0 : i32
  %set = arith.cmpi ne, %key, %zero : i32
  %lanes = tile.vote ballot %set : i32
  return %lanes : i32
}

tile.kernel @histogram(%keys: !tile.global<[?], i32>, %out: !tile.global<[?], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %hist = tile.alloc : !tile.shared<[256], i32>
    tile.parallel (%i) in [256] {
      %key = tile.load %keys[%i] : !tile.global<[?], i32>
      %lanes = func.call @count_key(%key, %hist) : (i32, !tile.shared<[256], i32>) -> i32
      tile.store %lanes, %out[%i] : !tile.global<[?], i32>
    }
  }
}

// CHECK-NOT: func.func
// CHECK-LABEL: tile.kernel @histogram
// CHECK: tile.parallel
// CHECK: tile.atomic add %{{.*}}, %{{.*}}[%{{.*}}] : !tile.shared<[256], i32>
// CHECK: tile.vote ballot
