"""DeepSeek's FlashMLA sm90 sparse prefill (d_qk = d_v = 512) as a second
reference kernel for the sparse attention benchmarks, through
libflashmla_prefill.so (probes/flashmla_prefill.cu, built against a FlashMLA
checkout by probes/flashmla_build.sh; FlashMLA is not part of hisa).

    prefill = flashmla.load("libflashmla_prefill.so")
    if flashmla.supports(b, h, k):
        o = prefill(q, kv, sink, idx, scale)   # [1, S, H, 512] bf16

Its layouts are hisa's for one batch (B = 1): q [1, S, H, 512] bf16, kv
[1, Nkv, 512] bf16, indices [1, S, K] int32 (-1 or >= Nkv: no key), the sink
[H] f32 in the denominator only.
"""

from __future__ import annotations

import ctypes

import torch

DIM = 512


def supports(b, h, k):
    """Whether FlashMLA's sm90 kernel takes this shape: one batch, whole
    blocks of 64 heads, K a multiple of 128."""
    return b == 1 and h % 64 == 0 and k % 128 == 0 and k > 0


def load(path):
    """The prefill call of the library at path (raises OSError if it does
    not load)."""
    entry = ctypes.CDLL(path).flashmla_sparse_prefill
    entry.restype = ctypes.c_int
    entry.argtypes = [ctypes.c_void_p] * 7 + [ctypes.c_int] * 4 + [
        ctypes.c_float, ctypes.c_int, ctypes.c_void_p]
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count

    def prefill(q, kv, sink, idx, scale, out=None):
        b, s, h, d = q.shape
        k = idx.shape[-1]
        if not supports(b, h, k) or d != DIM or kv.shape[-1] != DIM:
            raise ValueError(f"FlashMLA sparse prefill: unsupported q {tuple(q.shape)}, "
                             f"K = {k} (B = 1, H a multiple of 64, K of 128, D = {DIM})")
        for name, t, dtype in (("q", q, torch.bfloat16), ("kv", kv, torch.bfloat16),
                               ("attn_sink", sink, torch.float32),
                               ("topk_idxs", idx, torch.int32)):
            if t.dtype != dtype or not t.is_cuda or not t.is_contiguous():
                raise ValueError(f"FlashMLA sparse prefill: {name} must be a contiguous "
                                 f"CUDA {dtype} tensor")
        out = torch.empty_like(q) if out is None else out
        lse = torch.empty(s, h, device=q.device)
        max_logits = torch.empty(s, h, device=q.device)
        status = entry(q.data_ptr(), kv.data_ptr(), idx.data_ptr(), sink.data_ptr(),
                       out.data_ptr(), max_logits.data_ptr(), lse.data_ptr(),
                       s, kv.shape[-2], h, k, scale, sms,
                       torch.cuda.current_stream().cuda_stream)
        if status:
            raise RuntimeError(f"flashmla_sparse_prefill returned {status}")
        return out

    return prefill
