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
    # CSA: the compressed part is the indexer's selection (entry numbers,
    # -1 padded) plus the offset (seq in prefill, the window in decode).
    selected = torch.randint(-1, 50, (expected.shape[0], max(slots, 1)), dtype=torch.int32,
                             device="cuda")
    base = torch.full((expected.shape[0],), start or 0, dtype=torch.int32, device="cuda")
    kernel.launch(out, selected, base, 1 if decode else seq)
    torch.cuda.synchronize()
    got = out[:, :config.window + slots].cpu()
    if ratio == 4:
        assert torch.equal(got[:, :config.window], expected[:, :config.window])
        offset = config.window if decode else seq
        chosen = selected[:, :slots].cpu()
        want = torch.where(chosen >= 0, chosen + offset, torch.full_like(chosen, -1))
        assert torch.equal(got[:, config.window:], want)
    else:
        assert torch.equal(got, expected)


def decode_rows(positions, window, ratio, slots, selected=None):
    """The index rows of decode tokens, one per sequence, at `positions`
    (KERNELS.md "Indices", the reference's decode): the ring slots of tokens
    p - window + 1 .. p in token order (-1 before 0), then HCA: entries
    j < (p + 1) // ratio as window + j; CSA: the indexer's selection (entry
    numbers) + window; -1 padded. Ratio 0: the window part only."""
    p = torch.tensor(positions, dtype=torch.int64)[:, None]
    tokens = p - (window - 1) + torch.arange(window)[None, :]
    ring = torch.where(tokens >= 0, tokens % window, torch.full_like(tokens, -1))
    if ratio == 0:
        return ring.int()
    if ratio == 4:
        part = torch.where(selected >= 0, selected.long() + window, torch.full_like(selected.long(), -1))
    else:
        entry = torch.arange(slots)[None, :]
        part = torch.where(entry < (p + 1) // ratio, window + entry, torch.full_like(entry, -1))
    return torch.cat((ring, part), 1).int()


@pytest.mark.parametrize("ratio", [0, 4, 128])
def test_index_rows_decode_at_distinct_positions(ratio):
    """A decode launch for many sequences, each at its own position (base[t],
    device memory): the first token, a window not yet full, the ring wrapping
    (positions past the window), groups just completed and not, more visible
    HCA entries than slots. (decode_rows is the reference's decode, checked
    against it on the CPU at positions 5..399 for every ratio.)"""
    seed = fresh_seed(torch)
    window, slots = 8, 10
    positions = [0, 3, 7, 8, 9, 21, 126, 127, 128, 139, 255, 300, 1000, 1407, 4095]
    kernel = hisa.jit.get_kernel("v4_indices", {"window": window, "ratio": ratio, "decode": 1,
                                                "csa": int(ratio == 4)})
    out = torch.full((len(positions), window + slots), -7, dtype=torch.int32, device="cuda")
    selected = torch.randint(-1, 50, (len(positions), slots), dtype=torch.int32, device="cuda")
    base = torch.tensor(positions, dtype=torch.int32, device="cuda")
    kernel.launch(out, selected, base, 1)
    torch.cuda.synchronize()
    expected = decode_rows(positions, window, ratio, slots, selected.cpu())
    got = out[:, :expected.shape[1]].cpu()
    wrong = (got != expected).any(1).nonzero().flatten().tolist()
    assert not wrong, (f"positions {[positions[i] for i in wrong]}: got {got[wrong[0]].tolist()}, "
                       f"expected {expected[wrong[0]].tolist()} (seed {seed})")


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("tokens,heads,dim,seq,start", [
    (7, 64, 512, 7, 0), (33, 1, 512, 11, 0), (5, 128, 512, 1, 3000), (9, 64, 128, 4, 0),
    (40, 8, 512, 4, 100), (12, 16, 128, 1, 4000)])
def test_rope(tokens, heads, dim, seq, start, inverse):
    """Token t at position base[t // seq] + t % seq, clamped to the tables'
    rows (kernels-dsl/lib/rope.mlir: rope_position), against torch: the
    first sequence at `start`, the others at distinct random bases, except
    (where there are that many) one negative (its first positions take row
    0), one straddling the tables' end and the last past it (their last
    row). Prefill: seq tokens a sequence; decode: seq 1, base the positions
    in device memory."""
    fresh_seed(torch)
    positions_count = 4096
    angles = ref.rope_angles(torch.arange(positions_count), 64, 160000.0)
    cos, sin = angles.cos().float().cuda(), angles.sin().float().cuda()
    x = torch.randn(tokens, heads, dim, device="cuda").bfloat16()
    sequences = -(-tokens // seq)
    base = torch.randperm(positions_count - seq)[:sequences].int()
    base[0] = start
    if sequences >= 2:
        base[-1] = positions_count + 5
    if sequences >= 3:
        base[1] = -2
    if sequences >= 4:
        base[2] = positions_count - 2
    t = torch.arange(tokens)
    positions = (base.long()[t // seq] + t % seq).clamp(0, positions_count - 1)
    expected = x.float().clone()
    expected[..., dim - 64:] = ref.rope(x[..., dim - 64:].float().cpu(),
                                        angles[positions], inverse=inverse).cuda()
    y = x.clone()
    hisa.jit.get_kernel("v4_rope", {"inverse": int(inverse), "dim": dim}).launch(
        y, cos, sin, base.cuda(), seq)
    torch.cuda.synchronize()
    assert torch.equal(y[..., :dim - 64], x[..., :dim - 64]), "the first dims must not change"
    # bf16 output: half an ulp (2^-8 relative) of each rotated value.
    close = torch.isclose(y.float(), expected, rtol=1e-2, atol=2e-2).all(-1).all(-1)
    wrong = (~close).nonzero().flatten().tolist()
    assert not wrong, (f"tokens {wrong[:8]} (positions {positions[wrong[:8]].tolist()}, bases "
                       f"{base.tolist()}) differ from torch")


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


@pytest.mark.parametrize("ratio,overlap,dim,quantize,batch,seq,steps", [
    (4, True, 512, True, 2, 37, 9),        # CSA kv: overlap, a tail of 1 token
    (4, True, 128, False, 1, 64, 8),       # the CSA indexer's compressor (no fp8)
    (4, True, 128, 2, 2, 37, 11),          # ... with its keys' Hadamard + fp4
    (128, False, 512, True, 2, 300, 90),   # HCA: a tail, then decode completes a group
    (128, False, 512, True, 1, 128, 0),    # exactly one group
    (128, False, 512, True, 1, 5, 123),    # the first entry comes from decode
    (4, True, 512, True, 1, 2, 7),         # overlap entries 0 and 1 from decode
])
def test_compress_prefill_then_decode(ratio, overlap, dim, quantize, batch, seq, steps):
    """v4_compress against reference.compress_entries: a prefill of seq
    tokens writes entries j < seq / ratio (pooling, RMSNorm, RoPE at
    j * ratio, fp8) into the cache slots first_slot + j and the decode state;
    then `steps` decode launches, one token each, must complete the entries
    a prefill of seq + steps tokens writes (other slots untouched; the state
    starts as NaN, so a row read before it is written shows)."""
    seed = fresh_seed(torch)
    width = (2 if overlap else 1) * dim
    total = seq + steps
    kv = torch.randn(batch, total, width, device="cuda").bfloat16()
    score = (torch.randn(batch, total, width, device="cuda") * 2).bfloat16()
    ape = torch.randn(ratio, width, device="cuda") * 0.1
    norm = 1 + 0.1 * torch.randn(dim, device="cuda")
    theta = 160000.0
    angles = ref.rope_angles(torch.arange(total + ratio), 64, theta)
    cos, sin = angles.cos().float().cuda(), angles.sin().float().cuda()
    first_slot, slots = 128, 128 + total // ratio + 3
    cache = torch.full((batch, slots, dim), 7.0, device="cuda").bfloat16()
    state_kv = torch.full((batch, 2 * ratio, width), float("nan"), device="cuda")
    state_score = torch.full_like(state_kv, float("nan"))
    params = {"blocks": dim // 64, "ratio": ratio, "overlap": int(overlap),
              "quantize": int(quantize)}     # 0 none, 1 (True) fp8, 2 Hadamard + fp4
    prefill = hisa.jit.get_kernel("v4_compress", dict(params, decode=0))
    decode = hisa.jit.get_kernel("v4_compress", dict(params, decode=1))
    prompt_kv = kv[:, :seq].contiguous()
    prompt_score = score[:, :seq].contiguous()
    zeros = torch.zeros(batch, dtype=torch.int32, device="cuda")
    prefill.launch(prompt_kv.view(batch * seq, width), prompt_score.view(batch * seq, width),
                   ape, norm, cos, sin, state_kv, state_score, cache, zeros, seq, first_slot,
                   1e-6)
    for p in range(seq, total):
        # Decode reads each sequence's position from device memory.
        positions = torch.full((batch,), p, dtype=torch.int32, device="cuda")
        decode.launch(kv[:, p].contiguous(), score[:, p].contiguous(), ape, norm, cos, sin,
                      state_kv, state_score, cache, positions, 1, first_slot, 1e-6)
    torch.cuda.synchronize()
    entries = total // ratio
    expected = ref.compress_entries(kv.float().cpu(), score.float().cpu(), ape.cpu(), norm.cpu(),
                                    ratio, overlap, ref.fp8_qdq if quantize == 1 else None, 1e-6,
                                    64, theta)
    if quantize == 2:
        expected = ref.fp4_qdq(ref.hadamard(expected))
    got = cache[:, first_slot:first_slot + entries].float().cpu()
    assert got.shape == expected.shape
    untouched = torch.cat((cache[:, :first_slot], cache[:, first_slot + entries:]), 1)
    assert (untouched == 7.0).all(), "only the entries' slots may be written"
    assert not got.isnan().any(), f"NaN in the entries, seed {seed}"
    error = (got - expected).norm() / expected.norm()
    # fp8 codes may round the other way on bf16-level differences: a few
    # values move by one fp8 step (1/16 relative), the row barely.
    # fp4 codes are 2 bits of mantissa: a rounding flip moves a value by up to
    # a third; a few flips per row stay under 5%.
    bound = {0: 5e-3, 1: 2e-2, 2: 5e-2}[int(quantize)]
    assert error < bound, f"relative L2 {error:.2e}, seed {seed}"
    # Decode pools the same f32 numbers as prefill: a prefill of all tokens
    # gives the same bits.
    whole = torch.full_like(cache, 7.0)
    state2 = torch.full_like(state_kv, float("nan"))
    state3 = torch.full_like(state_kv, float("nan"))
    prefill.launch(kv.view(batch * total, width), score.view(batch * total, width), ape, norm,
                   cos, sin, state2, state3, whole, zeros, total, first_slot, 1e-6)
    torch.cuda.synchronize()
    assert torch.equal(whole, cache), "decode entries differ from prefill's"


@pytest.mark.parametrize("ratio,overlap,dim,quantize,prompts,steps", [
    (4, True, 512, True, (1, 2, 6, 13), 9),        # CSA kv: entries 0, 1 from decode
    (4, True, 128, 2, (13, 1, 30, 6), 11),         # the indexer's keys (Hadamard + fp4)
    (128, False, 512, True, (110, 120, 250, 5), 20),  # HCA: groups complete at different steps
])
def test_compress_decode_at_distinct_positions(ratio, overlap, dim, quantize, prompts, steps):
    """Sequences prefilled to different lengths (one launch each, on their
    own rows of the state and the cache), then `steps` decode launches for
    all of them at once, sequence b at its own position prompts[b] + step
    (base[b], device memory): each sequence's entries are
    reference.compress_entries of its own tokens, bit for bit what a prefill
    of them writes, and no other slot is written."""
    seed = fresh_seed(torch)
    batch = len(prompts)
    width = (2 if overlap else 1) * dim
    totals = [p + steps for p in prompts]
    kv = torch.randn(batch, max(totals), width, device="cuda").bfloat16()
    score = (torch.randn(batch, max(totals), width, device="cuda") * 2).bfloat16()
    ape = torch.randn(ratio, width, device="cuda") * 0.1
    norm = 1 + 0.1 * torch.randn(dim, device="cuda")
    theta = 160000.0
    angles = ref.rope_angles(torch.arange(max(totals) + ratio), 64, theta)
    cos, sin = angles.cos().float().cuda(), angles.sin().float().cuda()
    first_slot, slots = 128, 128 + max(totals) // ratio + 3
    params = {"blocks": dim // 64, "ratio": ratio, "overlap": int(overlap),
              "quantize": int(quantize)}
    prefill = hisa.jit.get_kernel("v4_compress", dict(params, decode=0))
    decode = hisa.jit.get_kernel("v4_compress", dict(params, decode=1))
    unused = torch.zeros(1, dtype=torch.int32, device="cuda")

    def prefill_each(lengths, cache):
        state_kv = torch.full((batch, 2 * ratio, width), float("nan"), device="cuda")
        state_score = torch.full_like(state_kv, float("nan"))
        for b, length in enumerate(lengths):
            prefill.launch(kv[b, :length].contiguous(), score[b, :length].contiguous(), ape, norm,
                           cos, sin, state_kv[b:b + 1], state_score[b:b + 1], cache[b:b + 1],
                           unused, length, first_slot, 1e-6)
        return state_kv, state_score

    cache = torch.full((batch, slots, dim), 7.0, device="cuda").bfloat16()
    state_kv, state_score = prefill_each(prompts, cache)
    sequences = torch.arange(batch, device="cuda")
    for step in range(steps):
        positions = torch.tensor([p + step for p in prompts], dtype=torch.int32, device="cuda")
        decode.launch(kv[sequences, positions.long()].contiguous(),
                      score[sequences, positions.long()].contiguous(), ape, norm, cos, sin,
                      state_kv, state_score, cache, positions, 1, first_slot, 1e-6)
    whole = torch.full_like(cache, 7.0)
    prefill_each(totals, whole)
    torch.cuda.synchronize()
    assert not cache.isnan().any(), f"NaN in the cache, seed {seed}"
    got, expected = [], []
    for b, total in enumerate(totals):
        entries = total // ratio
        untouched = torch.cat((cache[b, :first_slot], cache[b, first_slot + entries:]))
        assert (untouched == 7.0).all(), f"sequence {b}: a slot past its {entries} entries written"
        assert torch.equal(whole[b], cache[b]), \
            f"sequence {b} (position {total - 1}): decode entries differ from prefill's, seed {seed}"
        want = ref.compress_entries(kv[b:b + 1, :total].float().cpu(),
                                    score[b:b + 1, :total].float().cpu(), ape.cpu(), norm.cpu(),
                                    ratio, overlap, ref.fp8_qdq if quantize == 1 else None, 1e-6,
                                    64, theta)
        if quantize == 2:
            want = ref.fp4_qdq(ref.hadamard(want))
        assert want.shape[1] == entries
        got.append(cache[b, first_slot:first_slot + entries].float().cpu())
        expected.append(want[0])
    got, expected = torch.cat(got), torch.cat(expected)
    # Over all entries (12, 23 and 4 of them), with the bounds and the reasons
    # of test_compress_prefill_then_decode (fp8 / fp4 codes that round the
    # other way on f32-level differences).
    error = (got - expected).norm() / expected.norm()
    bound = {1: 2e-2, 2: 5e-2}[int(quantize)]
    assert error < bound, f"relative L2 {error:.2e}, seed {seed}"


@pytest.mark.parametrize("rows", [1, 37, 1000])
def test_hadamard_fp4(rows):
    """v4_hadamard_fp4 against reference.fp4_qdq(hadamard(x)), bit for bit:
    the butterflies add in the reference's order, the scale comes from the
    float's bits and the e2m1 rounding is by exact midpoints."""
    seed = fresh_seed(torch)
    x = (torch.randn(rows, 128, device="cuda") * torch.rand(rows, 1, device="cuda") * 10)
    x[0, :] = 0                                        # a zero row stays zero
    if rows > 2:
        x[1] = torch.randn(128, device="cuda") * 1e-30  # tiny scales (2^-126 floor)
        x[2, :64] = 3.0                                 # equal values: ties in the transform
    x = x.bfloat16()
    y = x.clone()
    hisa.jit.get_kernel("v4_hadamard_fp4", {}).launch(y)
    torch.cuda.synchronize()
    expected = ref.fp4_qdq(ref.hadamard(x.float())).bfloat16()
    wrong = (y != expected).nonzero()
    detail = [(r, c, y[r, c].item(), expected[r, c].item()) for r, c in wrong[:8].tolist()]
    assert wrong.numel() == 0, f"{wrong.shape[0]} values differ (row, col, kernel, reference): " \
                               f"{detail}, seed {seed}"


@pytest.mark.parametrize("m,n,k,groups", [
    (300, 512, 256, 1), (5, 256, 512, 2), (1000, 64, 128, 1), (129, 1024, 4096, 8)])
def test_linear(m, n, k, groups):
    """linear: y [m, groups * n] = per group x [m, g k:(g+1) k] w[g n:(g+1) n]^T,
    bf16 out (partial row and column tiles; the grouped wo_a shape)."""
    seed = fresh_seed(torch)
    x = torch.randn(m, groups * k, device="cuda").bfloat16()
    w = (torch.randn(groups * n, k, device="cuda") * k ** -0.5).bfloat16()
    y = torch.full((m, groups * n), float("nan"), device="cuda").bfloat16()
    params = {"k": k, "n": n, "groups": groups, "x_cols": groups * k, "y_cols": groups * n}
    if m <= 64:   # the operator's decode tiles
        params.update(block_m=64, block_n=64, block_k=128)
    hisa.jit.get_kernel("linear", params).launch(x, w, y)
    torch.cuda.synchronize()
    expected = torch.cat([x[:, g * k:(g + 1) * k].float() @ w[g * n:(g + 1) * n].float().T
                          for g in range(groups)], 1)
    assert not y.isnan().any(), f"unwritten outputs, seed {seed}"
    error = (y.float() - expected).norm() / expected.norm()
    assert error < 1e-2, f"relative L2 {error:.2e}, seed {seed}"


@pytest.mark.parametrize("m,n,k,groups", [(300, 1024, 1024, 1), (129, 512, 256, 2), (5, 256, 64, 1),
                                            (37, 320, 64, 1)])
def test_linear_staged_is_linear(m, n, k, groups):
    """linear_staged (the epilogue through a swizzled shared tile and
    16-byte stores) writes exactly linear's bits, partial row tiles and a
    partial column tile (n = 320 of 256-wide tiles) included, and nothing
    outside y."""
    seed = fresh_seed(torch)
    x = torch.randn(m, groups * k, device="cuda").bfloat16()
    w = (torch.randn(groups * n, k, device="cuda") * k ** -0.5).bfloat16()
    params = {"k": k, "n": n, "groups": groups, "x_cols": groups * k, "y_cols": groups * n}
    y = torch.empty(m, groups * n, device="cuda").bfloat16()
    # y inside a larger buffer: rows past m must stay untouched.
    padded = torch.full((m + 7, groups * n), float("nan"), device="cuda").bfloat16()
    hisa.jit.get_kernel("linear", params).launch(x, w, y)
    hisa.jit.get_kernel("linear_staged", params).launch(x, w, padded[:m])
    torch.cuda.synchronize()
    assert torch.equal(padded[:m], y), f"staged output differs, seed {seed}"
    assert padded[m:].isnan().all(), f"wrote past y, seed {seed}"


@pytest.mark.parametrize("m,n,k,groups,splits", [(64, 4096, 8192, 1, 4), (3, 1024, 4096, 8, 2),
                                                 (37, 64, 1024, 1, 8)])
def test_linear_split_k(m, n, k, groups, splits):
    """linear_partial + linear_reduce (split-k for decode-sized m) equal the
    product; the partial sums add up in split order."""
    seed = fresh_seed(torch)
    x = torch.randn(m, groups * k, device="cuda").bfloat16()
    w = (torch.randn(groups * n, k, device="cuda") * k ** -0.5).bfloat16()
    partial = torch.full((splits, m, groups * n), float("nan"), device="cuda")
    y = torch.full((m, groups * n), float("nan"), device="cuda").bfloat16()
    params = {"k": k, "n": n, "groups": groups, "x_cols": groups * k, "y_cols": groups * n,
              "splits": splits, "block_m": 64, "block_n": 64, "block_k": 128}
    hisa.jit.get_kernel("linear_partial", params).launch(x, w, partial)
    hisa.jit.get_kernel("linear_reduce", {}).launch(partial, y)
    torch.cuda.synchronize()
    expected = torch.cat([x[:, g * k:(g + 1) * k].float() @ w[g * n:(g + 1) * n].float().T
                          for g in range(groups)], 1)
    assert not y.isnan().any(), f"unwritten outputs, seed {seed}"
    assert torch.equal(y, partial.sum(0).bfloat16()) or \
        torch.allclose(y.float(), partial.sum(0), rtol=1e-2, atol=1e-2)
    error = (y.float() - expected).norm() / expected.norm()
    assert error < 1e-2, f"relative L2 {error:.2e}, seed {seed}"


@pytest.mark.parametrize("m,n,k,groups,splits,block_n,block_k",
                         [(64, 4096, 8192, 1, 4, 128, 64), (3, 1024, 4096, 8, 2, 64, 128),
                          (37, 64, 1024, 1, 8, 64, 128), (64, 1000, 4096, 1, 16, 128, 64),
                          (130, 256, 512, 1, 2, 256, 64)])
def test_linear_split_k_in_one_launch(m, n, k, groups, splits, block_n, block_k):
    """linear_split_k (the last block of each tile reduces) gives
    linear_partial + linear_reduce bit for bit, twice in a row (the tile
    counters are back at 0 after each launch), with partial row and column
    tiles and several row tiles."""
    seed = fresh_seed(torch)
    x = torch.randn(m, groups * k, device="cuda").bfloat16()
    w = (torch.randn(groups * n, k, device="cuda") * k ** -0.5).bfloat16()
    params = {"k": k, "n": n, "groups": groups, "x_cols": groups * k, "y_cols": groups * n,
              "splits": splits, "block_m": 64 if m <= 64 else 128, "block_n": block_n,
              "block_k": block_k}
    partial = torch.full((splits, m, groups * n), float("nan"), device="cuda")
    two_launches = torch.full((m, groups * n), float("nan"), device="cuda").bfloat16()
    hisa.jit.get_kernel("linear_partial", params).launch(x, w, partial)
    hisa.jit.get_kernel("linear_reduce", {}).launch(partial, two_launches)
    tiles = -(-m // params["block_m"]) * groups * -(-n // block_n)
    counters = torch.zeros(tiles + 7, dtype=torch.int32, device="cuda")
    one_launch = hisa.jit.get_kernel("linear_split_k", params)
    for launch in range(2):
        partial.fill_(float("nan"))
        y = torch.full_like(two_launches, float("nan"))
        one_launch.launch(x, w, partial, counters, y)
        torch.cuda.synchronize()
        assert torch.equal(y, two_launches), f"launch {launch}, seed {seed}"
        assert not counters.any(), f"counters left at {counters.unique().tolist()}"
    expected = torch.cat([x[:, g * k:(g + 1) * k].float() @ w[g * n:(g + 1) * n].float().T
                          for g in range(groups)], 1)
    error = (y.float() - expected).norm() / expected.norm()
    assert error < 1e-2, f"relative L2 {error:.2e}, seed {seed}"


@pytest.mark.parametrize("decode", [False, True])
def test_to_fp8_is_exact_on_fp4_values(decode):
    """v4_to_fp8: rows of Hadamard + fp4 values become fp8 codes times a
    power-of-two row scale that give the values back exactly (prefill: rows
    [first, end); decode: row position // 4 of each sequence when its token
    completed it), and the q weights pick up scale * factor."""
    seed = fresh_seed(torch)
    batch, slots = 3, 40
    x = ref.fp4_qdq(ref.hadamard(torch.randn(batch, slots, 128) * 3)).bfloat16().cuda()
    out = torch.zeros(batch, slots, 128, dtype=torch.float8_e4m3fn, device="cuda")
    scale = torch.full((batch, slots), -1.0, device="cuda")
    w_in = torch.randn(batch, slots, device="cuda").bfloat16()
    w_out = torch.full((batch, slots), float("nan"), device="cuda")
    if decode:
        positions = torch.tensor([7, 8, 35], dtype=torch.int32, device="cuda")  # 7, 35 complete
        kernel = hisa.jit.get_kernel("v4_to_fp8", {"decode": 1, "weights": 0})
        kernel.launch(x, out, scale, w_in, w_out, positions, 0, 1, 1.0)
        rows = {(0, 1), (2, 8)}
    else:
        kernel = hisa.jit.get_kernel("v4_to_fp8", {"decode": 0, "weights": 1})
        unused = torch.zeros(1, dtype=torch.int32, device="cuda")
        kernel.launch(x, out, scale, w_in, w_out, unused, 5, 33, 0.25)
        rows = {(b, s) for b in range(batch) for s in range(5, 33)}
    torch.cuda.synchronize()
    for b in range(batch):
        for s in range(slots):
            if (b, s) in rows:
                back = out[b, s].float() * scale[b, s]
                assert torch.equal(back, x[b, s].float()), f"row {(b, s)}, seed {seed}"
                assert scale[b, s] > 0 and float(torch.log2(scale[b, s])).is_integer()
                if not decode:
                    assert w_out[b, s] == w_in[b, s].float() * scale[b, s] * 0.25
            else:
                assert scale[b, s] == -1.0, f"row {(b, s)} was written, seed {seed}"


@pytest.mark.parametrize("tokens,heads,seq", [(64, 64, 1), (37, 64, 37), (5, 3, 2)])
def test_index_query_is_rope_hadamard_then_fp8(tokens, heads, seq):
    """v4_index_query gives the bits of v4_rope (dim 128), v4_hadamard_fp4
    and v4_to_fp8 (weights = 1) launched in turn, and leaves q unchanged
    (decode: one token per sequence at its own position, one past the
    tables; prefill: sequences of `seq` tokens from 0; a partial last block
    of 8 rows)."""
    seed = fresh_seed(torch)
    positions_count = 4096
    angles = ref.rope_angles(torch.arange(positions_count), 64, 160000.0)
    cos, sin = angles.cos().float().cuda(), angles.sin().float().cuda()
    sequences = -(-tokens // seq)
    if seq == 1:
        base = torch.randint(0, positions_count, (sequences,), dtype=torch.int32)
        base[-1] = positions_count + 5                 # past the tables: their last row
    else:
        base = torch.zeros(sequences, dtype=torch.int32)
    base = base.cuda()
    q = (torch.randn(tokens, heads, 128, device="cuda") * 4).bfloat16()
    q[0, 0] = 0                                        # a zero row: scale 2^-126 path
    w_in = torch.randn(tokens, heads, device="cuda").bfloat16()
    factor = 1.0 / (128 * heads) ** 0.5
    rows = tokens * heads

    # The three launches the fused kernel replaces.
    y = q.clone()
    hisa.jit.get_kernel("v4_rope", {"inverse": 0, "dim": 128}).launch(y, cos, sin, base, seq)
    hisa.jit.get_kernel("v4_hadamard_fp4", {}).launch(y.view(rows, 128))
    want_q8 = torch.zeros(1, rows, 128, dtype=torch.float8_e4m3fn, device="cuda")
    want_scale = torch.full((1, rows), -1.0, device="cuda")
    want_w = torch.full((1, rows), float("nan"), device="cuda")
    unused = torch.zeros(1, dtype=torch.int32, device="cuda")
    hisa.jit.get_kernel("v4_to_fp8", {"decode": 0, "weights": 1}).launch(
        y.view(1, rows, 128), want_q8, want_scale, w_in.view(1, rows), want_w, unused,
        0, rows, factor)

    q_before = q.clone()
    q8 = torch.zeros(tokens, heads, 128, dtype=torch.float8_e4m3fn, device="cuda")
    scale = torch.full((tokens, heads), -1.0, device="cuda")
    w_out = torch.full((tokens, heads), float("nan"), device="cuda")
    hisa.jit.get_kernel("v4_index_query", {}).launch(q, cos, sin, base, w_in, q8, scale, w_out,
                                                     seq, factor)
    torch.cuda.synchronize()
    assert torch.equal(q, q_before), "q must not change"
    codes, want_codes = q8.view(torch.uint8).view(rows, 128), want_q8.view(torch.uint8)[0]
    wrong = (codes != want_codes).nonzero()
    assert wrong.numel() == 0, \
        f"{wrong.shape[0]} fp8 codes differ, first (row, dim) {wrong[:4].tolist()}, seed {seed}"
    assert torch.equal(scale.view(rows), want_scale[0]), f"row scales differ, seed {seed}"
    assert torch.equal(w_out.view(rows), want_w[0]), f"weights differ, seed {seed}"


def test_ring_write_and_advance():
    """v4_ring_write puts sequence b's kv row at ring slot positions[b] %
    128; v4_advance adds one to every position (set = 1: sets them)."""
    fresh_seed(torch)
    batch, rows = 3, 130
    kv = torch.randn(batch, 512, device="cuda").bfloat16()
    cache = torch.zeros(batch, rows, 512, device="cuda").bfloat16()
    positions = torch.tensor([0, 127, 300], dtype=torch.int32, device="cuda")
    hisa.jit.get_kernel("v4_ring_write", {"window": 128}).launch(kv, cache, positions)
    hisa.jit.get_kernel("v4_advance", {"set": 0}).launch(positions, 0)
    torch.cuda.synchronize()
    for b, slot in enumerate([0, 127, 300 % 128]):
        assert torch.equal(cache[b, slot], kv[b])
        assert int((cache[b].abs().sum(-1) > 0).sum()) == 1, "one slot per sequence"
    assert positions.tolist() == [1, 128, 301]
    hisa.jit.get_kernel("v4_advance", {"set": 1}).launch(positions, 42)
    torch.cuda.synchronize()
    assert positions.tolist() == [42, 42, 42]


@pytest.mark.parametrize("rows,dim,splits", [(64, 1024, 8), (37, 512, 3), (1, 4096, 2)])
def test_linear_reduce_rmsnorm_is_reduce_then_norm(rows, dim, splits):
    """linear_reduce_rmsnorm gives bit for bit what linear_reduce then
    v4_rmsnorm give (the decode step's q_lora and kv rows), and the
    reference's RMSNorm of the summed rows."""
    seed = fresh_seed(torch)
    partial = torch.randn(splits, rows, dim, device="cuda") * 3
    weight = 1 + 0.1 * torch.randn(dim, device="cuda")
    summed = torch.full((rows, dim), float("nan"), device="cuda").bfloat16()
    two_steps = torch.full_like(summed, float("nan"))
    fused = torch.full_like(summed, float("nan"))
    hisa.jit.get_kernel("linear_reduce", {}).launch(partial, summed)
    hisa.jit.get_kernel("v4_rmsnorm", {"dim": dim}).launch(summed, weight, two_steps, 1e-6)
    hisa.jit.get_kernel("linear_reduce_rmsnorm", {"dim": dim}).launch(
        partial, weight, fused, 1e-6)
    torch.cuda.synchronize()
    assert torch.equal(fused, two_steps), f"seed {seed}"
    expected = ref.rmsnorm(partial.sum(0).bfloat16(), weight, 1e-6)
    assert torch.allclose(fused.float(), expected, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("tokens,heads,dim,seq", [(64, 64, 512, 1), (7, 3, 512, 7),
                                                  (5, 64, 128, 1)])
def test_norm_rope_is_norm_then_rope(tokens, heads, dim, seq):
    """v4_norm_rope gives bit for bit what v4_rmsnorm then v4_rope give
    (the per-head q norm and RoPE), at decode and prefill positions, a
    position past the tables included."""
    seed = fresh_seed(torch)
    positions_count = 512
    angles = ref.rope_angles(torch.arange(positions_count), 64, 10000.0)
    cos, sin = angles.cos().float().cuda(), angles.sin().float().cuda()
    x = (torch.randn(tokens, heads, dim, device="cuda") * 2).bfloat16()
    weight = torch.ones(dim, device="cuda")
    sequences = -(-tokens // seq)
    base = torch.randint(0, positions_count, (sequences,), dtype=torch.int32, device="cuda")
    base[-1] = positions_count + 3
    two_steps = x.clone()
    hisa.jit.get_kernel("v4_rmsnorm", {"dim": dim}).launch(
        two_steps.view(-1, dim), weight, two_steps.view(-1, dim), 1e-6)
    hisa.jit.get_kernel("v4_rope", {"inverse": 0, "dim": dim}).launch(
        two_steps, cos, sin, base, seq)
    fused = x.clone()
    hisa.jit.get_kernel("v4_norm_rope", {"dim": dim}).launch(
        fused, weight, cos, sin, base, seq, 1e-6)
    torch.cuda.synchronize()
    assert torch.equal(fused, two_steps), f"seed {seed}"
