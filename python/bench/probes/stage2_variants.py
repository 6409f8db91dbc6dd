"""Stage-2 specializations side by side (kt, min_blocks) at M = N = n."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch
import hisa
from hisa import ops
from bench_mqa import bench
from bench_indexer import inputs, KB, BLOCK_TOPK, TOPK_TOKENS

for n in (32768, 131072):
    q, k, k_scale, weights, ks, ke = inputs(n)
    bk, bs = hisa.fp8_block_mean_pooling(k, k_scale, KB)
    blocks = ops._pool_topk_blocks(q, bk, bs, weights, ks, ke, BLOCK_TOPK, KB)
    out = torch.empty(n, TOPK_TOKENS, dtype=torch.int32, device="cuda")
    t_bs = bench(lambda: hisa.block_sparse_mqa_logits(q, k, k_scale, blocks, KB, weights, ks, ke), reps=3, batch=3)
    print(f"n={n} block_sparse_mqa_logits alone {t_bs*1e3:.2f} ms", flush=True)
    for kt, mb in ((64, 3), (64, 2), (128, 2), (64, 1)):
        params = {"heads": 64, "dim": 128, "kb": KB, "kt": kt, "topk": BLOCK_TOPK, "min_blocks": mb}
        fn = lambda: ops._launch("block_sparse_topk_tokens", params, q.device, q, k, k_scale, blocks, weights, ks, ke, out)
        t = bench(fn, reps=3, batch=3)
        print(f"n={n} kt={kt} min_blocks={mb}: {t*1e3:.2f} ms", flush=True)
