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
    keys = layer.index_key_cache()
    assert (keys is None) == (config.compress_ratio != 4)
    if keys is not None:
        # The indexer's entries so far: fp8 codes times power-of-two scales
        # give the reference's Hadamard + fp4 keys, except where the
        # compressor's f32 sums round an element across an e2m1 midpoint
        # (a whole fp4 step: one such element of an entry's 128 is already
        # ~4% of its L2 norm, so the check counts equal elements).
        codes, scales = keys
        n = length // 4
        assert codes.shape[0] == layer.batch and codes.shape[1] >= n
        if n:
            got = codes[:, :n].float() * scales[:, :n, None]
            assert (scales[:, :n] > 0).all()
            assert torch.equal(scales[:, :n], 2.0 ** scales[:, :n].log2().round())
            expected = reference.i_cache[:, :n]
            equal = (got == expected).float().mean().item()
            assert equal >= 0.95, f"{equal:.1%} of the indexer's key elements equal"
            assert relative_error(got, expected) < 0.15


# CSA's selection is sensitive to rounding: the layer scores bf16
# projections through fp4, the reference f32 ones, and a bf16 rounding of q
# that moves a value across an fp4 midpoint moves a score. The reference
# itself with only the layer's bf16 roundings of q and the indexer's q and
# weights added (python/bench/probes/v4_csa_rounding.py, this test's
# configuration, CPU) selects 98.7-99.2% of the same entries, and the
# entries it takes instead score within 6% of the row's largest |score|
# below the reference's last selected one (376 swaps over 5 seeds; on the
# H200 the layer once took one 10.4% below: q goes through fp4, where a
# bf16 rounding can move an element a whole e2m1 step). So the reference
# attends to the layer's selection (forced_selection; its output is then
# held to the same 3e-2 as the other ratios: 0.4% in that experiment), and
# the selection itself must agree on >= 95% of the entries, every other
# entry being a near tie: within CSA_NEAR_TIE of the row's largest |score|
# of the reference's last selected score. The scores are compared in
# aggregate too: the entries taken instead, each short of the reference's
# last selected score by a deficit (that gap over the row's largest |score|),
# short by at most CSA_MEAN_DEFICIT per selected entry on average. The same
# probe over 11 seeds (this test's prefill of 2 x 200 tokens and 60 decode
# steps; 1100 swaps): agreement 97.4-99.0%, deficits at most 8.1%, their sum
# 1.1e-4 to 2.9e-4 per selected entry. So the single-entry bound stays above
# the 10.4% seen once on the H200 (a whole fp4 step), and the aggregate,
# which one rare flip barely moves (0.104 over the 192 entries of the
# smallest test is 5e-4), is 17x the probe's worst: a selection that misses
# systematically, even by less than the single-entry bound, fails it. (The
# probe rounds to bf16 but does not copy the layer's fp8 cache and fp4
# codes, which made the H200's one 10.4% flip: the bound is provisional
# until the GPU's own figures, printed by check_agreement, are recorded.)
CSA_AGREEMENT = 0.95
CSA_NEAR_TIE = 0.2
CSA_MEAN_DEFICIT = 5e-3


def compressed_part(idx, offset):
    """The compressed part of index rows as entry indices (-1 kept)."""
    part = idx[..., 128:]
    return torch.where(part >= 0, part - offset, part)


def check_indices(got, reference, ratio, offset, start, when):
    """Window and HCA rows: exactly the reference's. CSA: the window part
    exactly, as many entries per row as the reference's own selection, all
    of them visible (token at position i sees (i + 1) // 4 entries), and
    every entry it does not share a near tie in the reference's scores;
    returns (agreeing, total) selected entries and the sum of the deficits of
    the entries taken instead, for check_agreement."""
    expected = reference.last_indices.to(got.device)
    if ratio != 4:
        assert torch.equal(got, expected), f"{when}: index rows"
        return 0, 0, 0.0
    assert torch.equal(got[..., :128], expected[..., :128]), f"{when}: window part"
    mine = compressed_part(got, offset).cpu()
    own = reference.own_selection.cpu()
    assert torch.equal((mine >= 0).sum(-1), (own >= 0).sum(-1)), f"{when}: entries per row"
    scores = reference.last_scores.cpu()
    agree, deficit = 0, 0.0
    for b in range(own.shape[0]):
        for s in range(own.shape[1]):
            theirs = set(own[b, s].tolist()) - {-1}
            ours = set(mine[b, s].tolist()) - {-1}
            agree += len(ours & theirs)
            if ours == theirs:
                continue
            visible = (start + s + 1) // 4
            row = scores[b, s, :visible]
            last = min(float(row[j]) for j in theirs)
            largest = max(float(row.abs().max()), 1e-30)
            for j in ours - theirs:
                assert 0 <= j < visible, f"{when}: sequence {b} token {s} selected " \
                    f"entry {j} of {visible} visible"
                assert float(row[j]) >= last - CSA_NEAR_TIE * largest, \
                    f"{when}: sequence {b} token {s} selected entry {j} (score " \
                    f"{float(row[j]):.4g}), not a near tie of the last selected {last:.4g}"
                deficit += max(0.0, last - float(row[j])) / largest
    return agree, int((own >= 0).sum()), deficit


def check_agreement(agree, total, deficit, when):
    if total:
        # Shown with pytest -rP (or on failure): the figures the bounds
        # above are to be checked against on the GPU.
        print(f"{when}: agreement {agree / total:.4f}, mean deficit {deficit / total:.2e}")
        assert agree >= CSA_AGREEMENT * total, f"{when}: {agree} of {total} selected entries agree"
        assert deficit <= CSA_MEAN_DEFICIT * total, (
            f"{when}: the entries taken instead of the reference's fall short of its last "
            f"selected score by {deficit / total:.2e} of the rows' largest |score| per selected "
            f"entry (at most {CSA_MEAN_DEFICIT})")


def reference_step(layer, reference, x, start, tokens, ratio):
    """The reference's forward on the layer's CSA selection (the layer's
    index rows of its last call, `tokens` of them)."""
    got_idx = layer.last_indices(tokens).view(x.shape[0], x.shape[1], -1)
    offset = x.shape[1] if start == 0 else 128
    if ratio == 4:
        reference.forced_selection = compressed_part(got_idx, offset)
    return reference.forward(x.float(), start), got_idx, offset


@pytest.mark.parametrize("ratio", [0, 4, 128])
@pytest.mark.parametrize("batch,seq,steps", [(2, 200, 60), (1, 5, 3)])
def test_prefill_then_decode(ratio, batch, seq, steps):
    seed = fresh_seed(torch)
    config = small_config(ratio)
    max_seq = 300
    layer, reference = make(config, batch, max_seq, seed)
    x = torch.randn(batch, seq + steps, config.dim, device="cuda").bfloat16()
    out = layer.forward(x[:, :seq], 0)
    expected, got_idx, offset = reference_step(layer, reference, x[:, :seq], 0, batch * seq, ratio)
    assert not out.isnan().any()
    check_agreement(*check_indices(got_idx, reference, ratio, offset, 0, "prefill"), "prefill")
    error = relative_error(out, expected)
    assert error < 3e-2, f"prefill: relative L2 {error:.2e}, seed {seed}"
    check_cache(layer, reference, config)
    agree, total, deficit = 0, 0, 0.0
    for step in range(steps):
        p = seq + step
        out = layer.forward(x[:, p:p + 1], p)
        expected, got_idx, offset = reference_step(layer, reference, x[:, p:p + 1], p, batch, ratio)
        a, t, d = check_indices(got_idx, reference, ratio, offset, p, f"decode at {p}")
        agree, total, deficit = agree + a, total + t, deficit + d
        error = relative_error(out, expected)
        assert error < 3e-2, f"decode at {p}: relative L2 {error:.2e}, seed {seed}"
    check_agreement(agree, total, deficit, "decode")
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
    reference_step(layer, reference, x[:, :seq], 0, batch * seq, ratio)
    # An eager step first: every kernel is compiled before the capture.
    out = layer.forward(x[:, seq:seq + 1], seq)
    expected, _, _ = reference_step(layer, reference, x[:, seq:seq + 1], seq, batch, ratio)
    assert relative_error(out, expected) < 3e-2
    static_x = x[:, seq + 1:seq + 2].clone()
    # The output too is allocated before the capture: nothing allocates
    # during it (compute-sanitizer's memcheck runs torch without its caching
    # allocator, where an allocation would end the capture).
    static_out = torch.empty_like(static_x)
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            layer.forward(static_x, seq + 1, out=static_out)
    torch.cuda.current_stream().wait_stream(stream)
    # Capturing launched nothing: the device positions still say seq + 1,
    # and so does the host count (a capture leaves it alone).
    assert layer.length == seq + 1
    agree, total, deficit = 0, 0, 0.0
    for i in range(replays):
        p = seq + 1 + i
        static_x.copy_(x[:, p:p + 1])
        graph.replay()
        expected, got_idx, offset = reference_step(layer, reference, x[:, p:p + 1], p, batch, ratio)
        a, t, d = check_indices(got_idx, reference, ratio, offset, p, f"replay {i} (position {p})")
        agree, total, deficit = agree + a, total + t, deficit + d
        error = relative_error(static_out, expected)
        assert error < 3e-2, f"replay {i} (position {p}): relative L2 {error:.2e}, seed {seed}"
    check_agreement(agree, total, deficit, "replays")
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
    x = torch.randn(1, 3, config.dim, device="cuda").bfloat16()
    with pytest.raises(hisa.InvalidArgumentError, match="out must be a contiguous bfloat16"):
        layer.forward(x, 0, out=torch.empty(1, 3, config.dim, device="cuda"))
    with pytest.raises(hisa.InvalidArgumentError, match="not contiguous"):
        layer.forward(x, 0, out=torch.empty(1, config.dim, 3, device="cuda").bfloat16().transpose(1, 2))
    bounded = hisa.v4.Attention(config, {k: v.cuda() for k, v in ref.random_weights(
        config).items() if not k.startswith("i_")}, 1, 64, max_prefill_tokens=16)
    with pytest.raises(hisa.InvalidArgumentError, match="max_prefill_tokens = 16"):
        bounded.forward(torch.randn(1, 17, config.dim, device="cuda").bfloat16(), 0)
    # The index rows end at the buffer's 16 (a view past them would read
    # outside the allocation).
    with pytest.raises(hisa.InvalidArgumentError, match=r"tokens = 17 must be an int in \[0, 16\]"):
        bounded.last_indices(17)
    assert bounded.last_indices(16).shape[0] == 16
    csa = small_config(4)
    weights = {k: v.cuda() for k, v in ref.random_weights(csa).items() if k != "i_wq"}
    with pytest.raises(hisa.InvalidArgumentError, match="weight i_wq must not be NULL"):
        hisa.v4.Attention(csa, weights, 1, 64)
    bad = small_config(128)
    bad.o_lora = 100
    with pytest.raises(hisa.InvalidArgumentError, match="o_lora"):
        hisa.v4.Attention(bad, {k: v.cuda() for k, v in ref.random_weights(bad).items()}, 1, 64)


@pytest.mark.parametrize("ratio", [0, 4])
def test_l2_prefetch_changes_no_result(ratio):
    """Decode's L2 prefetch of the weights is a hint: the same steps with it
    off, automatic and at a small size give the same index rows and outputs
    (the branch it runs on is joined within the step): bit-identical
    without the indexer; with it (ratio 4) its top-k lists the selection in
    no particular order, so rows are compared as sets and outputs, whose
    sums follow that order, to rounding."""
    seed = fresh_seed(torch)
    config = small_config(ratio)
    batch, seq, steps = 2, 130, 3
    x = torch.randn(batch, seq + steps, config.dim, device="cuda").bfloat16()
    outputs = {}
    for prefetch in (0, -1, 4096):
        layer, _ = make(config, batch, 300, seed)
        layer.set_l2_prefetch(prefetch)
        layer.forward(x[:, :seq], 0)
        outputs[prefetch] = [layer.forward(x[:, p:p + 1], p).clone()
                             for p in range(seq, seq + steps)]
        outputs[prefetch].append(layer.last_indices(batch).clone())
    for prefetch in (-1, 4096):
        *steps_got, rows_got = outputs[prefetch]
        *steps_want, rows_want = outputs[0]
        if ratio == 4:
            assert torch.equal(rows_got.sort(1).values, rows_want.sort(1).values), \
                f"prefetch {prefetch} changed the index rows, seed {seed}"
        else:
            assert torch.equal(rows_got, rows_want), f"prefetch {prefetch}, seed {seed}"
        for got, want in zip(steps_got, steps_want):
            if ratio == 4:
                assert relative_error(got, want) < 5e-3, f"prefetch {prefetch}, seed {seed}"
            else:
                assert torch.equal(got, want), f"prefetch {prefetch} changed a result, seed {seed}"
    with pytest.raises(hisa.InvalidArgumentError, match="bytes = -2"):
        layer.set_l2_prefetch(-2)
    with pytest.raises(hisa.ArgumentTypeError):
        layer.set_l2_prefetch(1.5)


def test_l2_prefetch_checks_its_arguments():
    w = torch.randn(1000, 64, device="cuda").bfloat16()
    hisa.l2_prefetch(w)
    hisa.l2_prefetch(w, 100)   # not a multiple of 16: the whole 16s only
    hisa.l2_prefetch(w, 0)
    torch.cuda.synchronize()
    with pytest.raises(hisa.InvalidArgumentError, match=r"nbytes = 128001 must be in \[0, 128000\]"):
        hisa.l2_prefetch(w, 128001)
    with pytest.raises(hisa.InvalidArgumentError, match="16-byte aligned"):
        hisa.l2_prefetch(w.view(-1)[1:])
    with pytest.raises(hisa.InvalidArgumentError):
        hisa.l2_prefetch(w.cpu())
    with pytest.raises(hisa.InvalidArgumentError, match="contiguous"):
        hisa.l2_prefetch(w.t())


def test_index_key_cache_views_keep_the_layer_alive():
    # The views are the layer's memory: the layer (which frees it) lives as
    # long as they do.
    import gc
    import weakref
    layer, _ = make(small_config(4), 1, 256, fresh_seed(torch))
    codes, scales = layer.index_key_cache()
    alive = weakref.ref(layer)
    del layer
    gc.collect()
    assert alive() is not None, "the layer was freed under its key cache's views"
    codes.fill_(0)  # its memory, still allocated
    torch.cuda.synchronize()
    del codes, scales
    gc.collect()
    assert alive() is None, "the views kept the layer after they were gone"
