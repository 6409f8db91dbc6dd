"""hisa's operators as torch custom ops (torch.ops.hisa.*), with fake
implementations, so that torch.compile traces them into its graphs (no
graph break) and CUDA graphs capture them.

The public functions of hisa.ops call the C ABI directly in eager mode (the
fastest path: one ctypes call); under torch.compile they call these ops
instead (ops._traceable). Each op's real implementation is the eager
function; its fake one only computes the output's shape and dtype.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import ops

_FP8 = torch.float8_e4m3fn


def _eager(name):
    return getattr(ops, name)


@torch.library.custom_op("hisa::fp8_block_mean_pooling", mutates_args=())
def fp8_block_mean_pooling(k: Tensor, k_scale: Tensor, k_block_size: int) -> Tuple[Tensor, Tensor]:
    return _eager("fp8_block_mean_pooling")(k, k_scale, k_block_size)


@fp8_block_mean_pooling.register_fake
def _(k, k_scale, k_block_size):
    nb = (k.shape[0] + k_block_size - 1) // k_block_size
    return k.new_empty((nb, k.shape[1])), k_scale.new_empty((nb,), dtype=torch.float32)


@torch.library.custom_op("hisa::clean_and_maintain_logits_", mutates_args=("logits",))
def clean_and_maintain_logits_(logits: Tensor, ks: Tensor, ke: Tensor) -> None:
    _eager("clean_and_maintain_logits_")(logits, ks, ke)


@clean_and_maintain_logits_.register_fake
def _(logits, ks, ke):
    return None


@torch.library.custom_op("hisa::pool_mqa_logits", mutates_args=())
def pool_mqa_logits(q: Tensor, blocked_k: Tensor, blocked_k_scale: Tensor, weights: Tensor,
                    bks: Tensor, bke: Tensor) -> Tensor:
    return _eager("pool_mqa_logits")(q, blocked_k, blocked_k_scale, weights, bks, bke)


@pool_mqa_logits.register_fake
def _(q, blocked_k, blocked_k_scale, weights, bks, bke):
    return q.new_empty((q.shape[0], blocked_k.shape[0]), dtype=torch.float32)


@torch.library.custom_op("hisa::mqa_logits", mutates_args=())
def mqa_logits(q: Tensor, k: Tensor, k_scale: Tensor, weights: Tensor, ks: Tensor,
               ke: Tensor) -> Tensor:
    return _eager("mqa_logits")(q, k, k_scale, weights, ks, ke)


@mqa_logits.register_fake
def _(q, k, k_scale, weights, ks, ke):
    return q.new_empty((q.shape[0], k.shape[0]), dtype=torch.float32)


@torch.library.custom_op("hisa::block_sparse_mqa_logits", mutates_args=())
def block_sparse_mqa_logits(q: Tensor, k: Tensor, k_scale: Tensor, topk_block_index: Tensor,
                            k_block_size: int, weights: Tensor, ks: Tensor, ke: Tensor) -> Tensor:
    return _eager("block_sparse_mqa_logits")(q, k, k_scale, topk_block_index, k_block_size,
                                             weights, ks, ke)


@block_sparse_mqa_logits.register_fake
def _(q, k, k_scale, topk_block_index, k_block_size, weights, ks, ke):
    return q.new_empty((q.shape[0], topk_block_index.shape[1] * k_block_size), dtype=torch.float32)


@torch.library.custom_op("hisa::topk", mutates_args=())
def topk(x: Tensor, k: int, starts: Optional[Tensor] = None, ends: Optional[Tensor] = None) -> Tensor:
    return _eager("topk")(x, k, starts, ends)


@topk.register_fake
def _(x, k, starts=None, ends=None):
    return x.new_empty((x.shape[0], k), dtype=torch.int32)


@torch.library.custom_op("hisa::pool_topk_blocks", mutates_args=())
def pool_topk_blocks(q: Tensor, blocked_k: Tensor, blocked_k_scale: Tensor, weights: Tensor,
                     bks: Tensor, bke: Tensor, block_topk: int) -> Tensor:
    return _eager("pool_topk_blocks")(q, blocked_k, blocked_k_scale, weights, bks, bke, block_topk)


@pool_topk_blocks.register_fake
def _(q, blocked_k, blocked_k_scale, weights, bks, bke, block_topk):
    return q.new_empty((q.shape[0], min(block_topk, blocked_k.shape[0])), dtype=torch.int32)


@torch.library.custom_op("hisa::block_sparse_topk_tokens", mutates_args=())
def block_sparse_topk_tokens(q: Tensor, k: Tensor, k_scale: Tensor, topk_block_index: Tensor,
                             k_block_size: int, weights: Tensor, ks: Tensor, ke: Tensor,
                             topk_tokens: int) -> Tensor:
    return _eager("block_sparse_topk_tokens")(q, k, k_scale, topk_block_index, k_block_size,
                                              weights, ks, ke, topk_tokens)


@block_sparse_topk_tokens.register_fake
def _(q, k, k_scale, topk_block_index, k_block_size, weights, ks, ke, topk_tokens):
    return q.new_empty((q.shape[0], topk_tokens), dtype=torch.int32)


@torch.library.custom_op("hisa::hisa_indexer", mutates_args=())
def hisa_indexer(q: Tensor, k: Tensor, k_scale: Tensor, weights: Tensor, cu_seqlen_ks: Tensor,
                 cu_seqlen_ke: Tensor, k_block_size: int, block_topk: int,
                 topk_tokens: int) -> Tensor:
    return _eager("hisa_indexer")(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke,
                                  k_block_size=k_block_size, block_topk=block_topk,
                                  topk_tokens=topk_tokens)


@hisa_indexer.register_fake
def _(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, k_block_size, block_topk, topk_tokens):
    return q.new_empty((q.shape[0], topk_tokens), dtype=torch.int32)


@torch.library.custom_op("hisa::flat_indexer", mutates_args=())
def flat_indexer(q: Tensor, k: Tensor, k_scale: Tensor, weights: Tensor, cu_seqlen_ks: Tensor,
                 cu_seqlen_ke: Tensor, topk_tokens: int) -> Tensor:
    return _eager("flat_indexer")(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, topk_tokens)


@flat_indexer.register_fake
def _(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, topk_tokens):
    return q.new_empty((q.shape[0], topk_tokens), dtype=torch.int32)


@torch.library.custom_op("hisa::sparse_attn", mutates_args=())
def sparse_attn(q: Tensor, kv: Tensor, attn_sink: Tensor, topk_idxs: Tensor,
                softmax_scale: float) -> Tuple[Tensor, Tensor]:
    return _eager("sparse_attn")(q, kv, attn_sink, topk_idxs, softmax_scale, return_lse=True)


@sparse_attn.register_fake
def _(q, kv, attn_sink, topk_idxs, softmax_scale):
    return q.new_empty(q.shape), q.new_empty(q.shape[:3], dtype=torch.float32)


@torch.library.custom_op("hisa::flash_attn", mutates_args=())
def flash_attn(q: Tensor, k: Tensor, v: Tensor, causal: bool, softmax_scale: float) -> Tensor:
    return _eager("flash_attn")(q, k, v, causal, softmax_scale)


@flash_attn.register_fake
def _(q, k, v, causal, softmax_scale):
    return q.new_empty(q.shape)
