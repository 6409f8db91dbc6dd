"""The first kernels of the V4 attention layer (issue 12) against the torch
reference (python/hisa/v4/reference.py), through the JIT: RMSNorm, and the
index rows of prefill and decode for window-only, CSA and HCA layers."""

import pytest

from hisa_testutil import fresh_seed, require_gpu

torch, hisa = require_gpu()

from hisa.v4 import reference as ref  # noqa: E402


@pytest.mark.parametrize("dim,rows", [(4096, 37), (1024, 5), (512, 300), (128, 1)])
def test_rmsnorm(dim, rows):
    fresh_seed(torch)
    x = (torch.randn(rows, dim, device="cuda") * 3).bfloat16()
    weight = 1 + 0.1 * torch.randn(dim, device="cuda")
    out = torch.full_like(x, float("nan"))
    hisa.jit.get_kernel("v4_rmsnorm", {"dim": dim}).launch(x, weight, out, 1e-6)
    torch.cuda.synchronize()
    expected = ref.rmsnorm(x, weight, 1e-6)
    assert torch.allclose(out.float(), expected, rtol=1e-2, atol=1e-2)


def reference_rows(config, seq, start=None):
    """The reference layer's index rows (window part, and the compressed part
    for HCA; CSA's part comes from the indexer)."""
    weights = ref.random_weights(config)
    layer = ref.Attention(config, weights, 1, max_seq=512)
    x = torch.randn(1, seq, config.dim)
    layer.forward(x, 0)
    if start is None:
        return layer.last_indices[0]
    for t in range(seq, start + 1):
        layer.forward(torch.randn(1, 1, config.dim), t)
    return layer.last_indices[0]


@pytest.mark.parametrize("ratio", [0, 4, 128])
@pytest.mark.parametrize("decode", [False, True])
def test_index_rows(ratio, decode):
    config = ref.Config(dim=64, heads=4, head_dim=128, q_lora=32, o_groups=2, o_lora=16,
                        window=8, compress_ratio=ratio, index_heads=2, index_topk=3)
    seq = 140 if ratio == 128 else 21
    start = seq + 3 if decode else None
    expected = reference_rows(config, seq, start)
    slots = expected.shape[1] - config.window
    out = torch.full((expected.shape[0], config.window + max(slots, 1)), -7, dtype=torch.int32,
                     device="cuda")
    kernel = hisa.jit.get_kernel("v4_indices", {"window": config.window, "ratio": ratio,
                                                "decode": int(decode), "csa": int(ratio == 4)})
    kernel.launch(out, 1 if decode else seq, start or 0)
    torch.cuda.synchronize()
    got = out[:, :config.window + slots].cpu()
    if ratio == 4:
        # CSA: the window part is the kernel's; the indexer fills the rest.
        assert torch.equal(got[:, :config.window], expected[:, :config.window])
        assert bool((got[:, config.window:] == -1).all())
    else:
        assert torch.equal(got, expected)


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("tokens,heads", [(7, 64), (33, 1), (5, 128)])
def test_rope(tokens, heads, inverse):
    fresh_seed(torch)
    positions_count = 4096
    angles = ref.rope_angles(torch.arange(positions_count), 64, 160000.0)
    cos, sin = angles.cos().float().cuda(), angles.sin().float().cuda()
    x = torch.randn(tokens, heads, 512, device="cuda").bfloat16()
    positions = torch.randint(0, positions_count, (tokens,), device="cuda", dtype=torch.int32)
    expected = x.float().clone()
    expected[..., 448:] = ref.rope(x[..., 448:].float().cpu(),
                                   angles[positions.long().cpu()], inverse=inverse).cuda()
    y = x.clone()
    hisa.jit.get_kernel("v4_rope", {"inverse": int(inverse)}).launch(y, positions, cos, sin)
    torch.cuda.synchronize()
    assert torch.equal(y[..., :448], x[..., :448]), "the first 448 dims must not change"
    assert torch.allclose(y.float(), expected, rtol=1e-2, atol=2e-2)


@pytest.mark.parametrize("rows", [1, 37, 1000])
def test_fp8_qdq(rows):
    fresh_seed(torch)
    x = (torch.randn(rows, 512, device="cuda") * torch.rand(rows, 1, device="cuda") * 50).bfloat16()
    x[0, :64] = 0                                     # a zero block stays zero
    y = x.clone()
    hisa.jit.get_kernel("v4_fp8_qdq", {}).launch(y.view(rows, 8, 64))
    torch.cuda.synchronize()
    expected = x.float().clone()
    expected[:, :448] = ref.fp8_qdq(x[:, :448].float())
    assert torch.equal(y[:, 448:], x[:, 448:]), "the RoPE dims must not change"
    want = expected.bfloat16().float()
    wrong = (y.float() != want).nonzero()
    detail = [(r, c, x[r, c].item(), y[r, c].item(), want[r, c].item(),
               x[r, c // 64 * 64:(c // 64 + 1) * 64].float().abs().max().item())
              for r, c in wrong[:8].tolist()]
    assert wrong.numel() == 0, \
        f"{wrong.shape[0]} values differ; (row, col, x, kernel, reference, block amax): {detail}"
