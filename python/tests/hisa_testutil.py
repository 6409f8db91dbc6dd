"""Shared helpers of the hisa GPU tests: requirement checks, random data and
torch references written from KERNELS.md (1.1 and 1.3)."""

from __future__ import annotations

import os
import random

import pytest

STRICT = os.environ.get("HISA_TESTS_STRICT", "") not in ("", "0")


def _missing(reason: str):
    if STRICT:
        pytest.fail(f"HISA_TESTS_STRICT=1 and {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_torch():
    """torch, or skip the calling module."""
    try:
        import torch
    except ImportError:
        _missing("torch is not installed")
    return torch


def require_torch_gpu():
    """torch with a CUDA GPU, or skip the calling module."""
    torch = require_torch()
    if not torch.cuda.is_available():
        _missing("no CUDA GPU (torch.cuda.is_available() is False)")
    return torch


def require_gpu():
    """(torch, hisa), or skip the calling module when torch, a CUDA GPU or
    libhisa_runtime.so is missing."""
    torch = require_torch_gpu()
    import hisa

    try:
        hisa._lib.lib()
    except hisa.HisaError as exc:
        _missing(f"hisa runtime library unavailable: {exc}")
    return torch, hisa


def fresh_seed(torch) -> int:
    """Seed torch with a fresh random seed and return it (printed on failure)."""
    seed = random.SystemRandom().randrange(2**31)
    torch.manual_seed(seed)
    print(f"seed = {seed}")
    return seed


# ---- data --------------------------------------------------------------------


def random_fp8(torch, rows, cols, device="cuda"):
    """Varied nonzero e4m3 values: |x| in [2^-6, ~12], both signs."""
    x = torch.randn(rows, cols, device=device) * 2.0
    small = x.abs() < 2.0**-6
    x = torch.where(small, torch.where(x < 0, -(2.0**-6), 2.0**-6), x)
    return x.clamp_(-448.0, 448.0).to(torch.float8_e4m3fn)


def random_k_scale(torch, n, device="cuda"):
    """Positive per-token scales in [0.005, 0.05] (mean amplitudes stay well
    inside what the KERNELS.md tolerance (rtol 5e-2, atol 5e-3) can judge)."""
    return torch.rand(n, device=device) * 0.045 + 0.005


def cu_seqlens_random(torch, total, num_seqs, device="cuda"):
    """[num_seqs + 1] int64 offsets of ragged sequences (each >= 1 token) summing to total."""
    num_seqs = max(1, min(num_seqs, total))
    if num_seqs == 1:
        cuts = torch.tensor([], dtype=torch.int64)
    else:
        cuts = torch.randperm(total - 1)[: num_seqs - 1].add_(1).sort().values
    return torch.cat(
        [torch.tensor([0]), cuts, torch.tensor([total])]
    ).to(device=device, dtype=torch.int64)


def ks_ke_from_cu_seqlens(torch, cu_seqlens):
    """Per-token causal windows: token p of the sequence at s0 sees [s0, s0 + p + 1)."""
    lengths = cu_seqlens[1:] - cu_seqlens[:-1]
    starts = torch.repeat_interleave(cu_seqlens[:-1], lengths)
    total = int(cu_seqlens[-1])
    pos = torch.arange(total, device=cu_seqlens.device, dtype=torch.int64)
    ks = starts
    ke = pos + 1
    return ks.to(torch.int32), ke.to(torch.int32)


def block_windows(torch, ks, ke, kb):
    """KERNELS.md 1.2: s = ks // kb, e = ceil(ke / kb) (int32)."""
    s = torch.div(ks.long(), kb, rounding_mode="floor")
    e = torch.div(ke.long() + kb - 1, kb, rounding_mode="floor")
    return s.to(torch.int32), e.to(torch.int32)


# ---- references --------------------------------------------------------------


def ref_block_mean(torch, k, k_scale, kb):
    """f64 block means [Nb, D] of k * k_scale (tail block divided by its row count)."""
    n, d = k.shape
    nb = (n + kb - 1) // kb
    x = k.to(torch.float32).to(torch.float64) * k_scale.reshape(-1, 1).to(torch.float64)
    padded = torch.zeros(nb * kb, d, dtype=torch.float64, device=k.device)
    padded[:n] = x
    sums = padded.view(nb, kb, d).sum(dim=1)
    counts = torch.full((nb,), float(kb), dtype=torch.float64, device=k.device)
    counts[-1] = n - (nb - 1) * kb
    return sums / counts[:, None]


def ref_block_scale(torch, mean):
    """scale = max(max|mean| / 448, 1e-10) per block (f64)."""
    return (mean.abs().amax(dim=1) / 448.0).clamp_min(1e-10)


def ref_clean_and_maintain(torch, logits, s, e):
    """KERNELS.md 1.3 on a copy of logits."""
    m, nn = logits.shape
    col = torch.arange(nn, device=logits.device, dtype=torch.int64)[None, :]
    s64 = s.long()[:, None]
    e64 = e.long()[:, None]
    out = logits.clone()
    out.masked_fill_((col < s64) | (col >= e64), float("-inf"))
    edge = ((col == s64) | (col == e64 - 1)) & (s64 < e64)
    out.masked_fill_(edge, float("inf"))
    return out


def assert_bitwise_equal(torch, actual, expected, what, extra=""):
    """Exact comparison of two float32 tensors through their bit patterns."""
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    a = actual.view(torch.int32)
    b = expected.view(torch.int32)
    diff = a != b
    if bool(diff.any()):
        idx = diff.nonzero()[:8].tolist()
        count = int(diff.sum())
        samples = ", ".join(
            f"{tuple(i)}: got {actual[tuple(i)].item()!r}, expected {expected[tuple(i)].item()!r}"
            for i in idx
        )
        raise AssertionError(f"{what}: {count} positions differ {extra}; first: {samples}")


def causal_indexer_inputs(torch, m, n, heads=64, dim=128, device="cuda"):
    """Indexer inputs (q, k, k_scale, weights, ks, ke): the last m queries of
    one causal sequence of n tokens, random fp8 q and k."""
    q = (torch.randn(m, heads, dim, device=device) * 2).to(torch.float8_e4m3fn)
    k = (torch.randn(n, dim, device=device) * 2).to(torch.float8_e4m3fn)
    k_scale = torch.rand(n, device=device) * 0.045 + 0.005
    weights = torch.randn(m, heads, device=device) / heads**0.5
    ke = torch.arange(n - m + 1, n + 1, device=device, dtype=torch.int32)
    ks = torch.zeros(m, device=device, dtype=torch.int32)
    return q, k, k_scale, weights, ks, ke


_LOWERING_INPUTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test",
                                "Conversion", "TileToGPU", "Inputs")


def lowering_test_kernel(hisa, file_name, kernel_name, params=None):
    """The kernel `kernel_name` of test/Conversion/TileToGPU/Inputs/<file_name>
    (the lit tests check its lowering; the GPU tests run it), through the JIT."""
    with open(os.path.join(_LOWERING_INPUTS, file_name)) as source:
        return hisa.jit.get_kernel(kernel_name, params or {}, source=source.read())
