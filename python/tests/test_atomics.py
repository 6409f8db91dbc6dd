"""tile.atomic on the GPU.

The kernel test/Conversion/TileToGPU/Inputs/histogram.mlir counts the low
byte of x into 256 bins (shared atomics per block, merged into the output
with global atomics) and takes the maximum of fx with a global f32 atomic
max. Checked against torch on random data, sizes that leave a partial last
block, an empty input, and all-equal values (every thread hits one bin).
"""

import pytest

from hisa_testutil import fresh_seed, lowering_test_kernel, require_gpu

torch, hisa = require_gpu()

def run_histogram(x, fx):
    kernel = lowering_test_kernel(hisa, "histogram.mlir", "histogram")
    hist = torch.zeros(256, dtype=torch.int32, device="cuda")
    fmax = torch.full((1,), float("-inf"), device="cuda")
    kernel.launch(x, hist, fmax, fx)
    torch.cuda.synchronize()
    return hist, fmax


@pytest.mark.parametrize("n", [0, 1, 1023, 1024, 1025, 100_003, 1 << 20])
def test_histogram_and_max(n):
    fresh_seed(torch)
    x = torch.randint(-(2**31), 2**31 - 1, (n,), dtype=torch.int32, device="cuda")
    fx = torch.randn(n, device="cuda")
    hist, fmax = run_histogram(x, fx)
    expected = torch.bincount((x & 255).long(), minlength=256).int()
    assert torch.equal(hist, expected)
    assert int(hist.sum()) == n
    if n:
        assert fmax.item() == fx.max().item()
    else:
        assert fmax.item() == float("-inf")


def test_all_in_one_bin():
    # Every thread of every block contends for the same shared and global
    # element.
    n = 300_000
    x = torch.full((n,), 7 + 256 * 5, dtype=torch.int32, device="cuda")
    fx = torch.full((n,), -3.5, device="cuda")
    hist, fmax = run_histogram(x, fx)
    assert int(hist[7]) == n and int(hist.sum()) == n
    assert fmax.item() == -3.5


def test_atomic_once_per_element_of_a_replicated_layout():
    """test/Conversion/TileToGPU/Inputs/atomics-replicated.mlir: one atomic
    per row of a reduced accumulator, whose rows four lanes each hold: the
    total must be the 64 rows, not 256."""
    kernel = lowering_test_kernel(hisa, "atomics-replicated.mlir", "count_rows")
    a = torch.randn(64, 32, device="cuda").half()
    b = torch.randn(64, 32, device="cuda").half()
    total = torch.zeros(1, dtype=torch.int32, device="cuda")
    kernel.launch(a, b, total)
    torch.cuda.synchronize()
    assert int(total) == 64


@pytest.mark.parametrize("blocks", [1, 2, 1000, 5000])
def test_last_block_sums_every_part(blocks):
    """tile.fence gpu between each block's write of its part and its ticket
    (a global tile.atomic), and before the last block reads every part
    (test/Conversion/TileToGPU/Inputs/last_block.mlir): exactly one block
    draws the last ticket and sees every part, so the total is 0 + 1 + ...
    + (blocks - 1), in f32 (exact below 2^24)."""
    kernel = lowering_test_kernel(hisa, "last_block.mlir", "last_block_sums")
    for _ in range(3):
        parts = torch.full((blocks,), float("nan"), device="cuda")
        counter = torch.zeros(1, dtype=torch.int32, device="cuda")
        total = torch.full((1,), float("nan"), device="cuda")
        kernel.launch(parts, counter, total)
        torch.cuda.synchronize()
        assert int(counter.item()) == blocks
        assert torch.equal(parts, torch.arange(blocks, device="cuda", dtype=torch.float32))
        assert total.item() == blocks * (blocks - 1) // 2
