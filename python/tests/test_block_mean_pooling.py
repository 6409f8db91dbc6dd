"""hisa.fp8_block_mean_pooling against a torch reference (KERNELS.md 1.1)."""

import pytest

from hisa_testutil import (
    fresh_seed,
    random_fp8,
    random_k_scale,
    ref_block_mean,
    ref_block_scale,
    require_gpu,
)

torch, hisa = require_gpu()

FP8 = torch.float8_e4m3fn
LARGE_N = [16384, 65536, 131072]
ODD_N = [1, 127, 129, 1000, 4097, 65537]
BLOCK_SIZES = [64, 128, 256]
DIMS = [64, 128]
FP8_NAN_BYTE = 0x7F  # e4m3fn NaN


def poisoned_outputs(n, d, kb):
    nb = (n + kb - 1) // kb
    blocked_k = torch.full((nb, d), FP8_NAN_BYTE, dtype=torch.uint8, device="cuda").view(FP8)
    blocked_scale = torch.full((nb,), float("nan"), dtype=torch.float32, device="cuda")
    return blocked_k, blocked_scale


def check_against_reference(k, k_scale, kb, blocked_k, blocked_scale, seed):
    n, d = k.shape
    nb = (n + kb - 1) // kb
    assert blocked_k.shape == (nb, d) and blocked_k.dtype == FP8
    assert blocked_scale.shape == (nb,) and blocked_scale.dtype == torch.float32
    assert blocked_k.device == k.device and blocked_scale.device == k.device

    mean = ref_block_mean(torch, k, k_scale, kb)  # f64 [Nb, D]
    scale = ref_block_scale(torch, mean)  # f64 [Nb]
    got_scale = blocked_scale.to(torch.float64)
    assert bool(torch.isfinite(got_scale).all()), f"non-finite scales (seed {seed})"

    # scale == max(max|mean| / 448, 1e-10), rtol 1e-5.
    torch.testing.assert_close(
        got_scale, scale, rtol=1e-5, atol=0.0, msg=lambda m: f"blocked_k_scale (seed {seed}): {m}"
    )

    got = blocked_k.to(torch.float32)
    assert bool(torch.isfinite(got).all()), f"NaN/inf in blocked_k (seed {seed})"
    deq = got * blocked_scale[:, None]
    # The KERNELS.md check: blocked_k.float() * scale vs the f32 mean.
    torch.testing.assert_close(
        deq,
        mean.to(torch.float32),
        rtol=5e-2,
        atol=5e-3,
        msg=lambda m: f"dequantized blocked_k vs mean (seed {seed}): {m}",
    )

    # Stricter, scale-free: fp8 round-to-nearest of y = mean / scale errs by at
    # most max(2^-4 |y|, 2^-10) (normal / subnormal half-spacing), plus f32
    # summation error (bounded through the block's mean |k * k_scale|).
    x = k.to(torch.float32).to(torch.float64) * k_scale.reshape(-1, 1).to(torch.float64)
    padded = torch.zeros(nb * kb, d, dtype=torch.float64, device=k.device)
    padded[:n] = x.abs()
    counts = torch.full((nb,), float(kb), dtype=torch.float64, device=k.device)
    counts[-1] = n - (nb - 1) * kb
    abs_mean = padded.view(nb, kb, d).sum(dim=1) / counts[:, None]
    err = (deq.to(torch.float64) - mean).abs()
    bound = 1.01 * (mean.abs() * 2.0**-4 + scale[:, None] * 2.0**-10) + 3e-5 * abs_mean
    bad = err > bound
    if bool(bad.any()):
        b, j = bad.nonzero()[0].tolist()
        raise AssertionError(
            f"{int(bad.sum())} values exceed the fp8 rounding bound (seed {seed}); first at "
            f"block {b}, column {j}: mean {mean[b, j].item()!r}, dequantized "
            f"{deq[b, j].item()!r}, scale {blocked_scale[b].item()!r}, bound {bound[b, j].item()!r}"
        )


@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("kb", BLOCK_SIZES)
@pytest.mark.parametrize("n", LARGE_N + ODD_N)
def test_matches_reference(n, kb, d):
    seed = fresh_seed(torch)
    k = random_fp8(torch, n, d)
    k_scale = random_k_scale(torch, n)
    k_bytes = k.view(torch.uint8).clone()
    scale_copy = k_scale.clone()
    out = poisoned_outputs(n, d, kb)
    blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale, kb, out=out)
    assert blocked_k is out[0] and blocked_scale is out[1]
    torch.cuda.synchronize()
    check_against_reference(k, k_scale, kb, blocked_k, blocked_scale, seed)
    assert torch.equal(k.view(torch.uint8), k_bytes), "k was modified"
    assert torch.equal(k_scale, scale_copy), "k_scale was modified"


@pytest.mark.parametrize("n,kb,d", [(1, 128, 128), (1000, 64, 64), (65537, 256, 128), (131072, 128, 128)])
def test_allocates_outputs(n, kb, d):
    seed = fresh_seed(torch)
    k = random_fp8(torch, n, d)
    k_scale = random_k_scale(torch, n)
    blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale, k_block_size=kb)
    torch.cuda.synchronize()
    check_against_reference(k, k_scale, kb, blocked_k, blocked_scale, seed)


def test_default_block_size_is_128():
    seed = fresh_seed(torch)
    k = random_fp8(torch, 1000, 128)
    k_scale = random_k_scale(torch, 1000)
    blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale)
    assert blocked_k.shape == (8, 128)
    torch.cuda.synchronize()
    check_against_reference(k, k_scale, 128, blocked_k, blocked_scale, seed)


@pytest.mark.parametrize("n", [1, 4097])
def test_k_scale_n_by_1(n):
    seed = fresh_seed(torch)
    k = random_fp8(torch, n, 128)
    k_scale = random_k_scale(torch, n)
    blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale[:, None], 128)
    torch.cuda.synchronize()
    check_against_reference(k, k_scale, 128, blocked_k, blocked_scale, seed)


@pytest.mark.parametrize("kb", BLOCK_SIZES)
def test_zero_block_scale_floor(kb):
    """An all-zero block gets scale 1e-10 and zero values (no NaN from 0/0)."""
    seed = fresh_seed(torch)
    n = 3 * kb - 5
    k = random_fp8(torch, n, 128)
    k.view(torch.uint8)[kb : 2 * kb] = 0  # +0.0 in e4m3
    k_scale = random_k_scale(torch, n)
    blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(
        k, k_scale, kb, out=poisoned_outputs(n, 128, kb)
    )
    torch.cuda.synchronize()
    assert blocked_scale[1].item() == pytest.approx(1e-10, rel=1e-6)
    assert bool((blocked_k[1].to(torch.float32) == 0).all())
    check_against_reference(k, k_scale, kb, blocked_k, blocked_scale, seed)


@pytest.mark.parametrize("d", DIMS)
def test_empty_input(d):
    k = torch.empty((0, d), dtype=FP8, device="cuda")
    k_scale = torch.empty((0,), dtype=torch.float32, device="cuda")
    blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale, 128)
    assert blocked_k.shape == (0, d) and blocked_k.dtype == FP8 and blocked_k.is_cuda
    assert blocked_scale.shape == (0,) and blocked_scale.dtype == torch.float32
    assert blocked_scale.device == k.device


def test_runs_on_current_stream():
    """Work queued on a side stream before the call must be seen by the kernel."""
    if not hasattr(torch.cuda, "_sleep"):
        pytest.skip("torch.cuda._sleep is unavailable")
    seed = fresh_seed(torch)
    n, d, kb = 65536, 128, 128
    source = random_fp8(torch, n, d)
    k_scale = random_k_scale(torch, n)
    k = torch.zeros_like(source)
    out = poisoned_outputs(n, d, kb)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)  # ~10 ms: the copy below lands late
        k.copy_(source)
        hisa.fp8_block_mean_pooling(k, k_scale, kb, out=out)
    side.synchronize()
    check_against_reference(source, k_scale, kb, out[0], out[1], seed)
