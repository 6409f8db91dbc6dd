"""The indexers' launches, and split decode attention's two, as one CUDA
graph (runtime/LaunchGraph.h, hisa.set_launch_graphs) on the GPU: every
call of a sequence that reuses one graph with new buffers, new sizes,
windows and streams selects, row by row, the same set that launching the
kernels one by one selects, and attention gives the same bits (a stale
kernel-node parameter would show here), through the C++ kernels and
through ctypes; and a graph is built once per stream and kernel
sequence."""

import pytest

from hisa_testutil import (
    assert_bitwise_equal,
    cu_seqlens_random,
    fresh_seed,
    ks_ke_from_cu_seqlens,
    random_fp8,
    random_k_scale,
    require_gpu,
)

torch, hisa = require_gpu()

from hisa import ops  # noqa: E402



def sorted_rows(t):
    """Selections are sets: a row's columns come in no particular order
    (the kernels' compaction order varies from run to run)."""
    return t.sort(dim=-1).values

def inputs(n, num_seqs, m=None):
    ks, ke = ks_ke_from_cu_seqlens(torch, cu_seqlens_random(torch, n, num_seqs))
    if m is not None:
        rows = torch.randperm(n, device="cuda")[:m].sort().values
        ks, ke = ks[rows].contiguous(), ke[rows].contiguous()
    m = ks.shape[0]
    q = random_fp8(torch, m * 64, 128).view(m, 64, 128)
    weights = torch.randn(m, 64, device="cuda") / 8
    return q, random_fp8(torch, n, 128), random_k_scale(torch, n), weights, ks, ke


def one_by_one(fn, *args, **kwargs):
    previous = hisa.set_launch_graphs(False)
    try:
        return fn(*args, **kwargs)
    finally:
        hisa.set_launch_graphs(previous)


@pytest.fixture(params=["c++", "ctypes"])
def binding(request):
    """Both bindings reach the same C ABI (and its graphs)."""
    if request.param == "ctypes":
        kernels, ops._CPP_KERNELS = ops._CPP_KERNELS, {}
        yield request.param
        ops._CPP_KERNELS = kernels
    else:
        yield request.param


def test_a_sequence_of_calls_matches_launching_one_by_one(binding):
    seed = fresh_seed(torch)
    hisa.set_launch_graphs(True)
    cases = [(2000, 1, None), (2000, 1, None), (3001, 4, 777), (1200, 2, None),
             (5000, 1, 64), (3001, 4, 777)]
    before = hisa.launch_graph_stats()
    for n, num_seqs, m in cases:
        args = inputs(n, num_seqs, m)
        for kb, block_topk, topk_tokens in ((128, 8, 256), (64, 16, 300)):
            graphed = hisa.hisa_indexer(*args, k_block_size=kb, block_topk=block_topk,
                                        topk_tokens=topk_tokens)
            direct = one_by_one(hisa.hisa_indexer, *args, k_block_size=kb,
                                block_topk=block_topk, topk_tokens=topk_tokens)
            torch.cuda.synchronize()
            assert_bitwise_equal(torch, sorted_rows(graphed), sorted_rows(direct), "hisa_indexer",
                                 f"n={n} m={m} kb={kb} seed {seed} ({binding})")
        flat = hisa.flat_indexer(*args, 200)
        flat_direct = one_by_one(hisa.flat_indexer, *args, 200)
        torch.cuda.synchronize()
        assert_bitwise_equal(torch, sorted_rows(flat), sorted_rows(flat_direct), "flat_indexer",
                             f"n={n} m={m} seed {seed} ({binding})")
    after = hisa.launch_graph_stats()
    # Every graphed call was one graph launch; graphs were reused: at most
    # one per kernel sequence (two kb values, the flat indexer; the top-k
    # and stage kernels' specializations vary with the sizes).
    assert after["launched"] - before["launched"] == 3 * len(cases)
    assert after["instantiated"] - before["instantiated"] <= 3 * len(cases) - 3


def test_split_decode_attention_matches_launching_one_by_one(binding):
    """Decode with few tokens splits each token's indices over blocks and
    combines them: two kernels, one graph launch per call."""
    seed = fresh_seed(torch)
    hisa.set_launch_graphs(True)
    before = hisa.launch_graph_stats()
    calls = 0
    for batch, seq_len, heads, nkv, topk, lse in ((1, 1, 64, 4096, 640, False),
                                                  (1, 1, 64, 4096, 640, True),
                                                  (2, 2, 128, 3000, 1152, False),
                                                  (1, 1, 16, 700, 200, True),
                                                  (1, 1, 64, 4096, 640, False)):
        q = torch.randn(batch, seq_len, heads, 512, device="cuda").to(torch.bfloat16)
        kv = torch.randn(batch, nkv, 512, device="cuda").to(torch.bfloat16)
        sink = torch.randn(heads, device="cuda")
        idx = torch.randint(-1, nkv, (batch, seq_len, topk), device="cuda", dtype=torch.int32)
        graphed = hisa.sparse_attn(q, kv, sink, idx, 0.05, return_lse=lse)
        direct = one_by_one(hisa.sparse_attn, q, kv, sink, idx, 0.05, return_lse=lse)
        torch.cuda.synchronize()
        calls += 1
        for got, want, what in zip(graphed if lse else (graphed,), direct if lse else (direct,),
                                   ("o", "lse")):
            assert_bitwise_equal(torch, got, want, f"sparse_attn {what}",
                                 f"B={batch} S={seq_len} H={heads} K={topk} seed {seed} "
                                 f"({binding})")
    assert hisa.launch_graph_stats()["launched"] - before["launched"] == calls


def test_streams_and_reuse_of_the_output():
    seed = fresh_seed(torch)
    hisa.set_launch_graphs(True)
    args = inputs(2500, 3)
    expected = one_by_one(hisa.hisa_indexer, *args, k_block_size=128, block_topk=8,
                          topk_tokens=256)
    streams = [torch.cuda.Stream() for _ in range(2)]
    results = []
    for round_ in range(3):
        for stream in streams:
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                results.append(hisa.hisa_indexer(*args, k_block_size=128, block_topk=8,
                                                 topk_tokens=256))
    torch.cuda.synchronize()
    for result in results:
        assert_bitwise_equal(torch, sorted_rows(result), sorted_rows(expected),
                             "hisa_indexer on a side stream",
                             f"seed {seed}")


def test_capture_records_the_kernels():
    """A CUDA graph captured by the caller holds the kernels themselves
    (the launch graph is not used inside a capture) and replays them with
    the captured buffers."""
    hisa.set_launch_graphs(True)
    args = inputs(1800, 2)
    expected = hisa.hisa_indexer(*args, k_block_size=128, block_topk=8, topk_tokens=256)
    before = hisa.launch_graph_stats()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = hisa.hisa_indexer(*args, k_block_size=128, block_topk=8, topk_tokens=256)
    assert hisa.launch_graph_stats()["launched"] == before["launched"]
    out.fill_(-7)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(sorted_rows(out), sorted_rows(expected))
