"""The kernels docs/design.md teaches from ("A first kernel"), run as the
docs show: test/Examples/row-softmax.mlir through hisa.jit against torch."""

from pathlib import Path

import pytest

from hisa_testutil import fresh_seed, require_gpu

torch, hisa = require_gpu()

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("n,rows", [(1024, 1), (1024, 37), (4096, 8)])
def test_row_softmax_example(n, rows):
    fresh_seed(torch)
    source = (ROOT / "test/Examples/row-softmax.mlir").read_text()
    kernel = hisa.jit.get_kernel("row_softmax", {"n": n}, source=source)
    # Rows with a large spread and one with a repeated maximum.
    x = torch.randn(rows, n, device="cuda") * 8
    x[0, :4] = x[0].max()
    y = torch.empty_like(x)
    kernel.launch(x, y)
    torch.cuda.synchronize()
    # ex2.approx (2^-22 relative) of an argument rounded in f32 (|arg| < ~100:
    # ~4e-6 relative), rcp.rn, f32 sums over n terms.
    torch.testing.assert_close(y, torch.softmax(x, dim=-1), rtol=3e-5, atol=1e-6)
    assert torch.allclose(y.sum(-1), torch.ones(rows, device="cuda"), atol=1e-5)
    # Rows of another length are refused: n is part of the specialization.
    with pytest.raises(hisa.InvalidArgumentError,
                       match=f"dimension 1 is {n // 2} but the kernel was specialized for {n}"):
        kernel.launch(x[:, : n // 2].contiguous(), y)
