"""The MQA logits operators: hisa.pool_mqa_logits (KERNELS.md 1.2),
hisa.mqa_logits (the flat V3.2 indexer) and hisa.block_sparse_mqa_logits
(KERNELS.md 2.1).

Checked against float references on fresh random data: packed causal
sequences (cu_seqlens -> ks/ke), odd sizes, query subsets (M != N), empty
windows, int64 windows and block indices, block indices outside the window,
past the end and -1. Per element |out - ref| <= 2e-3 * sum_h |q.k| * scale *
|w| + 1e-4 (fp8 products are exact in f32; the bound covers the order of the
f32 accumulation). pool/flat logits are compared inside the windows only
(outside is unspecified); the -inf mask of block_sparse_mqa_logits exactly.
Then argument validation: every bad argument raises a ValueError naming it.
"""

import random

import pytest

from hisa_testutil import (
    block_windows,
    cu_seqlens_random,
    fresh_seed,
    ks_ke_from_cu_seqlens,
    random_fp8,
    random_k_scale,
    require_gpu,
)

torch, hisa = require_gpu()

FP8 = torch.float8_e4m3fn
DIM = 128
HEADS = [16, 32, 64, 128]
# (heads H, head dimension D): every H with D = 128, and D = 64 (64-byte
# swizzled tiles) with the smallest and the DeepSeek head counts.
SHAPES = [(h, 128) for h in HEADS] + [(16, 64), (64, 64)]
BLOCK_SIZES = [64, 128, 256]


# ---- data ----------------------------------------------------------------------


def random_q(m, heads, dim=DIM):
    return random_fp8(torch, m * heads, dim).view(m, heads, dim)


def random_weights(m, heads):
    return torch.randn(m, heads, device="cuda") / heads**0.5


def packed_windows(n, num_seqs, rng, m=None, empty=False):
    """Token windows (ks, ke) int32 of num_seqs ragged causal sequences packed
    into n rows; with m, the windows of m distinct random queries (m != n);
    with empty, every 7th query gets an empty window (ke = ks)."""
    ks, ke = ks_ke_from_cu_seqlens(torch, cu_seqlens_random(torch, n, num_seqs))
    if m is not None:
        rows = torch.tensor(sorted(rng.sample(range(n), m)), device="cuda", dtype=torch.int64)
        ks, ke = ks[rows].contiguous(), ke[rows].contiguous()
    if empty:
        ke = ke.clone()
        ke[::7] = ks[::7]
    return ks, ke


def raw(t):
    """t with fp8 reinterpreted as uint8 (for exact comparisons)."""
    return t.view(torch.uint8) if t.dtype == FP8 else t


# ---- references ------------------------------------------------------------------

CHUNK = 64  # queries per reference step (bounds the [chunk, H, J] temporaries)


def ref_dense(q, keys, scales, weights, chunk=CHUNK):
    """(expected, tolerance) [M, J] f32 of sum_h ReLU(q[m,h].keys[j] * scales[j]) * w[m,h]."""
    kf = keys.float()
    kabs = kf.abs()
    s = scales.reshape(-1).float()
    expected, tolerance = [], []
    for m0 in range(0, q.shape[0], chunk):
        qc = q[m0 : m0 + chunk].float()
        wc = weights[m0 : m0 + chunk]
        dots = torch.einsum("mhd,jd->mhj", qc, kf) * s[None, None, :]
        expected.append((dots.clamp(min=0) * wc[:, :, None]).sum(1))
        magnitude = torch.einsum("mhd,jd->mhj", qc.abs(), kabs) * s.abs()[None, None, :]
        tolerance.append((magnitude * wc.abs()[:, :, None]).sum(1) * 2e-3 + 1e-4)
    return torch.cat(expected), torch.cat(tolerance)


def ref_block_sparse(q, k, k_scale, index, kb, weights, ks, ke):
    """(expected, tolerance, valid) [M, T*kb] per KERNELS.md 2.1 (int64 arithmetic)."""
    n = k.shape[0]
    m, topk = index.shape
    slots = torch.arange(topk * kb, device="cuda")
    block = index.long()[:, slots // kb]
    rows = block * kb + (slots % kb)[None, :]
    valid = (block >= 0) & (rows >= ks.long()[:, None]) & (rows < ke.long()[:, None]) & (rows < n)
    safe = rows.clamp(0, n - 1)
    kf = k.float()
    s = k_scale.reshape(-1).float()
    expected, tolerance = [], []
    for m0 in range(0, m, CHUNK):
        qc = q[m0 : m0 + CHUNK].float()
        wc = weights[m0 : m0 + CHUNK]
        sc = safe[m0 : m0 + CHUNK]
        gathered = kf[sc]  # [chunk, T*kb, D]
        scale = s[sc][:, None, :]
        dots = torch.einsum("mhd,mjd->mhj", qc, gathered) * scale
        expected.append((dots.clamp(min=0) * wc[:, :, None]).sum(1))
        magnitude = torch.einsum("mhd,mjd->mhj", qc.abs(), gathered.abs()) * scale.abs()
        tolerance.append((magnitude * wc.abs()[:, :, None]).sum(1) * 2e-3 + 1e-4)
    return torch.cat(expected), torch.cat(tolerance), valid


def check_inside_windows(logits, expected, tolerance, starts, ends, seed):
    m, cols = logits.shape
    col = torch.arange(cols, device="cuda")
    inside = (col[None, :] >= starts.long()[:, None]) & (col[None, :] < ends.long()[:, None])
    assert not torch.isnan(logits[inside]).any(), f"NaN in-window logits (seed {seed})"
    error = (logits - expected).abs()
    bad = ~(error <= tolerance) & inside
    if bool(bad.any()):
        where = bad.nonzero()[:5].tolist()
        samples = ", ".join(
            f"{tuple(i)}: got {logits[tuple(i)].item()!r}, expected {expected[tuple(i)].item()!r}"
            for i in where
        )
        raise AssertionError(
            f"{int(bad.sum())} in-window logits off (seed {seed}); max error "
            f"{error[inside].max().item()}; first: {samples}"
        )


# ---- pool_mqa_logits ---------------------------------------------------------------

# (n tokens, sequences, kb, queries m (None: m = n), int64 windows, scale [Nb, 1], empty windows).
# Every 6th query's bke goes past Nb (by 3, or by 2**33 for int64 windows, whose
# every 5th bks is also -2**35): the kernel clips them to [0, Nb].
POOL_CASES = [
    (1, 1, 128, None, False, False, False),
    (1000, 1, 128, None, False, False, False),
    (4097, 5, 64, None, True, True, False),
    (2500, 3, 256, 777, False, False, True),
]


@pytest.mark.parametrize("heads,dim", SHAPES)
@pytest.mark.parametrize("n,num_seqs,kb,m,int64,scale_2d,empty", POOL_CASES)
def test_pool_mqa_logits(heads, dim, n, num_seqs, kb, m, int64, scale_2d, empty):
    seed = fresh_seed(torch)
    rng = random.Random(seed)
    ks, ke = packed_windows(n, num_seqs, rng, m, empty)
    m = ks.shape[0]
    bks, bke = block_windows(torch, ks, ke, kb)
    nb = -(-n // kb)
    if int64:
        bks, bke = bks.long(), bke.long()
        bks[::5] -= 2**35
        bke[::6] += 2**33
    else:
        bke[::6] += 3
    q = random_q(m, heads, dim)
    blocked_k = random_fp8(torch, nb, dim)
    blocked_scale = torch.rand(nb, device="cuda") + 0.5
    weights = random_weights(m, heads)
    scale_arg = blocked_scale[:, None] if scale_2d else blocked_scale
    inputs = (q, blocked_k, scale_arg, weights, bks, bke)
    copies = [t.clone() for t in inputs]

    logits = hisa.pool_mqa_logits(*inputs)
    torch.cuda.synchronize()
    assert logits.shape == (m, nb) and logits.dtype == torch.float32
    assert logits.device == q.device and logits.is_contiguous()
    for before, after in zip(copies, inputs):
        assert torch.equal(raw(before), raw(after)), "an input was modified"
    expected, tolerance = ref_dense(q, blocked_k, blocked_scale, weights)
    check_inside_windows(logits, expected, tolerance, bks, bke, seed)


# The anchor configurations of the issue: H=64, D=128, kb=128, M = N tokens
# of 1 or 16 packed causal sequences.
@pytest.mark.parametrize("n", [32768, 65536, 131072])
@pytest.mark.parametrize("num_seqs", [1, 16])
def test_pool_mqa_logits_anchor(n, num_seqs):
    seed = fresh_seed(torch)
    heads, dim, kb = 64, 128, 128
    ks, ke = packed_windows(n, num_seqs, random.Random(seed))
    bks, bke = block_windows(torch, ks, ke, kb)
    nb = n // kb
    q = random_q(n, heads, dim)
    blocked_k = random_fp8(torch, nb, dim)
    blocked_scale = torch.rand(nb, device="cuda") + 0.5
    weights = random_weights(n, heads)
    logits = hisa.pool_mqa_logits(q, blocked_k, blocked_scale, weights, bks, bke)
    torch.cuda.synchronize()
    expected, tolerance = ref_dense(q, blocked_k, blocked_scale, weights, chunk=1024)
    check_inside_windows(logits, expected, tolerance, bks, bke, seed)


# ---- mqa_logits (flat indexer) -------------------------------------------------------

# (n tokens, sequences, queries m (None: m = n), int64 windows, empty windows)
FLAT_CASES = [
    (129, 2, None, False, False),
    (1000, 1, None, False, True),
    (3001, 4, 1200, True, False),
]


@pytest.mark.parametrize("heads,dim", SHAPES)
@pytest.mark.parametrize("n,num_seqs,m,int64,empty", FLAT_CASES)
def test_mqa_logits(heads, dim, n, num_seqs, m, int64, empty):
    seed = fresh_seed(torch)
    rng = random.Random(seed)
    ks, ke = packed_windows(n, num_seqs, rng, m, empty)
    m = ks.shape[0]
    q = random_q(m, heads, dim)
    k = random_fp8(torch, n, dim)
    k_scale = random_k_scale(torch, n)
    weights = random_weights(m, heads)
    ks_arg, ke_arg = (ks.long(), ke.long()) if int64 else (ks, ke)

    logits = hisa.mqa_logits(q, k, k_scale, weights, ks_arg, ke_arg)
    torch.cuda.synchronize()
    assert logits.shape == (m, n) and logits.dtype == torch.float32
    expected, tolerance = ref_dense(q, k, k_scale, weights)
    check_inside_windows(logits, expected, tolerance, ks, ke, seed)


def test_mqa_logits_negative_int32_starts_count_as_zero():
    # int32 windows reach the kernel as given: a start of -2**31 used to
    # make a tile of queries walk 2**31 keys before its window (a launch
    # that never ended). It counts as 0, as an int64 one is clamped.
    seed = fresh_seed(torch)
    m, n, heads, dim = 300, 1000, 64, 128
    q = random_q(m, heads, dim)
    k = random_fp8(torch, n, dim)
    k_scale = random_k_scale(torch, n)
    weights = random_weights(m, heads)
    ke = torch.randint(1, n + 1, (m,), device="cuda", dtype=torch.int32)
    ks = torch.zeros(m, dtype=torch.int32, device="cuda")
    ks[::3] = -2**31
    ks[1::3] = -7
    logits = hisa.mqa_logits(q, k, k_scale, weights, ks, ke)
    torch.cuda.synchronize()
    expected, tolerance = ref_dense(q, k, k_scale, weights)
    check_inside_windows(logits, expected, tolerance, ks.clamp(min=0), ke, seed)


# ---- block_sparse_mqa_logits -------------------------------------------------------------


def random_block_index(ks, ke, kb, n, topk, huge):
    """[M, T] int64 block indices: ~half inside the query's window, the rest
    anywhere in [-1, nblocks], -1, past the end, and (huge) beyond int32."""
    m = ks.shape[0]
    nblocks = -(-n // kb)
    first = torch.div(ks.long(), kb, rounding_mode="floor")
    last = torch.div(ke.long() + kb - 1, kb, rounding_mode="floor")  # exclusive
    span = (last - first).clamp(min=1)
    inside = first[:, None] + (torch.rand(m, topk, device="cuda") * span[:, None]).long()
    anywhere = torch.randint(-1, nblocks + 1, (m, topk), device="cuda")
    past = nblocks + torch.randint(0, 3, (m, topk), device="cuda")
    u = torch.rand(m, topk, device="cuda")
    index = torch.where(u < 0.5, inside, anywhere)
    index = torch.where((u >= 0.85) & (u < 0.92), torch.full_like(index, -1), index)
    index = torch.where(u >= 0.92, past, index)
    if huge:
        big = torch.randint(2**31, 2**40, (m, topk), device="cuda")
        very_negative = -torch.randint(2, 2**40, (m, topk), device="cuda")
        v = torch.rand(m, topk, device="cuda")
        index = torch.where(v < 0.05, big, index)
        index = torch.where(v > 0.95, very_negative, index)
    return index


# (n tokens, sequences, T, queries m (None: m = n), int64 indices/windows + huge values, empty).
# Every 5th query's window starts below 0 (so the rows of block -1 are inside
# it) and every 6th ends past N (so the rows of blocks past the end are): both
# must still be -inf.
SPARSE_CASES = [
    (1000, 1, 8, None, False, False),
    (1517, 3, 5, 600, True, True),
]


def signed_k_scale(n, seed):
    """Per-token scales, a few of them negative in every other 64-key tile
    (those tiles take the kernels' ReLU(x * s) path, the others s * ReLU(x))."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    scale = random_k_scale(torch, n)
    key = torch.arange(n, device="cuda")
    flip = ((key // 64) % 2 == 1) & (torch.rand(n, device="cuda", generator=gen) < 0.2)
    return torch.where(flip, -scale, scale)


def run_block_sparse(heads, kb, n, num_seqs, topk, m, int64, empty, seed, dim=DIM,
                     signed_scales=False):
    rng = random.Random(seed)
    ks, ke = packed_windows(n, num_seqs, rng, m, empty)
    m = ks.shape[0]
    q = random_q(m, heads, dim)
    k = random_fp8(torch, n, dim)
    k_scale = signed_k_scale(n, seed) if signed_scales else random_k_scale(torch, n)
    weights = random_weights(m, heads)
    index = random_block_index(ks, ke, kb, n, topk, huge=int64)
    if int64:
        ks, ke = ks.long(), ke.long()
        ks[::5] -= 2**35
        ke[::6] += 2**33
        args = (q, k, k_scale, index, kb, weights, ks, ke)
    else:
        ks[::5] -= 2 * kb
        ke[::6] = n + 5
        args = (q, k, k_scale, index.int(), kb, weights, ks, ke)

    out = hisa.block_sparse_mqa_logits(*args)
    torch.cuda.synchronize()
    assert out.shape == (m, topk * kb) and out.dtype == torch.float32
    assert out.device == q.device and out.is_contiguous()
    expected, tolerance, valid = ref_block_sparse(q, k, k_scale, index, kb, weights, ks, ke)
    mask_ok = torch.isneginf(out) == ~valid
    assert bool(mask_ok.all()), (
        f"-inf mask differs at {int((~mask_ok).sum())} slots (seed {seed}); first "
        f"{(~mask_ok).nonzero()[:5].tolist()}"
    )
    assert not torch.isposinf(out).any() and not torch.isnan(out).any(), f"seed {seed}"
    error = (out - expected).abs()
    assert bool((error[valid] <= tolerance[valid]).all()), (
        f"max error {error[valid].max().item()} (seed {seed})"
    )
    return valid


@pytest.mark.parametrize("heads,dim", SHAPES)
@pytest.mark.parametrize("kb", BLOCK_SIZES)
@pytest.mark.parametrize("n,num_seqs,topk,m,int64,empty", SPARSE_CASES)
def test_block_sparse_mqa_logits(heads, dim, kb, n, num_seqs, topk, m, int64, empty):
    seed = fresh_seed(torch)
    valid = run_block_sparse(heads, kb, n, num_seqs, topk, m, int64, empty, seed, dim)
    assert bool(valid.any()) and not bool(valid.all())  # both paths exercised


# The anchor configurations of the issue: H=64, D=128, kb=128, M = 1024 to
# 8192 queries of N-token packed causal sequences, T = 32 to 128 blocks.
@pytest.mark.parametrize(
    "n,num_seqs,topk,m",
    [(8192, 1, 128, None), (32768, 4, 32, 1024), (16384, 16, 64, 4096), (65536, 2, 96, 2048)],
)
def test_block_sparse_mqa_logits_anchor(n, num_seqs, topk, m):
    seed = fresh_seed(torch)
    valid = run_block_sparse(64, 128, n, num_seqs, topk, m, False, False, seed)
    assert bool(valid.any()) and not bool(valid.all())


@pytest.mark.parametrize("heads,dim", SHAPES)
@pytest.mark.parametrize("kb", BLOCK_SIZES)
def test_block_sparse_mqa_logits_signed_scales(heads, dim, kb):
    """Negative k_scale entries: KERNELS.md's ReLU(dot * k_scale), not
    k_scale * ReLU(dot), on the tiles that have them."""
    seed = fresh_seed(torch)
    valid = run_block_sparse(heads, kb, 3000, 2, 12, 300, False, False, seed, dim,
                             signed_scales=True)
    assert bool(valid.any())


def test_block_sparse_mqa_logits_tiny():
    # One token, one query, three slots (block 0, -1 or past the end).
    seed = fresh_seed(torch)
    for kb in BLOCK_SIZES:
        run_block_sparse(64, kb, 1, 1, 3, None, False, False, seed)


def test_empty_sizes_do_not_launch(monkeypatch):
    def no_launch(*args, **kwargs):
        raise AssertionError("an empty problem launched a kernel")

    monkeypatch.setattr(hisa.ops, "_run", no_launch)
    i32 = dict(dtype=torch.int32, device="cuda")
    for heads in HEADS:
        # M == 0
        q0 = random_q(0, heads)
        k = random_fp8(torch, 300, DIM)
        k_scale = random_k_scale(torch, 300)
        w0 = random_weights(0, heads)
        e0 = torch.empty(0, **i32)
        assert hisa.pool_mqa_logits(q0, k, k_scale, w0, e0, e0).shape == (0, 300)
        assert hisa.mqa_logits(q0, k, k_scale, w0, e0, e0).shape == (0, 300)
        out = hisa.block_sparse_mqa_logits(q0, k, k_scale, torch.empty(0, 4, **i32), 64, w0, e0, e0)
        assert out.shape == (0, 256)
        # Nb == 0 / N == 0
        q = random_q(5, heads)
        w = random_weights(5, heads)
        s = torch.zeros(5, **i32)
        k_none = torch.empty(0, DIM, dtype=FP8, device="cuda")
        scale_none = torch.empty(0, device="cuda")
        assert hisa.pool_mqa_logits(q, k_none, scale_none, w, s, s).shape == (5, 0)
        assert hisa.mqa_logits(q, k_none, scale_none, w, s, s).shape == (5, 0)
        index = torch.zeros(5, 2, **i32)
        out = hisa.block_sparse_mqa_logits(q, k_none, scale_none, index, 128, w, s, s + 7)
        assert out.shape == (5, 256) and bool(torch.isneginf(out).all())
        # T == 0
        out = hisa.block_sparse_mqa_logits(q, k, k_scale, torch.empty(5, 0, **i32), 128, w, s, s)
        assert out.shape == (5, 0) and out.dtype == torch.float32


# ---- validation ----------------------------------------------------------------------

M, N, H, KB, T = 37, 300, 64, 128, 3
NB = -(-N // KB)


def names(arg):
    """Regex matching `arg` as a whole word (so 'k' does not match 'k_scale')."""
    return rf"(?<![\w.]){arg}(?!\w)"


def good_pool():
    return dict(
        q=random_q(M, H),
        blocked_k=random_fp8(torch, NB, DIM),
        blocked_k_scale=torch.rand(NB, device="cuda") + 0.5,
        weights=random_weights(M, H),
        bks=torch.zeros(M, dtype=torch.int32, device="cuda"),
        bke=torch.full((M,), NB, dtype=torch.int32, device="cuda"),
    )


def good_flat():
    return dict(
        q=random_q(M, H),
        k=random_fp8(torch, N, DIM),
        k_scale=random_k_scale(torch, N),
        weights=random_weights(M, H),
        ks=torch.zeros(M, dtype=torch.int32, device="cuda"),
        ke=torch.full((M,), N, dtype=torch.int32, device="cuda"),
    )


def good_sparse():
    return dict(
        q=random_q(M, H),
        k=random_fp8(torch, N, DIM),
        k_scale=random_k_scale(torch, N),
        topk_block_index=torch.zeros(M, T, dtype=torch.int32, device="cuda"),
        k_block_size=KB,
        weights=random_weights(M, H),
        ks=torch.zeros(M, dtype=torch.int32, device="cuda"),
        ke=torch.full((M,), N, dtype=torch.int32, device="cuda"),
    )


OPS = {
    "pool_mqa_logits": good_pool,
    "mqa_logits": good_flat,
    "block_sparse_mqa_logits": good_sparse,
}
OP_NAMES = list(OPS)


def call(op, args):
    return getattr(hisa, op)(**args)


def tensor_args(op):
    return [name for name, value in OPS[op]().items() if isinstance(value, torch.Tensor)]


def strided(t):
    """A non-contiguous tensor with t's shape, dtype and values."""
    if t.dtype == FP8:
        return strided(t.view(torch.uint8)).view(FP8)
    return torch.stack([t, t], dim=-1)[..., 0]


def misaligned(t):
    """A contiguous copy of t whose data pointer is not 16-byte aligned."""
    size = t.element_size()
    nbytes = t.numel() * size
    flat = torch.zeros(nbytes + 32, dtype=torch.uint8, device=t.device)
    view = flat[size : size + nbytes].view(t.dtype).view(t.shape)
    raw(view).copy_(raw(t))
    assert view.is_contiguous() and view.data_ptr() % 16 != 0
    return view


WRONG_DTYPE = {
    FP8: (torch.bfloat16, "float8_e4m3fn"),
    torch.float32: (torch.bfloat16, "float32"),
    torch.int32: (torch.float32, "int32"),
}


def scale_name(op):
    return "blocked_k_scale" if op == "pool_mqa_logits" else "k_scale"


def keys_name(op):
    return "blocked_k" if op == "pool_mqa_logits" else "k"


@pytest.mark.parametrize("op", OP_NAMES)
def test_good_arguments_pass_validation(op, monkeypatch):
    launched = []
    monkeypatch.setattr(hisa.ops, "_run", lambda *a, **kw: launched.append(a))
    call(op, OPS[op]())
    # The scale may also be a column [N, 1]; the kernel gets it as [N].
    args = OPS[op]()
    args[scale_name(op)] = args[scale_name(op)][:, None].contiguous()
    call(op, args)
    assert len(launched) == 2
    function = "hisa_pool_mqa_logits" if op != "block_sparse_mqa_logits" else "hisa_" + op
    assert launched[0][0] == launched[1][0] == function
    # _run(function, device, q, keys, scale, ...): the C ABI takes the
    # contiguous scale column as the [N] vector it is.
    assert launched[1][4].numel() == args[scale_name(op)].shape[0]
    assert launched[0][1] == launched[1][1]


@pytest.mark.parametrize("op", OP_NAMES)
def test_not_a_tensor(op):
    for arg in tensor_args(op):
        args = OPS[op]()
        args[arg] = [[0]]
        with pytest.raises(ValueError, match=names(arg) + ".*torch.Tensor"):
            call(op, args)


@pytest.mark.parametrize("op", OP_NAMES)
def test_cpu_tensors(op):
    for arg in tensor_args(op):
        args = OPS[op]()
        args[arg] = args[arg].cpu()
        with pytest.raises(ValueError, match=names(arg) + ".*CUDA"):
            call(op, args)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_different_devices():
    for op in OP_NAMES:
        for arg in tensor_args(op)[1:]:
            args = OPS[op]()
            args[arg] = args[arg].to("cuda:1")
            with pytest.raises(ValueError, match=names(arg) + ".*same device"):
                call(op, args)


@pytest.mark.parametrize("op", OP_NAMES)
def test_wrong_dtype(op):
    for arg in tensor_args(op):
        args = OPS[op]()
        good = args[arg]
        bad_dtype, expected = WRONG_DTYPE[good.dtype]
        args[arg] = good.float().to(bad_dtype) if good.dtype == FP8 else good.to(bad_dtype)
        with pytest.raises(ValueError, match=names(arg) + ".*" + expected):
            call(op, args)
    # Other near misses: fp8 e5m2, float64 scales, int16 windows / indices.
    args = OPS[op]()
    args["q"] = args["q"].float().to(torch.float8_e5m2)
    with pytest.raises(ValueError, match=names("q") + ".*float8_e4m3fn"):
        call(op, args)
    scale = scale_name(op)
    args = OPS[op]()
    args[scale] = args[scale].double()
    with pytest.raises(ValueError, match=names(scale) + ".*float32"):
        call(op, args)
    last = tensor_args(op)[-1]  # bke / ke
    args = OPS[op]()
    args[last] = args[last].to(torch.int16)
    with pytest.raises(ValueError, match=names(last) + ".*int32.*int64"):
        call(op, args)


@pytest.mark.parametrize("op", OP_NAMES)
def test_wrong_shapes(op):
    keys, scale = keys_name(op), scale_name(op)
    starts, ends = ("bks", "bke") if op == "pool_mqa_logits" else ("ks", "ke")
    bad = [
        ("q", lambda a: a["q"].view(M * H, DIM), r"3-D"),
        ("q", lambda a: a["q"][:, None], r"3-D"),
        (keys, lambda a: a[keys].view(-1), r"2-D"),
        (keys, lambda a: a[keys].view(torch.uint8)[:, :64].contiguous().view(FP8), r"shape"),
        (scale, lambda a: a[scale][:-1].contiguous(), r"shape"),
        (scale, lambda a: a[scale][None, :].contiguous(), r"shape"),
        ("weights", lambda a: a["weights"][:-1].contiguous(), r"shape \[M, H\]"),
        ("weights", lambda a: a["weights"].view(M, H // 2, 2), r"shape"),
        (starts, lambda a: a[starts][:-1].contiguous(), r"shape \[M\]"),
        (ends, lambda a: a[ends][:, None].contiguous(), r"shape \[M\]"),
    ]
    if op == "block_sparse_mqa_logits":
        bad += [
            ("topk_block_index", lambda a: a["topk_block_index"].view(-1), r"2-D"),
            (
                "topk_block_index",
                lambda a: a["topk_block_index"][:-1].contiguous(),
                r"shape \[M, T\]",
            ),
        ]
    for arg, make, message in bad:
        args = OPS[op]()
        args[arg] = make(args)
        with pytest.raises(ValueError, match=names(arg) + ".*" + message):
            call(op, args)


@pytest.mark.parametrize("op", OP_NAMES)
def test_non_contiguous(op):
    for arg in tensor_args(op):
        args = OPS[op]()
        args[arg] = strided(args[arg])
        assert not args[arg].is_contiguous()
        with pytest.raises(ValueError, match=names(arg) + ".*contiguous"):
            call(op, args)


@pytest.mark.parametrize("op", OP_NAMES)
def test_misaligned(op):
    for arg in ("q", keys_name(op), scale_name(op), "weights"):
        args = OPS[op]()
        args[arg] = misaligned(args[arg])
        with pytest.raises(ValueError, match=names(arg) + ".*16-byte aligned"):
            call(op, args)


@pytest.mark.parametrize("op", OP_NAMES)
def test_unsupported_heads_or_dim(op):
    keys = keys_name(op)
    for heads, dim in [(8, 128), (48, 128), (96, 128), (256, 64), (128, 256), (64, 192), (64, 32)]:
        args = OPS[op]()
        rows = args[keys].shape[0]
        args["q"] = random_fp8(torch, M * heads, dim).view(M, heads, dim)
        args["weights"] = random_weights(M, heads)
        args[keys] = random_fp8(torch, rows, dim)
        what = f"D={dim}" if heads in (16, 32, 64, 128) else f"H={heads}"
        with pytest.raises(ValueError, match=names("q") + ".*" + what + r".*supported"):
            call(op, args)


def test_unsupported_block_size():
    for kb in [0, 32, 100, 512, -128, 128.0, "128", True, None]:
        args = good_sparse()
        args["k_block_size"] = kb
        with pytest.raises(ValueError, match=names("k_block_size")):
            call("block_sparse_mqa_logits", args)


def test_int64_indices_converted(monkeypatch):
    """int64 windows and indices reach the kernels as int32: block-sparse
    ones saturated to the int32 range, pool/flat windows clamped to [0, rows]."""
    launched = []
    monkeypatch.setattr(hisa.ops, "_run", lambda *a, **kw: launched.append(a))
    args = good_sparse()
    index = torch.tensor([[-5, 2**33, 1]] * M, device="cuda")
    args.update(topk_block_index=index, ks=args["ks"].long() - 2**40, ke=args["ke"].long() + 2**40)
    call("block_sparse_mqa_logits", args)
    _, _, q, k, k_scale, got_index, weights, ks, ke, out, *_ = launched[-1]
    assert got_index.dtype == ks.dtype == ke.dtype == torch.int32
    assert got_index[0].tolist() == [-5, 2**31 - 1, 1]
    assert set(ks.tolist()) == {-(2**31)} and set(ke.tolist()) == {2**31 - 1}

    for op, starts, ends, rows in (
        ("pool_mqa_logits", "bks", "bke", NB),
        ("mqa_logits", "ks", "ke", N),
    ):
        args = OPS[op]()
        lo = torch.tensor([-2**40, -5, 0, 1, rows + 7] * 7 + [2] * (M - 35), device="cuda")
        args.update({starts: lo, ends: torch.full_like(lo, 2**40)})
        call(op, args)
        _, _, _, _, _, _, got_starts, got_ends, logits, *_ = launched[-1]
        assert got_starts.dtype == got_ends.dtype == torch.int32
        assert got_starts.tolist() == lo.clamp(0, rows).tolist()
        assert set(got_ends.tolist()) == {rows}
