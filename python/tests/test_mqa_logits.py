"""The two MQA logits kernels (KERNELS.md 1.2 and 2.1) on tensor cores.

pool_mqa_logits and block_sparse_mqa_logits from kernels-dsl, compiled by the
JIT and launched directly (their Python operators come with the next issue).
Checked against float references on fresh random data: packed causal
sequences, odd sizes, block indices outside the window and -1.
"""

import pytest

from hisa_testutil import fresh_seed, require_gpu

torch, hisa = require_gpu()
jit = hisa.jit
ops = hisa.ops


def packed_windows(lengths, device="cuda"):
    ks, ke = [], []
    start = 0
    for length in lengths:
        pos = torch.arange(length, device=device)
        ks.append(torch.full((length,), start, device=device))
        ke.append(start + pos + 1)
        start += length
    return torch.cat(ks).int(), torch.cat(ke).int()


def random_fp8(*shape):
    return (torch.randn(*shape, device="cuda") * 1.5).to(torch.float8_e4m3fn)


def relu_logits(q, k, scale, weights):
    # q [M, H, D], k [J, D] -> [M, J]: sum_h relu(q . k * scale) * w
    scores = torch.einsum("mhd,jd->mhj", q.float(), k.float()) * scale[None, None, :]
    return (scores.clamp(min=0) * weights[:, :, None]).sum(1)


def bound(q, k, scale, weights):
    magnitude = torch.einsum("mhd,jd->mhj", q.float().abs(), k.float().abs()) * scale[None, None, :]
    return (magnitude * weights.abs()[:, :, None]).sum(1) * 2e-3 + 1e-4


@pytest.mark.parametrize("heads", [64, 128])
@pytest.mark.parametrize("lengths", [[1000], [700, 300, 1, 47], [4097]])
def test_pool_mqa_logits(heads, lengths):
    fresh_seed(torch)
    kb, dim = 128, 128
    ks, ke = packed_windows(lengths)
    m = n = int(sum(lengths))
    nb = -(-n // kb)
    bks = (ks // kb).int()
    bke = ((ke + kb - 1) // kb).int()
    q = random_fp8(m, heads, dim)
    blocked_k = random_fp8(nb, dim)
    blocked_scale = torch.rand(nb, device="cuda") + 0.5
    weights = torch.randn(m, heads, device="cuda") / heads**0.5
    logits = torch.full((m, nb), float("nan"), device="cuda")
    kernel = jit.get_kernel("pool_mqa_logits", {"heads": heads, "dim": dim, "block_q": 256 // heads})
    kernel.launch(q.view(m * heads, dim), blocked_k, blocked_scale, weights, bks, bke, logits)
    torch.cuda.synchronize()
    expected = relu_logits(q, blocked_k, blocked_scale, weights)
    tolerance = bound(q, blocked_k, blocked_scale, weights)
    cols = torch.arange(nb, device="cuda")
    inside = (cols[None, :] >= bks[:, None]) & (cols[None, :] < bke[:, None])
    error = (logits - expected).abs()
    assert not torch.isnan(logits[inside]).any(), "unwritten in-window logits"
    assert (error[inside] <= tolerance[inside]).all(), f"max error {error[inside].max().item()}"


@pytest.mark.parametrize("heads", [64, 128])
@pytest.mark.parametrize("kb", [64, 128, 256])
@pytest.mark.parametrize("lengths,topk", [([1000], 8), ([517, 800, 3], 5)])
def test_block_sparse_mqa_logits(heads, kb, lengths, topk):
    fresh_seed(torch)
    dim = 128
    ks, ke = packed_windows(lengths)
    m = n = int(sum(lengths))
    nblocks = -(-n // kb)
    q = random_fp8(m, heads, dim)
    k = random_fp8(n, dim)
    k_scale = torch.rand(n, device="cuda") + 0.5
    weights = torch.randn(m, heads, device="cuda") / heads**0.5
    # Random blocks: inside or outside the window, past the end, or -1.
    index = torch.randint(-1, nblocks + 1, (m, topk), device="cuda", dtype=torch.int32)
    out = torch.full((m, topk * kb), float("nan"), device="cuda")
    params = {"heads": heads, "dim": dim, "kb": kb, "topk": topk}
    # The operator layer's choice (lib/Ops): 5 blocks per SM unless the
    # [kb, H] accumulator needs more registers.
    params["min_blocks"] = 5 if heads <= 64 or kb <= 64 else (3 if kb == 128 else 1)
    kernel = jit.get_kernel("block_sparse_mqa_logits", params)
    kernel.launch(q, k, k_scale, index, weights, ks, ke, out)
    torch.cuda.synchronize()
    # The kernel stages the T block indices in shared memory: another T is
    # refused by the JIT's shape check, naming the argument.
    with pytest.raises(hisa.InvalidArgumentError, match="topk_block_index"):
        kernel.launch(q, k, k_scale, index[:, 1:].contiguous(), weights, ks, ke, out)

    slots = torch.arange(topk * kb, device="cuda")
    rows = index.long()[:, slots // kb] * kb + (slots % kb)[None, :]
    valid = (index.long()[:, slots // kb] >= 0) & (rows >= ks[:, None]) & (rows < ke[:, None]) & (rows < n)
    safe = rows.clamp(0, n - 1)
    dots = torch.einsum("mhd,mjd->mhj", q.float(), k.float()[safe]) * k_scale[safe][:, None, :]
    expected = (dots.clamp(min=0) * weights[:, :, None]).sum(1)
    magnitude = torch.einsum("mhd,mjd->mhj", q.float().abs(), k.float().abs()[safe]) * k_scale[safe][:, None, :]
    tolerance = (magnitude * weights.abs()[:, :, None]).sum(1) * 2e-3 + 1e-4
    assert torch.equal(torch.isneginf(out), ~valid), "-inf mask differs"
    error = (out - expected).abs()
    assert (error[valid] <= tolerance[valid]).all(), f"max error {error[valid].max().item()}"


@pytest.mark.parametrize("heads,dim", [(64, 128), (32, 64), (128, 128)])
@pytest.mark.parametrize("row_length,split_n", [(16388, 1024), (1000, 256), (64, 1024)])
def test_mqa_logits_decode(heads, dim, row_length, split_n):
    """mqa_logits_decode: query m over rows [m*W, (m+1)*W) of k, in its
    window only (windows empty, inside one chunk, across chunk boundaries,
    starting off a multiple of 4, ending past W); entries outside the windows
    stay as they were (NaN here)."""
    seed = fresh_seed(torch)
    m = 13
    w = row_length
    q = random_fp8(m, heads, dim)
    k = random_fp8(m * w, dim)
    scale = torch.rand(m * w, device="cuda") + 0.5
    weights = torch.randn(m, heads, device="cuda") / heads**0.5
    ends = torch.randint(0, w + 1, (m,), device="cuda")
    starts = (torch.rand(m, device="cuda") * ends).long()
    starts[0], ends[0] = 0, 0            # empty
    starts[1], ends[1] = 0, w            # the whole row
    starts[2], ends[2] = 3, min(w, 5)    # off a multiple of 4, one tile
    starts[3], ends[3] = w - 1, w + 7    # past the row's end
    if w > split_n:
        starts[4], ends[4] = split_n - 5, split_n + 70   # across a chunk boundary
    logits = torch.full((m, w), float("nan"), device="cuda")
    # The operator's register bound: 8 blocks per SM up to 64 heads.
    params = {"heads": heads, "dim": dim, "split_n": split_n,
              "min_blocks": 8 if heads <= 64 else 4}
    jit.get_kernel("mqa_logits_decode", params).launch(
        q.view(m * heads, dim), k, scale, weights, starts.int(), ends.int(), logits)
    torch.cuda.synchronize()
    cols = torch.arange(w, device="cuda")
    inside = (cols[None, :] >= starts[:, None]) & (cols[None, :] < ends.clamp(max=w)[:, None])
    assert logits[~inside].isnan().all(), f"wrote outside the windows, seed {seed}"
    assert not logits[inside].isnan().any(), f"unwritten in-window logits, seed {seed}"
    for row in range(m):
        keys = slice(row * w, (row + 1) * w)
        expected = relu_logits(q[row:row + 1], k[keys], scale[keys], weights[row:row + 1])[0]
        tolerance = bound(q[row:row + 1], k[keys], scale[keys], weights[row:row + 1])[0]
        error = (logits[row] - expected).abs()
        assert (error[inside[row]] <= tolerance[inside[row]]).all(), \
            f"row {row}: max error {error[inside[row]].max().item()}, seed {seed}"
