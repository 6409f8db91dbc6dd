#!/usr/bin/env python3
"""Stage 2 (block_sparse_topk_tokens) with two consumer warpgroups per
query: the built-in source rewritten for a 256-thread block (8 warps in
the selection's per-warp histograms, ballots and strides), A/B against the
built-in kernel with stage2_source_ab.py (selections must be equal):

- kt = 128, 2 blocks per SM: each warpgroup's wgmma takes 64 of the 128
  key rows of a tile (4 consumer warpgroups per SM instead of 3);
- kt = 64, 3 blocks per SM: the [64 keys, 64 heads] gemm split by heads
  (m64n32 per warpgroup; the head sum crosses warpgroups);
- both again warp-specialized (kt = 64 needs 2 blocks per SM there).

    PYTHONPATH=python python3 python/bench/probes/stage2_two_warpgroups.py [--sizes=32768,131072]
"""

import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, here)

from hisa import jit  # noqa: E402
import stage2_source_ab  # noqa: E402

REPLACEMENTS = [
    ("threads 128", "threads 256"),
    ("[4, 32]", "[8, 32]"),
    ("[4, 256]", "[8, 256]"),
    ("[4], i32", "[8], i32"),
    ("%c128 = arith.constant 128 : index", "%c128 = arith.constant 256 : index"),
    ("%c4_w = arith.constant 4 : index", "%c4_w = arith.constant 8 : index"),
    ("%c4_z = arith.constant 4 : index", "%c4_z = arith.constant 8 : index"),
]


def two_warpgroup_source(warp_specialized):
    source = jit.builtin_kernel_source("block_sparse_topk_tokens")
    for old, new in REPLACEMENTS:
        if old not in source:
            raise SystemExit(f"stage2_two_warpgroups: the built-in source no longer has {old!r}")
        source = source.replace(old, new)
    if warp_specialized:
        # The loop itself, not the hisa-variant comment lines.
        loop = "step %c1 num_stages = 2 {"
        at = source.index("tile.pipelined")
        source = source[:at] + source[at:].replace(loop, "step %c1 num_stages = 2 warp_specialized {", 1)
    return source


def main():
    sizes = [a for a in sys.argv[1:] if a.startswith("--sizes=")]
    directory = tempfile.mkdtemp(prefix="stage2_2wg_")
    plain = os.path.join(directory, "two_wg.mlir")
    ws = os.path.join(directory, "two_wg_ws.mlir")
    with open(plain, "w") as f:
        f.write(two_warpgroup_source(False))
    with open(ws, "w") as f:
        f.write(two_warpgroup_source(True))
    sys.argv = [sys.argv[0], f"{plain}:kt=128,min_blocks=2", f"{plain}:kt=64,min_blocks=3",
                f"{ws}:kt=128,min_blocks=2", f"{ws}:kt=64,min_blocks=2"] + sizes
    stage2_source_ab.main()


if __name__ == "__main__":
    main()
