"""hisa.distributed (context-parallel prefill, issue 13) on the CPU: the
zigzag split and the all-gather plumbing with torch.distributed's gloo
backend over 2 and 3 processes, the GPU operators replaced by torch
references. Each rank's rows must equal the single-process result at its
positions (odd lengths that do not split evenly included). The GPU path
(NCCL, hisa's kernels) is python/tests/test_distributed.py."""

import os
import socket

import pytest

torch = pytest.importorskip("torch")

from hisa import distributed as cp  # noqa: E402


def test_zigzag_covers_every_position_once_and_balances_causal_work():
    for total in (0, 1, 7, 100, 1001):
        for world in (1, 2, 3, 8):
            seen = torch.cat([cp.local_positions(total, world, r) for r in range(world)])
            assert torch.equal(seen.sort().values, torch.arange(total))
            if total >= 16 * world:
                # Causal work of a rank: sum of (position + 1) over its queries.
                work = [int((cp.local_positions(total, world, r) + 1).sum())
                        for r in range(world)]
                assert max(work) / min(work) < 1.1, (total, world, work)


def test_bad_rank_and_sizes_are_refused():
    with pytest.raises(ValueError, match="rank = 2"):
        cp.rank_ranges(10, 2, 2)
    # World size 1 holds every token: a 9-row tensor for 10 tokens is refused.
    with pytest.raises(ValueError, match="holds 10 of the 10 tokens"):
        cp.gather_tokens(torch.zeros(9, 3), 10)


def test_inputs_are_refused_before_any_gather():
    # Rows of the wrong size or type are named before the first all-gather
    # (a rank must not gather rows of another size than its peers').
    q, k, scale, w = torch.zeros(5, 4, 16), torch.zeros(5, 16), torch.ones(5), torch.ones(5, 4)
    gathered = []

    def never(*args, **kwargs):
        gathered.append(args)

    def call(**changes):
        args = dict(q=q, k=k, k_scale=scale, weights=w)
        args.update(changes)
        cp.hisa_indexer_cp(**args, total=5, k_block_size=64, block_topk=4, topk_tokens=8,
                           indexer=lambda *a, **kw: None)

    original = cp.gather_tokens
    cp.gather_tokens = never
    try:
        with pytest.raises(ValueError, match="k_scale must have 5 elements"):
            call(k_scale=torch.ones(6))
        with pytest.raises(ValueError, match="k must be \\[5, D\\] with q's D"):
            call(k=torch.zeros(5, 32))
        with pytest.raises(ValueError, match="k must be float8_e4m3fn"):
            cp.hisa_indexer_cp(q, k, scale, w, total=5, k_block_size=64, block_topk=4,
                               topk_tokens=8)
        with pytest.raises(ValueError, match="kv must be bfloat16 \\[5, 512\\]"):
            cp.sparse_attn_cp(torch.zeros(5, 2, 512), torch.zeros(5, 256), torch.zeros(2),
                              torch.zeros(5, 3, dtype=torch.int32), 0.1, total=5,
                              attn=lambda *a: a[0])
    finally:
        cp.gather_tokens = original
    assert not gathered


def test_sparse_attn_cp_refuses_kv_that_requires_grad():
    # The all-gather moves kv as bytes, which would drop requires_grad: the
    # check comes first (hisa's operators have no backward).
    q = torch.zeros(4, 2, 8)
    kv = torch.zeros(4, 512, requires_grad=True)
    sink = torch.zeros(2)
    idx = torch.zeros(4, 3, dtype=torch.int32)
    with pytest.raises(ValueError, match="sparse_attn_cp: kv requires grad"):
        cp.sparse_attn_cp(q, kv, sink, idx, 0.1, total=4, attn=lambda *a: a[0])
    with torch.no_grad():
        cp.sparse_attn_cp(q, kv, sink, idx, 0.1, total=4, attn=lambda *a: a[0])


def reference_indexer(q, k, k_scale, weights, ks, ke, *, k_block_size, block_topk,
                      topk_tokens):
    """Flat MQA logits + exact top-k (ties to the lower position), offsets
    from ks, -1 padded: the plumbing's stand-in for hisa.hisa_indexer."""
    logits = torch.einsum("mhd,nd->mhn", q.float(), k.float()) * k_scale.float()[None, None]
    logits = (logits.relu() * weights.float()[:, :, None]).sum(1)
    columns = torch.arange(k.shape[0])
    inside = (columns[None] >= ks[:, None].long()) & (columns[None] < ke[:, None].long())
    logits = logits.masked_fill(~inside, float("-inf"))
    order = torch.sort(-logits, dim=1, stable=True).indices[:, :topk_tokens]
    picked = torch.gather(logits, 1, order)
    out = (order - ks[:, None].long()).int()
    return torch.where(torch.isfinite(picked), out, torch.full_like(out, -1))


def reference_attention(q, kv, sink, idx, scale):
    from hisa.v4 import reference as ref
    return ref.sparse_attn(q, kv, sink, idx, scale)


def inputs(total, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(total, 4, 16, generator=g)
    k = torch.randn(total, 16, generator=g)
    scale = torch.rand(total, generator=g) + 0.5
    w = torch.randn(total, 4, generator=g)
    qa = torch.randn(total, 2, 512, generator=g)
    kv = torch.randn(total, 512, generator=g)
    sink = torch.randn(2, generator=g)
    return q, k, scale, w, qa, kv, sink


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, world, port, total, results):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.distributed.init_process_group("gloo", rank=rank, world_size=world)
    try:
        q, k, scale, w, qa, kv, sink = inputs(total)
        mine = cp.local_positions(total, world, rank)
        idx = cp.hisa_indexer_cp(q[mine], k[mine], scale[mine], w[mine], total=total,
                                 k_block_size=64, block_topk=4, topk_tokens=8,
                                 indexer=reference_indexer)
        o = cp.sparse_attn_cp(qa[mine], kv[mine], sink, idx, 512 ** -0.5, total=total,
                              attn=reference_attention)
        results[rank] = (mine, idx, o)
    finally:
        torch.distributed.destroy_process_group()


# (3, 2) and (2, 1): a rank without tokens (fewer tokens than ranks).
@pytest.mark.parametrize("world,total", [(2, 37), (3, 100), (2, 5), (3, 2), (2, 1)])
def test_ranks_match_the_single_process_result(world, total):
    import torch.multiprocessing as mp
    manager = mp.Manager()
    results = manager.dict()
    mp.spawn(worker, args=(world, free_port(), total, results), nprocs=world, join=True)
    q, k, scale, w, qa, kv, sink = inputs(total)
    positions = torch.arange(total)
    idx = reference_indexer(q, k, scale, w, torch.zeros(total, dtype=torch.int32),
                            (positions + 1).int(), k_block_size=64, block_topk=4,
                            topk_tokens=8)
    o = reference_attention(qa[None], kv[None], sink, idx[None], 512 ** -0.5)[0]
    covered = torch.zeros(total, dtype=torch.bool)
    for rank in range(world):
        mine, got_idx, got_o = results[rank]
        assert torch.equal(got_idx, idx[mine]), f"rank {rank}: indexer rows"
        assert torch.allclose(got_o, o[mine], rtol=1e-5, atol=1e-5), f"rank {rank}: attention"
        covered[mine] = True
    assert covered.all()
