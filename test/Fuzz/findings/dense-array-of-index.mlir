  gpu.func @row_offset(%x: memref<?x?xf32>, %out: memref<?xf32>, %d: index) kernel
      attributes {known_block_size = array<index: 128, 1, 1>} {
