"""The C ABI of the MQA logits operators (raw device pointers), as a C++
caller would use it: same results as the Python operators, and bad
arguments rejected with a message."""

import ctypes

import pytest

from hisa_testutil import fresh_seed, require_gpu

torch, hisa = require_gpu()

from hisa import _lib  # noqa: E402

P = ctypes.c_void_p
I64 = ctypes.c_int64


def runtime():
    lib = _lib.lib()
    lib.hisa_pool_mqa_logits.argtypes = [P] * 7 + [I64] * 4 + [P]
    lib.hisa_pool_mqa_logits.restype = ctypes.c_int
    lib.hisa_block_sparse_mqa_logits.argtypes = [P] * 8 + [I64] * 6 + [P]
    lib.hisa_block_sparse_mqa_logits.restype = ctypes.c_int
    return lib


def stream():
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


def fp8(*shape):
    return torch.randn(*shape, device="cuda").to(torch.float8_e4m3fn)


def test_pool_mqa_logits_c_abi_matches_python():
    fresh_seed(torch)
    m, nb, heads, dim = 300, 7, 64, 128
    q, blocked_k = fp8(m, heads, dim), fp8(nb, dim)
    scale = torch.rand(nb, device="cuda") + 0.5
    weights = torch.randn(m, heads, device="cuda")
    bks = torch.zeros(m, device="cuda", dtype=torch.int32)
    bke = torch.full((m,), nb, device="cuda", dtype=torch.int32)
    expected = hisa.pool_mqa_logits(q, blocked_k, scale, weights, bks, bke)
    logits = torch.full((m, nb), float("nan"), device="cuda")
    status = runtime().hisa_pool_mqa_logits(
        q.data_ptr(), blocked_k.data_ptr(), scale.data_ptr(), weights.data_ptr(),
        bks.data_ptr(), bke.data_ptr(), logits.data_ptr(), m, nb, heads, dim, stream())
    assert status == 0, _lib.lib().hisa_last_error()
    torch.cuda.synchronize()
    assert torch.equal(logits, expected)


def test_block_sparse_mqa_logits_c_abi_matches_python():
    fresh_seed(torch)
    m = n = 500
    heads, dim, kb, topk = 64, 128, 64, 4
    q, k = fp8(m, heads, dim), fp8(n, dim)
    k_scale = torch.rand(n, device="cuda") + 0.5
    weights = torch.randn(m, heads, device="cuda")
    index = torch.randint(-1, n // kb + 1, (m, topk), device="cuda", dtype=torch.int32)
    ks = torch.zeros(m, device="cuda", dtype=torch.int32)
    ke = torch.arange(m, device="cuda", dtype=torch.int32) + 1
    expected = hisa.block_sparse_mqa_logits(q, k, k_scale, index, kb, weights, ks, ke)
    out = torch.full((m, topk * kb), float("nan"), device="cuda")
    status = runtime().hisa_block_sparse_mqa_logits(
        q.data_ptr(), k.data_ptr(), k_scale.data_ptr(), index.data_ptr(), weights.data_ptr(),
        ks.data_ptr(), ke.data_ptr(), out.data_ptr(), m, n, topk, kb, heads, dim, stream())
    assert status == 0, _lib.lib().hisa_last_error()
    torch.cuda.synchronize()
    assert torch.equal(out, expected)


def test_c_abi_rejects_unsupported_shapes():
    status = runtime().hisa_block_sparse_mqa_logits(
        None, None, None, None, None, None, None, None, 1, 1, 1, 96, 64, 128, None)
    assert status == 1
    assert b"kb = 96" in _lib.lib().hisa_last_error()
    status = runtime().hisa_pool_mqa_logits(None, None, None, None, None, None, None, 1, 1, 48, 128, None)
    assert status == 1
    assert b"heads = 48" in _lib.lib().hisa_last_error()
    status = runtime().hisa_pool_mqa_logits(None, None, None, None, None, None, None, 1, 1, 64, 96, None)
    assert status == 1
    assert b"dim = 96" in _lib.lib().hisa_last_error()
