"""hisa.clean_and_maintain_logits_ against a torch reference (KERNELS.md 1.3).

Exact check: columns outside [s, e) are -inf, columns s and e-1 are +inf,
every other column keeps its original (random) value bit for bit.
"""

import random

import pytest

from hisa_testutil import (
    assert_bitwise_equal,
    block_windows,
    cu_seqlens_random,
    fresh_seed,
    ks_ke_from_cu_seqlens,
    ref_clean_and_maintain,
    require_gpu,
)

torch, hisa = require_gpu()

LARGE_N = [16384, 65536, 131072]
ODD_N = [1, 127, 129, 1000, 4097, 65537]
BLOCK_SIZES = [64, 128, 256]


def packed_causal_windows(n, kb, num_seqs):
    """(s, e, cu_seqlens) of num_seqs ragged causal sequences packed into n tokens."""
    cu = cu_seqlens_random(torch, n, num_seqs)
    ks, ke = ks_ke_from_cu_seqlens(torch, cu)
    s, e = block_windows(torch, ks, ke, kb)
    return s, e, cu


def run_and_check(logits, s, e, seed, extra=""):
    expected = ref_clean_and_maintain(torch, logits, s, e)
    s_copy, e_copy = s.clone(), e.clone()
    result = hisa.clean_and_maintain_logits_(logits, s, e)
    assert result is logits, "clean_and_maintain_logits_ must return its logits argument"
    torch.cuda.synchronize()
    assert_bitwise_equal(torch, logits, expected, "cleaned logits", f"(seed {seed}{extra})")
    assert torch.equal(s, s_copy) and torch.equal(e, e_copy), "s/e were modified"


def random_logits(m, nn):
    # randn never gives +-inf or NaN: any infinity in the result was written.
    return torch.randn(m, nn, device="cuda", dtype=torch.float32)


@pytest.mark.parametrize("num_seqs", [1, 5, 16, "random"])
@pytest.mark.parametrize("kb", BLOCK_SIZES)
@pytest.mark.parametrize("n", LARGE_N)
def test_packed_causal(n, kb, num_seqs):
    seed = fresh_seed(torch)
    if num_seqs == "random":
        num_seqs = random.Random(seed).randint(2, 16)
    nn = (n + kb - 1) // kb
    s, e, cu = packed_causal_windows(n, kb, num_seqs)
    assert int(s.min()) == 0 and int(e.max()) == nn  # touches column 0 and the last column
    logits = random_logits(n, nn)
    run_and_check(logits, s, e, seed, f", num_seqs {num_seqs}, cu_seqlens {cu.tolist()[:17]}")


@pytest.mark.parametrize("kb", BLOCK_SIZES)
@pytest.mark.parametrize("n", ODD_N)
def test_packed_causal_odd_sizes(n, kb):
    seed = fresh_seed(torch)
    num_seqs = random.Random(seed).randint(1, 16)
    nn = (n + kb - 1) // kb
    s, e, _ = packed_causal_windows(n, kb, num_seqs)
    logits = random_logits(n, nn)
    run_and_check(logits, s, e, seed, f", num_seqs {num_seqs}")


def edge_rows(nn):
    """Windows at the edges: empty (s == e, s > e), single columns at both ends, full rows."""
    rows = [
        (0, 0),
        (nn, nn),
        (nn // 2, nn // 2),
        (min(3, nn), 0),
        (nn, max(nn - 1, 0)),
        (0, 1),
        (max(nn - 1, 0), nn),
        (0, nn),
        (0, min(2, nn)),
        (max(nn - 2, 0), nn),
        (nn // 3, nn // 3 + 1),
    ]
    return rows


@pytest.mark.parametrize(
    "m,nn", [(1, 1), (7, 1), (127, 3), (129, 129), (1000, 1000), (4097, 33), (65537, 2047), (257, 4099)]
)
def test_random_and_edge_windows(m, nn):
    """Arbitrary windows in [0, Nn], about a quarter of them empty, plus edge rows."""
    seed = fresh_seed(torch)
    s = torch.randint(0, nn + 1, (m,), device="cuda", dtype=torch.int32)
    e = torch.randint(0, nn + 1, (m,), device="cuda", dtype=torch.int32)
    # Make ~3/4 of the rows well-formed (s <= e), keep the rest as drawn.
    swap = (s > e) & (torch.rand(m, device="cuda") < 0.5)
    s, e = torch.where(swap, e, s), torch.where(swap, s, e)
    edges = torch.tensor(edge_rows(nn), dtype=torch.int32, device="cuda")
    count = min(m, edges.shape[0])
    s[:count] = edges[:count, 0]
    e[:count] = edges[:count, 1]
    logits = random_logits(m, nn)
    run_and_check(logits, s, e, seed)


@pytest.mark.parametrize("nn", [1, 7, 8, 9, 16, 17, 24, 40])
def test_every_window_of_short_rows(nn):
    """Every (s, e) in [-2, nn + 2]^2, one per row: windows inside one 32-byte
    sector, across sector edges, touching or reaching past either end; rows
    of nn floats start mid-sector unless 8 divides nn (the kernel writes
    whole sectors)."""
    seed = fresh_seed(torch)
    values = torch.arange(-2, nn + 3, device="cuda", dtype=torch.int32)
    s = values.repeat_interleave(values.numel())
    e = values.repeat(values.numel())
    logits = random_logits(s.numel(), nn)
    run_and_check(logits, s, e, seed, f", nn {nn}")


def test_all_rows_empty():
    seed = fresh_seed(torch)
    m, nn = 4097, 129
    s = torch.randint(0, nn + 1, (m,), device="cuda", dtype=torch.int32)
    e = torch.clamp(s - torch.randint(0, 3, (m,), device="cuda", dtype=torch.int32), min=0)
    logits = random_logits(m, nn)
    run_and_check(logits, s, e, seed)
    assert bool(torch.isneginf(logits).all())


@pytest.mark.parametrize("m,nn", [(0, 16), (16, 0), (0, 0)])
def test_empty_shapes(m, nn):
    logits = torch.empty((m, nn), dtype=torch.float32, device="cuda")
    s = torch.zeros((m,), dtype=torch.int32, device="cuda")
    e = torch.zeros((m,), dtype=torch.int32, device="cuda")
    assert hisa.clean_and_maintain_logits_(logits, s, e) is logits


def test_runs_on_current_stream():
    """Values written on a side stream before the call must be seen by the kernel
    (a kernel on another stream would race with the copy and the sleep)."""
    if not hasattr(torch.cuda, "_sleep"):
        pytest.skip("torch.cuda._sleep is unavailable")
    seed = fresh_seed(torch)
    n, kb = 65536, 128
    nn = n // kb
    s, e, _ = packed_causal_windows(n, kb, 4)
    original = random_logits(n, nn)
    expected = ref_clean_and_maintain(torch, original, s, e)
    logits = torch.zeros_like(original)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)
        logits.copy_(original)
        hisa.clean_and_maintain_logits_(logits, s, e)
    side.synchronize()
    assert_bitwise_equal(torch, logits, expected, "cleaned logits (side stream)", f"(seed {seed})")


def test_idempotent():
    seed = fresh_seed(torch)
    n, kb = 16384, 64
    s, e, _ = packed_causal_windows(n, kb, 3)
    logits = random_logits(n, n // kb)
    expected = ref_clean_and_maintain(torch, logits, s, e)
    hisa.clean_and_maintain_logits_(logits, s, e)
    hisa.clean_and_maintain_logits_(logits, s, e)
    torch.cuda.synchronize()
    assert_bitwise_equal(torch, logits, expected, "cleaned twice", f"(seed {seed})")
