"""hisa.sparse_attn (kernels-dsl/sparse_attn.mlir) against an f32 torch
reference: KERNELS.md "DeepSeek-V4 sparse attention".

Checked: relative L2 error of o below 1e-2 and no NaN, and of every
(b, s, h) row below ROW_ERROR; lse within 1e-3 (absolute, natural log); rows
whose indices are all invalid give exactly 0.
"""

import math

import pytest

from hisa_testutil import fresh_seed, require_gpu

torch, hisa = require_gpu()

D = 512

# The relative L2 error of each (b, s, h) row of o: one wrong row among
# thousands moves the global error by about 1 / sqrt(rows) only. A correct
# kernel's row error comes from P rounded to bf16 before the P.V product and
# o rounded to bf16 (each at most 2^-8 relative per element), the f32 sums
# adding little: emulated on the CPU (bf16 P and o, f32 sums, stale maxima
# up to 2^5.5, scores up to 8x), 2.0e-3 to 3.3e-3 at worst per row for
# D = 512, K 64..2048 and dense D = 64 / 128, S up to 2048. 2e-2
# leaves a margin of 6 and still flags a row that read a wrong key, head or
# position.
ROW_ERROR = 2e-2


def check_rows(o, ref_o, what=""):
    """Every row (the last dim) of o within ROW_ERROR of ref_o, relatively; a
    row whose reference is 0 (no valid index, or a sink that swamps every
    score) within ROW_ERROR absolutely."""
    diff = (o.float() - ref_o).norm(dim=-1)
    norm = ref_o.norm(dim=-1)
    error = torch.where(norm > 0, diff / norm.clamp(min=1e-30), diff)
    worst = int(error.argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), error.shape))
    assert float(error.max()) < ROW_ERROR, (
        f"{what}row {index}: relative L2 error {float(error.max()):.3e} "
        f"(rows over {ROW_ERROR}: {int((error >= ROW_ERROR).sum())} of {error.numel()})")


def reference(q, kv, attn_sink, idx, scale):
    """o [B, S, H, D] f32 and lse [B, S, H] f32, computed in f32."""
    b, s, h, _ = q.shape
    nkv = kv.shape[1]
    valid = (idx >= 0) & (idx < nkv)
    safe = torch.where(valid, idx, torch.zeros_like(idx)).long()
    batch = torch.arange(b, device=q.device)[:, None, None]
    gathered = kv.float()[batch, safe]                         # [B, S, K, D]
    scores = torch.einsum("bshd,bskd->bshk", q.float(), gathered) * scale
    scores = scores.masked_fill(~valid[:, :, None, :], float("-inf"))
    sink = attn_sink.float()[None, None, :]
    m = torch.maximum(scores.amax(-1), sink)                   # finite: the sink
    e = torch.exp(scores - m[..., None])
    denominator = e.sum(-1) + torch.exp(sink - m)
    o = torch.einsum("bshk,bskd->bshd", e, gathered) / denominator[..., None]
    return o, torch.log(denominator) + m


def check(q, kv, attn_sink, idx, scale=D ** -0.5):
    o, lse = hisa.sparse_attn(q, kv, attn_sink, idx, scale, return_lse=True)
    torch.cuda.synchronize()
    ref_o, ref_lse = reference(q, kv, attn_sink, idx, scale)
    assert o.shape == q.shape and o.dtype == torch.bfloat16
    assert not torch.isnan(o).any(), "NaN in o"
    error = (o.float() - ref_o).norm() / ref_o.norm().clamp(min=1e-30)
    assert error < 1e-2, f"relative L2 error {error:.3e}"
    check_rows(o, ref_o)
    assert torch.allclose(lse, ref_lse, atol=1e-3, rtol=1e-4), \
        f"lse max error {(lse - ref_lse).abs().max():.3e}"
    # Without lse: the same o, but for the last bit of an element or two.
    # The two specializations compile separately, and ptxas may fuse a
    # multiply and an add in one and not the other: at B=3 S=2 K=37, one
    # element of 393216 differed by one bf16 step in 2 of 40 seeds (H100,
    # 2026-12-06), while repeated calls of either were always identical.
    o2 = hisa.sparse_attn(q, kv, attn_sink, idx, scale)
    differing = int((o != o2).sum())
    assert differing <= max(2, o.numel() // 100000), f"{differing} elements differ"
    torch.testing.assert_close(o2.float(), o.float(), rtol=2.0**-7, atol=1e-6)
    return o


def inputs(b, s, h, nkv, k, invalid=0.02, sink_scale=1.0):
    q = torch.randn(b, s, h, D, device="cuda").bfloat16()
    kv = torch.randn(b, nkv, D, device="cuda").bfloat16()
    attn_sink = torch.randn(h, device="cuda") * sink_scale
    idx = torch.randint(0, nkv, (b, s, k), device="cuda", dtype=torch.int32)
    idx[torch.rand(b, s, k, device="cuda") < invalid] = -1
    return q, kv, attn_sink, idx


@pytest.mark.parametrize(
    "b,s,h,nkv,k",
    [(1, 32, 64, 4096, 640),      # V4-Flash
     (1, 16, 128, 4096, 1152),    # V4-Pro
     (2, 9, 64, 300, 100),        # K not a multiple of 64, B > 1
     (1, 5, 16, 1000, 64),        # H < 64 (padded rows)
     (1, 7, 32, 50, 129),
     (3, 3, 128, 2048, 2048),
     # K <= 64 with B > 1: the indices' conversion to absolute rows ran on
     # the row statistics' layout (8 threads per index) and updated them in
     # place, a race that could add a batch's row base twice; fixed, and the
     # lowering now refuses such an update.
     (4, 3, 64, 500, 64),
     (3, 2, 128, 300, 37),
     (80, 1, 64, 2000, 64)],          # decode, one block per token (no split)
)
def test_random(b, s, h, nkv, k):
    fresh_seed(torch)
    check(*inputs(b, s, h, nkv, k))


@pytest.mark.parametrize("h,s,k", [(128, 1024, 700), (128, 1100, 4096), (64, 1024, 640),
                                   (64, 1030, 129)])
def test_prefill_runs_flashmla_schedule(h, s, k):
    # The operator runs sparse_attn_wg at H = 64 and 128 with >= 1024 tokens
    # (K padded to 128s, up to the largest K); checked in chunks of tokens
    # (the f32 reference gathers [S, K, 512]), and bit for bit against the
    # kernel launched directly.
    fresh_seed(torch)
    q, kv, attn_sink, idx = inputs(1, s, h, 4096, k)
    idx[0, 5] = -1                                # a whole row of -1
    idx[0, 6] = 3                                 # one index repeated K times
    o, lse = hisa.sparse_attn(q, kv, attn_sink, idx, D ** -0.5, return_lse=True)
    torch.cuda.synchronize()
    assert not torch.isnan(o).any(), "NaN in o"
    assert torch.equal(o[0, 5], torch.zeros_like(o[0, 5])), "all -1 row must give 0"
    for s0 in range(0, s, 128):
        s1 = min(s, s0 + 128)
        ref_o, ref_lse = reference(q[:, s0:s1], kv, attn_sink, idx[:, s0:s1], D ** -0.5)
        part = o[:, s0:s1].float()
        error = (part - ref_o).norm() / ref_o.norm().clamp(min=1e-30)
        assert error < 1e-2, f"tokens {s0}..{s1}: relative L2 error {error:.3e}"
        check_rows(part, ref_o, f"tokens {s0}..{s1}: ")
        assert torch.allclose(lse[:, s0:s1], ref_lse, atol=1e-3, rtol=1e-4), \
            f"tokens {s0}..{s1}: lse max error {(lse[:, s0:s1] - ref_lse).abs().max():.3e}"
    assert torch.equal(o, hisa.sparse_attn(q, kv, attn_sink, idx, D ** -0.5))
    assert torch.equal(o, run_wg_kernel(q, kv, attn_sink, idx)[0])


def test_repeated_out_of_order_and_invalid_indices():
    fresh_seed(torch)
    q, kv, attn_sink, idx = inputs(2, 12, 64, 500, 256)
    idx[0, 0] = 7                                 # one index repeated K times
    idx[0, 1] = torch.arange(255, -1, -1, device="cuda")  # descending
    idx[0, 2] = -1                                # a whole row of -1
    idx[0, 3, ::2] = -1
    idx[1, 0] = 600                               # past Nkv: invalid
    idx[1, 1, :10] = -5                           # other negatives: invalid
    o = check(q, kv, attn_sink, idx)
    assert torch.equal(o[0, 2], torch.zeros_like(o[0, 2])), "all -1 row must give 0"
    assert torch.equal(o[1, 0], torch.zeros_like(o[1, 0]))


@pytest.mark.parametrize("sink", [30.0, -30.0, float("-inf")])
def test_sink_extremes(sink):
    fresh_seed(torch)
    q, kv, attn_sink, idx = inputs(1, 8, 64, 1024, 192)
    attn_sink.fill_(sink)
    check(q, kv, attn_sink, idx)


@pytest.mark.parametrize("b,s,h,k", [(1, 300, 64, 192),    # one block per token
                                     (1, 1024, 64, 128),   # FlashMLA's schedule
                                     (64, 1, 64, 640),     # cluster pairs
                                     (1, 8, 64, 192)])     # splits + combine
def test_sink_far_above_the_scores(b, s, h, k):
    # A sink past f32's exp range above every score (exp2 of the gap
    # overflowed in the unsplit paths: lse = +inf): o = 0, lse = the sink.
    fresh_seed(torch)
    q, kv, attn_sink, idx = inputs(b, s, h, 4096, k)
    attn_sink.fill_(200.0)
    idx[0, 0] = -1                     # and a row with nothing valid
    o = check(q, kv, attn_sink, idx)
    assert torch.equal(o, torch.zeros_like(o))


def test_small_cache_and_int64_indices():
    fresh_seed(torch)
    q, kv, attn_sink, idx = inputs(1, 4, 64, 3, 64, invalid=0.3)
    o32 = check(q, kv, attn_sink, idx)
    o64 = hisa.sparse_attn(q, kv, attn_sink, idx.long(), D ** -0.5)
    assert torch.equal(o32, o64)


def test_large_scores_do_not_overflow():
    # Scores of ~1e3 in natural units: the online maximum keeps exp finite.
    fresh_seed(torch)
    q, kv, attn_sink, idx = inputs(1, 4, 64, 256, 128)
    check(q * 8, kv * 8, attn_sink, idx)


def test_decode_shapes():
    # Decode: S = 1 and 2 per sequence, many sequences.
    fresh_seed(torch)
    check(*inputs(16, 1, 64, 2048, 640))
    check(*inputs(8, 2, 128, 2048, 640))


@pytest.mark.parametrize("b,s,h,k", [(1, 1, 64, 2048), (3, 2, 128, 640), (2, 1, 16, 200)])
def test_decode_splits_few_tokens(b, s, h, k):
    # Few (token, 64 heads) blocks: each token's indices are split over
    # several blocks and merged by sparse_attn_combine (lse included).
    fresh_seed(torch)
    q, kv, attn_sink, idx = inputs(b, s, h, 5000, k)
    idx[0, 0, : k // 2] = -1          # the first splits of a token see nothing
    check(q, kv, attn_sink, idx)


@pytest.mark.parametrize("b,s,h,k", [(64, 1, 64, 640), (24, 2, 64, 129),
                                     (30, 1, 128, 200), (50, 1, 16, 100)])
def test_decode_cluster_pairs(b, s, h, k):
    # 45 to 66 (token, 64 heads) blocks: each token's index tiles go to a
    # cluster of two blocks, which merge their halves through distributed
    # shared memory (lse included): halves without a valid index, a row of
    # -1, K not a multiple of 64, H not a multiple of 64.
    seed = fresh_seed(torch)
    q, kv, attn_sink, idx = inputs(b, s, h, 5000, k)
    half = -(-k // 128) * 64           # the first block's share of the indices
    idx[0, 0, :half] = -1              # rank 0 sees nothing
    idx[1, 0, half:] = -1              # rank 1 sees nothing
    idx[-1, -1] = -1                   # nobody sees anything: 0
    o = check(q, kv, attn_sink, idx)
    assert torch.equal(o[-1, -1], torch.zeros_like(o[-1, -1])), f"seed {seed}"
    attn_sink.fill_(float("-inf"))
    o, lse = hisa.sparse_attn(q, kv, attn_sink, idx, D ** -0.5, return_lse=True)
    assert not torch.isnan(o).any(), f"seed {seed}"
    assert torch.equal(o[-1, -1], torch.zeros_like(o[-1, -1]))
    assert bool((lse[-1, -1] == float("-inf")).all())


def test_decode_split_without_valid_indices():
    # A token without a valid index gives 0 in every split and after the
    # combine; with a sink of -inf the denominator is 0: still 0, not NaN.
    fresh_seed(torch)
    q, kv, attn_sink, idx = inputs(1, 2, 64, 100, 640)
    idx[0, 0] = -1
    o, lse = hisa.sparse_attn(q, kv, attn_sink, idx, D ** -0.5, return_lse=True)
    assert torch.equal(o[0, 0], torch.zeros_like(o[0, 0]))
    assert torch.allclose(lse[0, 0], attn_sink)   # log(exp(sink))
    attn_sink.fill_(float("-inf"))
    o, lse = hisa.sparse_attn(q, kv, attn_sink, idx, D ** -0.5, return_lse=True)
    assert torch.equal(o[0, 0], torch.zeros_like(o[0, 0]))
    assert not torch.isnan(o).any()
    assert bool((lse[0, 0] == float("-inf")).all())


@pytest.mark.parametrize("h,k", [(64, 640), (128, 200)])
def test_partial_sums_variant(h, k):
    # sparse_attn with partial_sums=1 (each warpgroup keeps its own running
    # sum; one exchange after the loop): the same result within rounding.
    fresh_seed(torch)
    b, s, nkv = 1, 140, 3000
    q, kv, attn_sink, idx = inputs(b, s, h, nkv, k)
    expected = hisa.sparse_attn(q, kv, attn_sink, idx, D ** -0.5)
    o = run_plain_kernel(q, kv, attn_sink, idx)
    ref_o, _ = reference(q, kv, attn_sink, idx, D ** -0.5)
    error = (o.float() - ref_o).norm() / ref_o.norm()
    assert error < 1e-2, f"relative L2 error {error:.3e}"
    check_rows(o, ref_o)
    assert (o.float() - expected.float()).abs().max() < 3e-2


@pytest.mark.parametrize("key_half,h,k", [(16, 64, 200), (8, 100, 130), (16, 128, 640)])
def test_narrower_key_tiles(key_half, h, k):
    # kernels-dsl/sparse_attn.mlir with key tiles of 2 * key_half rows (the
    # operator uses 64; 32 and 16 measured slower at decode): the same
    # result within rounding, -1 rows and K past the last tile included.
    fresh_seed(torch)
    b, s, nkv = 2, 37, 3000
    q, kv, attn_sink, idx = inputs(b, s, h, nkv, k)
    idx[0, 0] = -1
    o = run_plain_kernel(q, kv, attn_sink, idx, key_half=key_half)
    ref_o, _ = reference(q, kv, attn_sink, idx, D ** -0.5)
    assert not o.isnan().any()
    assert torch.equal(o[0, 0], torch.zeros_like(o[0, 0]))
    error = (o.float() - ref_o).norm() / ref_o.norm()
    assert error < 1e-2, f"relative L2 error {error:.3e}"
    check_rows(o, ref_o)


def run_plain_kernel(q, kv, attn_sink, idx, **params):
    """kernels-dsl/sparse_attn.mlir (partial_sums = 1, no split, no lse)
    through the JIT with the operator's arguments, `params` added: o."""
    b, s, h, _ = q.shape
    nkv, k = kv.shape[1], idx.shape[2]
    kernel = hisa.jit.get_kernel("sparse_attn", {"topk_pad": -(-k // 64) * 64,
                                                 "head_blocks": -(-h // 64), "lse": 0,
                                                 "splits": 1, "partial_sums": 1, **params})
    o = torch.full_like(q, float("nan"))
    kernel.launch(q.view(b * s, h, D), kv.view(b * nkv, D), attn_sink, idx.view(b * s, k),
                  o.view(b * s, h, D), attn_sink.view(1, h), torch.empty(1, 1, 1, D, device="cuda"),
                  torch.empty(1, 1, 1, device="cuda"), *rope_tables_unused(), s, nkv, D ** -0.5, 0.0)
    torch.cuda.synchronize()
    return o


def rope_tables_unused():
    """The rope_cos, rope_sin and rope_base arguments of a sparse_attn
    kernel launched with rope = 0 (not read)."""
    return (torch.zeros(1, 32, device="cuda"), torch.zeros(1, 32, device="cuda"),
            torch.zeros(1, dtype=torch.int32, device="cuda"))


def run_wg_kernel(q, kv, attn_sink, idx, scale=D ** -0.5, name="sparse_attn_wg",
                  target=hisa.jit.DEFAULT_TARGET):
    """kernels-dsl/sparse_attn_wg.mlir (the warpgroups' own keys, FlashMLA's
    schedule; or its variant `name`) through the JIT with the operator's
    arguments, compiled for `target`: o and lse."""
    b, s, h, _ = q.shape
    nkv, k = kv.shape[1], idx.shape[2]
    kernel = hisa.jit.get_kernel(name, {"topk_pad": -(-k // 128) * 128,
                                        "head_blocks": -(-h // 64), "lse": 1, "splits": 1},
                                 target=target)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b * s, h), float("nan"), device="cuda")
    kernel.launch(q.view(b * s, h, D), kv.view(b * nkv, D), attn_sink, idx.view(b * s, k),
                  o.view(b * s, h, D), lse, torch.empty(1, 1, 1, D, device="cuda"),
                  torch.empty(1, 1, 1, device="cuda"), *rope_tables_unused(), s, nkv, scale, 0.0)
    torch.cuda.synchronize()
    return o, lse.view(b, s, h)


@pytest.mark.parametrize(
    "b,s,h,nkv,k",
    [(1, 32, 64, 4096, 640),
     (1, 16, 128, 4096, 1152),
     (2, 9, 64, 300, 100),
     (1, 5, 16, 1000, 64),
     (1, 7, 32, 50, 129),
     (3, 3, 128, 2048, 2048),
     (1, 200, 64, 5000, 640)],
)
def test_warpgroup_schedule_variant(b, s, h, nkv, k):
    # sparse_attn_wg: each consumer warpgroup its own 64 keys per iteration,
    # buffers released copy by copy, named-barrier hand-overs.
    check_warpgroup_schedule(b, s, h, nkv, k)


@pytest.mark.parametrize("name,target", [("sparse_attn_wg", "sm_90a,+elide-sync"),
                                         ("sparse_attn_wg_handover", "sm_90a"),
                                         ("sparse_attn_wg_handover", "sm_90a,+elide-sync")])
@pytest.mark.parametrize("b,s,h,nkv,k", [(2, 9, 64, 300, 100), (1, 7, 32, 50, 129),
                                         (1, 16, 128, 4096, 1152), (1, 200, 64, 5000, 640)])
def test_warpgroup_schedule_with_fewer_barriers(name, target, b, s, h, nkv, k):
    # The fifty-second session's synchronization rules (+elide-sync: gemms
    # and named barriers without fences of their own, hand-overs without
    # warpgroup barriers) and the hand-over variant (warpgroup 0 never
    # reads max0), explicitly until +elide-sync is the default.
    check_warpgroup_schedule(b, s, h, nkv, k, name=name, target=target)


def check_warpgroup_schedule(b, s, h, nkv, k, **kernel):
    fresh_seed(torch)
    q, kv, attn_sink, idx = inputs(b, s, h, nkv, k)
    idx[0, 0] = -1                                 # no valid index: o = 0
    if s > 2:
        idx[0, 1] = 7                              # one row repeated
        idx[0, 2, : k // 2] = -1                   # the first keys invalid
    o, lse = run_wg_kernel(q, kv, attn_sink, idx, **kernel)
    ref_o, ref_lse = reference(q, kv, attn_sink, idx, D ** -0.5)
    assert not torch.isnan(o).any(), "NaN in o"
    error = (o.float() - ref_o).norm() / ref_o.norm().clamp(min=1e-30)
    assert error < 1e-2, f"relative L2 error {error:.3e}"
    check_rows(o, ref_o)
    assert torch.allclose(lse, ref_lse, atol=1e-3, rtol=1e-4), \
        f"lse max error {(lse - ref_lse).abs().max():.3e}"
    assert torch.equal(o[0, 0], torch.zeros_like(o[0, 0])), "all -1 row must give 0"


def growing_inputs(b, s, h, k, step):
    """Scores (log2 units) that rise by about `step` from one 64-key tile to
    the next for heads 16..31 of every 64 (one warp's rows in each
    warpgroup) and fall for the others: with lazy rescaling (a row maximum
    moves only when it grows by more than 8) those warps rescale O every
    tile or two while the others never do after the first, in one launch."""
    nkv = k
    direction = torch.randn(D, device="cuda")
    direction /= direction.norm()
    reach = 16.0                                   # q's component along it
    per_key = step / (D ** -0.5 * math.log2(math.e)) / 64 / reach
    position = torch.arange(nkv, device="cuda", dtype=torch.float32)
    kv = (torch.randn(b, nkv, D, device="cuda")
          + (position * per_key)[None, :, None] * direction).bfloat16()
    rising = ((torch.arange(h, device="cuda") % 64) // 16 == 1).float() * 2 - 1
    q = (torch.randn(b, s, h, D, device="cuda") * 0.5
         + reach * rising[None, None, :, None] * direction).bfloat16()
    attn_sink = torch.randn(h, device="cuda")
    idx = torch.arange(k, device="cuda", dtype=torch.int32).repeat(b, s, 1)
    idx[..., 1::7] = -1
    return q, kv, attn_sink, idx


@pytest.mark.parametrize("step", [3.0, 12.0])
@pytest.mark.parametrize("path,b,s,h,k", [("operator", 64, 1, 128, 640),   # sparse_attn_ws
                                          ("operator", 64, 1, 64, 640),    # cluster pairs
                                          ("operator", 1, 1, 64, 2048),    # split + combine
                                          ("operator", 1, 1024, 64, 640),  # sparse_attn_wg
                                          ("wg", 1, 8, 128, 1152)])
def test_row_maxima_that_grow_late(path, b, s, h, k, step):
    # Lazy rescaling: a stale maximum (P up to 2^8), rescales in some warps
    # and not in others, and (step 3) maxima that move every few tiles.
    check_growing_maxima(path, b, s, h, k, step)


@pytest.mark.parametrize("step", [3.0, 12.0])
@pytest.mark.parametrize("name,target", [("sparse_attn_wg", "sm_90a,+elide-sync"),
                                         ("sparse_attn_wg_handover", "sm_90a,+elide-sync")])
def test_row_maxima_that_grow_late_with_fewer_barriers(name, target, step):
    # As above, for the maxima's hand-over between the warpgroups without
    # warpgroup barriers (test_warpgroup_schedule_with_fewer_barriers).
    check_growing_maxima("wg", 1, 8, 128, 1152, step, name=name, target=target)


def check_growing_maxima(path, b, s, h, k, step, **kernel):
    fresh_seed(torch)
    q, kv, attn_sink, idx = growing_inputs(b, s, h, k, step)
    if path == "wg":
        o, lse = run_wg_kernel(q, kv, attn_sink, idx, **kernel)
    else:
        o, lse = hisa.sparse_attn(q, kv, attn_sink, idx, D ** -0.5, return_lse=True)
        torch.cuda.synchronize()
    tokens = min(s, 64)
    ref_o, ref_lse = reference(q[:, :tokens], kv, attn_sink, idx[:, :tokens], D ** -0.5)
    part = o[:, :tokens].float()
    assert not torch.isnan(o).any(), "NaN in o"
    error = (part - ref_o).norm() / ref_o.norm().clamp(min=1e-30)
    assert error < 1e-2, f"relative L2 error {error:.3e}"
    check_rows(part, ref_o)
    assert torch.allclose(lse[:, :tokens], ref_lse, atol=1e-3, rtol=1e-4), \
        f"lse max error {(lse[:, :tokens] - ref_lse).abs().max():.3e}"


@pytest.mark.parametrize("sink", [30.0, -30.0, float("-inf")])
def test_warpgroup_schedule_extremes(sink):
    fresh_seed(torch)
    q, kv, attn_sink, idx = inputs(1, 8, 64, 1024, 384)
    attn_sink.fill_(sink)
    for scale in (1.0, 8.0):                       # scores up to ~1e3
        o, lse = run_wg_kernel(q * scale, kv * scale, attn_sink, idx)
        ref_o, ref_lse = reference(q * scale, kv * scale, attn_sink, idx, D ** -0.5)
        assert not torch.isnan(o).any()
        error = (o.float() - ref_o).norm() / ref_o.norm().clamp(min=1e-30)
        assert error < 1e-2, f"relative L2 error {error:.3e}"
        check_rows(o, ref_o, f"scale {scale}: ")


def test_bad_arguments():
    q, kv, attn_sink, idx = inputs(1, 2, 64, 100, 64)
    with pytest.raises(ValueError, match="D = 256"):
        hisa.sparse_attn(q[..., :256].contiguous(), kv, attn_sink, idx, 0.1)
    with pytest.raises(ValueError, match="kv"):
        hisa.sparse_attn(q, kv.float(), attn_sink, idx, 0.1)
    with pytest.raises(ValueError, match="attn_sink"):
        hisa.sparse_attn(q, kv, attn_sink[:3], idx, 0.1)
    with pytest.raises(ValueError, match="topk_idxs"):
        hisa.sparse_attn(q, kv, attn_sink, idx.float(), 0.1)
    with pytest.raises(ValueError, match="K = 5000"):
        big = torch.zeros(1, 2, 5000, dtype=torch.int32, device="cuda")
        hisa.sparse_attn(q, kv, attn_sink, big, 0.1)
    with pytest.raises(ValueError, match="not finite"):
        hisa.sparse_attn(q, kv, attn_sink, idx, math.inf)
    with pytest.raises(TypeError, match="softmax_scale"):
        hisa.sparse_attn(q, kv, attn_sink, idx, "0.1")


@pytest.mark.parametrize("tokens,splits,heads", [(64, 2, 64), (37, 3, 128)])
def test_combine_keeps_the_per_column_kernels_bits(tokens, splits, heads):
    """sparse_attn_combine (splits as the outer loop, 16-byte row loads)
    gives the bits of the per-column version it replaced
    (python/bench/probes/sparse_attn_combine_v1.mlir), a split without a
    valid index included."""
    import os
    seed = fresh_seed(torch)
    probes = os.path.join(os.path.dirname(__file__), "..", "bench", "probes")
    with open(os.path.join(probes, "sparse_attn_combine_v1.mlir")) as f:
        v1_source = f.read()
    o_part = torch.randn(tokens, splits, heads, 512, device="cuda")
    lse_part = torch.randn(tokens, splits, heads, device="cuda") * 4
    lse_part[0, 0] = float("-inf")
    o_part[0, 0] = 0
    sink = torch.randn(heads, device="cuda")
    # rope = 0: the tables are not read.
    unused = (torch.zeros(1, 32, device="cuda"), torch.zeros(1, 32, device="cuda"),
              torch.zeros(1, dtype=torch.int32, device="cuda"), 1)
    results = []
    for source, extra in ((v1_source, ()), (None, unused)):
        o = torch.full((tokens, heads, 512), float("nan"), device="cuda").bfloat16()
        lse = torch.full((tokens, heads), float("nan"), device="cuda")
        hisa.jit.get_kernel("sparse_attn_combine", {"lse": 1}, source=source).launch(
            o_part, lse_part, sink, o, lse, *extra)
        results.append((o, lse))
    torch.cuda.synchronize()
    assert torch.equal(results[0][0], results[1][0]), f"seed {seed}"
    assert torch.equal(results[0][1], results[1][1]), f"seed {seed}"


@pytest.mark.parametrize("tokens,seq", [(64, 1), (12, 4)])
def test_combine_with_inverse_rope_is_combine_then_rope(tokens, seq):
    """sparse_attn_combine with rope = 1 (the V4 layer's decode) gives the
    bits of the combine followed by v4_rope's inverse rotation, at
    positions from device memory (one past the tables included)."""
    seed = fresh_seed(torch)
    splits, heads, positions = 2, 64, 300
    o_part = torch.randn(tokens, splits, heads, 512, device="cuda")
    lse_part = torch.randn(tokens, splits, heads, device="cuda") * 4
    sink = torch.randn(heads, device="cuda")
    angles = torch.arange(positions)[:, None] * torch.exp(
        -torch.arange(32) * (math.log(10000.0) / 32))[None, :]
    cos, sin = angles.cos().float().cuda(), angles.sin().float().cuda()
    base = torch.randint(0, positions, (tokens // seq,), dtype=torch.int32, device="cuda")
    base[-1] = positions + 5
    lse = torch.empty(1, 1, device="cuda")
    two_steps = torch.empty(tokens, heads, 512, device="cuda").bfloat16()
    fused = torch.empty_like(two_steps)
    combine = hisa.jit.get_kernel("sparse_attn_combine", {"lse": 0})
    combine.launch(o_part, lse_part, sink, two_steps, lse, cos, sin, base, seq)
    hisa.jit.get_kernel("v4_rope", {"inverse": 1, "dim": 512}).launch(
        two_steps, cos, sin, base, seq)
    hisa.jit.get_kernel("sparse_attn_combine", {"lse": 0, "rope": 1}).launch(
        o_part, lse_part, sink, fused, lse, cos, sin, base, seq)
    torch.cuda.synchronize()
    assert torch.equal(fused, two_steps), f"seed {seed}"


@pytest.mark.parametrize("name,b,s,h,k", [("sparse_attn_ws", 64, 1, 64, 128),
                                          ("sparse_attn_ws", 2, 5, 100, 200),
                                          ("sparse_attn", 3, 2, 64, 70),
                                          ("sparse_attn_wg", 1, 9, 128, 256)])
def test_inverse_rope_in_the_epilogue_is_attention_then_rope(name, b, s, h, k):
    """A whole (unsplit) sparse attention with rope = 1 (the V4 layer's
    decode and prefill) gives the bits of the kernel with rope = 0 followed
    by v4_rope's inverse rotation, at positions from device memory (one
    past the tables included), H not a multiple of 64 included."""
    seed = fresh_seed(torch)
    nkv, positions = 300, 400
    q, kv, attn_sink, idx = inputs(b, s, h, nkv, k)
    angles = torch.arange(positions)[:, None] * torch.exp(
        -torch.arange(32) * (math.log(10000.0) / 32))[None, :]
    cos, sin = angles.cos().float().cuda(), angles.sin().float().cuda()
    base = torch.randint(0, positions, (b,), dtype=torch.int32, device="cuda")
    base[-1] = positions + 5
    pad = 128 if name == "sparse_attn_wg" else 64
    params = {"topk_pad": -(-k // pad) * pad, "head_blocks": -(-h // 64), "lse": 0,
              "splits": 1, "partial_sums": 1}
    outputs = []
    for rope in (0, 1):
        kernel = hisa.jit.get_kernel(name, dict(params, rope=rope))
        o = torch.full_like(q, float("nan"))
        kernel.launch(q.view(b * s, h, D), kv.view(b * nkv, D), attn_sink, idx.view(b * s, k),
                      o.view(b * s, h, D), attn_sink.view(1, h),
                      torch.empty(1, 1, 1, D, device="cuda"), torch.empty(1, 1, 1, device="cuda"),
                      cos, sin, base, s, nkv, D ** -0.5, 0.0)
        outputs.append(o)
    hisa.jit.get_kernel("v4_rope", {"inverse": 1, "dim": 512}).launch(
        outputs[0].view(b * s, h, D), cos, sin, base, s)
    torch.cuda.synchronize()
    assert not outputs[1].isnan().any(), f"seed {seed}"
    assert torch.equal(outputs[1], outputs[0]), f"seed {seed}"


@pytest.mark.parametrize("name,b,s,h,k,splits", [("sparse_attn_ws", 64, 1, 64, 128, 1),
                                                 ("sparse_attn_ws", 2, 5, 100, 200, 1),
                                                 ("sparse_attn", 3, 1, 64, 640, 4)])
def test_query_norm_in_the_prologue_is_norm_rope_then_attention(name, b, s, h, k, splits):
    """q_norm = 1 (the V4 layer) prepares the block's queries in shared
    memory as v4_norm_rope does (per-head RMSNorm, weight 1, then RoPE at
    the token's position): the same result as v4_norm_rope followed by the
    kernel with q_norm = 0, within one bf16 rounding of q (the squares add
    in another order), also split over blocks (rope = 0 there: the combine
    rotates); q itself is left as it was."""
    seed = fresh_seed(torch)
    nkv, positions, eps = 300, 400, 1e-6
    q, kv, attn_sink, idx = inputs(b, s, h, nkv, k)
    q = (q.float() * 3).bfloat16()
    angles = torch.arange(positions)[:, None] * torch.exp(
        -torch.arange(32) * (math.log(10000.0) / 32))[None, :]
    cos, sin = angles.cos().float().cuda(), angles.sin().float().cuda()
    base = torch.randint(0, positions, (b,), dtype=torch.int32, device="cuda")
    base[-1] = positions + 5
    params = {"topk_pad": -(-k // 64) * 64, "head_blocks": -(-h // 64), "lse": 0,
              "splits": splits, "partial_sums": 1 if splits == 1 else 0,
              "rope": 1 if splits == 1 else 0}
    tokens = b * s
    prepared = q.clone()
    hisa.jit.get_kernel("v4_norm_rope", {"dim": 512}).launch(
        prepared.view(tokens, h, D), torch.ones(512, device="cuda"), cos, sin, base, s, eps)
    raw = q.clone()
    outputs = []
    for query, q_norm in ((prepared, 0), (raw, 1)):
        kernel = hisa.jit.get_kernel(name, dict(params, q_norm=q_norm))
        o = torch.full_like(q, float("nan"))
        part_o = torch.full((tokens, splits, h, D) if splits > 1 else (1, 1, 1, D),
                            float("nan"), device="cuda")
        part_lse = torch.full((tokens, splits, h) if splits > 1 else (1, 1, 1),
                              float("nan"), device="cuda")
        kernel.launch(query.view(tokens, h, D), kv.view(b * nkv, D), attn_sink,
                      idx.view(tokens, k), o.view(tokens, h, D), attn_sink.view(1, h),
                      part_o, part_lse, cos, sin, base, s, nkv, D ** -0.5, eps)
        outputs.append(part_o if splits > 1 else o)
    torch.cuda.synchronize()
    assert torch.equal(raw, q), "the kernel wrote q"
    want, got = outputs[0].float(), outputs[1].float()
    assert not got.isnan().any(), f"seed {seed}"
    error = (got - want).norm() / want.norm()
    assert error < 1e-2, f"relative L2 {error:.2e}, seed {seed}"
    assert (got - want).abs().max() < 5e-2, f"seed {seed}"


@pytest.mark.parametrize("b,s,h,k", [(64, 1, 64, 640), (25, 2, 100, 200)])
def test_cluster_pair_with_layer_rope_is_the_whole_kernel(b, s, h, k):
    """The cluster pair (cluster_blocks = 2, splits = 2) with the V4
    layer's query norm and both rotations, and lse: the whole kernel's
    output within one bf16 rounding (the halves' sums add in another
    order), and its lse within f32 rounding; positions one past the tables
    included."""
    seed = fresh_seed(torch)
    nkv, positions, eps = 300, 400, 1e-6
    q, kv, attn_sink, idx = inputs(b, s, h, nkv, k)
    idx[0, 0] = -1
    angles = torch.arange(positions)[:, None] * torch.exp(
        -torch.arange(32) * (math.log(10000.0) / 32))[None, :]
    cos, sin = angles.cos().float().cuda(), angles.sin().float().cuda()
    base = torch.randint(0, positions, (b,), dtype=torch.int32, device="cuda")
    base[-1] = positions + 5
    tokens = b * s
    common = {"topk_pad": -(-k // 64) * 64, "head_blocks": -(-h // 64), "lse": 1,
              "partial_sums": 1, "rope": 1, "q_norm": 1}
    outputs = []
    for extra in ({"splits": 1, "cluster_blocks": 1}, {"splits": 2, "cluster_blocks": 2}):
        kernel = hisa.jit.get_kernel("sparse_attn_ws", dict(common, **extra))
        o = torch.full_like(q, float("nan"))
        lse = torch.full((tokens, h), float("nan"), device="cuda")
        kernel.launch(q.view(tokens, h, D), kv.view(b * nkv, D), attn_sink,
                      idx.view(tokens, k), o.view(tokens, h, D), lse,
                      torch.empty(1, 1, 1, D, device="cuda"),
                      torch.empty(1, 1, 1, device="cuda"),
                      cos, sin, base, s, nkv, D ** -0.5, eps)
        outputs.append((o, lse))
    torch.cuda.synchronize()
    (want, want_lse), (got, got_lse) = outputs
    assert not got.isnan().any() and not got_lse.isnan().any(), f"seed {seed}"
    assert torch.equal(got[0, 0], torch.zeros_like(got[0, 0])), f"seed {seed}"
    error = (got.float() - want.float()).norm() / want.float().norm()
    assert error < 4e-3, f"relative L2 {error:.2e}, seed {seed}"
    assert torch.allclose(got.float(), want.float(), atol=2e-2, rtol=1e-2), f"seed {seed}"
    assert torch.allclose(got_lse, want_lse, atol=1e-4, rtol=1e-5), f"seed {seed}"
