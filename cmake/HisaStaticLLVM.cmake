# Debian's LLVM/MLIR is built with LLVM_LINK_LLVM_DYLIB: every imported MLIR
# target lists the monolithic `LLVM` shared library as a dependency. The GPU
# machine has no LLVM installed, so replace that entry by the static LLVM
# component archives (Debian ships them position independent).
function(hisa_use_static_llvm)
  llvm_map_components_to_libnames(hisa_llvm_static_libs
    Core Support Demangle BinaryFormat Remarks BitReader BitWriter BitstreamReader
    IRReader AsmParser AsmPrinter Analysis TransformUtils Target TargetParser
    MC MCParser CodeGen CodeGenTypes SelectionDAG Object ProfileData ScalarOpts
    InstCombine IPO Passes Linker FrontendOpenMP FrontendOffloading
    NVPTXCodeGen NVPTXDesc NVPTXInfo)
  set(rewritten 0)
  foreach(target ${MLIR_EXPORTED_TARGETS})
    if(NOT TARGET ${target})
      continue()
    endif()
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "EXECUTABLE")
      continue()
    endif()
    get_target_property(deps ${target} INTERFACE_LINK_LIBRARIES)
    if(NOT deps)
      continue()
    endif()
    list(FIND deps LLVM llvm_index)
    if(llvm_index EQUAL -1)
      continue()
    endif()
    list(REMOVE_ITEM deps LLVM)
    list(APPEND deps ${hisa_llvm_static_libs})
    set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${deps}")
    math(EXPR rewritten "${rewritten} + 1")
  endforeach()
  # LLVMSupport names libz3 (an optional solver nothing here uses) and the
  # shared zstd; keep only what the GPU machine has.
  if(TARGET LLVMSupport)
    get_target_property(support_deps LLVMSupport INTERFACE_LINK_LIBRARIES)
    list(FILTER support_deps EXCLUDE REGEX "z3")
    set_target_properties(LLVMSupport PROPERTIES INTERFACE_LINK_LIBRARIES "${support_deps}")
  endif()
  # Force the static variant of tools/libraries built with add_llvm_* helpers.
  set(LLVM_LINK_LLVM_DYLIB OFF PARENT_SCOPE)
  set(MLIR_LINK_MLIR_DYLIB OFF PARENT_SCOPE)
  message(STATUS "hisa: linking LLVM/MLIR statically (${rewritten} MLIR targets rewritten)")
endfunction()
