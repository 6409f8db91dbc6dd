#!/usr/bin/env python3
"""What prefill attention's fixed time per block is made of (issue 11:
sparse_attn_wg spends ~8 us per block outside its key loop, 31% of the time
at K = 640; docs/proposals/sparse-attn-persistent.md): the operator's
kernel against copies of kernels-dsl/sparse_attn_wg.mlir with one piece of
a block's start or end removed, in one process (sparse_attn_wg_ab.py
--ablation: the variants' outputs are wrong on purpose and timed anyway).

* ``no_store``: the output's copy from the staging tiles to global memory.
* ``no_queries``: the queries' copies (the gemms read whatever shared
  memory holds).
* ``no_index_row``: the index row's copy (the rewrite turns whatever
  shared memory holds into rows or -1; rows stay inside kv).
* ``no_start``: both copies.

The time each saves at K = 640 (5 iterations) against K = 1152 and 2048
(9, 16) says whether it is a fixed cost of the block or of each iteration.

    PYTHONPATH=python python3 python/bench/probes/sparse_attn_wg_fixed_cost.py
"""

from __future__ import annotations

import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

SOURCE = os.path.join(here, "..", "..", "..", "kernels-dsl", "sparse_attn_wg.mlir")

STORE = """      tile.copy %staging to %o[%token, %first_head, %column]
          : !tile.shared<[64, 256], bf16> to !tile.global<[?, ?, 512], bf16>
"""
QUERIES = """    tile.copy %q[%token, %first_head, %c0] to %q_lo
        : !tile.global<[?, ?, 512], bf16> to !tile.shared<[64, 256], bf16>
    tile.copy %q[%token, %first_head, %c256] to %q_hi
        : !tile.global<[?, ?, 512], bf16> to !tile.shared<[64, 256], bf16>
"""
INDEX_ROW = """    tile.copy %topk_idxs[%token, %c0] to %rows
        : !tile.global<[?, ?], i32> to !tile.shared<[topk_pad], i32>
"""


def variants(text):
    for piece in (STORE, QUERIES, INDEX_ROW):
        if text.count(piece) != 1:
            sys.exit("sparse_attn_wg_fixed_cost: the kernel changed; update the probe")
    return {
        "no_store": text.replace(STORE, ""),
        "no_queries": text.replace(QUERIES, ""),
        "no_index_row": text.replace(INDEX_ROW, ""),
        "no_start": text.replace(QUERIES, "").replace(INDEX_ROW, ""),
    }


def main():
    text = open(SOURCE).read()
    directory = tempfile.mkdtemp(prefix="sparse_attn_wg_fixed_")
    paths = []
    for name, source in variants(text).items():
        path = os.path.join(directory, name + ".mlir")
        with open(path, "w") as f:
            f.write(source)
        paths.append(path)
    import sparse_attn_wg_ab
    sys.argv = [sys.argv[0], "--ablation", "-"] + paths
    return sparse_attn_wg_ab.main()


if __name__ == "__main__":
    sys.exit(main())
