"""hisa.distributed on GPUs (issue 13): world size 1 must be the
single-GPU call (indices as sets: their order in a row is unspecified); with two or more GPUs, NCCL ranks (one process per
GPU) must give the single-GPU rows at their positions (indices as sets,
attention within tolerance). Skips without a GPU; the multi-rank case skips
with fewer than two GPUs. The CPU plumbing tests are test_distributed_cpu.py;
the device-side windows of the C ABI's context-parallel indexer
(kernels-dsl/cp_windows.mlir) are checked here on one GPU."""

import ctypes
import glob
import os
import socket

import pytest

from hisa_testutil import _missing as missing, fresh_seed, require_gpu

torch, hisa = require_gpu()

from hisa import distributed as cp  # noqa: E402


def indexer_inputs(total, seed, device="cuda"):
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(total, 64, 128, device=device, generator=g).to(torch.float8_e4m3fn)
    k = torch.randn(total, 128, device=device, generator=g).to(torch.float8_e4m3fn)
    k_scale = torch.rand(total, device=device, generator=g) + 0.5
    weights = torch.randn(total, 64, device=device, generator=g)
    qa = torch.randn(total, 64, 512, device=device, generator=g).bfloat16()
    kv = torch.randn(total, 512, device=device, generator=g).bfloat16()
    sink = torch.randn(64, device=device, generator=g)
    return q, k, k_scale, weights, qa, kv, sink


def single_gpu(total, seed):
    q, k, k_scale, weights, qa, kv, sink = indexer_inputs(total, seed)
    positions = torch.arange(total, device="cuda")
    idx = hisa.hisa_indexer(q, k, k_scale, weights, torch.zeros_like(positions).int(),
                            (positions + 1).int(), k_block_size=128, block_topk=8,
                            topk_tokens=256)
    o = hisa.sparse_attn(qa[None], kv[None], sink, idx[None], 512 ** -0.5)[0]
    return idx, o


@pytest.mark.parametrize("total", [1000, 4097])
def test_world_size_one_is_the_single_gpu_call(total):
    seed = fresh_seed(torch)
    idx, o = single_gpu(total, seed)
    q, k, k_scale, weights, qa, kv, sink = indexer_inputs(total, seed)
    got_idx = cp.hisa_indexer_cp(q, k, k_scale, weights, total=total, k_block_size=128,
                                 block_topk=8, topk_tokens=256)
    got_o = cp.sparse_attn_cp(qa, kv, sink, got_idx, 512 ** -0.5, total=total)
    # The order inside an indexer row is unspecified (the top-k kernels
    # place selected entries through atomics): rows compare as sets, and
    # attention on the rows as returned is the single-GPU call's exactly.
    assert torch.equal(got_idx.sort(1).values, idx.sort(1).values)
    assert torch.equal(got_o, hisa.sparse_attn(qa[None], kv[None], sink, got_idx[None],
                                               512 ** -0.5)[0])
    assert (got_o.float() - o.float()).abs().max() < 2e-2


@pytest.mark.parametrize("total,world", [(1000, 1), (4097, 2), (9001, 3), (3, 4), (70001, 8)])
def test_cp_windows_kernel_gives_each_ranks_causal_windows(total, world):
    """kernels-dsl/cp_windows.mlir (the windows the C ABI's context-parallel
    indexer, hisa_cp_hisa_indexer, builds on the device: lib/ContextParallel)
    through the JIT, for every rank: ks = 0 and ke = position + 1 of its
    tokens in local (zigzag) order, as hisa.distributed computes them in
    torch; nothing written past the rank's tokens. Several 256-token blocks
    and partial ones, an empty first chunk (3 tokens over 8 chunks), world
    size 1."""
    kernel = hisa.jit.get_kernel("cp_windows", {})
    for rank in range(world):
        (start0, end0), (start1, end1) = cp.rank_ranges(total, world, rank)
        count = (end0 - start0) + (end1 - start1)
        if count == 0:
            continue  # the operator launches nothing for a rank without tokens
        ks = torch.full((count + 300,), -7, dtype=torch.int32, device="cuda")
        ke = torch.full_like(ks, -7)
        kernel.launch(ks[:count], ke[:count], start0, end0 - start0, start1)
        torch.cuda.synchronize()
        positions = cp.local_positions(total, world, rank, device="cuda")
        assert torch.equal(ks[:count], torch.zeros_like(ks[:count])), f"rank {rank}: ks"
        assert torch.equal(ke[:count], (positions + 1).int()), f"rank {rank}: ke"
        assert bool((ks[count:] == -7).all() and (ke[count:] == -7).all()), \
            f"rank {rank}: written past its {count} tokens"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_worker(rank, world, port, total, seed, results):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.cuda.set_device(rank)
    torch.distributed.init_process_group("nccl", rank=rank, world_size=world,
                                         device_id=torch.device("cuda", rank))
    try:
        q, k, k_scale, weights, qa, kv, sink = indexer_inputs(total, seed, device="cuda")
        mine = cp.local_positions(total, world, rank, device="cuda")
        idx = cp.hisa_indexer_cp(q[mine], k[mine], k_scale[mine], weights[mine], total=total,
                                 k_block_size=128, block_topk=8, topk_tokens=256)
        o = cp.sparse_attn_cp(qa[mine], kv[mine], sink, idx, 512 ** -0.5, total=total)
        results[rank] = (mine.cpu(), idx.cpu(), o.float().cpu())
    finally:
        torch.distributed.destroy_process_group()


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
@pytest.mark.parametrize("total", [4097, 9001])
def test_two_ranks_match_the_single_gpu_result(total):
    import torch.multiprocessing as mp
    seed = fresh_seed(torch)
    idx, o = single_gpu(total, seed)
    manager = mp.Manager()
    results = manager.dict()
    mp.spawn(rank_worker, args=(2, free_port(), total, seed, results), nprocs=2, join=True)
    for rank in range(2):
        mine, got_idx, got_o = results[rank]
        want = idx[mine.cuda()].cpu()
        # Up to ties: the same sets per row.
        assert torch.equal(got_idx.sort(1).values, want.sort(1).values), f"rank {rank}"
        ref = o[mine.cuda()].float().cpu()
        error = (got_o - ref).norm() / ref.norm()
        assert error < 1e-2, f"rank {rank}: relative L2 {error:.2e}"


# ---- the C ABI's context-parallel entry points over a real NCCL communicator


class NcclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]  # NCCL_UNIQUE_ID_BYTES


def open_nccl(monkeypatch):
    """The NCCL torch uses (already loaded by soname, or the nvidia-nccl
    wheel's copy), named to hisa through HISA_NCCL_LIB so that the runtime
    and this test share one library: a communicator is that library's."""
    candidates = ["libnccl.so.2"]
    try:
        import nvidia.nccl
        candidates += sorted(glob.glob(os.path.join(list(nvidia.nccl.__path__)[0], "lib",
                                                    "libnccl.so*")))
    except ImportError:
        pass
    for name in candidates:
        try:
            library = ctypes.CDLL(name)
        except OSError:
            continue
        path = name if os.path.isabs(name) else None
        if path:
            monkeypatch.setenv("HISA_NCCL_LIB", path)
        library.ncclGetUniqueId.argtypes = [ctypes.POINTER(NcclUniqueId)]
        library.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                                             NcclUniqueId, ctypes.c_int]
        library.ncclCommDestroy.argtypes = [ctypes.c_void_p]
        return library
    missing("NCCL (libnccl.so.2) is not loadable")


def declare_cp(library):
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    size_p = ctypes.POINTER(ctypes.c_uint64)
    library.hisa_cp_hisa_indexer_workspace_size.argtypes = [i64] * 8 + [size_p]
    library.hisa_cp_hisa_indexer.argtypes = [ptr] * 5 + [i64] * 7 + [ptr, ptr, ctypes.c_uint64,
                                                                    ptr]
    library.hisa_cp_sparse_attn_workspace_size.argtypes = [i64] * 5 + [size_p]
    library.hisa_cp_sparse_attn.argtypes = [ptr] * 5 + [i64] * 3 + [ctypes.c_float, ptr, ptr,
                                                                    ctypes.c_uint64, ptr]
    for name in ("hisa_cp_hisa_indexer_workspace_size", "hisa_cp_hisa_indexer",
                 "hisa_cp_sparse_attn_workspace_size", "hisa_cp_sparse_attn"):
        getattr(library, name).restype = ctypes.c_int


@pytest.mark.parametrize("total", [1000, 4097])
def test_c_abi_over_nccl_world_size_one(total, monkeypatch):
    """hisa_cp_hisa_indexer and hisa_cp_sparse_attn (lib/ContextParallel:
    the device-side windows, the ncclAllGather of the keys / kv rows, the
    caller's workspace) on a one-rank NCCL communicator: the single-GPU
    call's rows (indices as sets), and a workspace one byte short refused
    with a message naming it, before any collective."""
    from hisa import _lib
    seed = fresh_seed(torch)
    idx, o = single_gpu(total, seed)  # also binds this thread's context
    nccl = open_nccl(monkeypatch)
    uid = NcclUniqueId()
    assert nccl.ncclGetUniqueId(ctypes.byref(uid)) == 0
    comm = ctypes.c_void_p()
    assert nccl.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0) == 0
    library = _lib.lib()
    declare_cp(library)
    stream = torch.cuda.current_stream().cuda_stream
    try:
        q, k, k_scale, weights, qa, kv, sink = indexer_inputs(total, seed)
        size = ctypes.c_uint64()
        _lib.check(library.hisa_cp_hisa_indexer_workspace_size(
            total, 1, 0, 64, 128, 128, 8, 256, ctypes.byref(size)),
            "hisa_cp_hisa_indexer_workspace_size")
        workspace = torch.empty(max(size.value, 1), dtype=torch.uint8, device="cuda")
        got_idx = torch.full((total, 256), -7, dtype=torch.int32, device="cuda")

        def indexer(bytes_):
            return library.hisa_cp_hisa_indexer(
                q.data_ptr(), k.data_ptr(), k_scale.data_ptr(), weights.data_ptr(),
                got_idx.data_ptr(), total, 1, 64, 128, 128, 8, 256, comm, workspace.data_ptr(),
                bytes_, stream)

        if size.value:
            status = indexer(size.value - 1)
            assert status == _lib.HISA_ERROR_INVALID_ARGUMENT
            assert "workspace" in _lib.last_error()
        _lib.check(indexer(size.value), "hisa_cp_hisa_indexer")
        torch.cuda.synchronize()
        assert torch.equal(got_idx.sort(1).values, idx.sort(1).values)

        _lib.check(library.hisa_cp_sparse_attn_workspace_size(total, 1, 0, 64, 256,
                                                              ctypes.byref(size)),
                   "hisa_cp_sparse_attn_workspace_size")
        workspace = torch.empty(max(size.value, 1), dtype=torch.uint8, device="cuda")
        got_o = torch.full_like(qa, float("nan"))
        _lib.check(library.hisa_cp_sparse_attn(
            qa.data_ptr(), kv.data_ptr(), sink.data_ptr(), got_idx.data_ptr(), got_o.data_ptr(),
            total, 64, 256, 512 ** -0.5, comm, workspace.data_ptr(), size.value, stream),
            "hisa_cp_sparse_attn")
        torch.cuda.synchronize()
        # Attention on the rows as returned is the single-GPU call's exactly.
        assert torch.equal(got_o, hisa.sparse_attn(qa[None], kv[None], sink, got_idx[None],
                                                   512 ** -0.5)[0])
        assert (got_o.float() - o.float()).abs().max() < 2e-2
    finally:
        torch.cuda.synchronize()
        nccl.ncclCommDestroy(comm)
