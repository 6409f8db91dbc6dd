"""One launch of block_sparse_topk_tokens at M = N = n (for ncu)."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch
import hisa
from hisa import ops
from bench_indexer import inputs, KB, BLOCK_TOPK, TOPK_TOKENS

n = int(sys.argv[1]) if len(sys.argv) > 1 else 32768
q, k, k_scale, weights, ks, ke = inputs(n)
bk, bs = hisa.fp8_block_mean_pooling(k, k_scale, KB)
blocks = ops._pool_topk_blocks(q, bk, bs, weights, ks, ke, BLOCK_TOPK, KB)
torch.cuda.synchronize()
ops._block_sparse_topk_tokens(q, k, k_scale, blocks, KB, weights, ks, ke, TOPK_TOKENS)
torch.cuda.synchronize()
print("done")
