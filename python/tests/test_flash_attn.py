"""hisa.flash_attn (kernels-dsl/flash_attn_pp.mlir, and the other dense
kernels launched directly) against torch's scaled_dot_product_attention
computed in f32: causal and not, D 64 and 128, sequence lengths that are not
multiples of the 128-query or the 64/128-key tiles."""

import pytest

from hisa_testutil import fresh_seed, require_gpu

torch, hisa = require_gpu()
F = torch.nn.functional

# The relative L2 error of each (b, h, query) row of o. The global error
# hides a wrong row (1 / sqrt(rows) of it), and a per-element absolute
# slack of 2e-2 is half of a typical |o| at S >= 1000 (o averages ~S value
# rows). A correct kernel's row error comes from P rounded to bf16 before
# P.V and o rounded to bf16 (each at most 2^-8 relative per element), f32
# sums: emulated on the CPU (bf16 P and o, stale maxima up to 2^5.5, scores
# up to 8x, causal), at most 3.3e-3 per row for D = 64 and 128, S up to
# 2048. 2e-2 leaves a margin of 6.
ROW_ERROR = 2e-2


def check_rows(o, ref, what=""):
    error = (o.float() - ref).norm(dim=-1) / ref.norm(dim=-1).clamp(min=1e-30)
    worst = int(error.argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), error.shape))
    assert float(error.max()) < ROW_ERROR, (
        f"{what}row {index}: relative L2 error {float(error.max()):.3e} "
        f"(rows over {ROW_ERROR}: {int((error >= ROW_ERROR).sum())} of {error.numel()})")


def check(b, h, s, d, causal, scale=None, magnitude=1.0, kernel=None):
    """hisa.flash_attn, or `kernel` (name, params) launched directly."""
    q, k, v = (torch.randn(b, h, s, d, device="cuda").mul(magnitude).bfloat16() for _ in range(3))
    if kernel is None:
        o = hisa.flash_attn(q, k, v, causal=causal, softmax_scale=scale)
    else:
        name, params = kernel
        o = torch.empty_like(q)
        hisa.jit.get_kernel(name, dict(params, dim=d, causal=int(causal))).launch(
            q, k, v, o, d ** -0.5 if scale is None else scale)
    torch.cuda.synchronize()
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal,
                                         scale=scale)
    assert o.shape == q.shape and o.dtype == torch.bfloat16
    assert not torch.isnan(o).any()
    error = (o.float() - ref).norm() / ref.norm()
    assert error < 1e-2, f"relative L2 error {error:.3e}"
    check_rows(o, ref)
    # bf16 output: half an ulp of |ref| plus a small absolute slack.
    assert bool(((o.float() - ref).abs() <= 2e-2 + 8e-3 * ref.abs()).all())


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("b,h,s", [(1, 1, 128), (2, 3, 1000), (1, 2, 77), (1, 4, 2048)])
def test_against_sdpa(b, h, s, d, causal):
    fresh_seed(torch)
    check(b, h, s, d, causal)


def test_scale_and_large_scores():
    fresh_seed(torch)
    check(1, 2, 300, 128, True, scale=0.3)
    check(1, 2, 300, 64, False, magnitude=6.0)
    # A negative scale keeps the scores scaled before the row maximum
    # (fold_scale = 0); a positive one folds into the exponent.
    check(1, 2, 300, 128, True, scale=-0.2)
    check(1, 2, 300, 64, False, scale=-0.05, magnitude=3.0)
    check(2, 3, 1000, 128, True, scale=0.02, kernel=("flash_attn", {"fold_scale": 1}))


@pytest.mark.parametrize("name", ["flash_attn", "flash_attn_ws", "flash_attn_pp"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("b,h,s", [(1, 1, 128), (2, 3, 1000), (1, 2, 77), (1, 2, 300)])
def test_key_tiles_of_128(name, b, h, s, d, causal):
    """Each kernel with kt = 128 (one key tile per 128 queries: the causal
    diagonal and the last partial tile are the masked ones)."""
    fresh_seed(torch)
    check(b, h, s, d, causal, kernel=(name, {"kt": 128}))


@pytest.mark.parametrize("fold", [0, 1])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("b,h,s", [(1, 1, 64), (2, 3, 1000), (1, 2, 77), (1, 2, 129)])
def test_ping_pong_with_64_key_tiles(b, h, s, d, causal, fold):
    """flash_attn_pp with kt = 64 (more turns per block; one key tile short
    of a query tile) and both scale forms: a block of one key tile runs one
    S and the P = 0 pass only."""
    fresh_seed(torch)
    check(b, h, s, d, causal, kernel=("flash_attn_pp", {"kt": 64, "fold_scale": fold}))


def test_ping_pong_many_heads_and_batches():
    """More blocks than SMs, heaviest first, causal and not, through the
    operator: at these lengths it runs flash_attn_pp (S >= 4096 at D = 128,
    >= 8192 at D = 64), odd lengths."""
    fresh_seed(torch)
    check(3, 20, 4099, 128, True)
    check(1, 3, 8195, 64, False)


@pytest.mark.parametrize("fold", [0, 1])
@pytest.mark.parametrize("step", [3.0, 12.0])
def test_row_maxima_that_grow_late(step, fold):
    """flash_attn_pp with lazy rescaling (a row maximum moves only when it
    grows by more than 8 in the exponent): scores that rise by about `step`
    (log2 units) per 128-key tile for queries 16..31 of every 64 (one warp's
    rows) and fall for the others, so some warps rescale O every tile or two
    and the others never."""
    fresh_seed(torch)
    b, h, s, d = 1, 2, 1500, 128
    scale = d ** -0.5
    direction = torch.randn(d, device="cuda")
    direction /= direction.norm()
    reach = 16.0
    per_key = step / (scale * 1.4426950408889634) / 128 / reach
    position = torch.arange(s, device="cuda", dtype=torch.float32)
    k = (torch.randn(b, h, s, d, device="cuda")
         + (position * per_key)[:, None] * direction).bfloat16()
    rows = torch.arange(s, device="cuda")
    rising = ((rows % 64) // 16 == 1).float() * 2 - 1
    q = (torch.randn(b, h, s, d, device="cuda") * 0.5
         + reach * rising[:, None] * direction).bfloat16()
    v = torch.randn(b, h, s, d, device="cuda").bfloat16()
    for causal in (False, True):
        o = torch.empty_like(q)
        hisa.jit.get_kernel("flash_attn_pp", {"dim": d, "causal": int(causal), "kt": 128,
                                              "fold_scale": fold}).launch(q, k, v, o, scale)
        torch.cuda.synchronize()
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                             is_causal=causal, scale=scale)
        assert not torch.isnan(o).any()
        error = (o.float() - ref).norm() / ref.norm()
        assert error < 1e-2, f"causal={causal}: relative L2 error {error:.3e}"
        check_rows(o, ref, f"causal={causal}: ")


def test_bad_arguments():
    q = torch.randn(1, 2, 64, 96, device="cuda").bfloat16()
    with pytest.raises(ValueError, match="D = 96"):
        hisa.flash_attn(q, q, q)
    q = torch.randn(1, 2, 64, 64, device="cuda").bfloat16()
    with pytest.raises(ValueError, match="k"):
        hisa.flash_attn(q, q[:, :1].contiguous(), q)
    with pytest.raises(ValueError, match="v"):
        hisa.flash_attn(q, q, q.float())
    strided = torch.randn(1, 64, 2, 64, device="cuda").bfloat16().transpose(1, 2)
    with pytest.raises(ValueError, match="contiguous"):
        hisa.flash_attn(strided, q, q)
