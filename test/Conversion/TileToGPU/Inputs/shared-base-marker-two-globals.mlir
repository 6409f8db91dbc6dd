// Inline PTX naming the dynamic shared-memory base in a module with two
// candidate globals: which one is meant is ambiguous.
gpu.module @m {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @__dynamic_shmem__1() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.func @f() -> i64 {
    %0 = llvm.inline_asm has_side_effects "mov.b64 $0, __hisa_dynamic_shared_base__;", "=l" : () -> i64
    llvm.return %0 : i64
  }
}
