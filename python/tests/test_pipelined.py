"""tile.pipelined with num_stages > 1 (TMA or cp.async multi-buffering) on
the GPU.

The kernel test/Conversion/TileToGPU/Inputs/stream_sum.mlir streams row tiles
of x through shared memory and sums them; every stage count must give the
same sums as torch, including a partial last tile (zero-filled reads) and an
empty x (its tensor map points at zeros). On sm_90a the staged boxes go
through TMA; the target "sm_90a,-tma" keeps them on cp.async.
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


TARGETS = ["sm_90a", "sm_90a,-tma"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 1000, 4103])
@pytest.mark.parametrize("rows", [16, 32])
def test_stream_sum(stages, n, rows, target):
    fresh_seed(torch)
    kernel = hisa.jit.get_kernel("stream_sum", {"rows": rows}, source=stream_sum_source(stages), target=target)
    x = torch.randn(n, 128, device="cuda")
    out = torch.full((rows, 128), float("nan"), device="cuda")
    kernel.launch(x, out)
    torch.cuda.synchronize()
    tiles = -(-n // rows)
    padded = torch.zeros(tiles * rows, 128, device="cuda")
    padded[:n] = x
    expected = padded.view(tiles, rows, 128).sum(0)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-4)


def test_unknown_target_feature_is_refused():
    with pytest.raises(hisa.HisaError, match="unknown feature '-wgmma'"):
        hisa.jit.get_kernel("stream_sum", {"rows": 32}, source=stream_sum_source(2), target="sm_90a,-wgmma")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("n", [0, 5, 16, 100, 1037])
def test_stream_mixed(stages, n, target):
    # One loop stages x (256-byte rows: TMA on sm_90a) and y (8-byte rows:
    # always cp.async); each iteration waits for both.
    fresh_seed(torch)
    with open(os.path.join(os.path.dirname(SOURCE_PATH), "stream_mixed.mlir")) as f:
        source = f.read().replace("NUM_STAGES", str(stages))
    kernel = hisa.jit.get_kernel("stream_mixed", {}, source=source, target=target)
    x = torch.randn(n, 64, device="cuda")
    y = torch.randn(n, 2, device="cuda")
    out = torch.full((16, 64), float("nan"), device="cuda")
    kernel.launch(x, y, out)
    torch.cuda.synchronize()
    tiles = -(-n // 16)
    product = torch.zeros(tiles * 16, 64, device="cuda")
    product[:n] = x * y[:, 1:2]
    torch.testing.assert_close(out, product.view(tiles, 16, 64).sum(0), rtol=1e-5, atol=1e-4)


def test_unvectorizable_pipelined_copy_is_refused():
    # A row length known only at run time may leave runs straddling rows, so
    # cp.async cannot be used: the compiler refuses instead of silently
    # falling back to synchronous copies.
    source = stream_sum_source(2).replace("!tile.global<[?, 128], f32>", "!tile.global<[?, ?], f32>")
    with pytest.raises(hisa.HisaError, match="cannot be pipelined with cp.async"):
        hisa.jit.get_kernel("stream_sum", {"rows": 32}, source=source)


SOURCE_1D_PATH = os.path.join(os.path.dirname(SOURCE_PATH), "stream_sum_1d.mlir")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("n", [1, 3, 511, 512, 513, 1030, 4099])
@pytest.mark.parametrize("rows", [128, 256, 512])
def test_stream_sum_1d(stages, n, rows, target):
    # 1-D tiles through TMA (boxes of at most 256) or cp.async: the piece
    # straddling the end of x copies only the elements before it (the rest
    # reads as 0).
    fresh_seed(torch)
    with open(SOURCE_1D_PATH) as f:
        source = f.read().replace("NUM_STAGES", str(stages))
    kernel = hisa.jit.get_kernel("stream_sum_1d", {"rows": rows}, source=source, target=target)
    x = torch.randn(n, device="cuda")
    out = torch.full((rows,), float("nan"), device="cuda")
    kernel.launch(x, out)
    torch.cuda.synchronize()
    tiles = -(-n // rows)
    padded = torch.zeros(tiles * rows, device="cuda")
    padded[:n] = x
    torch.testing.assert_close(out, padded.view(tiles, rows).sum(0), rtol=1e-5, atol=1e-4)
