// Parameter values that make a tile larger than the target holds are refused
// once bound, by the same verifiers as literal shapes (invalid-limits.mlir),
// at the tile that grows, before any lowering; so is a value that does not
// fit the integer type of its tile.param.
// RUN: not hisa-opt %s --tile-bind-params="params=kb=1099511627776" 2>&1 | FileCheck %s --check-prefix=KB
// RUN: not hisa-opt %s --tile-bind-params="params=dim=1099511627776" 2>&1 | FileCheck %s --check-prefix=DIM
// RUN: not hisa-opt %s --tile-bind-params="params=blocks=4611686018427387904" 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// RUN: not hisa-opt %s --tile-bind-params="params=stride=4294967296" 2>&1 | FileCheck %s --check-prefix=I32
// RUN: not hisa-opt %s --tile-to-nvvm="params=kb=1099511627776" 2>&1 | FileCheck %s --check-prefix=KB
// RUN: hisa-opt %s --tile-bind-params="params=stride=-2147483648,kb=64" | FileCheck %s --check-prefix=OK
// Integers are signless: i1 holds 0 and 1 (and -1), i8 -128..255.
// RUN: hisa-opt %s --tile-bind-params="params=flag=1,byte=255,stride=4294967295" | FileCheck %s --check-prefix=UNSIGNED
// RUN: not hisa-opt %s --tile-bind-params="params=byte=256" 2>&1 | FileCheck %s --check-prefix=I8
// RUN: not hisa-opt %s --tile-bind-params="params=flag=2" 2>&1 | FileCheck %s --check-prefix=I1

// KB: bind-params-limits.mlir:[[@LINE+20]]:10: error: 'tile.alloc' op the shared tile [1099511627776, 128] of f8E4M3FN needs 140737488355328 bytes; the limit is 232448 bytes of shared memory
// DIM: error: 'tile.alloc' op the shared tile [128, 1099511627776] of f8E4M3FN needs 140737488355328 bytes; the limit is 232448
// The product blocks*kb overflows int64 while binding.
// OVERFLOW: error: 'tile.kernel' op cannot bind parameters: dimension 'blocks*kb' is not a positive size with kb = 128
// I32: error: 'tile.param' op cannot bind parameter 'stride' = 4294967296: it does not fit in 'i32'
// UNSIGNED-DAG: arith.constant true
// UNSIGNED-DAG: arith.constant -1 : i8
// UNSIGNED-DAG: arith.constant -1 : i32
// I8: error: 'tile.param' op cannot bind parameter 'byte' = 256: it does not fit in 'i8'
// I1: error: 'tile.param' op cannot bind parameter 'flag' = 2: it does not fit in 'i1'
// OK: %{{.*}} = arith.constant -2147483648 : i32
// OK: tile.alloc : !tile.shared<[64, 128], f8E4M3FN>

tile.kernel @k(%x: !tile.global<[?, dim], f8E4M3FN>)
    params {kb = 128, dim = 128, blocks = 1, stride = 1, flag = 0, byte = 0} {
  %c1 = arith.constant 1 : index
  %s = tile.param "stride" : i32
  %flag = tile.param "flag" : i1
  %b = tile.param "byte" : i8
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[kb, dim], f8E4M3FN>
    %f = tile.alloc : !tile.frag<[blocks*kb, 4], f32>
  }
}
