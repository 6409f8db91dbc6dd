"""Gathered row copies (tile.copy rows(...)) on the GPU: the kernel
test/Conversion/TileToGPU/Inputs/gather.mlir copies out[q, r, :] =
kv[idx[q, r], :] for 256 rows per query, the first 64 with a plain copy and
the rest through a two-stage cp.async pipeline. Row numbers -1 and past the
end of kv read zeros. Checked exactly against torch indexing."""

import pytest

from hisa_testutil import fresh_seed, lowering_test_kernel, require_gpu

torch, hisa = require_gpu()


@pytest.mark.parametrize("queries,rows", [(1, 300), (7, 5000), (3, 1)])
def test_gather_rows(queries, rows):
    seed = fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "gather.mlir", "gather_rows")
    kv = torch.randn(rows, 512, device="cuda").to(torch.bfloat16)
    idx = torch.randint(0, rows, (queries, 256), device="cuda", dtype=torch.int32)
    u = torch.rand(queries, 256, device="cuda")
    idx = torch.where(u < 0.1, torch.full_like(idx, -1), idx)
    idx = torch.where(u > 0.95, idx + rows, idx)  # past the end
    out = torch.full((queries, 256, 512), float("nan"), device="cuda").to(torch.bfloat16)
    kernel.launch(kv, idx, out)
    torch.cuda.synchronize()
    valid = (idx >= 0) & (idx < rows)
    expected = torch.where(valid[..., None], kv[idx.clamp(0, rows - 1).long()],
                           torch.zeros((), dtype=torch.bfloat16, device="cuda"))
    assert torch.equal(out, expected), f"seed {seed}"
