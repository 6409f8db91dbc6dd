"""Row statistics in registers (test/Conversion/TileToGPU/Inputs/
row-statistics.mlir): the row maximum of a wgmma accumulator, read inside a
tile.parallel over the accumulator at the row index. Checked against torch
on fresh random data."""

import os

from hisa_testutil import fresh_seed, require_gpu

torch, hisa = require_gpu()

SOURCE = os.path.join(os.path.dirname(__file__), "..", "..", "test", "Conversion", "TileToGPU",
                      "Inputs", "row-statistics.mlir")


def test_row_max_shift():
    seed = fresh_seed(torch)
    with open(SOURCE) as f:
        kernel = hisa.jit.get_kernel("row_max_shift", {}, source=f.read())
    for _ in range(3):
        a = torch.randn(64, 32, device="cuda").half()
        b = torch.randn(64, 32, device="cuda").half()
        out = torch.full((64, 64), float("nan"), device="cuda")
        kernel.launch(a, b, out)
        torch.cuda.synchronize()
        scores = a.float() @ b.float().T
        expected = scores - scores.amax(dim=1, keepdim=True)
        assert torch.allclose(out, expected, rtol=1e-5, atol=1e-4), f"seed {seed}"
