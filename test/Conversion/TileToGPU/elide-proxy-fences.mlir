// RUN: hisa-opt %s --pass-pipeline="builtin.module(gpu.module(tile-elide-proxy-fences))" | FileCheck %s

// A fence with no shared-memory access since the previous one orders
// nothing new; barriers, wgmma and arrivals in between change nothing.
// CHECK-LABEL: llvm.func @after_barrier
// CHECK: llvm.store
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: nvvm.barrier
// CHECK-NEXT: nvvm.wgmma.fence.aligned
// CHECK-NEXT: llvm.inline_asm {{.*}}bar.arrive
// CHECK-NOT: nvvm.fence.proxy
// CHECK: nvvm.shfl.sync
// CHECK-NEXT: llvm.return
//
// Shared loads and stores, generic pointers of unknown origin, mbarrier
// waits (cp.async data arrives through them), calls and unknown PTX all
// keep the fence after them; stores to private allocas and global memory do
// not.
// CHECK-LABEL: llvm.func @accesses
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3>
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: llvm.store {{.*}} !llvm.ptr{{$}}
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: llvm.inline_asm {{.*}}mbarrier.try_wait
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: llvm.inline_asm {{.*}}ld.shared
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: llvm.call @unknown
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: llvm.store {{.*}} !llvm.ptr<1>
// CHECK-NOT: nvvm.fence.proxy
// CHECK: llvm.return
//
// Other proxies' fences are left alone and order nothing here.
// CHECK-LABEL: llvm.func @other_fences
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK-NEXT: llvm.return
gpu.module @fences {
  llvm.func @after_barrier(%p: !llvm.ptr<3>, %v: f32, %id: i32, %n: i32) {
    llvm.store %v, %p : f32, !llvm.ptr<3>
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    nvvm.barrier id = %id number_of_threads = %n
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    nvvm.wgmma.fence.aligned
    llvm.inline_asm has_side_effects "bar.arrive $0, $1;", "r,r" %id, %n : (i32, i32) -> ()
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    %m = llvm.mlir.constant(-1 : i32) : i32
    %c = llvm.mlir.constant(31 : i32) : i32
    %s = nvvm.shfl.sync bfly %m, %id, %c, %c : i32 -> i32
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.return
  }

  llvm.func @unknown()
  llvm.func @accesses(%shared: !llvm.ptr<3>, %generic: !llvm.ptr, %global: !llvm.ptr<1>,
                      %v: f32, %bar: i32, %parity: i32) {
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    %x = llvm.load %shared : !llvm.ptr<3> -> f32
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.store %v, %generic : f32, !llvm.ptr
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.inline_asm has_side_effects "{\0A.reg .pred done;\0Await:\0Ambarrier.try_wait.parity.shared::cta.b64 done, [$0], $1, 10000000;\0A@!done bra wait;\0A}", "r,r,~{memory}" %bar, %parity : (i32, i32) -> ()
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    %y = llvm.inline_asm has_side_effects "ld.shared.b32 $0, [$1];", "=r,r" %bar : (i32) -> i32
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.call @unknown() : () -> ()
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.store %v, %global : f32, !llvm.ptr<1>
    %one = llvm.mlir.constant(1 : i64) : i64
    %private = llvm.alloca %one x f32 : (i64) -> !llvm.ptr
    llvm.store %v, %private : f32, !llvm.ptr
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.return
  }

  llvm.func @other_fences() {
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.return
  }

  // Across the control-flow graph: a fence is dropped only when no path
  // from the previous fence accesses shared memory. In the loop, the store
  // reaches the header's fence through the back edge, which keeps it; the
  // fence after the loop follows the header's on every path.
  // CHECK-LABEL: llvm.func @loop
  // CHECK: ^bb1:
  // CHECK-NEXT: nvvm.fence.proxy
  // CHECK: ^bb2:
  // CHECK-NEXT: llvm.store
  // CHECK: ^bb3:
  // CHECK-NEXT: llvm.return
  llvm.func @loop(%p: !llvm.ptr<3>, %v: f32, %c: i1) {
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.br ^bb1
  ^bb1:
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.cond_br %c, ^bb2, ^bb3
  ^bb2:
    llvm.store %v, %p : f32, !llvm.ptr<3>
    llvm.br ^bb1
  ^bb3:
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.return
  }

  // The same loop without the store: every fence after the first goes.
  // CHECK-LABEL: llvm.func @quiet_loop
  // CHECK-COUNT-1: nvvm.fence.proxy
  // CHECK-NOT: nvvm.fence.proxy
  llvm.func @quiet_loop(%p: !llvm.ptr<3>, %c: i1) {
    %x = llvm.load %p : !llvm.ptr<3> -> f32
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.br ^bb1
  ^bb1:
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.cond_br %c, ^bb1, ^bb2
  ^bb2:
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    llvm.return
  }
}
