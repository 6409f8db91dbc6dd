gpu.module @m {
  gpu.func @in_range(%x: memref<?x?xf32>, %out: memref<?xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c1 = arith.constant 1 : index
    %tid = gpu.thread_id x
    %columns = memref.dim %x, %c1 : memref<?x?xf32>
    %inside = arith.cmpi slt, %tid, %columns : index
    scf.if %inside {
    }
    gpu.return
  }
  gpu.func @out_of_range(%x: memref<?xf32>, %y: memref<?xf32>, %out: memref<?xindex>,
                         %signed: index) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant -1 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    %m = memref.dim %y, %c0 : memref<?xf32>
    %s = arith.addi %n, %m : index
    gpu.return
  }
}
