"""tile.pipelined with num_stages > 1 (cp.async multi-buffering) on the GPU.

The kernel test/Conversion/TileToGPU/Inputs/stream_sum.mlir streams row tiles
of x through shared memory and sums them; every stage count must give the
same sums as torch, including a partial last tile (zero-filled reads).
"""

import os

import pytest

from hisa_testutil import fresh_seed, require_gpu

torch, hisa = require_gpu()

SOURCE_PATH = os.path.join(
    os.path.dirname(__file__), "..", "..", "test", "Conversion", "TileToGPU", "Inputs", "stream_sum.mlir"
)


def stream_sum_source(stages: int) -> str:
    with open(SOURCE_PATH) as f:
        return f.read().replace("NUM_STAGES", str(stages))


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [1, 31, 32, 33, 1000, 4103])
@pytest.mark.parametrize("rows", [16, 32])
def test_stream_sum(stages, n, rows):
    fresh_seed(torch)
    kernel = hisa.jit.get_kernel("stream_sum", {"rows": rows}, source=stream_sum_source(stages))
    x = torch.randn(n, 128, device="cuda")
    out = torch.full((rows, 128), float("nan"), device="cuda")
    kernel.launch(x, out)
    torch.cuda.synchronize()
    tiles = -(-n // rows)
    padded = torch.zeros(tiles * rows, 128, device="cuda")
    padded[:n] = x
    expected = padded.view(tiles, rows, 128).sum(0)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-4)


def test_unvectorizable_pipelined_copy_is_refused():
    # A row length known only at run time may leave runs straddling rows, so
    # cp.async cannot be used: the compiler refuses instead of silently
    # falling back to synchronous copies.
    source = stream_sum_source(2).replace("!tile.global<[?, 128], f32>", "!tile.global<[?, ?], f32>")
    with pytest.raises(hisa.HisaError, match="cannot be pipelined with cp.async"):
        hisa.jit.get_kernel("stream_sum", {"rows": 32}, source=source)


SOURCE_1D_PATH = os.path.join(os.path.dirname(SOURCE_PATH), "stream_sum_1d.mlir")


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("n", [1, 3, 511, 512, 513, 1030, 4099])
@pytest.mark.parametrize("rows", [128, 512])
def test_stream_sum_1d(stages, n, rows):
    # 1-D tiles through cp.async: the piece straddling the end of x copies
    # only the elements before it (the rest reads as 0).
    fresh_seed(torch)
    with open(SOURCE_1D_PATH) as f:
        source = f.read().replace("NUM_STAGES", str(stages))
    kernel = hisa.jit.get_kernel("stream_sum_1d", {"rows": rows}, source=source)
    x = torch.randn(n, device="cuda")
    out = torch.full((rows,), float("nan"), device="cuda")
    kernel.launch(x, out)
    torch.cuda.synchronize()
    tiles = -(-n // rows)
    padded = torch.zeros(tiles * rows, device="cuda")
    padded[:n] = x
    torch.testing.assert_close(out, padded.view(tiles, rows).sum(0), rtol=1e-5, atol=1e-4)
