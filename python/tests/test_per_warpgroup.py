"""tile.per_warpgroup on the GPU.

The kernel test/Conversion/TileToGPU/Inputs/per-warpgroup.mlir runs a body
in each of its two consumer warpgroups: a [64, 64] bf16 gemm of its own
rows of a (its A operand picked among two shared tiles by the warpgroup
index; one warpgroup's wgmma chain), scaled by wg + 1, the row max in registers,
both stored at [wg], and the column sums (across the warpgroup's 4 warps,
through its own slice of the reduction scratch). Checked against torch on fresh random data, with
values that make every row's max differ between the warpgroups; and a
second kernel (per-warpgroup-exchange.mlir) whose warpgroups exchange their row maxima through shared
tiles and tile.barrier.
"""

import pytest

from hisa_testutil import fresh_seed, lowering_test_kernel, require_gpu

torch, hisa = require_gpu()


def scores(a, b, wg):
    """Warpgroup wg's scaled scores: its 64 rows of a times b^T, times wg + 1."""
    return (a[64 * wg:64 * (wg + 1)].float() @ b.float().t()) * (wg + 1)


@pytest.mark.parametrize("trial", range(3))
def test_each_warpgroup_computes_its_own(trial):
    fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "per-warpgroup.mlir", "per_warpgroup_gemm")
    a = torch.randn(128, 64, device="cuda").bfloat16()
    b = torch.randn(64, 64, device="cuda").bfloat16()
    out = torch.full((2, 64, 64), float("nan"), device="cuda")
    row_max = torch.full((2, 64), float("nan"), device="cuda")
    col_sum = torch.full((2, 64), float("nan"), device="cuda")
    kernel.launch(a, b, out, row_max, col_sum)
    torch.cuda.synchronize()
    for wg in range(2):
        want = scores(a, b, wg)
        torch.testing.assert_close(out[wg], want, rtol=1e-4, atol=1e-3)
        torch.testing.assert_close(row_max[wg], want.max(dim=1).values, rtol=1e-4, atol=1e-3)
        torch.testing.assert_close(col_sum[wg], want.sum(dim=0), rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("trial", range(3))
def test_warpgroups_exchange_row_maxima(trial):
    # Each warpgroup writes the row max of its own scores to its own shared
    # tile (tile.pick), all meet at tile.barrier, each combines both.
    fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "per-warpgroup-exchange.mlir", "per_warpgroup_exchange")
    a = torch.randn(128, 64, device="cuda").bfloat16()
    b = torch.randn(64, 64, device="cuda").bfloat16()
    out = torch.full((2, 64), float("nan"), device="cuda")
    kernel.launch(a, b, out)
    torch.cuda.synchronize()
    maxima = [scores(a, b, wg).max(dim=1).values for wg in range(2)]
    want = torch.maximum(maxima[0], maxima[1])
    for wg in range(2):
        torch.testing.assert_close(out[wg], want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("steps", [1, 3, 8])
def test_warpgroups_in_a_warp_specialized_loop(steps):
    # The producer warpgroup fills two-stage buffers; each consumer
    # warpgroup accumulates its own rows of a (picked by %wg among the
    # stage buffers) times b^T.
    fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "per-warpgroup-ws.mlir", "per_warpgroup_ws")
    a = torch.randn(128 * steps, 64, device="cuda").bfloat16()
    b = torch.randn(64 * steps, 64, device="cuda").bfloat16()
    out = torch.full((2, 64, 64), float("nan"), device="cuda")
    kernel.launch(a, b, out)
    torch.cuda.synchronize()
    for wg in range(2):
        want = sum(a[128 * t + 64 * wg:128 * t + 64 * (wg + 1)].float()
                   @ b[64 * t:64 * (t + 1)].float().t() for t in range(steps))
        torch.testing.assert_close(out[wg], want, rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("file_name,kernel_name", [("release-ws.mlir", "release_ws"),
                                                   ("copy-stages.mlir", "copy_stages")])
@pytest.mark.parametrize("steps", [1, 2, 5, 8])
def test_released_copies_and_named_barriers(steps, file_name, kernel_name):
    # One stage, buffers handed back copy by copy (tile.release); the
    # warpgroups run out of step and hand s over through shared memory and
    # named barriers (release-ws.mlir). Some gathered rows are -1 (zeros).
    # copy-stages.mlir: the same kernel with the gathered copy on two
    # buffers of its own ({tile.stages = 2}), alternating by step parity.
    fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, file_name, kernel_name)
    a = torch.randn(128 * steps, 64, device="cuda").bfloat16()
    b = torch.randn(300, 64, device="cuda").bfloat16()
    idx = torch.randint(0, 300, (64 * steps,), device="cuda", dtype=torch.int32)
    idx[torch.rand(64 * steps, device="cuda") < 0.1] = -1
    out = torch.full((2, 64, 64), float("nan"), device="cuda")
    kernel.launch(a, b, idx, out)
    torch.cuda.synchronize()
    gathered = torch.where((idx >= 0)[:, None], b[idx.clamp(min=0).long()],
                           torch.zeros_like(b[:1])).float()
    want = [torch.zeros(64, 64, device="cuda") for _ in range(2)]
    for t in range(steps):
        bt = gathered[64 * t:64 * (t + 1)].t()
        a0 = a[128 * t:128 * t + 64].float()
        a1 = a[128 * t + 64:128 * (t + 1)].float()
        want[0] += a0 @ bt
        want[1] += (a1 @ bt) + (a0 @ bt)
    for wg in range(2):
        torch.testing.assert_close(out[wg], want[wg], rtol=1e-4, atol=2e-2)


@pytest.mark.parametrize("steps", [1, 2, 7])
def test_asynchronous_gemms_in_turns(steps):
    # tile.gemm async and tile.wait_gemms (pending = 1, then 0) with the
    # warpgroups taking turns on named barriers, FA3's hand-over
    # (test/Conversion/TileToGPU/Inputs/async-gemm-turns.mlir): each
    # accumulates a_w b_t^T and b_t a_w^T over the steps.
    fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "async-gemm-turns.mlir", "async_gemm_turns")
    a = torch.randn(128 * steps, 64, device="cuda").bfloat16()
    b = torch.randn(64 * steps, 64, device="cuda").bfloat16()
    out = torch.full((2, 2, 64, 64), float("nan"), device="cuda")
    kernel.launch(a, b, out)
    torch.cuda.synchronize()
    for wg in range(2):
        rows = [a[128 * t + 64 * wg:128 * t + 64 * (wg + 1)].float() for t in range(steps)]
        keys = [b[64 * t:64 * (t + 1)].float() for t in range(steps)]
        torch.testing.assert_close(out[wg, 0], sum(r @ k.t() for r, k in zip(rows, keys)),
                                   rtol=1e-4, atol=1e-2)
        torch.testing.assert_close(out[wg, 1], sum(k @ r.t() for r, k in zip(rows, keys)),
                                   rtol=1e-4, atol=1e-2)
