#!/usr/bin/env python3
"""Stage 2's selection on eight warps (issue 10): the built-in
block_sparse_topk_tokens with everything after its logits loop in a
tile.rejoin, so that the warp-specialized kernel's producer warpgroup,
idle once the key tiles are issued, walks the keys too (the selection is
15-17% of stage 2 and its walks are latency-bound per warp:
docs/performance.md, forty-eighth section). The selection's parallels go
from [4, 32] to [8, 32] and its strides from 128 to 256 slots; the window
start and the number of blocks, which the consumers loaded before the
loop, are loaded again inside (the producer never had them). A/B against
the operator with stage2_source_ab.py (selections compared as sets per
row):

    PYTHONPATH=python python3 python/bench/probes/stage2_rejoin.py [--sizes=32768,131072]
"""

from __future__ import annotations

import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

SOURCE = os.path.join(here, "..", "..", "..", "kernels-dsl", "block_sparse_topk_tokens.mlir")
SELECTION = "    // (Cleared only now:"
END = "  }\n}\n"
# What the selection reads that the consumers loaded before the loop.
RELOADS = """      %c0_r = arith.constant 0 : index
      %c256 = arith.constant 256 : index
      %valid_blocks_r_i32 = tile.load %block_count[%c0_r] : !tile.shared<[1], i32>
      %valid_blocks_r = arith.index_cast %valid_blocks_r_i32 : i32 to index
      %length_r = arith.muli %valid_blocks_r, %kb : index
      %start_r_i32 = tile.load %ks[%bx] : !tile.global<[?], i32>
      %start_r = arith.index_cast %start_r_i32 : i32 to index
"""


def rejoined(text, warps=8):
    """The kernel with its selection in a tile.rejoin, written for `warps`
    warps (4: the built-in selection unchanged, on half the threads)."""
    if text.count(SELECTION) != 1 or not text.endswith(END):
        sys.exit("stage2_rejoin: the kernel changed; update the probe")
    at = text.index(SELECTION)
    head, select = text[:at], text[at:-len(END)]
    edits = [("%length", "%length_r"), ("%start", "%start_r")]
    if warps == 8:
        edits += [("[4, 32]", "[8, 32]"), ("step %c128", "step %c256"),
                  ("%chunk, %c128", "%chunk, %c256"),
                  ("%c4_w = arith.constant 4", "%c4_w = arith.constant 8"),
                  ("%c4_z = arith.constant 4", "%c4_z = arith.constant 8"),
                  ("[4, 256]", "[8, 256]"), ("[4], i32>", "[8], i32>")]
    for old, new in edits:
        if old not in select:
            sys.exit(f"stage2_rejoin: the selection no longer has {old!r}")
        select = select.replace(old, new)
    if warps != 8:
        return (head + "    tile.rejoin {\n" + RELOADS
                + "".join("  " + line if line.strip() else line
                          for line in select.splitlines(True)) + "    }\n" + END)
    # The allocations of the per-warp histograms and tie counts.
    for old, new in (("tile.alloc : !tile.shared<[4, 256], i32>",
                      "tile.alloc : !tile.shared<[8, 256], i32>"),
                     ("%warp_ties = tile.alloc : !tile.shared<[4], i32>",
                      "%warp_ties = tile.alloc : !tile.shared<[8], i32>"),
                     ("%warp_offsets = tile.alloc : !tile.shared<[4], i32>",
                      "%warp_offsets = tile.alloc : !tile.shared<[8], i32>")):
        if head.count(old) != 1:
            sys.exit(f"stage2_rejoin: the kernel no longer has {old!r}")
        head = head.replace(old, new)
    body = "".join("  " + line if line.strip() else line for line in select.splitlines(True))
    return head + "    tile.rejoin {\n" + RELOADS + body + "    }\n" + END


def main():
    """--kernel NAME (default the warp-specialized one) and --warps 4 pass
    through; the rest are stage2_source_ab.py's sizes."""
    args = sys.argv[1:]
    kernel, warps = "block_sparse_topk_tokens_ws", 8
    if "--kernel" in args:
        at = args.index("--kernel")
        kernel = args[at + 1]
        del args[at:at + 2]
    if "--warps" in args:
        at = args.index("--warps")
        warps = int(args[at + 1])
        del args[at:at + 2]
    text = open(SOURCE).read()
    path = os.path.join(tempfile.mkdtemp(prefix="stage2_rejoin_"), f"stage2_rejoin_{warps}.mlir")
    with open(path, "w") as f:
        f.write(rejoined(text, warps))
    import stage2_source_ab
    sys.argv = [sys.argv[0], "--kernel", kernel,
                path + ":kt=128,min_blocks=3", "-:kt=128,min_blocks=3"] + args
    return stage2_source_ab.main()


if __name__ == "__main__":
    sys.exit(main())
