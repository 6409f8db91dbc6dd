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


# CSA's selection is sensitive to rounding: the layer scores bf16
# projections through fp4, the reference f32 ones. The reference itself,
# with only the layer's bf16 roundings of q and the indexer's q and weights
# added (a CPU experiment, this test's configuration, 6 seeds), selects
# 98.7-99.2% of the same entries and its prefill output moves by 2.5-3.5%;
# a decode step of 2 tokens moves by 0.35% (median) but up to 19% when one
# entry flips. So CSA is held to: >= 95% of the selected entries agreeing,
# and output errors over all its tokens (prefill; the decode steps together)
# within 6e-2. Window-only and HCA selections are exact.
CSA_TOLERANCE = 6e-2
CSA_AGREEMENT = 0.95


def check_indices(got, expected, ratio, when):
    """Window and HCA parts: exactly the reference's. CSA: the window part
    exactly, the same number of entries per row; returns (agreeing, total)
    selected entries of the compressed part (order-free) for the caller to
    hold to CSA_AGREEMENT."""
    expected = expected.to(got.device)
    if ratio != 4:
        assert torch.equal(got, expected), f"{when}: index rows"
        return 0, 0
    assert torch.equal(got[..., :128], expected[..., :128]), f"{when}: window part"
    g, e = got[..., 128:], expected[..., 128:]
    assert torch.equal((g >= 0).sum(-1), (e >= 0).sum(-1)), f"{when}: entries per row"
    agree = sum(len(set(a.tolist()) & set(b.tolist()) - {-1})
                for a, b in zip(g.flatten(0, -2), e.flatten(0, -2)))
    return agree, int((e >= 0).sum())


def check_agreement(agree, total, when):
    if total:
        assert agree >= CSA_AGREEMENT * total, f"{when}: {agree} of {total} selected entries agree"


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
    check_agreement(*check_indices(got_idx, reference.last_indices, ratio, "prefill"), "prefill")
    error = relative_error(out, expected)
    bound = CSA_TOLERANCE if ratio == 4 else 3e-2
    assert error < bound, f"prefill: relative L2 {error:.2e}, seed {seed}"
    check_cache(layer, reference, config)
    outs, refs, agree, total = [], [], 0, 0
    for step in range(steps):
        p = seq + step
        out = layer.forward(x[:, p:p + 1], p)
        expected = reference.forward(x[:, p:p + 1].float(), p)
        got_idx = layer.last_indices(batch).view(batch, 1, -1)
        a, t = check_indices(got_idx, reference.last_indices, ratio, f"decode at {p}")
        agree, total = agree + a, total + t
        error = relative_error(out, expected)
        if ratio != 4:
            assert error < 3e-2, f"decode at {p}: relative L2 {error:.2e}, seed {seed}"
        outs.append(out)
        refs.append(expected)
    if steps and ratio == 4:
        check_agreement(agree, total, "decode")
        error = relative_error(torch.cat(outs, 1), torch.cat(refs, 1))
        assert error < CSA_TOLERANCE, f"decode steps: relative L2 {error:.2e}, seed {seed}"
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
    if ratio != 4:   # CSA: one step of 2 tokens may flip an entry (see above)
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
    outs, refs, agree, total = [], [], 0, 0
    for i in range(replays):
        p = seq + 1 + i
        static_x.copy_(x[:, p:p + 1])
        graph.replay()
        expected = reference.forward(x[:, p:p + 1].float(), p)
        got_idx = layer.last_indices(batch).view(batch, 1, -1)
        a, t = check_indices(got_idx, reference.last_indices, ratio, f"replay {i} (position {p})")
        agree, total = agree + a, total + t
        outs.append(static_out.clone())
        refs.append(expected)
        if ratio != 4:
            error = relative_error(static_out, expected)
            assert error < 3e-2, f"replay {i} (position {p}): relative L2 {error:.2e}, seed {seed}"
    check_agreement(agree, total, "replays")
    error = relative_error(torch.cat(outs, 1), torch.cat(refs, 1))
    bound = CSA_TOLERANCE if ratio == 4 else 3e-2
    assert error < bound, f"replays: relative L2 {error:.2e}, seed {seed}"
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
