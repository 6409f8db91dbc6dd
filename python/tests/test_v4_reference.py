"""The torch reference of the V4 attention layer (python/hisa/v4/reference.py)
checked against itself, on the CPU: what issue 12's layer must satisfy.

- Decode after a prefill gives what a prefill of the longer sequence gives
  at its last position (compressed entries emitted at the right token, the
  ring, the indexer), for compress ratios 0, 4 (CSA) and 128 (HCA).
- Index rows: the window part (positions / ring slots in token order, -1
  before 0) and the compressed part (-1 padded) are exactly as specified.
- The quantize-dequantize helpers: fp8 e4m3 in blocks of 64, fp4 e2m1 with
  power-of-two scales, the orthonormal Hadamard transform.
"""

import pytest

from hisa_testutil import require_torch

torch = require_torch()

from hisa.v4 import reference as ref  # noqa: E402


def small_config(ratio):
    return ref.Config(dim=64, heads=4, head_dim=128, rope_dim=64, q_lora=32, o_groups=2,
                      o_lora=16, window=8, compress_ratio=ratio, index_heads=2,
                      index_dim=128, index_topk=3)


@pytest.mark.parametrize("ratio", [0, 4, 128])
def test_decode_matches_prefill(ratio):
    torch.manual_seed(0)
    config = small_config(ratio)
    weights = ref.random_weights(config)
    batch, prompt, steps = 2, 131 if ratio == 128 else 13, 6
    total = prompt + steps
    x = torch.randn(batch, total, config.dim)
    layer = ref.Attention(config, weights, batch, max_seq=512)
    layer.forward(x[:, :prompt], 0)
    for t in range(prompt, total):
        got = layer.forward(x[:, t:t + 1], t)
        fresh = ref.Attention(config, weights, batch, max_seq=512)
        want = fresh.forward(x[:, :t + 1], 0)[:, -1:]
        assert torch.allclose(got, want, rtol=1e-4, atol=1e-4), \
            f"token {t}: max error {(got - want).abs().max():.3e}"
        # The same rows, addressed two ways: prefill positions / S + j,
        # decode ring slots / window + j.
        window_positions = fresh.last_indices[:, -1, :config.window]
        ring = layer.last_indices[:, 0, :config.window]
        assert torch.equal(torch.where(window_positions >= 0, window_positions % config.window,
                                       window_positions), ring)
        if ratio:
            comp_prefill = fresh.last_indices[:, -1, config.window:]
            comp_decode = layer.last_indices[:, 0, config.window:]
            assert torch.equal(torch.where(comp_prefill >= 0, comp_prefill - (t + 1), comp_prefill),
                               torch.where(comp_decode >= 0, comp_decode - config.window,
                                           comp_decode))


def test_prefill_indices():
    config = small_config(4)
    weights = ref.random_weights(config)
    layer = ref.Attention(config, weights, 1, max_seq=64)
    layer.forward(torch.randn(1, 21, config.dim), 0)
    idx = layer.last_indices[0]
    assert idx.shape == (21, config.window + config.index_topk)
    for i in range(21):
        window = [p if p >= 0 else -1 for p in range(i - config.window + 1, i + 1)]
        assert idx[i, :config.window].tolist() == window
        visible = (i + 1) // 4
        comp = idx[i, config.window:].tolist()
        taken = [c for c in comp if c >= 0]
        assert len(taken) == min(visible, config.index_topk)
        assert all(21 <= c < 21 + visible for c in taken)
        assert comp[len(taken):] == [-1] * (len(comp) - len(taken))


def test_ring_and_compressed_region():
    torch.manual_seed(1)
    config = small_config(4)
    weights = ref.random_weights(config)
    layer = ref.Attention(config, weights, 1, max_seq=64)
    x = torch.randn(1, 19, config.dim)
    layer.forward(x[:, :10], 0)
    for t in range(10, 19):
        layer.forward(x[:, t:t + 1], t)
    fresh = ref.Attention(config, weights, 1, max_seq=64)
    fresh.forward(x, 0)
    # Token p at slot p % window; entries j < 19 // 4 in the compressed region.
    assert torch.allclose(layer.kv_cache[:, :config.window], fresh.kv_cache[:, :config.window],
                          atol=1e-5)
    entries = 19 // 4
    assert torch.allclose(layer.kv_cache[:, config.window:config.window + entries],
                          fresh.kv_cache[:, config.window:config.window + entries], atol=1e-5)


def test_quantizers():
    torch.manual_seed(2)
    x = torch.randn(3, 448)
    q = ref.fp8_qdq(x)
    scale = x.unflatten(-1, (-1, 64)).abs().amax(-1, keepdim=True) / 448
    assert torch.allclose(q, x, rtol=0.07, atol=1e-6)
    assert torch.allclose((q.unflatten(-1, (-1, 64)) / scale).abs().amax(-1),
                          torch.full((3, 7), 448.0))
    y = torch.randn(2, 128)
    h = ref.hadamard(y)
    assert torch.allclose(ref.hadamard(h), y, atol=1e-5)          # orthonormal, involutive
    f = ref.fp4_qdq(h)
    scales = torch.exp2(torch.ceil(torch.log2(h.unflatten(-1, (-1, 32)).abs().amax(-1) / 6)))
    codes = f.unflatten(-1, (-1, 32)) / scales[..., None]
    assert all(abs(v) in ref.FP4_VALUES for v in codes.flatten().tolist())
    assert ref.fp4_qdq(torch.zeros(1, 32)).abs().max() == 0
