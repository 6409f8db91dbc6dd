#!/usr/bin/env python3
"""Two of FlashMLA's differences from sparse_attn_wg (issue 11;
docs/proposals/sparse-attn-flashmla-gap.md), derived from
kernels-dsl/sparse_attn_wg.mlir and timed by sparse_attn_wg_ab.py on the
prefill shapes, beside the operator and the built-in source compiled twice
as the control (fifty-first session, H100: neither is the gap):

* ``eager_rescale``: FlashMLA's softmax. The row maximum moves whenever a
  larger score comes (no headroom) and O and P0 are always rescaled: no
  tile.all_of votes and branches on the chain. Exact.
* ``no_rewrite``: ablation. The prologue's rewrite of the index row is
  dropped, so the raw indices are gathered: right only where every index
  is -1 or in [0, Nkv) of batch 0, as the prefill benchmark's are.

    PYTHONPATH=python python3 python/bench/probes/sparse_attn_wg_flashmla_variants.py

--write-only writes the two sources to a temporary folder, prints it and
times nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

SOURCE = os.path.join(here, "..", "..", "..", "kernels-dsl", "sparse_attn_wg.mlir")

HEADROOM = ("%max_headroom = arith.constant 8.0 : f32",
            "%max_headroom = arith.constant 0.0 : f32")
# (guard lines opening a conditional rescale, the indentation of its body)
GUARDS = [
    ('''        // (Only the warps one of whose rows' maximum moved.)
        %kept = tile.all_of %factor : !tile.frag<[64], f32> {
        ^bb0(%alpha: f32):
          %unit = arith.cmpf oeq, %alpha, %one : f32
          tile.yield %unit : i1
        }
        %moved = arith.xori %kept, %true : i1
        scf.if %moved {
''', "        "),
    ('''          %same = tile.all_of %factor : !tile.frag<[64], f32> {
          ^bb0(%rescale: f32):
            %unit = arith.cmpf oeq, %rescale, %one : f32
            tile.yield %unit : i1
          }
          %changed = arith.xori %same, %true : i1
          scf.if %changed {
''', "          "),
    ('''          scf.if %changed {
''', "          "),
]
REWRITE_START = "    tile.parallel (%j) in [topk_pad] {"
REWRITE_END = "    tile.copy %q[%token, %first_head, %c0] to %q_lo"


def replace_once(text, old, new):
    if text.count(old) != 1:
        sys.exit("sparse_attn_wg_flashmla_variants: the kernel changed; update the probe")
    return text.replace(old, new)


def unguard(text, guard, indent):
    """The block the guard opens, run unconditionally: the guard and its
    closing brace go, the body moves one level out."""
    start = text.index(guard)
    body_start = start + len(guard)
    close = "\n" + indent + "}\n"
    end = text.index(close, body_start)
    body = text[body_start:end + 1]
    body = "".join(line[2:] if line.startswith(indent + "  ") else line
                   for line in body.splitlines(keepends=True))
    return text[:start] + body + text[end + len(close):]


def eager_rescale(text):
    text = replace_once(text, *HEADROOM)
    for guard, indent in GUARDS:
        if guard not in text:
            sys.exit("sparse_attn_wg_flashmla_variants: the kernel changed; update the probe")
        text = unguard(text, guard, indent)
    return text


def no_rewrite(text):
    start, end = text.find(REWRITE_START), text.find(REWRITE_END)
    if start < 0 or end < start:
        sys.exit("sparse_attn_wg_flashmla_variants: the kernel changed; update the probe")
    return text[:start] + text[end:]


def main():
    text = open(SOURCE).read()
    directory = tempfile.mkdtemp(prefix="sparse_attn_wg_flashmla_")
    paths = {}
    for name, make in (("eager_rescale", eager_rescale), ("no_rewrite", no_rewrite)):
        paths[name] = os.path.join(directory, f"sparse_attn_wg_{name}.mlir")
        with open(paths[name], "w") as f:
            f.write(make(text))
    if "--write-only" in sys.argv:
        print(directory)
        return 0
    import sparse_attn_wg_ab
    sys.argv = [sys.argv[0], "--ablation", "--prefill", "-", paths["eager_rescale"],
                paths["no_rewrite"], "-", paths["eager_rescale"]]
    return sparse_attn_wg_ab.main()


if __name__ == "__main__":
    sys.exit(main())
