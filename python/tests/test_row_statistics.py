"""Row statistics in registers (test/Conversion/TileToGPU/Inputs/
row-statistics.mlir): the row maximum of a wgmma accumulator, read inside a
tile.parallel over the accumulator at the row index. Checked against torch
on fresh random data."""

from hisa_testutil import fresh_seed, lowering_test_kernel, require_gpu

torch, hisa = require_gpu()


def test_row_max_shift():
    seed = fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "row-statistics.mlir", "row_max_shift")
    for _ in range(3):
        a = torch.randn(64, 32, device="cuda").half()
        b = torch.randn(64, 32, device="cuda").half()
        out = torch.full((64, 64), float("nan"), device="cuda")
        kernel.launch(a, b, out)
        torch.cuda.synchronize()
        scores = a.float() @ b.float().T
        expected = scores - scores.amax(dim=1, keepdim=True)
        assert torch.allclose(out, expected, rtol=1e-5, atol=1e-4), f"seed {seed}"


def test_row_max_across_warpgroups():
    # Inputs/row-statistics-warpgroups.mlir: S split over two warpgroups.
    seed = fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "row-statistics-warpgroups.mlir", "row_max_warpgroups")
    a, b = (torch.randn(64, 64, device="cuda").bfloat16() for _ in range(2))
    c = torch.randn(128, 64, device="cuda").bfloat16()
    out_s = torch.full((64, 64), float("nan"), device="cuda")
    out_o = torch.full((64, 128), float("nan"), device="cuda")
    kernel.launch(a, b, c, out_s, out_o)
    torch.cuda.synchronize()
    s = a.float() @ b.float().T
    m = s.amax(1, keepdim=True)
    assert torch.allclose(out_s, s - m, rtol=1e-4, atol=1e-3), f"seed {seed}"
    assert torch.allclose(out_o, (a.float() @ c.float().T) * m, rtol=1e-4, atol=1e-3), f"seed {seed}"


def test_partial_row_sums_over_warpgroups():
    # Inputs/partial-row-sums.mlir: per-warpgroup partial sums (a layout
    # with replicated lanes), scaled by the row maximum, summed once.
    seed = fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "partial-row-sums.mlir", "partial_row_sums")
    a = (torch.randn(64, 512, device="cuda") / 8).bfloat16()
    parts = torch.full((64, 2), float("nan"), device="cuda")
    total = torch.full((64,), float("nan"), device="cuda")
    kernel.launch(a, parts, total)
    torch.cuda.synchronize()
    s = a.float() @ a.float().T
    m = s.amax(1, keepdim=True)
    expected = s.view(64, 2, 32).sum(2) * m
    assert torch.allclose(parts, expected, rtol=1e-3, atol=1e-2), f"seed {seed}"
    assert torch.allclose(total, expected.sum(1), rtol=1e-3, atol=1e-2), f"seed {seed}"


def test_fragment_all_of_decides_per_warp():
    # Inputs/fragment-all-of.mlir: a warp halves its scores when a row
    # maximum it holds exceeds 1 (tile.all_of over a fragment, one vote per
    # warp). Rows are scaled so that some warps' 16 rows all stay below 1
    # and the others' do not.
    seed = fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "fragment-all-of.mlir", "fragment_all_of")
    for small_warps in ([0, 2], [1], [0, 1, 2, 3], []):
        a = torch.randn(64, 32, device="cuda")
        for w in small_warps:
            a[16 * w:16 * w + 16] *= 1e-3
        a = a.half()
        b = torch.randn(64, 32, device="cuda").half()
        out = torch.full((64, 64), float("nan"), device="cuda")
        kernel.launch(a, b, out)
        torch.cuda.synchronize()
        scores = a.float() @ b.float().T
        row_large = scores.amax(dim=1) > 1
        warp_large = row_large.view(4, 16).any(dim=1).repeat_interleave(16)
        expected = torch.where(warp_large[:, None], scores * 0.5, scores)
        assert torch.allclose(out, expected, rtol=1e-5, atol=1e-4), \
            f"seed {seed}, small warps {small_warps}"
