# -*- Python -*-

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "HISA"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.hisa_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.environment["FILECHECK_OPTS"] = "--enable-var-scope --dump-input=fail"

config.substitutions.append(("%hisa_src", config.hisa_src_root))
config.substitutions.append(("%hisa_obj", config.hisa_obj_root))
# Variants the kernels declare (cmake/KernelVariants.cmake), generated in the build.
config.substitutions.append(("%kernels_variants", os.path.join(config.hisa_obj_root, "kernels-dsl")))
config.substitutions.append(("%kernels", os.path.join(config.hisa_src_root, "kernels-dsl")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP", "CUDA_HOME"])
llvm_config.use_default_substitutions()

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.hisa_tools_dir, config.llvm_tools_dir]
tools = ["hisa-opt", "hisa-translate"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

if config.ptxas and os.path.exists(config.ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))
if config.static_llvm.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("static-llvm")
