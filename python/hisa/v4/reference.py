"""A torch reference of the DeepSeek-V4 attention layer (KERNELS.md "The V4
attention layer around the kernel"), for issue 12's kernels and tests.

Plain torch, f32 math, any device: the quantize-dequantize steps (fp8 of the
kv's first 448 dims, Hadamard + fp4 of the indexer's q and k) are applied as
the kernels will apply them, so a kernel's result can be compared with this
one within bf16 rounding. It keeps its own caches, like the layer object:

    layer = Attention(config, weights, batch=2, max_seq=1024)
    out = layer.forward(x, start_pos=0)          # prefill, x [B, S, dim]
    out = layer.forward(x_next, start_pos=S)     # decode, x_next [B, 1, dim]

Conventions fixed here where KERNELS.md leaves a choice (docs/design.md,
"The V4 attention layer"): RoPE rotates interleaved pairs (re, im) of the
last 64 dims; the prefill kernel reads the prompt's kv followed by its
compressed entries (window indices are positions, compressed ones S + j);
decode reads the cache (ring slots, then 128 + j); index rows are the
window part (128 entries, -1 for positions before 0) then the compressed
part (-1 padded to the layer kind's fixed length).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Optional

import torch

FP8_MAX = 448.0
FP4_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)  # e2m1 magnitudes


@dataclass
class Config:
    dim: int = 4096
    heads: int = 64
    head_dim: int = 512
    rope_dim: int = 64
    q_lora: int = 1024
    o_groups: int = 8
    o_lora: int = 1024
    window: int = 128
    compress_ratio: int = 4          # 0 (window only), 4 (CSA), 128 (HCA)
    index_heads: int = 64
    index_dim: int = 128
    index_topk: int = 512
    eps: float = 1e-6
    rope_theta: float = 10000.0
    compress_rope_theta: float = 160000.0

    @property
    def overlap(self) -> bool:
        return self.compress_ratio == 4

    @property
    def theta(self) -> float:
        """RoPE base of the layer: compressing layers use the compress rope
        everywhere (q, kv, entries, indexer), so that q . k sees one scheme."""
        return self.compress_rope_theta if self.compress_ratio else self.rope_theta

    @property
    def nope_dim(self) -> int:
        return self.head_dim - self.rope_dim


def weight_shapes(config: Config) -> Dict[str, tuple]:
    """The shape of every weight a layer of `config` reads, in the order
    random_weights draws them."""
    c = config
    shapes = {
        "wq_a": (c.q_lora, c.dim), "q_norm": (c.q_lora,),
        "wq_b": (c.heads * c.head_dim, c.q_lora),
        "wkv": (c.head_dim, c.dim), "kv_norm": (c.head_dim,),
        "attn_sink": (c.heads,),
        "wo_a": (c.o_groups, c.o_lora, c.heads // c.o_groups * c.head_dim),
        "wo_b": (c.dim, c.o_groups * c.o_lora),
    }
    if c.compress_ratio:
        width = (2 if c.overlap else 1) * c.head_dim
        shapes.update({
            "c_wkv": (width, c.dim), "c_wgate": (width, c.dim),
            "c_ape": (c.compress_ratio, width), "c_norm": (c.head_dim,),
        })
    if c.compress_ratio == 4:
        width = 2 * c.index_dim  # the indexer's compressor: ratio 4, overlap
        shapes.update({
            "i_wq": (c.index_heads * c.index_dim, c.q_lora),
            "i_weights": (c.index_heads, c.dim),
            "i_wkv": (width, c.dim), "i_wgate": (width, c.dim),
            "i_ape": (4, width), "i_norm": (c.index_dim,),
        })
    return shapes


def random_weights(config: Config, generator: Optional[torch.Generator] = None,
                   device="cpu") -> Dict[str, torch.Tensor]:
    """Weights of the layer's shapes, scaled so that activations stay O(1):
    matrices by 1/sqrt(fan-in), norms around 1, the sink O(1), the
    positional terms small."""
    scales = {"attn_sink": 1.0, "c_ape": 0.1, "i_ape": 0.1}
    weights = {}
    for name, shape in weight_shapes(config).items():
        norm = name.endswith("_norm")
        scale = 1.0 if norm else scales.get(name, shape[-1] ** -0.5)
        t = (torch.randn(*shape, generator=generator) * scale).to(device)
        weights[name] = 1 + 0.1 * t if norm else t
    return weights


# ---- element-wise pieces (each a kernel of issue 12) ---------------------------

def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()


def rope_angles(positions: torch.Tensor, rope_dim: int, theta: float) -> torch.Tensor:
    """[..., rope_dim / 2] angles of the pairs at `positions`."""
    inv = theta ** (-torch.arange(0, rope_dim, 2, dtype=torch.float64) / rope_dim)
    return positions.double()[..., None] * inv.to(positions.device)


def rope(x: torch.Tensor, angles: torch.Tensor, inverse: bool = False) -> torch.Tensor:
    """Rotates interleaved pairs (x[2i], x[2i+1]) of x's last dim by angles
    (broadcast over the dims between); inverse rotates back."""
    pairs = x.float().unflatten(-1, (-1, 2))
    cos, sin = angles.cos().float(), angles.sin().float()
    if inverse:
        sin = -sin
    while cos.dim() < pairs.dim() - 1:
        cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
    re, im = pairs[..., 0], pairs[..., 1]
    return torch.stack((re * cos - im * sin, re * sin + im * cos), -1).flatten(-2)


def exact_div(x: torch.Tensor, divisor: float) -> torch.Tensor:
    """x / divisor rounded once (IEEE), as the kernels' div.rn.f32 does: on
    CUDA, torch divides by a Python scalar as a multiplication by its
    rounded reciprocal, which is one ulp off for some x (and then a scale,
    a code or a power-of-two exponent differs)."""
    return x / torch.full_like(x, divisor)


def fp8_qdq(x: torch.Tensor, block: int = 64) -> torch.Tensor:
    """Quantize-dequantize to fp8 e4m3 in blocks of `block` along the last
    dim, scale amax / 448 (a zero block stays zero)."""
    blocks = x.float().unflatten(-1, (-1, block))
    amax = blocks.abs().amax(-1, keepdim=True)
    scale = exact_div(amax, FP8_MAX)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = (blocks / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).float()
    return (q * scale).flatten(-2)


def fp4_qdq(x: torch.Tensor, block: int = 32) -> torch.Tensor:
    """Quantize-dequantize to fp4 e2m1 in blocks of `block`: a power-of-two
    scale per block (the smallest 2^e with amax / 2^e <= 6, e taken from the
    float's bits, not a rounded log2), values rounded to the nearest e2m1
    magnitude (ties to the even code)."""
    blocks = x.float().unflatten(-1, (-1, block))
    amax = blocks.abs().amax(-1, keepdim=True)
    ratio = torch.clamp(exact_div(amax, 6.0), min=2.0 ** -126)
    mantissa, exponent = torch.frexp(ratio)      # ratio = mantissa * 2^exponent, [0.5, 1)
    exponent = torch.where(mantissa == 0.5, exponent - 1, exponent)
    scale = torch.ldexp(torch.ones_like(ratio), exponent)
    scaled = blocks / scale
    magnitude = scaled.abs()
    # Midpoints between e2m1 magnitudes; at a tie the even code wins:
    # 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4.
    q = torch.zeros_like(magnitude)
    for threshold, value, inclusive in ((0.25, 0.5, False), (0.75, 1.0, True),
                                        (1.25, 1.5, False), (1.75, 2.0, True),
                                        (2.5, 3.0, False), (3.5, 4.0, True), (5.0, 6.0, False)):
        above = magnitude >= threshold if inclusive else magnitude > threshold
        q = torch.where(above, torch.full_like(q, value), q)
    return (torch.copysign(q, scaled) * scale).flatten(-2)


def hadamard(x: torch.Tensor) -> torch.Tensor:
    """Orthonormal Walsh-Hadamard transform along the last dim (a power of 2)."""
    n = x.shape[-1]
    assert n & (n - 1) == 0, "Hadamard size must be a power of two"
    y = x.float().clone()
    h = 1
    while h < n:
        y = y.unflatten(-1, (-1, 2, h))
        a, b = y[..., 0, :], y[..., 1, :]
        y = torch.stack((a + b, a - b), -2).flatten(-3)
        h *= 2
    return exact_div(y, math.sqrt(n))


def sparse_attn(q, kv, attn_sink, idx, scale):
    """KERNELS.md: q [B, S, H, D], kv [B, N, D], idx [B, S, K] (-1 = none)."""
    b = q.shape[0]
    valid = (idx >= 0) & (idx < kv.shape[1])
    rows = kv.float()[torch.arange(b, device=q.device)[:, None, None], idx.clamp(min=0).long()]
    s = torch.einsum("bshd,bskd->bshk", q.float(), rows) * scale
    s = s.masked_fill(~valid[:, :, None, :], float("-inf"))
    m = torch.maximum(s.amax(-1), attn_sink.float()[None, None])
    e = torch.exp(s - m[..., None])
    den = e.sum(-1) + torch.exp(attn_sink.float()[None, None] - m)
    return torch.einsum("bshk,bskd->bshd", e, rows) / den[..., None]


def pool_group(kv_rows, score_rows, width, overlap):
    """One compressed entry from a group's rows [slots, c*width] (overlap:
    the previous group's r rows then the current group's r rows): softmax
    over the slots of the scores, column by column, weighting kv."""
    if overlap:
        r = kv_rows.shape[-2] // 2
        kv = torch.cat((kv_rows[..., :r, :width], kv_rows[..., r:, width:]), -2)
        score = torch.cat((score_rows[..., :r, :width], score_rows[..., r:, width:]), -2)
    else:
        kv, score = kv_rows, score_rows
    weights = torch.softmax(score, dim=-2)
    return (weights * kv).sum(-2)


def finish_entry(pooled, j, r, norm, quantize, eps, rope_dim, theta):
    """RMSNorm, RoPE at the group's first position j * r, quantize."""
    entry = rmsnorm(pooled, norm, eps)
    nope = entry.shape[-1] - rope_dim
    angles = rope_angles(torch.tensor(j * r, device=pooled.device), rope_dim, theta)
    rot = rope(entry[..., nope:], angles)
    head = quantize(entry[..., :nope]) if quantize else entry[..., :nope]
    return torch.cat((head, rot), -1)


def compress_entries(kv, score, ape, norm, r, overlap, quantize, eps, rope_dim, theta):
    """The Compressor's prefill (kernel v4_compress): entries j = 0 .. S // r
    - 1 [B, S // r, width] of the projections kv, score [B, S, c * width]
    (c = 2 with overlap), the position bias ape [r, c * width] added to the
    scores here."""
    b, s, full = kv.shape
    width = full // 2 if overlap else full
    kv = kv.float()
    score = score.float() + ape.float()[torch.arange(s, device=kv.device) % r]
    entries = []
    for j in range(s // r):
        rows = slice(j * r, (j + 1) * r)
        if overlap:
            if j == 0:
                prev_kv = torch.zeros(b, r, full, device=kv.device)
                prev_score = torch.full((b, r, full), float("-inf"), device=kv.device)
            else:
                prev_kv, prev_score = kv[:, (j - 1) * r:j * r], score[:, (j - 1) * r:j * r]
            pooled = pool_group(torch.cat((prev_kv, kv[:, rows]), 1),
                                torch.cat((prev_score, score[:, rows]), 1), width, True)
        else:
            pooled = pool_group(kv[:, rows], score[:, rows], width, False)
        entries.append(finish_entry(pooled, j, r, norm, quantize, eps, rope_dim, theta))
    if not entries:
        return torch.zeros(b, 0, width, device=kv.device)
    return torch.stack(entries, 1)


# ---- the layer ------------------------------------------------------------------

class Attention:
    """The layer with its caches (see the module docstring)."""

    def __init__(self, config: Config, weights: Dict[str, torch.Tensor], batch: int,
                 max_seq: int, device="cpu"):
        c = self.config = config
        self.w = weights
        self.batch, self.max_seq = batch, max_seq
        r = c.compress_ratio
        self.compressed_capacity = max_seq // r if r else 0
        # The cache: the ring of the last `window` tokens, then compressed entries.
        self.kv_cache = torch.zeros(batch, c.window + self.compressed_capacity, c.head_dim,
                                    device=device)
        # Compressor state: the kv and score rows of the last (overlap: two)
        # groups' tokens, by position within the group.
        width = (2 if c.overlap else 1) * c.head_dim
        self.c_kv = torch.zeros(batch, 2 * r if r else 0, width, device=device)
        self.c_score = torch.full((batch, 2 * r if r else 0, width), float("-inf"), device=device)
        if r == 4:
            self.i_cache = torch.zeros(batch, self.compressed_capacity, c.index_dim, device=device)
            self.i_kv = torch.zeros(batch, 8, 2 * c.index_dim, device=device)
            self.i_score = torch.full((batch, 8, 2 * c.index_dim), float("-inf"), device=device)
        self.length = 0
        # CSA: a selection to attend to instead of the indexer's own top-k
        # ([B, S, index_topk] entry indices, -1 padded; consumed by the next
        # forward), so a test can compare the layer's output with the
        # reference's on the layer's selection and check separately that the
        # selections differ only where the indexer's scores nearly tie.
        # The reference's own selection and scores stay in own_selection and
        # last_scores.
        self.forced_selection: Optional[torch.Tensor] = None
        self.own_selection: Optional[torch.Tensor] = None
        self.last_scores: Optional[torch.Tensor] = None

    # -- index lengths ---------------------------------------------------------
    def compressed_slots(self) -> int:
        c = self.config
        if c.compress_ratio == 0:
            return 0
        if c.compress_ratio == 4:
            return c.index_topk
        return self.compressed_capacity

    # -- pieces ------------------------------------------------------------------
    def _q(self, x, positions):
        c, w = self.config, self.w
        qr = rmsnorm(x.float() @ w["wq_a"].T, w["q_norm"], c.eps)
        q = (qr @ w["wq_b"].T).unflatten(-1, (c.heads, c.head_dim))
        q = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + c.eps)
        angles = rope_angles(positions, c.rope_dim, c.theta)
        q = torch.cat((q[..., :c.nope_dim], rope(q[..., c.nope_dim:], angles)), -1)
        return q, qr

    def _kv(self, x, positions):
        c, w = self.config, self.w
        kv = rmsnorm(x.float() @ w["wkv"].T, w["kv_norm"], c.eps)
        angles = rope_angles(positions, c.rope_dim, c.theta)
        return torch.cat((fp8_qdq(kv[..., :c.nope_dim]), rope(kv[..., c.nope_dim:], angles)), -1)

    def _compress_prefill(self, x, kv_w, gate_w, ape, norm, width, r, overlap, quantize):
        """Entries j = 0 .. S // r - 1 of a prompt x [B, S, dim], and every
        token's kv and score rows (for the decode state)."""
        kv = x.float() @ kv_w.T
        score = x.float() @ gate_w.T
        c = self.config
        entries = compress_entries(kv, score, ape, norm, r, overlap, quantize, c.eps,
                                   c.rope_dim, c.theta)
        return entries, kv, score + ape[torch.arange(x.shape[1], device=x.device) % r]

    def _indexer_keys(self, entries):
        # Hadamard then fp4 quantize-dequantize (the indexer's k and q).
        return fp4_qdq(hadamard(entries))

    def _indexer_scores(self, x, qr, positions, keys):
        """score [B, S, N] of every compressed key for each token."""
        c, w = self.config, self.w
        q = (qr @ w["i_wq"].T).unflatten(-1, (c.index_heads, c.index_dim))
        angles = rope_angles(positions, c.rope_dim, c.theta)
        q = torch.cat((q[..., :c.index_dim - c.rope_dim], rope(q[..., c.index_dim - c.rope_dim:], angles)), -1)
        q = fp4_qdq(hadamard(q))
        weights = (x.float() @ w["i_weights"].T) * c.index_dim ** -0.5 * c.index_heads ** -0.5
        logits = torch.relu(torch.einsum("bshd,bnd->bshn", q, keys))
        return torch.einsum("bshn,bsh->bsn", logits, weights)

    def _compressed_indices(self, scores, positions, offset):
        """[B, S, slots] entry indices (+ offset) visible to each token:
        all of them (HCA) or the indexer's top index_topk (CSA), -1 padded."""
        c = self.config
        b, s = positions.shape
        slots = self.compressed_slots()
        out = torch.full((b, s, slots), -1, dtype=torch.int32, device=positions.device)
        for bi in range(b):
            for si in range(s):
                visible = int(positions[bi, si] + 1) // c.compress_ratio
                if c.compress_ratio == 4:
                    take = min(visible, c.index_topk)
                    if take:
                        # Exact top-k, ties to the lower entry (as hisa.topk).
                        order = torch.sort(-scores[bi, si, :visible], stable=True).indices
                        top = order[:take].sort().values
                        out[bi, si, :take] = (top + offset).int()
                else:
                    take = min(visible, slots)
                    out[bi, si, :take] = torch.arange(take, dtype=torch.int32) + offset
        if c.compress_ratio == 4:
            self.own_selection = torch.where(out >= 0, out - offset, out)
            self.last_scores = scores
            if self.forced_selection is not None:
                forced = self.forced_selection.to(out.device).int()
                assert forced.shape == out.shape, "forced_selection: [B, S, index_topk]"
                out = torch.where(forced >= 0, forced + offset, forced)
                self.forced_selection = None
        return out

    # -- forward -------------------------------------------------------------------
    def forward(self, x: torch.Tensor, start_pos: int) -> torch.Tensor:
        if start_pos == 0:
            return self.prefill(x)
        assert x.shape[1] == 1 and start_pos == self.length, "decode takes the next token"
        return self.decode(x)

    def prefill(self, x: torch.Tensor) -> torch.Tensor:
        c, w = self.config, self.w
        b, s, _ = x.shape
        assert s <= self.max_seq
        positions = torch.arange(s, device=x.device).expand(b, s)
        q, qr = self._q(x, positions)
        kv = self._kv(x, positions)
        # Window indices: positions i-127 .. i, -1 before 0.
        window = positions[..., None] - (c.window - 1) + torch.arange(c.window, device=x.device)
        window = torch.where(window >= 0, window, torch.full_like(window, -1)).int()
        parts = [window]
        kv_all = kv
        if c.compress_ratio:
            entries, kv_rows, score_rows = self._compress_prefill(
                x, w["c_wkv"], w["c_wgate"], w["c_ape"], w["c_norm"], c.head_dim,
                c.compress_ratio, c.overlap, fp8_qdq)
            n = entries.shape[1]
            scores = None
            if c.compress_ratio == 4:
                i_entries, i_kv, i_score = self._compress_prefill(
                    x, w["i_wkv"], w["i_wgate"], w["i_ape"], w["i_norm"], c.index_dim, 4, True, None)
                keys = self._indexer_keys(i_entries)
                scores = self._indexer_scores(x, qr, positions, keys)
                self.i_cache[:, :n] = keys
                self._keep_state(self.i_kv, self.i_score, i_kv, i_score, s, 4)
            parts.append(self._compressed_indices(scores, positions, offset=s))
            kv_all = torch.cat((kv, entries), 1)
            self.kv_cache[:, c.window:c.window + n] = entries
            self._keep_state(self.c_kv, self.c_score, kv_rows, score_rows, s, c.compress_ratio)
        idx = torch.cat(parts, -1)
        o = sparse_attn(q, kv_all, w["attn_sink"], idx, c.head_dim ** -0.5)
        # The ring: token p at slot p % window.
        last = torch.arange(max(0, s - c.window), s, device=x.device)
        self.kv_cache[:, last % c.window] = kv[:, last]
        self.length = s
        self.last_indices = idx
        return self._output(o, positions)

    def _keep_state(self, kv_state, score_state, kv_rows, score_rows, s, r):
        """The last two groups' rows (overlap needs the previous group; the
        current group may be incomplete), by position within the group."""
        start = (s // r) * r
        for g, base in ((0, start - r), (1, start)):
            for i in range(r):
                p = base + i
                if 0 <= p < s:
                    kv_state[:, g * r + i] = kv_rows[:, p]
                    score_state[:, g * r + i] = score_rows[:, p]
                else:
                    kv_state[:, g * r + i] = 0
                    score_state[:, g * r + i] = float("-inf")

    def decode(self, x: torch.Tensor) -> torch.Tensor:
        c, w = self.config, self.w
        b = x.shape[0]
        p = self.length
        positions = torch.full((b, 1), p, device=x.device)
        q, qr = self._q(x, positions)
        kv = self._kv(x, positions)
        self.kv_cache[:, p % c.window] = kv[:, 0]
        # Window indices: the ring slots of tokens p-127 .. p, in token order.
        tokens = p - (c.window - 1) + torch.arange(c.window, device=x.device)
        window = torch.where(tokens >= 0, tokens % c.window, torch.full_like(tokens, -1))
        parts = [window.int().expand(b, 1, c.window)]
        if c.compress_ratio:
            r = c.compress_ratio
            entry = self._decode_compress(x, p, self.c_kv, self.c_score, w["c_wkv"], w["c_wgate"],
                                          w["c_ape"], w["c_norm"], c.head_dim, r, c.overlap, fp8_qdq)
            if entry is not None:
                self.kv_cache[:, c.window + p // r] = entry
            scores = None
            if r == 4:
                i_entry = self._decode_compress(x, p, self.i_kv, self.i_score, w["i_wkv"],
                                                w["i_wgate"], w["i_ape"], w["i_norm"], c.index_dim,
                                                4, True, None)
                if i_entry is not None:
                    self.i_cache[:, p // 4] = self._indexer_keys(i_entry)
                n = (p + 1) // 4
                scores = self._indexer_scores(x, qr, positions, self.i_cache[:, :n]) if n else \
                    torch.zeros(b, 1, 0, device=x.device)
            parts.append(self._compressed_indices(scores, positions, offset=c.window))
        idx = torch.cat(parts, -1)
        o = sparse_attn(q, self.kv_cache, w["attn_sink"], idx, c.head_dim ** -0.5)
        self.length = p + 1
        self.last_indices = idx
        return self._output(o, positions)

    def _decode_compress(self, x, p, kv_state, score_state, kv_w, gate_w, ape, norm, width, r,
                         overlap, quantize):
        """Token p joins the state; entry p // r when the group completes."""
        i = p % r
        kv_state[:, r + i] = (x[:, 0].float() @ kv_w.T)
        score_state[:, r + i] = (x[:, 0].float() @ gate_w.T) + ape[i]
        entry = None
        if i == r - 1:
            j = p // r
            if overlap:
                pooled = pool_group(kv_state, score_state, width, True)
            else:
                pooled = pool_group(kv_state[:, r:], score_state[:, r:], width, False)
            c = self.config
            entry = finish_entry(pooled, j, r, norm, quantize, c.eps, c.rope_dim, c.theta)
            # The completed group becomes the previous one.
            kv_state[:, :r] = kv_state[:, r:]
            score_state[:, :r] = score_state[:, r:]
            kv_state[:, r:] = 0
            score_state[:, r:] = float("-inf")
        return entry

    def _output(self, o, positions):
        c, w = self.config, self.w
        angles = rope_angles(positions, c.rope_dim, c.theta)
        o = torch.cat((o[..., :c.nope_dim], rope(o[..., c.nope_dim:], angles, inverse=True)), -1)
        b, s = positions.shape
        grouped = o.reshape(b, s, c.o_groups, -1)
        low = torch.einsum("bsgd,grd->bsgr", grouped, w["wo_a"].float())
        return low.flatten(-2) @ w["wo_b"].float().T
