"""The C++ kernels of torch.ops.hisa.{topk, hisa_indexer, flat_indexer,
sparse_attn} (libhisa_torch.so, python/csrc/TorchOps.cpp) on the GPU: the
same results as the ctypes binding (bit for bit; the selections row by
row as sets, their order being the kernels' own) (itself checked against
torch in test_topk.py, test_hisa_indexer.py and test_sparse_attn.py) on
fresh random data, -1 indices, decode splits, return_lse, packed
sequences, odd sizes, int64 windows, ties, empty windows and empty
tensors; on torch's current stream; and the same errors: each bad argument
refused by the C++ kernel itself, naming the argument, and through hisa's
functions with the exception and message of the ctypes binding."""

import functools
import os

import pytest

from hisa_testutil import (
    STRICT,
    assert_bitwise_equal,
    cu_seqlens_random,
    fresh_seed,
    ks_ke_from_cu_seqlens,
    random_fp8,
    random_k_scale,
    require_gpu,
)

torch, hisa = require_gpu()

from hisa import _torch_cpp, ops  # noqa: E402

if _torch_cpp.backend() != "c++":
    reason = f"libhisa_torch.so not in use: {_torch_cpp.backend()}"
    if STRICT and os.environ.get("HISA_TORCH_OPS", "1") != "0":
        pytest.fail(f"HISA_TESTS_STRICT=1 and {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)



def sorted_rows(t):
    """Selections are sets: a row's columns come in no particular order
    (the kernels' compaction order varies from run to run)."""
    return t.sort(dim=-1).values

def through_ctypes(fn, *args, **kwargs):
    """fn through the ctypes binding (the C++ kernels set aside)."""
    kernels, ops._CPP_KERNELS = ops._CPP_KERNELS, {}
    try:
        return fn(*args, **kwargs)
    finally:
        ops._CPP_KERNELS = kernels


def both(fn, *args, **kwargs):
    cpp = fn(*args, **kwargs)
    reference = through_ctypes(fn, *args, **kwargs)
    torch.cuda.synchronize()
    return cpp, reference


def indexer_inputs(n, num_seqs, heads=64, dim=128, m=None, int64=False):
    ks, ke = ks_ke_from_cu_seqlens(torch, cu_seqlens_random(torch, n, num_seqs))
    if m is not None:
        rows = torch.randperm(n, device="cuda")[:m].sort().values
        ks, ke = ks[rows].contiguous(), ke[rows].contiguous()
    m = ks.shape[0]
    q = random_fp8(torch, m * heads, dim).view(m, heads, dim)
    k = random_fp8(torch, n, dim)
    weights = torch.randn(m, heads, device="cuda") / heads**0.5
    if int64:
        ks, ke = ks.long(), ke.long()
    return q, k, random_k_scale(torch, n), weights, ks, ke


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("rows,columns,k", [(1, 64, 1), (37, 1000, 64), (5, 4099, 4099),
                                            (130, 8192, 2048), (0, 10, 3)])
def test_topk_matches_ctypes(dtype, rows, columns, k):
    seed = fresh_seed(torch)
    x = torch.randn(rows, columns, device="cuda").to(getattr(torch, dtype))
    if rows > 2:
        x[1] = 0.5  # all equal: ties to the lower columns
        x[2, columns // 3:] = float("-inf")  # fewer finite values than k (-1 fill)
    cpp, reference = both(hisa.topk, x, k)
    assert cpp.shape == (rows, k) and cpp.dtype == torch.int32
    assert_bitwise_equal(torch, sorted_rows(cpp), sorted_rows(reference), "topk",
                         f"seed {seed}")


@pytest.mark.parametrize("int64", [False, True])
def test_topk_windows_match_ctypes(int64):
    seed = fresh_seed(torch)
    x = torch.randn(300, 5000, device="cuda")
    starts = torch.randint(-10, 2000, (300,), device="cuda")
    ends = starts + torch.randint(-5, 3000, (300,), device="cuda")
    if int64:
        ends[0] = 2**40  # clamped as the ctypes binding clamps
    else:
        starts, ends = starts.int(), ends.int()
    cpp, reference = both(hisa.topk, x, 100, starts, ends)
    assert_bitwise_equal(torch, sorted_rows(cpp), sorted_rows(reference), "windowed topk",
                         f"seed {seed}")
    direct = torch.ops.hisa.topk.default(x, 100, starts, ends)
    assert_bitwise_equal(torch, sorted_rows(direct), sorted_rows(reference),
                         "torch.ops.hisa.topk", f"seed {seed}")


@pytest.mark.parametrize("n,num_seqs,heads,dim,kb,block_topk,topk_tokens,m,int64", [
    (1537, 1, 64, 128, 128, 8, 256, None, False),
    (3001, 4, 32, 64, 64, 16, 512, 777, True),
    (2048, 8, 16, 128, 256, 4, 300, None, False),
    (5000, 2, 128, 128, 128, 32, 1024, 301, False),
])
def test_hisa_indexer_matches_ctypes(n, num_seqs, heads, dim, kb, block_topk, topk_tokens, m,
                                     int64):
    seed = fresh_seed(torch)
    args = indexer_inputs(n, num_seqs, heads, dim, m, int64)
    cpp, reference = both(hisa.hisa_indexer, *args, k_block_size=kb, block_topk=block_topk,
                          topk_tokens=topk_tokens)
    assert_bitwise_equal(torch, sorted_rows(cpp), sorted_rows(reference), "hisa_indexer",
                         f"seed {seed}")
    direct = torch.ops.hisa.hisa_indexer.default(*args, kb, block_topk, topk_tokens)
    assert_bitwise_equal(torch, sorted_rows(direct), sorted_rows(reference),
                         "torch.ops.hisa.hisa_indexer", f"seed {seed}")


@pytest.mark.parametrize("n,num_seqs,m,int64", [(999, 3, None, False), (4100, 1, 513, True)])
def test_flat_indexer_matches_ctypes(n, num_seqs, m, int64):
    seed = fresh_seed(torch)
    args = indexer_inputs(n, num_seqs, 64, 128, m, int64)
    cpp, reference = both(hisa.flat_indexer, *args, 256)
    assert_bitwise_equal(torch, sorted_rows(cpp), sorted_rows(reference), "flat_indexer",
                         f"seed {seed}")


def test_empty_inputs_match_ctypes():
    q, k, k_scale, weights, ks, ke = indexer_inputs(500, 1)
    for m_rows in (0, 3):
        args = (q[:m_rows], k, k_scale, weights[:m_rows], ks[:m_rows], ke[:m_rows])
        for fn, kwargs in ((hisa.hisa_indexer, dict(k_block_size=128, block_topk=4,
                                                   topk_tokens=64)),
                           (hisa.flat_indexer, dict(topk_tokens=64))):
            cpp, reference = both(fn, *args, **kwargs)
            assert cpp.shape == reference.shape == (m_rows, 64)
            assert torch.equal(sorted_rows(cpp), sorted_rows(reference))
        # No keys at all: every slot -1.
        no_keys = (q[:m_rows], k[:0], k_scale[:0], weights[:m_rows],
                   torch.zeros_like(ks[:m_rows]), torch.zeros_like(ke[:m_rows]))
        cpp = hisa.hisa_indexer(*no_keys, k_block_size=128, block_topk=4, topk_tokens=64)
        assert cpp.shape == (m_rows, 64) and bool((cpp == -1).all())


def test_runs_on_the_current_stream():
    """The kernels launch on torch's current stream: a result read on that
    stream after a long kernel queued before it is complete."""
    x = torch.randn(64, 8192, device="cuda")
    expected = through_ctypes(hisa.topk, x, 64)
    q, k, k_scale, weights, ks, ke = indexer_inputs(2000, 2)
    expected_indexer = through_ctypes(hisa.hisa_indexer, q, k, k_scale, weights, ks, ke,
                                      k_block_size=128, block_topk=8, topk_tokens=256)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)
        got = hisa.topk(x, 64)
        got_indexer = hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, k_block_size=128,
                                        block_topk=8, topk_tokens=256)
        got, got_indexer = got.clone(), got_indexer.clone()
    side.synchronize()
    assert torch.equal(sorted_rows(got), sorted_rows(expected))
    assert torch.equal(sorted_rows(got_indexer), sorted_rows(expected_indexer))


def test_cuda_graph_capture():
    q, k, k_scale, weights, ks, ke = indexer_inputs(1500, 3)
    expected = hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, k_block_size=128, block_topk=8,
                                 topk_tokens=256)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, k_block_size=128, block_topk=8,
                                topk_tokens=256)
    out.fill_(7)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(sorted_rows(out), sorted_rows(expected))


def bad_indexer_calls():
    """(what, args with one bad argument, the argument's name in the message)."""
    q, k, k_scale, weights, ks, ke = indexer_inputs(600, 1, m=100)
    good = dict(q=q, k=k, k_scale=k_scale, weights=weights, cu_seqlen_ks=ks, cu_seqlen_ke=ke)
    cases = [
        ("q on the CPU", dict(q=q.cpu()), "q"),
        ("k on the CPU", dict(k=k.cpu()), "k"),
        ("q bf16", dict(q=q.to(torch.bfloat16)), "q"),
        ("k_scale f16", dict(k_scale=k_scale.half()), "k_scale"),
        ("weights 1-D", dict(weights=weights[:, 0].contiguous()), "weights"),
        ("q with 48 heads", dict(q=q[:, :48].contiguous(), weights=weights[:, :48].contiguous()),
         "q"),
        ("k transposed", dict(k=k.view(128, 600).t()), "k"),
        ("k_scale misaligned", dict(k_scale=torch.empty(601, device="cuda")[1:]), "k_scale"),
        ("ks float", dict(cu_seqlen_ks=ks.float()), "cu_seqlen_ks"),
        ("ke short", dict(cu_seqlen_ke=ke[:-1]), "cu_seqlen_ke"),
        ("ke on the CPU", dict(cu_seqlen_ke=ke.cpu()), "cu_seqlen_ke"),
    ]
    return good, cases


@pytest.mark.parametrize("case", range(11))
def test_bad_arguments_are_named(case):
    good, cases = bad_indexer_calls()
    what, change, name = cases[case]
    args = dict(good, **change)
    ordered = [args[key] for key in ("q", "k", "k_scale", "weights", "cu_seqlen_ks",
                                     "cu_seqlen_ke")]
    # The C++ kernel alone (torch.ops): a ValueError naming the argument.
    # (A CPU q with CUDA tensors beside it still dispatches to CUDA.)
    with pytest.raises(ValueError, match=rf"\b{name}\b") as cpp_error:
        torch.ops.hisa.hisa_indexer.default(*ordered, 128, 8, 64)
    print(what, "->", cpp_error.value)
    # hisa.hisa_indexer: the ctypes binding's exception and message.
    with pytest.raises(hisa.InvalidArgumentError) as via_cpp:
        hisa.hisa_indexer(*ordered, k_block_size=128, block_topk=8, topk_tokens=64)
    with pytest.raises(hisa.InvalidArgumentError) as via_ctypes:
        through_ctypes(hisa.hisa_indexer, *ordered, k_block_size=128, block_topk=8,
                       topk_tokens=64)
    assert str(via_cpp.value) == str(via_ctypes.value)
    assert type(via_cpp.value) is type(via_ctypes.value)


@pytest.mark.parametrize("kwargs,name", [
    (dict(k_block_size=96, block_topk=8, topk_tokens=64), "k_block_size"),
    (dict(k_block_size=128, block_topk=0, topk_tokens=64), "block_topk"),
    (dict(k_block_size=128, block_topk=8, topk_tokens=0), "topk_tokens"),
    (dict(k_block_size=64, block_topk=600, topk_tokens=64), "block_topk"),
])
def test_bad_sizes_are_named(kwargs, name):
    args = indexer_inputs(600, 1, m=100)
    with pytest.raises(ValueError, match=name):
        torch.ops.hisa.hisa_indexer.default(*args, kwargs["k_block_size"], kwargs["block_topk"],
                                            kwargs["topk_tokens"])
    with pytest.raises(hisa.InvalidArgumentError) as via_cpp:
        hisa.hisa_indexer(*args, **kwargs)
    with pytest.raises(hisa.InvalidArgumentError) as via_ctypes:
        through_ctypes(hisa.hisa_indexer, *args, **kwargs)
    assert str(via_cpp.value) == str(via_ctypes.value)


@pytest.mark.parametrize("call,name", [
    (lambda x: hisa.topk(x, 0), "k"),
    (lambda x: hisa.topk(x, True), "k"),
    (lambda x: hisa.topk(x, 3, None, torch.zeros(6, dtype=torch.int32, device="cuda")),
     "starts"),
    (lambda x: hisa.topk(x, 1001), "k"),
    (lambda x: hisa.topk(x.half(), 3), "x"),
    (lambda x: hisa.topk(x[:, ::2], 3), "x"),
    (lambda x: hisa.topk(x[0], 3), "x"),
    (lambda x: hisa.topk(x, 3, torch.zeros(7, dtype=torch.int32, device="cuda")), "starts"),
    (lambda x: hisa.topk(x, 3, torch.zeros(6, dtype=torch.int32, device="cuda"),
                         torch.zeros(6, device="cuda")), "ends"),
    (lambda x: hisa.topk(x, 3, torch.zeros(6, dtype=torch.int32, device="cuda"),
                         torch.zeros(6, dtype=torch.int32)), "ends"),
])
def test_topk_bad_arguments_match_ctypes(call, name):
    x = torch.randn(6, 1000, device="cuda")
    with pytest.raises(hisa.InvalidArgumentError, match=rf"\b{name}\b") as via_cpp:
        call(x)
    with pytest.raises(hisa.InvalidArgumentError) as via_ctypes:
        through_ctypes(call, x)
    assert str(via_cpp.value) == str(via_ctypes.value)
    assert type(via_cpp.value) is type(via_ctypes.value)


def sparse_attn_inputs(batch, seq_len, heads, nkv, topk, int64=False):
    q = torch.randn(batch, seq_len, heads, 512, device="cuda").to(torch.bfloat16)
    kv = torch.randn(batch, nkv, 512, device="cuda").to(torch.bfloat16)
    sink = torch.randn(heads, device="cuda")
    idx = torch.randint(-1, nkv, (batch, seq_len, topk), device="cuda")
    if seq_len > 1:
        idx[0, 1] = -1  # a token without a valid index: o = 0
    return q, kv, sink, idx if int64 else idx.int()


@pytest.mark.parametrize("batch,seq_len,heads,nkv,topk,int64,lse", [
    (1, 33, 64, 500, 100, False, True),
    (2, 7, 16, 1000, 640, True, False),
    (3, 1, 128, 4096, 640, False, True),  # decode: split over blocks + combine
    (5, 2, 64, 65536, 640, False, False),
])
def test_sparse_attn_matches_ctypes(batch, seq_len, heads, nkv, topk, int64, lse):
    seed = fresh_seed(torch)
    args = sparse_attn_inputs(batch, seq_len, heads, nkv, topk, int64)
    cpp, reference = both(hisa.sparse_attn, *args, 512 ** -0.5, return_lse=lse)
    if lse:
        assert_bitwise_equal(torch, cpp[0], reference[0], "sparse_attn o", f"seed {seed}")
        assert_bitwise_equal(torch, cpp[1], reference[1], "sparse_attn lse", f"seed {seed}")
    else:
        assert_bitwise_equal(torch, cpp, reference, "sparse_attn o", f"seed {seed}")
    o, lse_out = torch.ops.hisa.sparse_attn.default(*args, 512 ** -0.5, lse)
    assert lse_out.shape == ((batch, seq_len, heads) if lse else (0,))


@pytest.mark.parametrize("change,name", [
    (lambda q, kv, sink, idx: (q.float(), kv, sink, idx), "q"),
    (lambda q, kv, sink, idx: (q, kv.float(), sink, idx), "kv"),
    (lambda q, kv, sink, idx: (q, kv, sink[:-1], idx), "attn_sink"),
    (lambda q, kv, sink, idx: (q, kv, sink, idx.float()), "topk_idxs"),
    (lambda q, kv, sink, idx: (q[..., :256].contiguous(), kv, sink, idx), "D"),
    (lambda q, kv, sink, idx: (q, kv[:, :, :256].contiguous(), sink, idx), "kv"),
    (lambda q, kv, sink, idx: (q, kv, sink, idx[:, :1].contiguous()), "topk_idxs"),
    (lambda q, kv, sink, idx: (torch.cat([q, q], -1)[..., :512], kv, sink, idx),
     "q must be contiguous"),
    (lambda q, kv, sink, idx: (q, kv, sink.cpu(), idx), "attn_sink"),
    (lambda q, kv, sink, idx: (q.requires_grad_(), kv, sink, idx), "requires grad"),
])
def test_sparse_attn_bad_arguments_match_ctypes(change, name):
    args = change(*sparse_attn_inputs(2, 3, 16, 300, 64))
    with pytest.raises(hisa.InvalidArgumentError, match=name) as via_cpp:
        hisa.sparse_attn(*args, 0.05)
    with pytest.raises(hisa.InvalidArgumentError) as via_ctypes:
        through_ctypes(hisa.sparse_attn, *args, 0.05)
    assert str(via_cpp.value) == str(via_ctypes.value)
    assert type(via_cpp.value) is type(via_ctypes.value)


@functools.cache
def lazy_device():
    """torch's lazy TorchScript backend: a backend that outranks CUDA in the
    dispatcher (as XPU and PrivateUse1 do) and ships with torch. Initialized
    once per process (a second init registers its fallback again, which
    torch refuses)."""
    ts_backend = pytest.importorskip("torch._lazy.ts_backend")
    try:
        ts_backend.init()
    except (AttributeError, RuntimeError) as error:
        pytest.skip(f"torch's lazy TorchScript backend is not usable here: {error}")
    return "lazy"


@pytest.mark.parametrize("op", ["topk", "hisa_indexer", "flat_indexer", "sparse_attn"])
def test_another_backend_outranking_cuda_is_refused(op):
    """A CUDA call with one tensor of such a backend dispatches to the op's
    Python kernel, which must refuse it naming the tensor (it used to call
    the C++ kernel again and end in a RecursionError)."""
    lazy = lazy_device()
    if op == "topk":
        x = torch.randn(4, 64, device="cuda")
        starts = torch.zeros(4, dtype=torch.int32, device=lazy)
        ends = torch.full((4,), 64, dtype=torch.int32, device="cuda")
        call, name = (lambda: hisa.topk(x, 2, starts, ends)), "starts"
    elif op == "sparse_attn":
        q, kv, sink, idx = sparse_attn_inputs(1, 2, 16, 100, 64)
        sink = sink.to(lazy)
        call, name = (lambda: hisa.sparse_attn(q, kv, sink, idx, 0.05)), "attn_sink"
    else:
        q, k, k_scale, weights, ks, ke = indexer_inputs(300, 1)
        ke = ke.to(lazy)
        if op == "hisa_indexer":
            call = lambda: hisa.hisa_indexer(q, k, k_scale, weights, ks, ke,  # noqa: E731
                                             k_block_size=64, block_topk=2, topk_tokens=64)
        else:
            call = lambda: hisa.flat_indexer(q, k, k_scale, weights, ks, ke, 64)  # noqa: E731
        name = "cu_seqlen_ke"
    with pytest.raises(hisa.InvalidArgumentError, match=f"{name} must be a CUDA tensor"):
        call()
