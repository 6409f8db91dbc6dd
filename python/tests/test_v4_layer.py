"""hisa.v4.Attention (the C++ layer of lib/V4 through the C ABI) against
the torch reference hisa.v4.reference.Attention, on the same bf16-rounded
weights and inputs: prefill outputs, then decode steps after it (the decode
path must give what the reference's decode gives for the same position),
the index rows exactly, and the cache's written slots."""

import pytest

from hisa_testutil import fresh_seed, require_gpu

torch, hisa = require_gpu()

from hisa.v4 import reference as ref  # noqa: E402


def small_config(ratio):
    # index_topk 16 < the visible entries: the CSA indexer really selects.
    return ref.Config(dim=256, heads=16, q_lora=256, o_groups=2, o_lora=256,
                      compress_ratio=ratio, index_topk=16)


def make(config, batch, max_seq, seed):
    generator = torch.Generator().manual_seed(seed)
    weights = ref.random_weights(config, generator)
    # Both sides use the bf16-rounded matrices the layer keeps.
    matrices = {"wq_a", "wq_b", "wkv", "wo_a", "wo_b", "c_wkv", "c_wgate", "i_wq",
                "i_weights", "i_wkv", "i_wgate"}
    rounded = {k: (v.bfloat16().float() if k in matrices else v).cuda()
               for k, v in weights.items()}
    layer = hisa.v4.Attention(config, rounded, batch, max_seq)
    reference = ref.Attention(config, rounded, batch, max_seq, device="cuda")
    return layer, reference


def relative_error(got, expected):
    return float((got.float() - expected.float()).norm() / expected.float().norm())


def check_cache(layer, reference, config):
    """Ring slots of the last min(length, 128) tokens and the compressed
    entries written so far match the reference's cache."""
    cache = layer.kv_cache().float()
    length = reference.length
    ring = sorted({p % 128 for p in range(max(0, length - 128), length)})
    assert relative_error(cache[:, ring], reference.kv_cache[:, ring]) < 2e-2
    if config.compress_ratio:
        n = length // config.compress_ratio
        if n:
            got = cache[:, 128:128 + n]
            assert relative_error(got, reference.kv_cache[:, 128:128 + n]) < 3e-2


def check_indices(got, expected, ratio, when):
    """Window and HCA parts: exactly the reference's. CSA's compressed part
    is the indexer's selection: the layer scores bf16 projections, the
    reference f32 ones, so entries near the k-th score may swap; the sets
    (order-free) must agree on at least 95% of the entries."""
    expected = expected.to(got.device)
    if ratio != 4:
        assert torch.equal(got, expected), f"{when}: index rows"
        return
    assert torch.equal(got[..., :128], expected[..., :128]), f"{when}: window part"
    g, e = got[..., 128:], expected[..., 128:]
    assert torch.equal((g >= 0).sum(-1), (e >= 0).sum(-1)), f"{when}: entries per row"
    g_sorted, e_sorted = g.sort(-1).values, e.sort(-1).values
    agree = sum(len(set(a.tolist()) & set(b.tolist()) - {-1})
                for a, b in zip(g_sorted.flatten(0, -2), e_sorted.flatten(0, -2)))
    total = int((e >= 0).sum())
    assert agree >= 0.95 * total, f"{when}: {agree} of {total} selected entries agree"


@pytest.mark.parametrize("ratio", [0, 4, 128])
@pytest.mark.parametrize("batch,seq,steps", [(2, 200, 60), (1, 5, 3)])
def test_prefill_then_decode(ratio, batch, seq, steps):
    seed = fresh_seed(torch)
    config = small_config(ratio)
    max_seq = 300
    layer, reference = make(config, batch, max_seq, seed)
    x = torch.randn(batch, seq + steps, config.dim, device="cuda").bfloat16()
    out = layer.forward(x[:, :seq], 0)
    expected = reference.forward(x[:, :seq].float(), 0)
    assert not out.isnan().any()
    # The index rows first: a CSA selection that differs from the
    # reference's explains an output difference (and is reported as such).
    got_idx = layer.last_indices(batch * seq).view(batch, seq, -1)
    check_indices(got_idx, reference.last_indices, ratio, "prefill")
    error = relative_error(out, expected)
    assert error < 3e-2, f"prefill: relative L2 {error:.2e}, seed {seed}"
    check_cache(layer, reference, config)
    for step in range(steps):
        p = seq + step
        out = layer.forward(x[:, p:p + 1], p)
        expected = reference.forward(x[:, p:p + 1].float(), p)
        got_idx = layer.last_indices(batch).view(batch, 1, -1)
        check_indices(got_idx, reference.last_indices, ratio, f"decode at {p}")
        error = relative_error(out, expected)
        assert error < 3e-2, f"decode at {p}: relative L2 {error:.2e}, seed {seed}"
    assert layer.length == seq + steps
    check_cache(layer, reference, config)


@pytest.mark.parametrize("ratio", [4, 128])
def test_decode_step_replays_from_a_cuda_graph(ratio):
    """One decode step captured in a CUDA graph and replayed: the kernels
    read the positions from device memory and the step advances them, so
    replay i computes position seq + 1 + i (checked against the reference's
    eager decode)."""
    seed = fresh_seed(torch)
    config = small_config(ratio)
    batch, seq, replays = 2, 130, 6
    layer, reference = make(config, batch, 300, seed)
    x = torch.randn(batch, seq + 1 + replays, config.dim, device="cuda").bfloat16()
    layer.forward(x[:, :seq], 0)
    reference.forward(x[:, :seq].float(), 0)
    # An eager step first: every kernel is compiled before the capture.
    out = layer.forward(x[:, seq:seq + 1], seq)
    expected = reference.forward(x[:, seq:seq + 1].float(), seq)
    assert relative_error(out, expected) < 3e-2
    static_x = x[:, seq + 1:seq + 2].clone()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            static_out = layer.forward(static_x, seq + 1)
    torch.cuda.current_stream().wait_stream(stream)
    # Capturing launched nothing: the device positions still say seq + 1.
    layer.set_length(seq + 1)
    for i in range(replays):
        p = seq + 1 + i
        static_x.copy_(x[:, p:p + 1])
        graph.replay()
        expected = reference.forward(x[:, p:p + 1].float(), p)
        got_idx = layer.last_indices(batch).view(batch, 1, -1)
        check_indices(got_idx, reference.last_indices, ratio, f"replay {i} (position {p})")
        error = relative_error(static_out, expected)
        assert error < 3e-2, f"replay {i} (position {p}): relative L2 {error:.2e}, seed {seed}"
    layer.set_length(seq + 1 + replays)
    assert layer.length == seq + 1 + replays


def test_errors_name_the_problem():
    config = small_config(128)
    layer, _ = make(config, 1, 64, 1)
    with pytest.raises(hisa.InvalidArgumentError, match="decode continues"):
        layer.forward(torch.randn(1, 1, config.dim, device="cuda").bfloat16(), 3)
    with pytest.raises(hisa.InvalidArgumentError, match="max_seq"):
        layer.forward(torch.randn(1, 65, config.dim, device="cuda").bfloat16(), 0)
    with pytest.raises(hisa.InvalidArgumentError, match=r"x must be \[batch=1"):
        layer.forward(torch.randn(2, 3, config.dim, device="cuda").bfloat16(), 0)
    bounded = hisa.v4.Attention(config, {k: v.cuda() for k, v in ref.random_weights(
        config).items() if not k.startswith("i_")}, 1, 64, max_prefill_tokens=16)
    with pytest.raises(hisa.InvalidArgumentError, match="max_prefill_tokens = 16"):
        bounded.forward(torch.randn(1, 17, config.dim, device="cuda").bfloat16(), 0)
    csa = small_config(4)
    weights = {k: v.cuda() for k, v in ref.random_weights(csa).items() if k != "i_wq"}
    with pytest.raises(hisa.InvalidArgumentError, match="weight i_wq must not be NULL"):
        hisa.v4.Attention(csa, weights, 1, 64)
    bad = small_config(128)
    bad.o_lora = 100
    with pytest.raises(hisa.InvalidArgumentError, match="o_lora"):
        hisa.v4.Attention(bad, {k: v.cuda() for k, v in ref.random_weights(bad).items()}, 1, 64)
