"""Context-parallel prefill over several GPUs (issue 13): the HISA indexer and
V4 sparse attention for one long causal sequence split across the ranks of
a torch.distributed process group (NCCL on GPUs; any backend works).

Queries are split by position in zigzag order, balanced for causal work:
the sequence of `total` tokens is cut into 2W chunks (W ranks) and rank r
holds chunks r and 2W - 1 - r, early and late positions together, so that
every rank attends to about the same number of keys. Each rank holds the
keys (and kv rows) of its own tokens; one all-gather per call puts every
rank's keys in global order on every rank, and the rank runs the
single-GPU operator on its own queries over all keys with global windows.
A rank's result rows are those of its own tokens, in its local order
(`local_positions`), identical (up to ties) to the single-GPU result rows
at those positions. World size 1 is the single-GPU call.

The key gather moves raw keys; every rank pools them itself (the pooling
is memory-bound and small next to the indexer's stages).

    positions = hisa.distributed.local_positions(total, world, rank)
    idx = hisa.distributed.hisa_indexer_cp(q_local, k_local, k_scale_local, w_local,
                                           total=total, k_block_size=128,
                                           block_topk=64, topk_tokens=2048, group=pg)
    o = hisa.distributed.sparse_attn_cp(q_local, kv_local, sink, idx_global, scale,
                                        total=total, group=pg)
"""

from __future__ import annotations

import math

from typing import Callable, List, Optional, Tuple

import torch

from ._lib import InvalidArgumentError
from ._torch_util import check_no_grad


def zigzag_chunks(total: int, world: int) -> List[Tuple[int, int]]:
    """The 2 * world position ranges [start, end) of a sequence of `total`
    tokens (as equal as integers allow; some may be empty)."""
    if total < 0 or world < 1:
        raise InvalidArgumentError(f"total = {total} must be >= 0 and world = {world} >= 1")
    bounds = [total * i // (2 * world) for i in range(2 * world + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(2 * world)]


def rank_ranges(total: int, world: int, rank: int) -> List[Tuple[int, int]]:
    """Rank `rank`'s position ranges: chunks rank and 2 * world - 1 - rank."""
    if not 0 <= rank < world:
        raise InvalidArgumentError(f"rank = {rank} must lie in [0, world = {world})")
    chunks = zigzag_chunks(total, world)
    return [chunks[rank], chunks[2 * world - 1 - rank]]


def local_positions(total: int, world: int, rank: int, device=None) -> torch.Tensor:
    """Global positions of rank `rank`'s tokens, in its local order (int64)."""
    return torch.cat([torch.arange(start, end, device=device)
                      for start, end in rank_ranges(total, world, rank)])


def _world(group) -> Tuple[int, int]:
    if group is None and not torch.distributed.is_initialized():
        return 1, 0
    return torch.distributed.get_world_size(group), torch.distributed.get_rank(group)


def gather_tokens(local: torch.Tensor, total: int, group=None) -> torch.Tensor:
    """Every rank's token rows (dim 0, in its local zigzag order) placed at
    their global positions: [total, ...] on every rank (one all-gather; the
    pieces are padded to the largest rank's count). Every rank must pass rows
    of the same shape and dtype (a rank cannot check its peers'; the
    callers below check theirs before gathering)."""
    world, rank = _world(group)
    count = sum(end - start for start, end in rank_ranges(total, world, rank))
    if local.shape[0] != count:
        raise InvalidArgumentError(
            f"rank {rank} holds {count} of the {total} tokens, but its tensor has "
            f"{local.shape[0]} rows")
    if world == 1:
        return local
    counts = [sum(e - s for s, e in rank_ranges(total, world, r)) for r in range(world)]
    widest = max(counts)
    # All-gather as bytes: fp8 and other types every backend can move.
    row_shape = local.shape[1:]
    # The row's bytes named, not inferred: a rank may hold no token (fewer
    # tokens than ranks), and reshape(0, -1) cannot infer them.
    row_bytes = math.prod(row_shape) * local.element_size()
    as_bytes = local.contiguous().view(torch.uint8).reshape(count, row_bytes)
    padded = torch.zeros((widest, as_bytes.shape[1]), dtype=torch.uint8, device=local.device)
    padded[:count] = as_bytes
    pieces = [torch.empty_like(padded) for _ in range(world)]
    torch.distributed.all_gather(pieces, padded, group=group)
    out = torch.empty((total, as_bytes.shape[1]), dtype=torch.uint8, device=local.device)
    for r, piece in enumerate(pieces):
        positions = local_positions(total, world, r, device=local.device)
        out[positions] = piece[:counts[r]]
    return out.view(local.dtype).reshape(total, *row_shape)


def hisa_indexer_cp(q: torch.Tensor, k: torch.Tensor, k_scale: torch.Tensor,
                    weights: torch.Tensor, *, total: int, k_block_size: int = 128,
                    block_topk: int, topk_tokens: int, group=None,
                    indexer: Optional[Callable] = None) -> torch.Tensor:
    """The HISA indexer of one causal sequence of `total` tokens, context
    parallel: q [m, H, D] fp8, weights [m, H], k [m, D] fp8, k_scale [m] are
    this rank's tokens (`local_positions` order). Returns [m, topk_tokens]
    int32 token positions (offsets from 0: the whole sequence is one
    window), -1 padded, for this rank's queries. `indexer` replaces
    hisa.hisa_indexer (tests on machines without a GPU)."""
    world, rank = _world(group)
    positions = local_positions(total, world, rank, device=q.device)
    if q.shape[0] != positions.numel() or weights.shape[0] != positions.numel():
        raise InvalidArgumentError(
            f"rank {rank} holds {positions.numel()} of the {total} tokens; q has "
            f"{q.shape[0]} rows, weights {weights.shape[0]}")
    # Everything the two gathers move is checked before the first, so that
    # a rank refuses its inputs before it takes part in any collective
    # (the peers of a rank that raises still wait in theirs: destroy the
    # group then), and never gathers rows of another size than its peers'.
    m = positions.numel()
    if k.dim() != 2 or q.dim() != 3 or tuple(k.shape) != (m, q.shape[2]):
        raise InvalidArgumentError(
            f"rank {rank}: k must be [{m}, D] with q's D (q {tuple(q.shape)}), got "
            f"{tuple(k.shape)}")
    if k_scale.numel() != m:
        raise InvalidArgumentError(
            f"rank {rank}: k_scale must have {m} elements, got {tuple(k_scale.shape)}")
    if indexer is None and (k.dtype != torch.float8_e4m3fn or k_scale.dtype != torch.float32):
        raise InvalidArgumentError(
            f"rank {rank}: k must be float8_e4m3fn and k_scale float32, got {k.dtype} and "
            f"{k_scale.dtype}")
    k_all = gather_tokens(k, total, group)
    scale_all = gather_tokens(k_scale.reshape(-1), total, group)
    ks = torch.zeros_like(positions, dtype=torch.int32)
    ke = (positions + 1).to(torch.int32)
    if indexer is None:
        from .ops import hisa_indexer as indexer
    return indexer(q, k_all, scale_all, weights, ks, ke, k_block_size=k_block_size,
                   block_topk=block_topk, topk_tokens=topk_tokens)


def sparse_attn_cp(q: torch.Tensor, kv: torch.Tensor, attn_sink: torch.Tensor,
                   topk_idxs: torch.Tensor, softmax_scale: float, *, total: int,
                   group=None, attn: Optional[Callable] = None) -> torch.Tensor:
    """DeepSeek-V4 sparse attention of one sequence of `total` tokens,
    context parallel: q [m, H, 512] bf16 and kv [m, 512] bf16 are this
    rank's tokens (`local_positions` order), topk_idxs [m, K] int32 global
    kv positions (-1 = none). Returns o [m, H, 512] for this rank's
    queries. `attn` replaces hisa.sparse_attn (tests without a GPU)."""
    world, rank = _world(group)
    count = local_positions(total, world, rank).numel()
    if q.shape[0] != count or topk_idxs.shape[0] != count:
        raise InvalidArgumentError(
            f"rank {rank} holds {count} of the {total} tokens; q has {q.shape[0]} rows, "
            f"topk_idxs {topk_idxs.shape[0]}")
    # The gather moves kv as bytes, which drops requires_grad: check first.
    check_no_grad("sparse_attn_cp", (("q", q), ("kv", kv), ("attn_sink", attn_sink)))
    # The gathered rows must have the peers' size: checked before the gather.
    if kv.dim() != 2 or tuple(kv.shape) != (count, 512) or \
            (attn is None and kv.dtype != torch.bfloat16):
        raise InvalidArgumentError(
            f"rank {rank}: kv must be bfloat16 [{count}, 512], got {kv.dtype} "
            f"{tuple(kv.shape)}")
    kv_all = gather_tokens(kv, total, group)
    if attn is None:
        from .ops import sparse_attn as attn
    o = attn(q[None], kv_all[None], attn_sink, topk_idxs[None], softmax_scale)
    return o[0]
