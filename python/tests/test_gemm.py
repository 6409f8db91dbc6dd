"""tile.gemm on tensor cores (wgmma, sm_90a): fp8 e4m3 and bf16, one to four warpgroups.

The kernel test/Conversion/TileToGPU/Inputs/gemm.mlir loads A [m, K] and
B [n, K] into 128-byte-swizzled shared tiles, computes A @ B^T with wgmma into
the accumulator layout, doubles it in a tile.parallel (the layout flowing into
element-wise code) and stores it. Checked against torch on fresh random data,
including fewer rows than the tile (zero-filled reads, dropped writes).
"""

import os

import pytest

from hisa_testutil import fresh_seed, require_gpu

torch, hisa = require_gpu()

SOURCE_PATH = os.path.join(
    os.path.dirname(__file__), "..", "..", "test", "Conversion", "TileToGPU", "Inputs", "gemm.mlir"
)

KERNELS_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "kernels-dsl")

CASES = {
    "fp8": ("f8E4M3FN", 128, torch.float8_e4m3fn, 2e-3),
    "bf16": ("bf16", 64, torch.bfloat16, 1e-5),
    "f16": ("f16", 64, torch.float16, 1e-5),
}


def gemm_source(element: str, k: int, threads: int = 128, policy: str = "square", path: str = SOURCE_PATH) -> str:
    with open(path) as f:
        text = f.read()
    import re

    text = text.replace("ELEMENT", element).replace("EPILOGUE", "arith.addf %x, %x : f32")
    text = text.replace("THREADS", str(threads)).replace("POLICY", policy)
    return re.sub(r"\bK\b", str(k), text)


def run_gemm(kind, m, n, rows, k=None, threads=128, policy="square", target=hisa.jit.DEFAULT_TARGET,
             name="gemm", path=SOURCE_PATH, factor=2, accumulator="f32"):
    """Runs kernel `name` of `path` (C = factor * A @ B^T) and checks it.
    accumulator="f16" (f16 operands) accumulates and stores C in f16."""
    fresh_seed(torch)
    element, default_k, dtype, tolerance = CASES[kind]
    k = k or default_k
    source = gemm_source(element, k, threads, policy, path)
    out_dtype = torch.float32
    if accumulator == "f16":
        # Every partial sum rounds to f16 (11-bit significand).
        source, out_dtype, tolerance = source.replace("f32", "f16"), torch.float16, 1e-2
    kernel = hisa.jit.get_kernel(name, {"m": m, "n": n}, target=target, source=source)
    a_rows = m if rows == "full" else m - 13
    b_rows = n if rows == "full" else n - 5
    a = (torch.randn(a_rows, k, device="cuda") * 2).to(dtype)
    b = (torch.randn(b_rows, k, device="cuda") * 2).to(dtype)
    c = torch.full((a_rows, b_rows), float("nan"), device="cuda", dtype=out_dtype)
    kernel.launch(a, b, c)
    torch.cuda.synchronize()
    af, bf = a.float(), b.float()
    expected = factor * (af @ bf.T)
    bound = factor * (af.abs() @ bf.abs().T) * tolerance + 1e-4
    error = (c.float() - expected).abs()
    assert not torch.isnan(c).any(), "unwritten outputs"
    assert (error <= bound).all(), f"max error {error.max().item()} (bound {bound.max().item()})"


@pytest.mark.parametrize("kind", ["fp8", "bf16"])
@pytest.mark.parametrize("m,n", [(64, 64), (64, 128), (64, 256), (128, 64), (128, 128)])
@pytest.mark.parametrize("rows", ["full", "partial"])
def test_gemm(kind, m, n, rows):
    run_gemm(kind, m, n, rows)


# Rows of 64 and 32 bytes: the 64- and 32-byte swizzles (fp8 K = 64, 32;
# bf16 K = 32, 16).
@pytest.mark.parametrize("kind,k", [("fp8", 64), ("fp8", 32), ("bf16", 32), ("bf16", 16)])
@pytest.mark.parametrize("m,n", [(64, 64), (128, 32), (64, 16)])
@pytest.mark.parametrize("rows", ["full", "partial"])
def test_gemm_narrow_rows(kind, k, m, n, rows):
    run_gemm(kind, m, n, rows, k=k)


# f16 accumulators (f16 operands): wgmma's .f16 accumulator, mma.sync's
# .f16 variant (compiled for sm_90 without wgmma), one and two warpgroups.
@pytest.mark.parametrize("target", ["sm_90a", "sm_90"])
@pytest.mark.parametrize(
    "m,n,threads,policy", [(64, 64, 128, "square"), (128, 256, 256, "square"), (64, 128, 256, "full_col")]
)
@pytest.mark.parametrize("rows", ["full", "partial"])
def test_gemm_f16_accumulator(target, m, n, threads, policy, rows):
    run_gemm("f16", m, n, rows, threads=threads, policy=policy, target=target, accumulator="f16")


# Rows wider than 128 bytes: K-major operands in several swizzle panels
# (fp8 K = 256, bf16 K = 128, 256).
@pytest.mark.parametrize("kind,k", [("fp8", 256), ("bf16", 128), ("bf16", 256)])
@pytest.mark.parametrize("m,n", [(64, 64), (128, 128)])
@pytest.mark.parametrize("rows", ["full", "partial"])
def test_gemm_wide_rows(kind, k, m, n, rows):
    run_gemm(kind, m, n, rows, k=k)


# Several warpgroups: full_row splits M, full_col splits N, square picks M
# when each warpgroup gets whole 64-row blocks.
@pytest.mark.parametrize("kind", ["fp8", "bf16"])
@pytest.mark.parametrize(
    "m,n,threads,policy",
    [
        (128, 128, 256, "full_row"),
        (128, 256, 256, "square"),
        (256, 128, 256, "square"),
        (64, 256, 256, "square"),
        (64, 128, 256, "full_col"),
        (128, 64, 256, "full_col"),
        (256, 64, 512, "full_row"),
        (64, 256, 512, "full_col"),
    ],
)
@pytest.mark.parametrize("rows", ["full", "partial"])
def test_gemm_warpgroups(kind, m, n, threads, policy, rows):
    run_gemm(kind, m, n, rows, threads=threads, policy=policy)


TRANSPOSED_PATH = os.path.join(os.path.dirname(SOURCE_PATH), "gemm_transposed.mlir")


def run_transposed_gemm(kind, m, n, k, transpose_a, transpose_b, rows, threads=128, policy="square",
                        target=hisa.jit.DEFAULT_TARGET):
    """C = op(A) @ op(B) through gemm_transposed.mlir: A as [K, m] with
    transpose_a (MN-major), B as [K, n] without transpose_b (MN-major). With
    rows="partial" the globals have fewer rows than the tiles (zero-filled)."""
    fresh_seed(torch)
    element, _, dtype, tolerance = CASES[kind]
    a_tile = f"[{k}, m]" if transpose_a else f"[m, {k}]"
    b_tile = f"[n, {k}]" if transpose_b else f"[{k}, n]"
    flags = " ".join(f for f, on in (("transpose_a", transpose_a), ("transpose_b", transpose_b)) if on)
    with open(TRANSPOSED_PATH) as f:
        text = f.read()
    for key, value in (
        ("A_TILE", a_tile), ("B_TILE", b_tile), ("A_ROW", str(m if transpose_a else k)),
        ("B_ROW", str(k if transpose_b else n)), ("FLAGS", flags), ("ELEMENT", element),
        ("THREADS", str(threads)), ("POLICY", policy),
    ):
        text = text.replace(key, value)
    kernel = hisa.jit.get_kernel("gemm_t", {"m": m, "n": n}, target=target, source=text)
    a = (torch.randn(m, k, device="cuda") * 2).to(dtype)  # op(A)
    b = (torch.randn(k, n, device="cuda") * 2).to(dtype)  # op(B)
    if rows == "partial":  # drop the last rows of each global (zero-filled reads)
        if transpose_a:
            a[:, k - 3:] = 0
        else:
            a[m - 13:] = 0
        if transpose_b:
            b[:, n - 5:] = 0
        else:
            b[k - 7:] = 0
    a_global = a.T.contiguous() if transpose_a else a
    b_global = b.T.contiguous() if transpose_b else b
    if rows == "partial":
        a_global = a_global[: (k - 3 if transpose_a else m - 13)].contiguous()
        b_global = b_global[: (n - 5 if transpose_b else k - 7)].contiguous()
    c = torch.full((m, n), float("nan"), device="cuda")
    kernel.launch(a_global, b_global, c)
    torch.cuda.synchronize()
    af, bf = a.float(), b.float()
    expected = af @ bf
    bound = (af.abs() @ bf.abs()) * tolerance + 1e-4
    error = (c - expected).abs()
    assert not torch.isnan(c).any(), "unwritten outputs"
    assert (error <= bound).all(), f"max error {error.max().item()} (bound {bound.max().item()})"


# Transposed (MN-major) operands: bf16/f16 wgmma reads them with its trans
# bits, over several 128-byte panels when the rows are wider (A [K, 128],
# B [K, 256]); warpgroups split them at panel boundaries.
@pytest.mark.parametrize("kind", ["bf16", "f16"])
@pytest.mark.parametrize("transpose_a,transpose_b", [(True, True), (False, False), (True, False)])
@pytest.mark.parametrize(
    "m,n,k,threads,policy",
    [
        (64, 64, 64, 128, "square"),
        (64, 256, 32, 128, "square"),
        (128, 128, 128, 128, "square"),
        (64, 32, 16, 128, "square"),
        (128, 128, 64, 256, "full_row"),
        (64, 256, 64, 256, "full_col"),
    ],
)
@pytest.mark.parametrize("rows", ["full", "partial"])
def test_gemm_transposed(kind, transpose_a, transpose_b, m, n, k, threads, policy, rows):
    run_transposed_gemm(kind, m, n, k, transpose_a, transpose_b, rows, threads, policy)


# The same on mma.sync (compiled for sm_90 without wgmma).
@pytest.mark.parametrize("transpose_a,transpose_b", [(True, True), (False, False), (True, False)])
@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (128, 128, 128)])
def test_gemm_transposed_mma_sync(transpose_a, transpose_b, m, n, k):
    run_transposed_gemm("bf16", m, n, k, transpose_a, transpose_b, "partial", target="sm_90")


# mma.sync m16n8k16 (the lowering for targets without wgmma: sm_80, sm_89),
# run on the H200 by compiling for plain sm_90 (no wgmma, mma.sync works).
@pytest.mark.parametrize("kind", ["bf16", "f16"])
@pytest.mark.parametrize(
    "m,n,k,threads,policy",
    [
        (64, 64, 64, 128, "square"),
        (128, 64, 64, 128, "square"),
        (16, 8, 16, 32, "square"),
        (32, 256, 32, 128, "full_col"),
        (128, 128, 16, 256, "full_row"),
        (64, 32, 64, 64, "full_col"),
    ],
)
@pytest.mark.parametrize("rows", ["full", "partial"])
def test_gemm_mma_sync(kind, m, n, k, threads, policy, rows):
    if rows == "partial" and (m < 16 or n < 8):
        pytest.skip("tile too small for a partial case")
    run_gemm(kind, m, n, rows, k=k, threads=threads, policy=policy, target="sm_90")


REGISTER_A_PATH = os.path.join(os.path.dirname(SOURCE_PATH), "gemm_register_a.mlir")


# wgmma with A from registers (k16 bf16 / k32 fp8 register fragments).
@pytest.mark.parametrize(
    "kind,m,n,k,threads,policy",
    [
        ("bf16", 64, 128, 64, 128, "square"),
        ("bf16", 128, 64, 32, 128, "square"),
        ("bf16", 64, 256, 16, 128, "square"),
        ("bf16", 128, 128, 64, 256, "full_row"),
        ("bf16", 64, 128, 32, 256, "full_col"),
        ("fp8", 64, 64, 128, 128, "square"),
        ("fp8", 128, 32, 64, 128, "square"),
        ("fp8", 64, 16, 32, 128, "square"),
        ("fp8", 128, 256, 128, 256, "full_row"),
    ],
)
@pytest.mark.parametrize("rows", ["full", "partial"])
def test_gemm_register_a(kind, m, n, k, threads, policy, rows):
    run_gemm(kind, m, n, rows, k=k, threads=threads, policy=policy, name="gemm_ra", path=REGISTER_A_PATH, factor=1)


def test_mma_sync_kernel_and_fp8_refusal():
    """bf16_gemm through a pipelined mma.sync loop on sm_90; fp8 without
    wgmma is refused by name."""
    fresh_seed(torch)
    m, n, k = 200, 300, 512
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda")
    kernel = hisa.jit.get_kernel("bf16_gemm", {"k": k}, target="sm_90")
    kernel.launch(a, b, c)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    assert ((c - ref).abs() <= 1e-3 * (a.float().abs() @ b.float().abs().T) + 1e-3).all()
    with pytest.raises(hisa.HisaError, match="needs wgmma"):
        hisa.jit.get_kernel("fp8_gemm", {"k": k}, target="sm_90")


@pytest.mark.parametrize("target", ["sm_90a", "sm_90a,-tma"])
@pytest.mark.parametrize("name,block_k", [("fp8_gemm", 128), ("bf16_gemm", 64), ("bf16_gemm", 128)])
@pytest.mark.parametrize("size", [(128, 256, 256), (256, 384, 1024), (200, 130, 512), (333, 517, 768)])
def test_gemm_kernels(name, block_k, size, target):
    """kernels-dsl/{fp8,bf16}_gemm.mlir: two warpgroups, a K loop pipelined
    with TMA (or cp.async with -tma; 4 stages) and one wgmma group in flight;
    partial tiles along M and N (TMA zero-fills the boxes past the end)."""
    fresh_seed(torch)
    m, n, k = size
    dtype = torch.float8_e4m3fn if name == "fp8_gemm" else torch.bfloat16
    a = torch.randn(m, k, device="cuda").to(dtype)
    b = torch.randn(n, k, device="cuda").to(dtype)
    c = torch.full((m, n), float("nan"), device="cuda")
    # bf16 block_k = 128: 256-byte rows, two swizzle panels (two TMA boxes);
    # two stages of 96 KiB fit.
    source = None
    if block_k * dtype.itemsize > 128:
        with open(os.path.join(KERNELS_DIR, f"{name}.mlir")) as f:
            source = f.read().replace("num_stages = 4", "num_stages = 2")
    kernel = hisa.jit.get_kernel(name, {"k": k, "block_k": block_k}, target=target, source=source)
    kernel.launch(a, b, c)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    magnitude = a.float().abs() @ b.float().abs().T
    error = (c - ref).abs()
    assert not torch.isnan(c).any(), "unwritten outputs"
    assert (error <= 1e-3 * magnitude + 1e-3).all(), f"max error {error.max().item()}"


@pytest.mark.parametrize(
    "name,params,instructions",
    [
        ("fp8_gemm", {"k": 512}, ("QGMMA", "UTMALDG", "SYNCS")),
        ("bf16_gemm", {"k": 512}, ("HGMMA", "UTMALDG", "SYNCS")),
        ("block_sparse_mqa_logits", {}, ("QGMMA", "UTMALDG")),
        ("pool_mqa_logits", {}, ("QGMMA", "UTMALDG")),
    ],
)
def test_sass_uses_tensor_cores(tmp_path, name, params, instructions):
    """The cubins hold Hopper tensor-core instructions and TMA loads with
    mbarrier waits (cuobjdump -sass)."""
    import shutil
    import subprocess

    cuobjdump = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if not os.path.exists(cuobjdump):
        pytest.skip("cuobjdump not available")
    path = hisa.jit.compile(name, params)
    cubin = tmp_path / "kernel.cubin"
    shutil.copyfile(path, cubin)
    sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    for instruction in instructions:
        assert instruction in sass, f"no {instruction} in the SASS of {name}"
