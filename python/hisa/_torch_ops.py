"""hisa's operators as torch custom ops (torch.ops.hisa.*), with fake
implementations, so that torch.compile traces them into its graphs (no
graph break) and CUDA graphs capture them.

The public functions of hisa.ops call the C ABI directly in eager mode (the
fastest path: one ctypes call); under torch.compile they call these ops
instead (ops._traceable). Each op's real implementation is the eager
function; its fake one only computes the output's shape and dtype. The
four ops with C++ CUDA kernels (libhisa_torch.so: topk, hisa_indexer,
flat_indexer, sparse_attn) take the eager function's part past that
kernel (ops._*_checked): the dispatcher runs this Python kernel for a
call with a tensor of another backend, also one that outranks CUDA mixed
with CUDA tensors, and the C++ kernel would send such a call back here
without end (a RecursionError); the checks refuse it, naming the tensor.

The ops are defined on a torch.library.Library (schema inferred from the
annotations, one CompositeExplicitAutograd kernel) rather than with
torch.library.custom_op: custom_op routes every call through its own
Python wrapper and autograd kernel, which added ~25 us a call on the H200
host against ~6.9 us this way (python/bench/probes/torch_op_dispatch.py,
GPU run 121). None of the ops
has a gradient; their outputs are indices or inference-only results.
"""

from __future__ import annotations

import functools
import inspect
from typing import Optional, Tuple

import torch
from torch import Tensor

from . import ops
from ._lib import InvalidArgumentError
from ._torch_util import check_no_grad

_FP8 = torch.float8_e4m3fn


_LIBRARY = torch.library.Library("hisa", "DEF")


def _eager(name):
    return getattr(ops, name)


def _op(mutates_args=()):
    """Defines hisa::<function name> with the schema of the function's
    annotations and the function as its implementation for every backend."""

    def define(fn):
        schema = torch.library.infer_schema(fn, mutates_args=mutates_args)
        _LIBRARY.define(fn.__name__ + schema)
        _LIBRARY.impl(fn.__name__, fn, "CompositeExplicitAutograd")
        return fn

    return define


def _load_cpp_kernels() -> None:
    """Loads libhisa_torch.so at the first call that reaches a Python kernel
    of its four ops (a caller of torch.ops.hisa.* or a compiled graph may
    never call the eager functions, which load it otherwise): later CUDA
    calls then dispatch to its C++ kernels. This call stays on the checked
    path (calling the C++ kernel from here could recurse)."""
    if ops._CPP_KERNELS is None:
        ops._cpp_kernels()


def _check_no_real_tensor(op: str, named) -> None:
    """A fake implementation runs for fake and meta tensors only. A call
    that mixes a meta tensor with real CUDA tensors dispatches to it too
    (Meta ranks above CUDA); its output would be real memory never written:
    refuse instead, naming the argument."""
    from torch._subclasses.fake_tensor import is_fake
    meta = [n for n, t in named if isinstance(t, Tensor) and t.device.type == "meta"]
    for n, t in named:
        if isinstance(t, Tensor) and t.device.type != "meta" and not is_fake(t):
            raise InvalidArgumentError(
                f"{op}: {n} is a real tensor on '{t.device}' but "
                f"{', '.join(meta) or 'another argument'} is a meta tensor: pass "
                "tensors of one device (meta tensors only trace shapes)")


def _fake(name, refuses_grad=True):
    """Registers the decorated function as hisa::<name>'s fake (meta)
    implementation: output shapes and dtypes only. With `refuses_grad` it
    also refuses inputs that require grad with grad mode on, as the eager
    function does: a compiled graph runs the real kernel with grad mode
    off, where the eager check would pass and the gradient be lost without
    a word. The ops that return indices accept them, eagerly and traced
    (no gradient flows through a selection)."""

    def register(fn):
        parameters = list(inspect.signature(fn).parameters)

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            named = list(zip(parameters, args)) + list(kwargs.items())
            _check_no_real_tensor(name, named)
            if refuses_grad:
                check_no_grad(name, named)
            return fn(*args, **kwargs)

        torch.library.register_fake("hisa::" + name, checked, lib=_LIBRARY)
        return fn

    return register


@_op()
def fp8_block_mean_pooling(k: Tensor, k_scale: Tensor,
                           k_block_size: int = 128) -> Tuple[Tensor, Tensor]:
    return _eager("fp8_block_mean_pooling")(k, k_scale, k_block_size)


@_fake("fp8_block_mean_pooling")
def _(k, k_scale, k_block_size):
    nb = (k.shape[0] + k_block_size - 1) // k_block_size
    return k.new_empty((nb, k.shape[1])), k_scale.new_empty((nb,), dtype=torch.float32)


@_op(mutates_args=("logits",))
def clean_and_maintain_logits_(logits: Tensor, ks: Tensor, ke: Tensor) -> None:
    _eager("clean_and_maintain_logits_")(logits, ks, ke)


@_fake("clean_and_maintain_logits_")
def _(logits, ks, ke):
    return None


@_op()
def pool_mqa_logits(q: Tensor, blocked_k: Tensor, blocked_k_scale: Tensor, weights: Tensor,
                    bks: Tensor, bke: Tensor) -> Tensor:
    return _eager("pool_mqa_logits")(q, blocked_k, blocked_k_scale, weights, bks, bke)


@_fake("pool_mqa_logits")
def _(q, blocked_k, blocked_k_scale, weights, bks, bke):
    return q.new_empty((q.shape[0], blocked_k.shape[0]), dtype=torch.float32)


@_op()
def mqa_logits(q: Tensor, k: Tensor, k_scale: Tensor, weights: Tensor, ks: Tensor,
               ke: Tensor) -> Tensor:
    return _eager("mqa_logits")(q, k, k_scale, weights, ks, ke)


@_fake("mqa_logits")
def _(q, k, k_scale, weights, ks, ke):
    return q.new_empty((q.shape[0], k.shape[0]), dtype=torch.float32)


@_op()
def block_sparse_mqa_logits(q: Tensor, k: Tensor, k_scale: Tensor, topk_block_index: Tensor,
                            k_block_size: int, weights: Tensor, ks: Tensor, ke: Tensor) -> Tensor:
    return _eager("block_sparse_mqa_logits")(q, k, k_scale, topk_block_index, k_block_size,
                                             weights, ks, ke)


@_fake("block_sparse_mqa_logits")
def _(q, k, k_scale, topk_block_index, k_block_size, weights, ks, ke):
    return q.new_empty((q.shape[0], topk_block_index.shape[1] * k_block_size), dtype=torch.float32)


@_op()
def topk(x: Tensor, k: int, starts: Optional[Tensor] = None, ends: Optional[Tensor] = None) -> Tensor:
    _load_cpp_kernels()
    return ops._topk_checked(x, k, starts, ends, None, None)


@_fake("topk", refuses_grad=False)
def _(x, k, starts=None, ends=None):
    return x.new_empty((x.shape[0], k), dtype=torch.int32)


@_op()
def pool_topk_blocks(q: Tensor, blocked_k: Tensor, blocked_k_scale: Tensor, weights: Tensor,
                     bks: Tensor, bke: Tensor, block_topk: int) -> Tensor:
    return _eager("pool_topk_blocks")(q, blocked_k, blocked_k_scale, weights, bks, bke, block_topk)


@_fake("pool_topk_blocks", refuses_grad=False)
def _(q, blocked_k, blocked_k_scale, weights, bks, bke, block_topk):
    return q.new_empty((q.shape[0], min(block_topk, blocked_k.shape[0])), dtype=torch.int32)


@_op()
def block_sparse_topk_tokens(q: Tensor, k: Tensor, k_scale: Tensor, topk_block_index: Tensor,
                             k_block_size: int, weights: Tensor, ks: Tensor, ke: Tensor,
                             topk_tokens: int) -> Tensor:
    return _eager("block_sparse_topk_tokens")(q, k, k_scale, topk_block_index, k_block_size,
                                              weights, ks, ke, topk_tokens)


@_fake("block_sparse_topk_tokens", refuses_grad=False)
def _(q, k, k_scale, topk_block_index, k_block_size, weights, ks, ke, topk_tokens):
    return q.new_empty((q.shape[0], topk_tokens), dtype=torch.int32)


@_op()
def hisa_indexer(q: Tensor, k: Tensor, k_scale: Tensor, weights: Tensor, cu_seqlen_ks: Tensor,
                 cu_seqlen_ke: Tensor, k_block_size: int, block_topk: int,
                 topk_tokens: int) -> Tensor:
    _load_cpp_kernels()
    return ops._hisa_indexer_checked(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke,
                                     k_block_size, block_topk, topk_tokens, None)


@_fake("hisa_indexer", refuses_grad=False)
def _(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, k_block_size, block_topk, topk_tokens):
    return q.new_empty((q.shape[0], topk_tokens), dtype=torch.int32)


@_op()
def flat_indexer(q: Tensor, k: Tensor, k_scale: Tensor, weights: Tensor, cu_seqlen_ks: Tensor,
                 cu_seqlen_ke: Tensor, topk_tokens: int) -> Tensor:
    _load_cpp_kernels()
    return ops._flat_indexer_checked(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke,
                                     topk_tokens, None)


@_fake("flat_indexer", refuses_grad=False)
def _(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, topk_tokens):
    return q.new_empty((q.shape[0], topk_tokens), dtype=torch.int32)


@_op()
def sparse_attn(q: Tensor, kv: Tensor, attn_sink: Tensor, topk_idxs: Tensor,
                softmax_scale: float, return_lse: bool = False) -> Tuple[Tensor, Tensor]:
    # Without return_lse the kernel computes no lse (the eager call's
    # specialization) and the second output is empty: an op's outputs are
    # fixed by its schema.
    _load_cpp_kernels()
    result = ops._sparse_attn_checked(q, kv, attn_sink, topk_idxs, softmax_scale, return_lse,
                                      None)
    return result if return_lse else (result, q.new_empty((0,), dtype=torch.float32))


@_fake("sparse_attn")
def _(q, kv, attn_sink, topk_idxs, softmax_scale, return_lse=False):
    lse_shape = q.shape[:3] if return_lse else (0,)
    return q.new_empty(q.shape), q.new_empty(lse_shape, dtype=torch.float32)


@_op()
def flash_attn(q: Tensor, k: Tensor, v: Tensor, causal: bool, softmax_scale: float) -> Tensor:
    return _eager("flash_attn")(q, k, v, causal, softmax_scale)


@_fake("flash_attn")
def _(q, k, v, causal, softmax_scale):
    return q.new_empty(q.shape)
