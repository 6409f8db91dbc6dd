#!/usr/bin/env python3
"""What HISA stage 2's time is made of: the built-in block_sparse_topk_tokens
against copies of its source with one part of the logits loop removed, in
one process (stage2_source_ab.py's inputs and table; the variants' logits
differ, so their rows say MISMATCH, which is expected).

* ``no_gathers``: the key tile is loaded once before a plain loop and
  reused by every iteration (no key gathers at all; gemm and epilogue as
  built).
* ``no_epilogue``: the warp-specialized loop with its gathers and gemm, the
  epilogue reduced to a row max of the scores.
* ``no_selection``: the warp-specialized loop as built, then nothing (no
  histogram, radix select or output): the selection's share.
* ``no_gemm_no_selection``: that, with the gemm replaced by clearing the
  scores: LLVM folds the epilogue on zeros away, so this is the gathers,
  the stage hand-over and the keys' stores alone (all-equal keys would send
  a selection down its ties path, so there is none).

    PYTHONPATH=python python3 python/bench/probes/stage2_ablations.py [--sizes=32768,131072]

Measured on the H200 (docs/performance.md, sixteenth session, 64-row
tiles then), at 32768: no_gathers 0.904x, no_epilogue 0.939x, no_selection
0.831x, no_gemm_no_selection 0.579x of the built-in; again on the
operator's 128-row tiles in the forty-eighth section.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
source = os.path.join(here, "..", "..", "..", "kernels-dsl", "block_sparse_topk_tokens.mlir")

COPIES = """      tile.copy %k[%row0, %c0] to %k_tile
          : !tile.global<[?, dim], f8E4M3FN> to !tile.shared<[kt, dim], f8E4M3FN>
      tile.copy %k_scale[%row0] to %scale_tile
          : !tile.global<[?], f32> to !tile.shared<[kt], f32>
"""
LOOP = "    tile.pipelined %t = %c0 to %num_tiles step %c1 num_stages = 2 {"
SELECTION = "    tile.fill %hist, %zero : !tile.shared<[4, 256], i32>, i32"


def variants(text):
    if COPIES not in text or LOOP not in text or SELECTION not in text:
        sys.exit("stage2_ablations: the kernel's loop changed; update the probe")
    no_gathers = text.replace(COPIES, "").replace(
        LOOP,
        COPIES.replace("%row0", "%c0").replace("      ", "    ")
        + "    scf.for %t = %c0 to %num_tiles step %c1 {")
    begin = text.index("      scf.if %plain_scales {")
    end = text.index("      %slot0 = arith.muli %t, %kt : index")
    no_epilogue = (text[:begin]
                   + "      tile.reduce max %scores to %row_logits dim = 1\n"
                   + "          : !tile.frag<[kt, heads], f32> to !tile.frag<[kt], f32>\n"
                   + text[end:]).replace("num_stages = 2 {", "num_stages = 2 warp_specialized {")
    warp_specialized = text.replace("num_stages = 2 {", "num_stages = 2 warp_specialized {")
    gemm_begin = warp_specialized.index("      tile.gemm %k_tile, %q_tile, %scores")
    gemm_end = warp_specialized.index("-> !tile.frag<[kt, heads], f32>\n", gemm_begin)
    no_gemm = (warp_specialized[:gemm_begin]
               + "      tile.clear %scores : !tile.frag<[kt, heads], f32>\n"
               + warp_specialized[gemm_end + len("-> !tile.frag<[kt, heads], f32>\n"):])
    # The selection starts where the histograms are cleared, after the loop
    # (the first [4, 32] parallel is the prologue's block sort).
    select_begin = warp_specialized.index(SELECTION)
    no_selection = warp_specialized[:select_begin] + "  }\n}\n"
    select_begin = no_gemm.index(SELECTION)
    no_gemm_no_selection = no_gemm[:select_begin] + "  }\n}\n"
    texts = {"built_in_ws": warp_specialized, "no_gathers": no_gathers, "no_epilogue": no_epilogue,
             "no_selection": no_selection, "no_gemm_no_selection": no_gemm_no_selection}
    # Each text is the kernel it times (warp-specialized where it has the
    # loop): the file's variant rules, which would apply the same
    # replacement again or miss the loop they replace, go.
    return {name: re.sub(r"^// hisa-variant [^\n]*\n", "", text, flags=re.M)
            for name, text in texts.items()}


def main():
    with open(source) as f:
        text = f.read()
    directory = tempfile.mkdtemp(prefix="stage2_ablations_")
    files = []
    for name, variant in variants(text).items():
        path = os.path.join(directory, name + ".mlir")
        with open(path, "w") as f:
            f.write(variant)
        # The operator's specialization at the benchmark shape (128-row tiles).
        files.append(path + ":min_blocks=3,kt=128")
    extra = [a for a in sys.argv[1:] if a.startswith("--")]
    return subprocess.call([sys.executable, os.path.join(here, "stage2_source_ab.py"), *files, *extra])


if __name__ == "__main__":
    sys.exit(main())
