"""How much the CSA layer's selection and output move under the bf16
roundings the layer makes, on the CPU: the torch reference in f32 against
the same reference with only the layer's bf16 roundings of q and of the
indexer's q and weights (the test configuration of test_v4_layer.py). The
tolerance of the CSA layer tests comes from these numbers.

    PYTHONPATH=python python3 python/bench/probes/v4_csa_rounding.py
"""
import torch
from hisa.v4 import reference as ref

def bf(t): return t.bfloat16().float()

class Rounded(ref.Attention):
    """The reference with the layer's bf16 roundings on the indexer's path."""
    def _q(self, x, positions):
        c, w = self.config, self.w
        qr = bf(ref.rmsnorm(bf(x.float() @ w["wq_a"].T), w["q_norm"], c.eps))
        q = bf(qr @ w["wq_b"].T).unflatten(-1, (c.heads, c.head_dim))
        q = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + c.eps)
        angles = ref.rope_angles(positions, c.rope_dim, c.theta)
        q = torch.cat((q[..., :c.nope_dim], ref.rope(q[..., c.nope_dim:], angles)), -1)
        return bf(q), qr
    def _indexer_scores(self, x, qr, positions, keys):
        c, w = self.config, self.w
        q = bf(qr @ w["i_wq"].T).unflatten(-1, (c.index_heads, c.index_dim))
        angles = ref.rope_angles(positions, c.rope_dim, c.theta)
        q = bf(torch.cat((q[..., :c.index_dim - c.rope_dim], ref.rope(q[..., c.index_dim - c.rope_dim:], angles)), -1))
        q = ref.fp4_qdq(ref.hadamard(q))
        weights = bf(x.float() @ w["i_weights"].T) * c.index_dim ** -0.5 * c.index_heads ** -0.5
        logits = torch.relu(torch.einsum("bshd,bnd->bshn", q, keys))
        return torch.einsum("bshn,bsh->bsn", logits, weights)

for seed in range(6):
    config = ref.Config(dim=256, heads=16, q_lora=256, o_groups=2, o_lora=256, compress_ratio=4, index_topk=16)
    g = torch.Generator().manual_seed(seed)
    w = ref.random_weights(config, g)
    mats = {"wq_a","wq_b","wkv","wo_a","wo_b","c_wkv","c_wgate","i_wq","i_weights","i_wkv","i_wgate"}
    w = {k: (v.bfloat16().float() if k in mats else v) for k, v in w.items()}
    x = torch.randn(2, 200, 256, generator=g).bfloat16().float()
    a = ref.Attention(config, w, 2, 300); b = Rounded(config, w, 2, 300)
    oa = a.forward(x, 0); ob = b.forward(x, 0)
    err = float((oa - ob).norm() / oa.norm())
    ia, ib = a.last_indices[..., 128:], b.last_indices[..., 128:]
    agree = sum(len(set(r1.tolist()) & set(r2.tolist()) - {-1}) for r1, r2 in zip(ia.flatten(0,1), ib.flatten(0,1)))
    total = int((ia >= 0).sum())
    print(f"seed {seed}: output rel L2 {err:.3e}, selection agreement {agree}/{total} = {agree/total:.3f}")

worst = []
for seed in range(4):
    config = ref.Config(dim=256, heads=16, q_lora=256, o_groups=2, o_lora=256, compress_ratio=4, index_topk=16)
    g = torch.Generator().manual_seed(100 + seed)
    w = ref.random_weights(config, g)
    mats = {"wq_a","wq_b","wkv","wo_a","wo_b","c_wkv","c_wgate","i_wq","i_weights","i_wkv","i_wgate"}
    w = {k: (v.bfloat16().float() if k in mats else v) for k, v in w.items()}
    x = torch.randn(2, 160, 256, generator=g).bfloat16().float()
    a = ref.Attention(config, w, 2, 300); b = Rounded(config, w, 2, 300)
    a.forward(x[:, :130], 0); b.forward(x[:, :130], 0)
    errs = []
    for p in range(130, 160):
        oa = a.forward(x[:, p:p+1], p); ob = b.forward(x[:, p:p+1], p)
        errs.append(float((oa - ob).norm() / oa.norm()))
    worst.append(max(errs))
    print(f"decode seed {seed}: per-step rel L2 median {sorted(errs)[len(errs)//2]:.3e}, max {max(errs):.3e}")
