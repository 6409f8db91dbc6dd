"""tile.reduce through the shared scratch with the lanes' reduce-scatter
(lib/Conversion/TileToGPU/ReduceOp.cpp) on the GPU.

The kernels of test/Conversion/TileToGPU/Inputs/reduce-scatter.mlir (whose
PTX the lit test reduce-scatter.test checks): the column sums of a [64, 64]
wgmma accumulator across four warps into a shared tile (each lane keeps
and completes 2 of its 16 partials), the row maxima of the same
accumulator (the butterfly, kept within the warp), and the row sums of a
plain [32, 32] fragment in one warp through the scratch (4 + 2 + 1
shuffles). Each output must land at its own index with every lane's and
warp's part in it: checked against torch on fresh random data, outputs
pre-filled with NaN so a missed write shows.
"""

import pytest

from hisa_testutil import fresh_seed, lowering_test_kernel, require_gpu

torch, hisa = require_gpu()


def run_on_scores(kernel_name):
    """Runs a kernel of reduce-scatter.mlir on random [64, 64] bf16 a, b;
    returns its [64] output (NaN where unwritten) and a b^T in f32."""
    fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "reduce-scatter.mlir", kernel_name)
    a = torch.randn(64, 64, device="cuda").bfloat16()
    b = torch.randn(64, 64, device="cuda").bfloat16()
    out = torch.full((64,), float("nan"), device="cuda")
    kernel.launch(a, b, out)
    torch.cuda.synchronize()
    return out, a.float() @ b.float().t()


@pytest.mark.parametrize("trial", range(3))
def test_column_sums_across_warps(trial):
    out, scores = run_on_scores("column_sums")
    torch.testing.assert_close(out, scores.sum(dim=0), rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("trial", range(3))
def test_row_maxima_within_warps(trial):
    out, scores = run_on_scores("row_maxima")
    torch.testing.assert_close(out, scores.max(dim=1).values, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("trial", range(3))
def test_row_sums_in_one_warp(trial):
    fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "reduce-scatter.mlir", "warp_row_sums")
    # Distinct magnitudes per column, so a value summed twice or missed
    # changes the result by more than the tolerance.
    x = torch.randn(32, 32, device="cuda") + torch.arange(32, device="cuda") * 0.25
    out = torch.full((32,), float("nan"), device="cuda")
    kernel.launch(x, out)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-5, atol=1e-4)
