#!/usr/bin/env python3
"""Stage 2 (block_sparse_topk_tokens) with the selection's first histogram
(the top 8 bits of every key) counted in the logits loop, where each key is
made, instead of in a pass over the 8192 keys after it: the built-in
source rewritten (the key tile's rows 16w..16w+15 belong to warp w, so each
warp counts into its own histogram, as the pass did), A/B against the
built-in kernel with stage2_source_ab.py (selections must be equal), plain
and warp-specialized.

    PYTHONPATH=python python3 python/bench/probes/stage2_fused_histogram.py [--sizes=32768,131072]
"""

import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, here)

from hisa import jit  # noqa: E402

KEY_STORE = """        tile.store %key, %keys[%slot] : !tile.shared<[topk*kb], i32>
      }
    }
"""
KEY_STORE_COUNTED = """        tile.store %key, %keys[%slot] : !tile.shared<[topk*kb], i32>
        %counted = arith.cmpi ne, %key, %zero : i32
        scf.if %counted {
          %c24_k = arith.constant 24 : i32
          %c16_k = arith.constant 16 : index
          %c4_k = arith.constant 4 : index
          %digit_k = arith.shrui %key, %c24_k : i32
          %bin_k = arith.index_cast %digit_k : i32 to index
          %row_block = arith.divui %i, %c16_k : index
          %warp_k = arith.remui %row_block, %c4_k : index
          %old_k = tile.atomic add %one, %hist[%warp_k, %bin_k] : !tile.shared<[4, 256], i32>
        }
      }
    }
"""
FIRST_PASS_START = "    tile.parallel (%warp, %lane) in [4, 32] {\n      %warp_first = arith.muli %warp, %c32 : index\n      %t = arith.addi %warp_first, %lane : index\n      scf.for %c = %t to %length step %c128 {\n        %key = tile.load %keys[%c] : !tile.shared<[topk*kb], i32>\n        %selectable"


def fused_source(warp_specialized):
    source = jit.builtin_kernel_source("block_sparse_topk_tokens")
    if source.count(KEY_STORE) != 1 or source.count(FIRST_PASS_START) != 1:
        raise SystemExit("stage2_fused_histogram: the built-in source changed; update the probe")
    source = source.replace(KEY_STORE, KEY_STORE_COUNTED)
    # Drop the first counting pass (the tile.parallel that starts there).
    start = source.index(FIRST_PASS_START)
    end = source.index("\n    }\n", source.index("\n      }\n", start)) + len("\n    }\n")
    source = source[:start] + source[end:]
    if warp_specialized:
        at = source.index("tile.pipelined")
        source = source[:at] + source[at:].replace(
            "step %c1 num_stages = 2 {", "step %c1 num_stages = 2 warp_specialized {", 1)
    return source


def main():
    import stage2_source_ab

    sizes = [a for a in sys.argv[1:] if a.startswith("--sizes=")]
    directory = tempfile.mkdtemp(prefix="stage2_hist_")
    paths = []
    for ws in (False, True):
        path = os.path.join(directory, "fused_ws.mlir" if ws else "fused.mlir")
        with open(path, "w") as f:
            f.write(fused_source(ws))
        paths.append(path)
    sys.argv = [sys.argv[0]] + paths + sizes
    stage2_source_ab.main()


if __name__ == "__main__":
    main()
