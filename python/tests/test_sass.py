"""The attention kernels' machine code uses Hopper's tensor-core
instructions: the cubins the JIT builds for sparse_attn, its split-decode
and warp-specialized forms and flash_attn disassemble (cuobjdump -sass) to
HGMMA (wgmma), with no local-memory traffic (STL/LDL: spills). Needs
cuobjdump (the CUDA toolkit of the GPU machine); skipped without it."""

import os
import shutil
import subprocess

import pytest

from hisa_testutil import require_gpu

torch, hisa = require_gpu()


def cuobjdump():
    for candidate in (shutil.which("cuobjdump"),
                      os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin",
                                   "cuobjdump")):
        if candidate and os.path.exists(candidate):
            return candidate
    pytest.skip("cuobjdump not found (CUDA toolkit)")


@pytest.mark.parametrize("name,params", [
    ("sparse_attn", {"topk_pad": 640, "head_blocks": 1, "lse": 0, "splits": 1}),
    ("sparse_attn", {"topk_pad": 640, "head_blocks": 1, "lse": 0, "splits": 10}),
    ("sparse_attn_ws", {"topk_pad": 1152, "head_blocks": 2, "lse": 1, "splits": 1}),
    ("flash_attn", {"dim": 128, "causal": 1}),
    ("flash_attn_ws", {"dim": 64, "causal": 0}),
])
def test_hgmma_and_no_spills(name, params):
    path = hisa.jit.compile(name, params)
    with open(path, "rb") as f:
        if not f.read(4) == b"\x7fELF":
            pytest.skip(f"{name}: the cache holds PTX, not a cubin (no ptxas at compile time)")
    sass = subprocess.run([cuobjdump(), "-sass", path], check=True, capture_output=True,
                          text=True).stdout
    assert "HGMMA" in sass, f"{name} {params}: no HGMMA in the SASS"
    assert "STL" not in sass and "LDL" not in sass, f"{name} {params}: local memory in the SASS"
