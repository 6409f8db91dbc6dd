"""Shared helpers of the hisa GPU tests: requirement checks, random data and
torch references written from KERNELS.md (1.1 and 1.3; and, calling no hisa
function, the indexer's pooling, logits and selections up to near ties)."""

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


# ---- pure-torch indexer references (no hisa function) ---------------------------
#
# f64 logits of KERNELS.md 1.2 / 2.1 / the flat indexer, each with a slack: a
# bound on how far a kernel's f32 logit may lie from it. A kernel's products
# of fp8 values are exact; its sums are not (f32, and Hopper's fp8 wgmma
# aligns each k32 step's addends to their largest exponent and keeps ~13
# bits: modelled on the CPU, per dot product |error| / sum_d |q_d k_d| is
# 1e-5 on average and 3e-4 at worst over 2e5 random rows; measured on the
# H200, fp8 wgmma results lie within ~3e-4 sum |a b| of the exact sum,
# ../shared/docs/TOOLCHAIN.md). LOGIT_SLACK = 1e-3 of the magnitude
# sum_h |w| |s| sum_d |q| |k| covers the worst case with a margin of ~3, as
# the benchmarks' checks do. test_mqa_ops.py holds the kernels to 2e-3 of
# that magnitude per element; the slack only decides which near ties a
# selection may break either way.

LOGIT_SLACK = 1e-3


def ref_pooled_codes(torch, k, k_scale, kb):
    """KERNELS.md 1.1 from the f64 block means, as (codes, scale, code_slack,
    scale_slack): codes [Nb, D] f64, the fp8 values fp8(mean / scale) (the
    pooled keys blocked_k), scale [Nb] f64, and what an f32 pooling may
    change: code_slack [Nb, D], how far its code may lie from codes (0 unless
    mean / scale lies within the f32 error of an fp8 rounding boundary: then
    the distance to the other code), scale_slack [Nb], a bound on its scale's
    relative error."""
    n, d = k.shape
    nb = (n + kb - 1) // kb
    u = 2.0**-24
    mean = ref_block_mean(torch, k, k_scale, kb)
    scale = ref_block_scale(torch, mean)
    # An f32 sum of `count` rounded products, in any order, is within
    # count * u * sum|k * s| of the exact sum; the division adds u |mean|.
    x = k.to(torch.float32).to(torch.float64).abs() * k_scale.reshape(-1, 1).to(torch.float64).abs()
    padded = torch.zeros(nb * kb, d, dtype=torch.float64, device=k.device)
    padded[:n] = x
    mean_error = padded.view(nb, kb, d).sum(1) * u + mean.abs() * u        # (count * u * sum) / count
    amax = mean.abs().amax(1)
    scale_slack = mean_error.amax(1) / amax.clamp(min=1e-300) + 4 * u
    v = mean / scale[:, None]
    # Twice the first-order bound on |v_f32 - v|: the mean's error, the
    # scale's, and the rounding of the division.
    reach = 2 * (mean_error / scale[:, None] + v.abs() * (scale_slack[:, None] + 2 * u))
    fp8 = torch.float8_e4m3fn
    codes = v.to(torch.float32).to(fp8).to(torch.float32).to(torch.float64)
    low = (v - reach).to(torch.float32).to(fp8).to(torch.float32).to(torch.float64)
    high = (v + reach).to(torch.float32).to(fp8).to(torch.float32).to(torch.float64)
    code_slack = torch.maximum(codes - low, high - codes)
    return codes, scale, code_slack, scale_slack


def ref_indexer_logits(torch, q, keys, scales, weights, key_slack=None, scale_slack=None,
                       elements=2**24):
    """(z, slack) [M, J] f64 with z[m, j] = sum_h ReLU(q[m,h].keys[j] * scales[j]) *
    weights[m,h] (q [M, H, D] fp8, keys [J, D] fp8 or f64 values, scales [J]
    positive) and slack = (LOGIT_SLACK + scale_slack[j]) * sum_h |w| |s| sum_d
    |q| |k| + sum_h |w| |s| sum_d |q| key_slack[j]: a bound on |z_kernel - z|
    (ReLU moves a value by at most its argument's change)."""
    qd = q.to(torch.float32).to(torch.float64)
    kd = keys.to(torch.float32).to(torch.float64) if keys.dtype != torch.float64 else keys
    s = scales.reshape(-1).to(torch.float64)
    w = weights.to(torch.float64)
    m, heads, _ = qd.shape
    # sum_h |w[m,h]| |q[m,h,d]|: the magnitude is then one product.
    qa = (w.abs()[:, :, None] * qd.abs()).sum(1)
    relative = torch.full_like(s, LOGIT_SLACK) if scale_slack is None else LOGIT_SLACK + scale_slack
    slack = (qa @ kd.abs().T) * (s.abs() * relative)[None, :]
    if key_slack is not None:
        slack += (qa @ key_slack.T) * s.abs()[None, :]
    z = torch.empty((m, kd.shape[0]), dtype=torch.float64, device=qd.device)
    chunk = max(1, elements // max(1, heads * kd.shape[0]))
    for m0 in range(0, m, chunk):
        dots = torch.einsum("mhd,jd->mhj", qd[m0:m0 + chunk], kd) * s[None, None, :]
        z[m0:m0 + chunk] = (dots.clamp_(min=0) * w[m0:m0 + chunk, :, None]).sum(1)
    return z, slack


def check_topk_within_slack(torch, values, slack, selected, k, what):
    """selected [M, k'] (columns of values [M, C], -1 padded; f64 values,
    +-inf allowed, slack >= 0 and 0 where a value is infinite) is a top-k of
    each row up to the slack (KERNELS.md "Top-k, exactly" with the kernel's
    values within slack of these): min(k, selectable) distinct columns (a
    selectable value is not -inf), and no value left out exceeds a selected
    one by more than both slacks. A selection is thus the reference's top-k
    as a set, except that values within the slacks of the threshold (ties
    and near ties) may take each other's place."""
    m, cols = values.shape
    valid = selected >= 0
    assert bool((selected < cols).all()), f"{what}: column past C"
    selectable = ~torch.isneginf(values)
    want = selectable.sum(1).clamp(max=k)
    got = valid.sum(1)
    bad = (got != want).nonzero().flatten()
    assert bad.numel() == 0, (f"{what}: row {int(bad[0])} has {int(got[bad[0]])} selections, "
                              f"expected {int(want[bad[0]])}")
    safe = selected.long().clamp(min=0)
    hits = torch.zeros((m, cols), dtype=torch.int32, device=values.device)
    hits.scatter_add_(1, safe, valid.int())
    assert not bool((hits > 1).any()), f"{what}: a column is selected twice"
    chosen = hits > 0
    assert not bool((chosen & ~selectable).any()), f"{what}: a -inf value was selected"
    inf = float("inf")
    lowest = torch.where(chosen, values + slack, torch.full_like(values, inf)).amin(1)
    left = torch.where(selectable & ~chosen, values - slack, torch.full_like(values, -inf)).amax(1)
    bad = (left > lowest).nonzero().flatten()
    assert bad.numel() == 0, (
        f"{what}: row {int(bad[0])} left out a value of {float(left[bad[0]]):.6g} (less its slack) "
        f"above a selected {float(lowest[bad[0]]):.6g} (plus its slack)")


def check_hisa_indexer_against_torch(torch, out, q, k, k_scale, weights, ks, ke, kb,
                                     block_topk, topk_tokens, what):
    """hisa_indexer's offsets out [M, topk_tokens] (rows of queries q, weights,
    ks, ke over all keys k, k_scale) against a pure-torch reference of
    KERNELS.md 1.1 -> 2.3: pooled codes and block logits (1.1, 1.2, with the
    slack of an f32 pooling and of the kernel's sums), the cleaning (1.3),
    then the token logits. Sets up to near ties, in two steps:
    - a block holding a selected token must be one that a top-block_topk of
      some block logits within the slacks would take ("possible");
    - the blocks every such top-k takes ("sure": fewer than block_topk other
      blocks can reach them) are the kernel's candidates too, so no token of
      theirs (in the window) that the kernel left out may exceed a selected
      token by more than both slacks, none may be left out when fewer than
      min(topk_tokens, T * kb) were selected, and at least
      min(topk_tokens, T * kb, their tokens) are selected.
    Returns the fraction of rows whose block selection is determined (every
    block either sure or out), for the caller to see that the check bites."""
    m = q.shape[0]
    n = k.shape[0]
    nb = (n + kb - 1) // kb
    t = min(block_topk, nb)
    kk = min(topk_tokens, t * kb)
    codes, scale, code_slack, scale_slack = ref_pooled_codes(torch, k, k_scale, kb)
    logits, slack = ref_indexer_logits(torch, q, codes, scale, weights, code_slack, scale_slack)
    bks, bke = block_windows(torch, ks, ke, kb)
    cleaned = ref_clean_and_maintain(torch, logits, bks, bke)
    slack = torch.where(torch.isfinite(cleaned), slack, torch.zeros_like(slack))
    selectable = ~torch.isneginf(cleaned)
    low, high = cleaned - slack, cleaned + slack
    inf = float("inf")
    # The t-th largest lower bound: a possible block's upper bound reaches it.
    low_sel = torch.where(selectable, low, torch.full_like(low, -inf))
    high_sel = torch.where(selectable, high, torch.full_like(high, -inf))
    threshold = torch.topk(low_sel, t, dim=1).values[:, -1:]
    possible = selectable & (high >= threshold)
    # Sure: at most t blocks (itself included) have an upper bound >= its lower bound.
    ascending = high_sel.sort(1).values
    reach = nb - torch.searchsorted(ascending, low_sel.contiguous(), right=False)
    sure = selectable & (reach <= t)
    determined = ((possible == sure) | ~selectable).all(1)

    valid = out >= 0
    columns = torch.where(valid, out.long() + ks.long()[:, None], torch.zeros_like(out, dtype=torch.long))
    assert bool((columns[valid] < n).all()), f"{what}: an offset past the keys"
    block_of = columns // kb
    ok = possible.gather(1, block_of) | ~valid
    bad = (~ok).any(1).nonzero().flatten()
    assert bad.numel() == 0, (
        f"{what}: row {int(bad[0])} selected a token of block "
        f"{int(block_of[bad[0]][~ok[bad[0]]][0])}, which no top-{t} of the block logits takes")

    z, z_slack = ref_indexer_logits(torch, q, k, k_scale, weights)
    col = torch.arange(n, device=z.device)[None, :]
    inside = (col >= ks.long()[:, None]) & (col < ke.long()[:, None])
    hits = torch.zeros((m, n), dtype=torch.int32, device=z.device)
    hits.scatter_add_(1, columns, valid.int())
    chosen = (hits > 0) & inside
    assert bool((chosen.sum(1) == valid.sum(1)).all()), f"{what}: an offset outside the window"
    candidates = inside & sure.gather(1, (col // kb).expand(m, n))
    count = valid.sum(1)
    assert bool((count <= kk).all()), f"{what}: more than min(topk_tokens, T * kb) offsets"
    need = candidates.sum(1).clamp(max=kk)
    bad = (count < need).nonzero().flatten()
    assert bad.numel() == 0, (f"{what}: row {int(bad[0])} has {int(count[bad[0]])} offsets; its "
                              f"sure blocks alone hold {int(need[bad[0]])} tokens to select")
    left = candidates & ~chosen
    full = count == kk
    bad = (left.any(1) & ~full).nonzero().flatten()
    assert bad.numel() == 0, (f"{what}: row {int(bad[0])} selected {int(count[bad[0]])} < {kk} "
                              "tokens but left out one of a sure block")
    lowest = torch.where(chosen, z + z_slack, torch.full_like(z, inf)).amin(1)
    highest_left = torch.where(left, z - z_slack, torch.full_like(z, -inf)).amax(1)
    bad = (highest_left > lowest).nonzero().flatten()
    assert bad.numel() == 0, (
        f"{what}: row {int(bad[0])} left out a token of a sure block scoring "
        f"{float(highest_left[bad[0]]):.6g} (less its slack) above a selected "
        f"{float(lowest[bad[0]]):.6g} (plus its slack)")
    return float(determined.double().mean())


def assert_bitwise_equal(torch, actual, expected, what, extra=""):
    """Exact comparison of two tensors (float32, bfloat16, int32 ...) through
    their bit patterns (an integer view of the element's width, so that the
    positions reported are the tensor's own)."""
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    bits = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[actual.element_size()]
    a = actual.view(bits)
    b = expected.view(bits)
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
