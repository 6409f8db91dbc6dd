gpu.module @m {
  llvm.mlir.global internal @other() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4 x complex<f32>>
}
