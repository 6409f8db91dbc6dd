#!/usr/bin/env python3
"""Prints the PTX the JIT compiles for a built-in kernel: hisa_kernel_compile
of the runtime library (argv[1]) with a stand-in ptxas (HISA_PTXAS, which
stores an ELF magic followed by the PTX it was given) and a private cache
directory (HISA_CACHE_DIR). No GPU, no torch.

    jit-ptx.py LIBRARY KERNEL [PARAMS]
"""

import ctypes
import sys

library, kernel = sys.argv[1], sys.argv[2]
params = sys.argv[3] if len(sys.argv) > 3 else ""
runtime = ctypes.CDLL(library)
runtime.hisa_kernel_compile.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64]
runtime.hisa_kernel_compile.restype = ctypes.c_int
runtime.hisa_last_error.restype = ctypes.c_char_p
path = ctypes.create_string_buffer(4096)
status = runtime.hisa_kernel_compile(None, kernel.encode(), params.encode(), b"sm_90a", path, 4096)
if status != 0:
    sys.exit(f"hisa_kernel_compile failed ({status}): {runtime.hisa_last_error().decode()}")
with open(path.value.decode(), "rb") as binary:
    data = binary.read()
if not data.startswith(b"\x7fELF"):
    sys.exit("the stored binary is not the stand-in ptxas's output")
sys.stdout.write(data[4:].decode())
