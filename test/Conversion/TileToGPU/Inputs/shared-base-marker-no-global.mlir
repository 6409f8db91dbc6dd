// Inline PTX naming the dynamic shared-memory base in a module that has no
// dynamic shared memory.
gpu.module @m {
  llvm.func @f() -> i64 {
    %0 = llvm.inline_asm has_side_effects "mov.b64 $0, __hisa_dynamic_shared_base__;", "=l" : () -> i64
    llvm.return %0 : i64
  }
}
