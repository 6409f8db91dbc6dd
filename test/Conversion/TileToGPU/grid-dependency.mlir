// Every sm_90 kernel waits for its prerequisite grids before it touches
// memory, then lets its dependents be scheduled (programmatic dependent
// launch: the runtime launches kernels whose PTX has griddepcontrol.wait
// as programmatic dependents of the previous kernel in their stream).
// Earlier chips have no griddepcontrol.
// RUN: hisa-opt %s --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu="chip=sm_90a" | FileCheck %s
// RUN: hisa-opt %s --tile-assign-layouts="chip=sm_89" --tile-plan-shared-memory --convert-tile-to-gpu="chip=sm_89" | FileCheck %s --check-prefix=SM89
// RUN: hisa-opt %s --tile-to-nvvm | hisa-translate --gpu-to-ptx -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t.ptx -o /dev/null %}

// CHECK: gpu.func @scale
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK: memref.load
// SM89: gpu.func @scale
// SM89-NOT: griddepcontrol
// SM89: gpu.return
// PTX: .entry scale
// PTX-NOT: ld.global
// PTX: griddepcontrol.wait;
// PTX-NEXT: griddepcontrol.launch_dependents;
// PTX: ld.global
tile.kernel @scale(%x: !tile.global<[?, 128], f32>, %y: !tile.global<[?, 128], f32>) {
  %n = tile.dim %x, 0 : !tile.global<[?, 128], f32>
  tile.launch (%bx) in (%n) threads 128 {
    %c0 = arith.constant 0 : index
    %tile = tile.alloc : !tile.frag<[1, 128], f32>
    tile.copy %x[%bx, %c0] to %tile : !tile.global<[?, 128], f32> to !tile.frag<[1, 128], f32>
    tile.copy %tile to %y[%bx, %c0] : !tile.frag<[1, 128], f32> to !tile.global<[?, 128], f32>
  }
}
