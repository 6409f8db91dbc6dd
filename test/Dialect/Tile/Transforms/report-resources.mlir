// RUN: hisa-opt %s --tile-bind-params --tile-report-resources -o /dev/null | FileCheck %s
// RUN: not hisa-opt %s --tile-report-resources -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNBOUND

// 64x128 fp8 + 128 f32 shared = 8192 + 512 bytes; fragments 64*64*4 + 64*4 =
// 16640 bytes over 128 threads = 130 bytes per thread; local 2 x i32.
// CHECK: kernel @k threads=128 shared=8704B (2 tiles) fragment=130B/thread local=8B/thread
// UNBOUND: error: 'tile.alloc' op has a shape with parameter names; run tile-bind-params before tile-report-resources
tile.kernel @k() params {n = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[n, 128], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[128], f32>
    %c = tile.alloc : !tile.frag<[n, 64], f32>
    %d = tile.alloc : !tile.frag<[n], f32>
    %e = tile.alloc : !tile.local<[2], i32>
  }
}
