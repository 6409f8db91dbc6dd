"""Thread-block clusters on the GPU.

The kernel test/Conversion/TileToGPU/Inputs/cluster-exchange.mlir runs in
clusters of two blocks: each block stages its row of `in` in shared memory,
meets the other at a cluster barrier, reads the other's row through
distributed shared memory (tile.load ... peer) and writes it doubled, so
out[r] = 2 * in[r xor 1]. Checked against torch; a grid that is not a whole
number of clusters is refused by name.
"""

import pytest

from hisa_testutil import fresh_seed, lowering_test_kernel, require_gpu

torch, hisa = require_gpu()


@pytest.mark.parametrize("rows", [2, 64, 1000, 2 * 132 * 4])
def test_pairs_swap_rows_through_distributed_shared_memory(rows):
    fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "cluster-exchange.mlir", "exchange")
    x = torch.randn(rows, 128, device="cuda")
    out = torch.full_like(x, float("nan"))
    kernel.launch(x, out)
    torch.cuda.synchronize()
    expected = 2 * x.view(rows // 2, 2, 128).flip(1).reshape(rows, 128)
    assert torch.equal(out, expected)


def test_grid_not_a_whole_number_of_clusters_is_refused():
    kernel = lowering_test_kernel(hisa, "cluster-exchange.mlir", "exchange")
    x = torch.zeros(3, 128, device="cuda")
    with pytest.raises(Exception, match="not a multiple of its cluster of 2 blocks"):
        kernel.launch(x, torch.empty_like(x))
