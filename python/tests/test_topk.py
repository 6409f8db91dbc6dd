"""hisa.topk (kernels-dsl/topk_f32.mlir and its bf16 variant) against torch:
KERNELS.md "Top-k, exactly".

Every result is checked for: the selected values equal torch.topk's k
largest selectable values as a multiset; indices distinct, inside the row's
window and never on -inf/NaN; the count min(k, selectable); -1 in the
remaining slots; and ties at the threshold taken from the lowest columns.
"""

import pytest

from hisa_testutil import fresh_seed, require_gpu

torch, hisa = require_gpu()

NEG_INF = float("-inf")


def masked_values(x, starts, ends):
    """x with NaN and columns outside the windows set to -inf."""
    xm = torch.nan_to_num(x, nan=NEG_INF, posinf=float("inf"), neginf=NEG_INF)
    xm = torch.where(torch.isnan(x), torch.full_like(x, NEG_INF), x)
    if starts is not None:
        cols = torch.arange(x.shape[1], device=x.device)[None, :]
        inside = (cols >= starts.long()[:, None]) & (cols < ends.long()[:, None])
        xm = torch.where(inside, xm, torch.full_like(xm, NEG_INF))
    return xm


def check_topk(x, k, out, starts=None, ends=None):
    rows, columns = x.shape
    assert out.shape == (rows, k) and out.dtype == torch.int32
    xm = masked_values(x, starts, ends)
    selectable = (xm > NEG_INF).sum(1)
    expected_count = torch.clamp(selectable, max=k)
    valid = out >= 0
    assert torch.equal(valid.sum(1), expected_count), "count of selected slots"
    # Valid slots come first; the rest are exactly -1.
    slot = torch.arange(k, device=x.device)[None, :]
    assert torch.equal(valid, slot < expected_count[:, None]), "-1 fill"
    assert bool((out[~valid] == -1).all())
    assert bool((out < columns).all())
    idx = out.long().clamp(min=0)
    got = torch.where(valid, xm.gather(1, idx), torch.full_like(idx, 0, dtype=x.dtype) + NEG_INF)
    assert bool((got[valid] > NEG_INF).all()), "selected a -inf/NaN/outside-window column"
    ref = torch.topk(xm, k, dim=1).values
    got_sorted = torch.sort(got, dim=1, descending=True).values
    assert torch.equal(got_sorted, ref), "selected values differ from torch.topk"
    # Distinct indices.
    sorted_idx = torch.sort(torch.where(valid, out.long(), -1 - slot), dim=1).values
    assert bool((sorted_idx[:, 1:] != sorted_idx[:, :-1]).all()), "repeated index"
    # Ties at the threshold go to the lowest columns.
    full = expected_count == k
    if bool(full.any()):
        threshold = torch.where(valid, got, torch.full_like(got, float("inf"))).min(1).values
        at = (xm == threshold[:, None]) & full[:, None]
        chosen = torch.zeros_like(at)
        chosen.scatter_(1, idx, valid)
        taken = (chosen & at).sum(1, keepdim=True)
        rank = torch.cumsum(at.int(), dim=1)
        assert torch.equal(chosen & at, at & (rank <= taken)), "ties not taken from the lowest columns"


def run(x, k, starts=None, ends=None):
    out = hisa.topk(x, k, starts, ends)
    torch.cuda.synchronize()
    check_topk(x, k, out, starts, ends)
    return out


@pytest.mark.parametrize(
    "rows,columns,k",
    [(37, 64, 1), (37, 64, 64), (5, 1000, 17), (64, 8192, 2048), (3, 8193, 4096),
     (9, 2048, 2048), (4, 50_000, 512), (2, 49_152, 4096), (1, 1 << 20, 4096),
     (2, 1 << 20, 1), (130, 1024, 64)],
)
def test_random(rows, columns, k):
    fresh_seed(torch)
    x = torch.randn(rows, columns, device="cuda")
    run(x, k)


@pytest.mark.parametrize(
    "rows,columns,k",
    [(37, 64, 1), (5, 1000, 17), (64, 8192, 2048), (3, 8193, 4096), (4, 50_000, 512),
     (1, 1 << 20, 4096), (130, 1024, 64)],
)
def test_bf16_random(rows, columns, k):
    # bf16 has 8 bits of mantissa: random rows are full of ties at the
    # threshold, so this also checks the tie order of the variant.
    fresh_seed(torch)
    x = torch.randn(rows, columns, device="cuda").bfloat16()
    run(x, k)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_bf16_and_f32_select_alike(dtype):
    # The bf16 variant selects what the f32 kernel selects on the widened
    # values (same keys, same tie order), also with -inf, NaN and windows.
    fresh_seed(torch)
    x = torch.randn(50, 70_000, device="cuda").bfloat16()
    x[0, ::3] = float("nan")
    x[1, 100:] = NEG_INF
    starts = torch.randint(0, 1000, (50,), device="cuda", dtype=torch.int32)
    ends = starts + torch.randint(0, 69_000, (50,), device="cuda", dtype=torch.int32)
    got = hisa.topk(x.to(dtype), 1000, starts, ends)
    ref = hisa.topk(x.float(), 1000, starts, ends)
    assert torch.equal(torch.sort(got, 1).values, torch.sort(ref, 1).values)
    check_topk(x.float(), 1000, got, starts, ends)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("ties", [800, 3000, 5000])
@pytest.mark.parametrize("windowed", [False, True])
def test_compaction_with_ties(dtype, ties, windowed):
    # Rows past the cache move their threshold bin to a candidate list when
    # it fits (1024 keys) and rank the ties there pairwise: 1500 values
    # above the threshold and `ties` equal ones at it (548 of them needed),
    # scattered over 200000 columns of smaller values; the selection takes
    # the lowest-column ties whether or not the bin was compacted.
    fresh_seed(torch)
    rows, columns, k = 4, 200_000, 2048
    x = torch.rand(rows, columns, device="cuda") * 0.5
    for r in range(rows):
        perm = torch.randperm(columns, device="cuda")
        x[r, perm[:1500]] = 5.0
        x[r, perm[1500:1500 + ties]] = 2.0
    x = x.to(dtype)
    if windowed:
        starts = torch.zeros(rows, dtype=torch.int32, device="cuda")
        ends = torch.full((rows,), columns, dtype=torch.int32, device="cuda")
        out = hisa.topk(x, k, starts, ends)
        torch.cuda.synchronize()
        check_topk(x, k, out, starts, ends)
    else:
        run(x, k)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("ties", [2, 60, 128, 129, 500])
@pytest.mark.parametrize("columns", [3000, 8000, 16000])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cached_compaction_with_ties(dtype, ties, columns, sign):
    # Cached rows of more than 2048 columns move their threshold bin to a
    # candidate list of 128 when it fits: here the bin is the `ties` equal
    # values at the threshold (half of them needed) among 1000 larger and
    # smaller random ones, on either side of the list's size. sign = -1
    # puts the threshold among negative values (bf16 completes a negative
    # threshold's low key bits from its sign).
    fresh_seed(torch)
    rows = 5
    if sign > 0:
        x = torch.rand(rows, columns, device="cuda") * 0.5
        top, tie = lambda: 5.0 + torch.rand(1000, device="cuda"), 2.0
    else:
        x = -5.0 - torch.rand(rows, columns, device="cuda")
        top, tie = lambda: -0.1 * torch.rand(1000, device="cuda"), -2.0
    for r in range(rows):
        perm = torch.randperm(columns, device="cuda")
        x[r, perm[:1000]] = top()
        x[r, perm[1000:1000 + ties]] = tie
    run(x.to(dtype), 1000 + (ties + 1) // 2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("windowed", [False, True])
def test_many_long_rows(dtype, windowed):
    # More rows than two per SM, past 8192 columns: the rows are re-read
    # from x at every walk (no cache), with the 1024-candidate list.
    fresh_seed(torch)
    rows, columns, k = 300, 9000, 1000
    x = torch.randn(rows, columns, device="cuda").to(dtype)
    x[::7, ::5] = NEG_INF
    if windowed:
        starts = torch.randint(0, 2000, (rows,), device="cuda", dtype=torch.int32)
        ends = starts + torch.randint(0, 7000, (rows,), device="cuda", dtype=torch.int32)
        run(x, k, starts, ends)
    else:
        run(x, k)


@pytest.mark.parametrize("columns,k", [(4096, 100), (60_000, 2048)])
def test_all_equal(columns, k):
    # Every key is the threshold: the first k columns, through the ordered
    # tie pass, whether the row is cached or re-read.
    x = torch.full((3, columns), 0.25, device="cuda")
    out = run(x, k)
    assert torch.equal(torch.sort(out, dim=1).values[0].long(), torch.arange(k, device="cuda"))


@pytest.mark.parametrize("columns,k", [(8192, 2048), (70_000, 4096), (1000, 999)])
def test_few_distinct_values(columns, k):
    fresh_seed(torch)
    x = torch.randint(0, 4, (6, columns), device="cuda").float()
    x[1] = torch.randint(0, 2, (columns,), device="cuda").float() * 2 - 1
    x[2, ::2] = 0.0
    x[2, 1::2] = -0.0
    run(x, k)


def test_mostly_neg_inf_causal_rows():
    # Causal rows: row r has r+1 finite values, the rest -inf; rows with
    # fewer than k finite values fill with -1 (the anchor's failure case).
    fresh_seed(torch)
    rows, columns, k = 300, 8192, 2048
    x = torch.randn(rows, columns, device="cuda")
    cols = torch.arange(columns, device="cuda")[None, :]
    lengths = torch.randint(0, columns, (rows,), device="cuda")
    lengths[:5] = torch.tensor([0, 1, 2047, 2048, 2049], device="cuda")
    x = torch.where(cols < lengths[:, None], x, torch.full_like(x, NEG_INF))
    run(x, k)


def test_nan_and_inf():
    fresh_seed(torch)
    x = torch.randn(8, 5000, device="cuda")
    x[0, ::3] = float("nan")
    x[1] = float("nan")
    x[2, 7] = float("inf")
    x[2, 9] = float("inf")
    x[3, :4990] = float("nan")
    x[4] = NEG_INF
    x[5, 100:] = float("inf")
    run(x, 64)


@pytest.mark.parametrize("columns", [5000, 100_000])
def test_windows(columns):
    fresh_seed(torch)
    rows, k = 200, 512
    x = torch.randn(rows, columns, device="cuda")
    starts = torch.randint(-100, columns, (rows,), device="cuda", dtype=torch.int32)
    lengths = torch.randint(0, columns, (rows,), device="cuda", dtype=torch.int32)
    ends = starts + lengths
    starts[0], ends[0] = 10, 10          # empty
    starts[1], ends[1] = 50, 20          # reversed: empty
    starts[2], ends[2] = -5, columns + 7  # past both ends
    starts[3], ends[3] = 0, 1
    clamped_starts = starts.clamp(0, columns)
    clamped_ends = torch.maximum(ends.clamp(0, columns), clamped_starts)
    out = hisa.topk(x, k, starts, ends)
    torch.cuda.synchronize()
    check_topk(x, k, out, clamped_starts, clamped_ends)
    # int64 windows give the same result.
    out64 = hisa.topk(x, k, starts.long(), ends.long())
    assert torch.equal(torch.sort(out, 1).values, torch.sort(out64, 1).values)


def test_deterministic():
    fresh_seed(torch)
    x = torch.randint(0, 3, (64, 8192), device="cuda").float()
    a = torch.sort(hisa.topk(x, 2048), 1).values
    b = torch.sort(hisa.topk(x, 2048), 1).values
    assert torch.equal(a, b)


def test_empty_rows():
    x = torch.randn(0, 100, device="cuda")
    assert hisa.topk(x, 5).shape == (0, 5)


def test_bad_arguments():
    x = torch.randn(4, 100, device="cuda")
    with pytest.raises(ValueError, match="k must be in"):
        hisa.topk(x, 0)
    with pytest.raises(ValueError, match="k must be in"):
        hisa.topk(x, 101)
    with pytest.raises(ValueError, match="float32 or torch.bfloat16"):
        hisa.topk(x.half(), 5)
    with pytest.raises(ValueError, match="together"):
        hisa.topk(x, 5, starts=torch.zeros(4, dtype=torch.int32, device="cuda"))
    with pytest.raises(ValueError, match="starts"):
        hisa.topk(x, 5, torch.zeros(3, dtype=torch.int32, device="cuda"),
                  torch.zeros(3, dtype=torch.int32, device="cuda"))
    with pytest.raises(ValueError, match="x"):
        hisa.topk(x.t(), 5)
    with pytest.raises(ValueError, match="out"):
        hisa.topk(x, 5, out=torch.empty(4, 6, dtype=torch.int32, device="cuda"))


def cluster_cases(small=False):
    """Rows for the cluster split: (x, k, starts, ends); starts/ends None for
    the whole row. Ties, -inf, NaN and windows cross the blocks' parts.
    `small`: rows a sanitizer gets through quickly."""
    gen = torch.Generator(device="cuda").manual_seed(fresh_seed(torch))
    scale = 20 if small else 1
    cases = []
    columns = 100_003 // scale
    x = torch.randn(3, columns, device="cuda", generator=gen)
    cases.append((x, 1000 // scale, None, None))
    starts = torch.tensor([-5, 40_000 // scale, 70_000 // scale], device="cuda",
                          dtype=torch.int32)
    ends = torch.tensor([columns + 7, 40_000 // scale, 99_000 // scale], device="cuda",
                        dtype=torch.int32)
    cases.append((x, 2048 // scale, starts, ends))
    cases.append((torch.full((2, 40_000 // scale), 0.25, device="cuda"), 4096 // scale,
                  None, None))
    few = torch.randint(0, 4, (4, 70_000 // scale), device="cuda", generator=gen).float()
    few[1, ::2], few[1, 1::2] = 0.0, -0.0
    cases.append((few, 2048 // scale, None, None))
    sparse = torch.full((3, 5000), NEG_INF, device="cuda")
    sparse[0, ::97] = 1.0
    sparse[1, 4999] = -2.0
    sparse[2, ::3] = float("nan")
    sparse[2, 1::3] = torch.randn(1667, device="cuda", generator=gen)
    cases.append((sparse, 4096, None, None))
    cases.append((torch.randn(2, 777, device="cuda", generator=gen), 777, None, None))
    cases.append((torch.randn(5, 5, device="cuda", generator=gen), 3, None, None))
    return cases


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("splits", [2, 4, 8])
@pytest.mark.parametrize("cache", [256, 16384])
def test_cluster_splits(dtype, splits, cache):
    # topk_f32 with `splits` blocks per row (the operator's choice for few
    # long rows): the same selection as one block per row, ties included,
    # whether the blocks' parts are cached or re-read from x.
    check_cluster_splits(dtype, splits, cache, cluster_cases())


@pytest.mark.parametrize("splits", [2, 8])
@pytest.mark.parametrize("cache", [256, 2048])
def test_cluster_splits_small(splits, cache):
    # The same on short rows (the compute-sanitizer subset runs this one).
    check_cluster_splits(torch.float32, splits, cache, cluster_cases(small=True))


def test_cluster_splits_without_scratch():
    # Candidate lists too short for the cluster's histograms: only the
    # first block of each cluster runs, on the whole row.
    check_cluster_splits(torch.float32, 4, 2048, cluster_cases(small=True), candidates=32)


def check_cluster_splits(dtype, splits, cache, cases, candidates=512):
    from hisa import jit

    name = "topk_f32" if dtype == torch.float32 else "topk_bf16"
    for x, k, starts, ends in cases:
        x = x.to(dtype)
        rows, columns = x.shape
        windowed = starts is not None
        params = dict(cache=cache, candidates=candidates, compact=0, min_blocks=1,
                      windowed=int(windowed), relative=0, splits=splits)
        relative_kernel = jit.get_kernel(name, dict(params, relative=1)) if windowed else None
        kernel = jit.get_kernel(name, params)
        if not windowed:
            starts = ends = torch.zeros(rows, device="cuda", dtype=torch.int32)
        out = torch.full((rows, k), -7, device="cuda", dtype=torch.int32)
        kernel.launch(x, starts, ends, out)
        torch.cuda.synchronize()
        what = f"[{rows}, {columns}] k={k} windowed={windowed}"
        # One block per row, re-reading x: the selection to match.
        single = jit.get_kernel(name, dict(cache=256, candidates=1024, compact=1, min_blocks=5,
                                           windowed=int(windowed), relative=0, splits=1))
        ref = torch.full((rows, k), -7, device="cuda", dtype=torch.int32)
        single.launch(x, starts, ends, ref)
        torch.cuda.synchronize()
        if windowed:
            clamped_starts = starts.clamp(0, columns)
            clamped_ends = torch.maximum(ends.clamp(0, columns), clamped_starts)
            check_topk(x.float(), k, out, clamped_starts, clamped_ends)
            # relative: the same columns as offsets from the given starts.
            relative = torch.full((rows, k), -7, device="cuda", dtype=torch.int32)
            relative_kernel.launch(x, starts, ends, relative)
            torch.cuda.synchronize()
            shifted = torch.where(out >= 0, out - starts[:, None], out)
            assert torch.equal(relative.sort(1).values, shifted.sort(1).values), (
                f"{what}: relative columns")
        else:
            check_topk(x.float(), k, out)
        assert torch.equal(out.sort(1).values, ref.sort(1).values), what
