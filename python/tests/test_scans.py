"""tile.scan, tile.warp_scan, tile.warp_broadcast, tile.warp_match and
tile.vote on the GPU.

The kernel test/Conversion/TileToGPU/Inputs/scans.mlir scans each row of x
(1000 elements over 128 threads: runs of 8, a partial last warp) forwards
(inclusive sum), backwards (exclusive suffix sum) and with a running f32
max, and takes warp prefix sums, ballots, any/all, a broadcast from lane
(5 lane + 3) % 32 of each 32-element group and each element's match mask
of the low 3 bits. Checked against torch on random data, all-zero and all-odd rows.
"""

import pytest

from hisa_testutil import fresh_seed, lowering_test_kernel, require_gpu

torch, hisa = require_gpu()

def run_scans(x, f):
    kernel = lowering_test_kernel(hisa, "scans.mlir", "scans")
    rows = x.shape[0]
    dev = dict(device="cuda")
    out = dict(
        inclusive=torch.empty(rows, 1000, dtype=torch.int32, **dev),
        suffix=torch.empty(rows, 1000, dtype=torch.int32, **dev),
        totals=torch.empty(rows, 2, dtype=torch.int32, **dev),
        running_max=torch.empty(rows, 1000, **dev),
        warp_prefix=torch.empty(rows, 1024, dtype=torch.int32, **dev),
        ballots=torch.empty(rows, 32, dtype=torch.int32, **dev),
        group_totals=torch.empty(rows, 32, dtype=torch.int32, **dev),
        any_all=torch.empty(rows, 32, dtype=torch.int32, **dev),
        broadcast=torch.empty(rows, 1024, dtype=torch.int32, **dev),
        matches=torch.empty(rows, 1024, dtype=torch.int32, **dev),
    )
    kernel.launch(
        x, out["inclusive"], out["suffix"], out["totals"], f, out["running_max"],
        out["warp_prefix"], out["ballots"], out["group_totals"], out["any_all"],
        out["broadcast"], out["matches"],
    )
    torch.cuda.synchronize()
    return out


def check(x, f):
    out = run_scans(x, f)
    xl = x.long()
    inclusive = torch.cumsum(xl, dim=1)
    assert torch.equal(out["inclusive"].long(), inclusive)
    suffix = torch.flip(torch.cumsum(torch.flip(xl, [1]), dim=1), [1]) - xl
    assert torch.equal(out["suffix"].long(), suffix)
    assert torch.equal(out["totals"][:, 0].long(), xl.sum(1))
    assert torch.equal(out["totals"][:, 1].long(), xl.sum(1))
    assert torch.equal(out["running_max"], torch.cummax(f, dim=1).values)
    padded = torch.zeros(x.shape[0], 1024, dtype=torch.long, device="cuda")
    padded[:, :1000] = xl
    groups = padded.view(x.shape[0], 32, 32)
    prefix = torch.cumsum(groups, dim=2) - groups
    assert torch.equal(out["warp_prefix"].long(), prefix.view(x.shape[0], 1024))
    assert torch.equal(out["group_totals"].long(), groups.sum(2))
    odd = (groups & 1).bool()
    weights = torch.tensor([1 << j for j in range(32)], dtype=torch.long, device="cuda")
    ballots = (odd.long() * weights).sum(2)
    assert torch.equal(out["ballots"].long() & 0xFFFFFFFF, ballots)
    any_all = odd.any(2).int() + 2 * odd.all(2).int()
    assert torch.equal(out["any_all"], any_all)
    source = (torch.arange(32, device="cuda") * 5 + 3) % 32
    broadcast = groups[:, :, source]
    assert torch.equal(out["broadcast"].long(), broadcast.reshape(x.shape[0], 1024))
    # Bit l of element j's mask: lane l of the group holds the same low 3
    # bits (two's complement, as arith.andi takes them).
    keys = groups & 7
    same = keys.unsqueeze(3) == keys.unsqueeze(2)
    matches = (same.long() * weights).sum(3)
    assert torch.equal(out["matches"].long() & 0xFFFFFFFF, matches.reshape(x.shape[0], 1024))


@pytest.mark.parametrize("rows", [1, 7, 300])
def test_random(rows):
    fresh_seed(torch)
    x = torch.randint(-1000, 1000, (rows, 1000), dtype=torch.int32, device="cuda")
    f = torch.randn(rows, 1000, device="cuda")
    check(x, f)


def test_all_zero_and_all_odd():
    x = torch.zeros(2, 1000, dtype=torch.int32, device="cuda")
    x[1] = 3
    f = torch.full((2, 1000), -float("inf"), device="cuda")
    check(x, f)
