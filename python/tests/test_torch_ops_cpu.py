"""torch.ops.hisa.* without a GPU: every op is defined with the schema its
annotations give, its fake implementation computes output shapes, and
torch.export traces a graph through them (fake tensors only; the real
kernels run in test_torch_ops.py on the GPU)."""

from hisa_testutil import require_torch

torch = require_torch()

import hisa.ops  # noqa: E402,F401  (registers torch.ops.hisa.*)
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

SCHEMAS = {
    "topk": "hisa::topk(Tensor x, SymInt k, Tensor? starts=None, Tensor? ends=None) -> Tensor",
    "clean_and_maintain_logits_":
        "hisa::clean_and_maintain_logits_(Tensor(a0!) logits, Tensor ks, Tensor ke) -> ()",
    "hisa_indexer": "hisa::hisa_indexer(Tensor q, Tensor k, Tensor k_scale, Tensor weights, "
                    "Tensor cu_seqlen_ks, Tensor cu_seqlen_ke, SymInt k_block_size, "
                    "SymInt block_topk, SymInt topk_tokens) -> Tensor",
    "sparse_attn": "hisa::sparse_attn(Tensor q, Tensor kv, Tensor attn_sink, Tensor topk_idxs, "
                   "float softmax_scale) -> (Tensor, Tensor)",
    "flash_attn": "hisa::flash_attn(Tensor q, Tensor k, Tensor v, bool causal, "
                  "float softmax_scale) -> Tensor",
}


def indexer_inputs(m=700, n=1500, heads=64, dim=128):
    q = torch.empty(m, heads, dim, dtype=torch.float8_e4m3fn)
    k = torch.empty(n, dim, dtype=torch.float8_e4m3fn)
    ks = torch.zeros(m, dtype=torch.int32)
    return q, k, torch.empty(n), torch.empty(m, heads), ks, ks.clone()


def test_schemas():
    for name, schema in SCHEMAS.items():
        assert str(getattr(torch.ops.hisa, name).default._schema) == schema


def test_fake_shapes():
    with FakeTensorMode():
        q, k, k_scale, weights, ks, ke = indexer_inputs()
        assert torch.ops.hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, 128, 8,
                                           256).shape == (700, 256)
        assert torch.ops.hisa.flat_indexer(q, k, k_scale, weights, ks, ke, 300).shape == (700, 300)
        assert torch.ops.hisa.mqa_logits(q, k, k_scale, weights, ks, ke).shape == (700, 1500)
        pooled, scale = torch.ops.hisa.fp8_block_mean_pooling(k, k_scale, 64)
        assert pooled.shape == (24, 128) and scale.shape == (24,) and scale.dtype == torch.float32
        top = torch.ops.hisa.topk(torch.empty(33, 500), 17)
        assert top.shape == (33, 17) and top.dtype == torch.int32
        o, lse = torch.ops.hisa.sparse_attn(torch.empty(2, 3, 16, 512, dtype=torch.bfloat16),
                                            torch.empty(2, 40, 512, dtype=torch.bfloat16),
                                            torch.empty(16),
                                            torch.empty(2, 3, 70, dtype=torch.int32), 0.05)
        assert o.shape == (2, 3, 16, 512) and lse.shape == (2, 3, 16)
        assert lse.dtype == torch.float32


def test_export_traces_through_the_ops():
    class Indexer(torch.nn.Module):
        def forward(self, q, k, k_scale, weights, ks, ke, logits):
            indices = torch.ops.hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, 128, 8, 256)
            torch.ops.hisa.clean_and_maintain_logits_(logits, ks, ke)
            return indices + 0, logits * 2

    program = torch.export.export(Indexer(), indexer_inputs() + (torch.empty(700, 1500),))
    code = program.graph_module.code
    assert "torch.ops.hisa.hisa_indexer.default" in code
    assert "torch.ops.hisa.clean_and_maintain_logits_.default" in code
