#!/usr/bin/env python3
"""Stage 2 (block_sparse_topk_tokens_ws) with the weighted head sum on the
tensor cores: ReLU(scores) rounded to bf16 (one F2FP.RELU per two values)
as the register A operand of a [kt, heads] x [heads, 8] bf16 wgmma whose B
holds the query's head weights (column 0: bf16(w), column 1: the rest
w - bf16(w), so the weights keep ~16 bits), instead of 32 FMNMX + 32 FFMA
per thread and tile. The logits change by the bf16 rounding of the ReLU
values (relative 2^-9 per term), so selections near the threshold may
differ from the built-in's: the table reports how many slots they share.

Variants (all warp-specialized, as the operator runs):
  tc      the tensor-core head sum
  tc_i32  and the window test on 32-bit positions (the built-in compares
          64-bit indices: two ISETP per comparison)
  i32     the built-in with the 32-bit window test only (exact)
  stages3, stages4, tc_i32_stages3: three or four key-tile stages
  tc_i32_kt128, tc_i32_stages3_kt128: key tiles of 128 rows
  claim, tc_i32_claim: output slots claimed once per warp and step

    PYTHONPATH=python python3 python/bench/probes/stage2_tensor_core_head_sum.py [--sizes=32768,131072]
    ... --loads-only: only the loop's key gathers and the selection
"""

import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, here)

from hisa import jit  # noqa: E402

# (The kernel keeps its name: stage2_source_ab asks for block_sparse_topk_tokens.)
WARP_SPECIALIZED = [
    ("step %c1 num_stages = 2 {", "step %c1 num_stages = 2 warp_specialized {"),
]

TENSOR_CORE_SUM = [
    ("""    %weight_frag = tile.alloc : !tile.frag<[kt, heads], f32>
""", """    %weight_frag = tile.alloc : !tile.frag<[kt, heads], f32>
    %weight_b = tile.alloc : !tile.shared<[8, heads], bf16>
    %relu_a = tile.alloc : !tile.frag<[kt, heads], bf16>
    %head_sums = tile.alloc : !tile.frag<[kt, 8], f32>
"""),
    ("""    tile.pipelined %t = %c0""", """    tile.parallel (%c, %h) in [8, heads] {
      %w = tile.load %weight_tile[%h] : !tile.shared<[heads], f32>
      %w_hi = arith.truncf %w : f32 to bf16
      %w_back = arith.extf %w_hi : bf16 to f32
      %w_rest = arith.subf %w, %w_back : f32
      %w_lo = arith.truncf %w_rest : f32 to bf16
      %c0_w = arith.constant 0 : index
      %c1_w = arith.constant 1 : index
      %zero_b = arith.constant 0.0 : bf16
      %is_hi = arith.cmpi eq, %c, %c0_w : index
      %is_lo = arith.cmpi eq, %c, %c1_w : index
      %lo_or_zero = arith.select %is_lo, %w_lo, %zero_b : bf16
      %wb = arith.select %is_hi, %w_hi, %lo_or_zero : bf16
      tile.store %wb, %weight_b[%c, %h] : !tile.shared<[8, heads], bf16>
    }
    tile.pipelined %t = %c0"""),
    ("""        tile.parallel (%i, %h) in [kt, heads] {
          %x = tile.load %scores[%i, %h] : !tile.frag<[kt, heads], f32>
          %wt = tile.load %weight_frag[%i, %h] : !tile.frag<[kt, heads], f32>
          %relu = arith.maximumf %x, %zero_f : f32
          %weighted = arith.mulf %relu, %wt : f32
          tile.store %weighted, %scores[%i, %h] : !tile.frag<[kt, heads], f32>
        }
        tile.reduce sum %scores to %row_logits dim = 1
            : !tile.frag<[kt, heads], f32> to !tile.frag<[kt], f32>
""", """        tile.parallel (%i, %h) in [kt, heads] {
          %x = tile.load %scores[%i, %h] : !tile.frag<[kt, heads], f32>
          %relu = arith.maximumf %x, %zero_f : f32
          %rb = arith.truncf %relu : f32 to bf16
          tile.store %rb, %relu_a[%i, %h] : !tile.frag<[kt, heads], bf16>
        }
        tile.gemm %relu_a, %weight_b, %head_sums transpose_b clear_accum
            : !tile.frag<[kt, heads], bf16>, !tile.shared<[8, heads], bf16>
              -> !tile.frag<[kt, 8], f32>
        tile.reduce sum %head_sums to %row_logits dim = 1
            : !tile.frag<[kt, 8], f32> to !tile.frag<[kt], f32>
"""),
]

WINDOW_I32 = [
    ("""      %slot0 = arith.muli %t, %kt : index
      tile.parallel (%i) in [kt] {
        %j = arith.addi %row0, %i : index
        %valid_block = arith.cmpi sge, %block_i32, %zero : i32
        %after_start = arith.cmpi sge, %j, %start : index
        %before_end = arith.cmpi slt, %j, %end : index""",
     """      %slot0 = arith.muli %t, %kt : index
      %row0_i32 = arith.index_cast %row0 : index to i32
      %start_w = arith.index_cast %start : index to i32
      %end_w = arith.index_cast %end : index to i32
      tile.parallel (%i) in [kt] {
        %i_i32 = arith.index_cast %i : index to i32
        %j = arith.addi %row0_i32, %i_i32 : i32
        %valid_block = arith.cmpi sge, %block_i32, %zero : i32
        %after_start = arith.cmpi sge, %j, %start_w : i32
        %before_end = arith.cmpi slt, %j, %end_w : i32"""),
]

# The keys above the threshold claim their output slots with one shared
# atomic per warp and step (ballot, rank by popcount below the lane, the
# first lane claims the warp's count), as topk_f32.mlir does, instead of one
# atomic on the same counter per key (2048 per query).
WARP_CLAIM = [
    ("""        scf.if %take {
          %c3 = arith.constant 3 : index
          %slot_i32 = tile.atomic add %one, %state[%c0, %c3] : !tile.shared<[2, 4], i32>
          %slot = arith.index_cast %slot_i32 : i32 to index""",
     """        %takers = tile.vote ballot %take : i32
        %lane_w = arith.index_cast %lane : index to i32
        %lane_bit_w = arith.shli %one, %lane_w : i32
        %below_w = arith.subi %lane_bit_w, %one : i32
        %takers_below = arith.andi %takers, %below_w : i32
        %rank_w = math.ctpop %takers_below : i32
        %count_w = math.ctpop %takers : i32
        %first_w = arith.cmpi eq, %lane, %c0 : index
        %some_w = arith.cmpi ne, %count_w, %zero : i32
        %claim_w = arith.andi %first_w, %some_w : i1
        %claimed_w = scf.if %claim_w -> (i32) {
          %c3 = arith.constant 3 : index
          %old_w = tile.atomic add %count_w, %state[%c0, %c3] : !tile.shared<[2, 4], i32>
          scf.yield %old_w : i32
        } else {
          scf.yield %zero : i32
        }
        %base_w = tile.warp_broadcast %claimed_w, %zero : i32
        scf.if %take {
          %slot_i32 = arith.addi %base_w, %rank_w : i32
          %slot = arith.index_cast %slot_i32 : i32 to index"""),
]

# The loop without its gemm and epilogue: each key tile's rows only
# touched (row i's first byte times its scale becomes its logit), so the
# time is the key gathers (L2 -> shared memory) plus the selection. The
# selections differ from the built-in's (the logits do).
LOADS_ONLY_FROM = "      tile.gemm %k_tile, %q_tile, %scores transpose_b clear_accum"
LOADS_ONLY_TO = "      %slot0 = arith.muli %t, %kt : index"
LOADS_ONLY_BODY = """      tile.parallel (%i) in [kt] {
        %first_byte = tile.load %k_tile[%i, %c0] : !tile.shared<[kt, dim], f8E4M3FN>
        %x = arith.extf %first_byte : f8E4M3FN to f32
        %s = tile.load %scale_tile[%i] : !tile.shared<[kt], f32>
        %v = arith.mulf %x, %s : f32
        tile.store %v, %row_logits[%i] : !tile.frag<[kt], f32>
      }
"""

THREE_STAGES = [
    ("step %c1 num_stages = 2 {", "step %c1 num_stages = 3 warp_specialized {"),
]
FOUR_STAGES = [
    ("step %c1 num_stages = 2 {", "step %c1 num_stages = 4 warp_specialized {"),
]

VARIANTS = {
    "tc": WARP_SPECIALIZED + TENSOR_CORE_SUM,
    "tc_i32": WARP_SPECIALIZED + TENSOR_CORE_SUM + WINDOW_I32,
    "i32": WARP_SPECIALIZED + WINDOW_I32,
    "stages3": THREE_STAGES,
    "stages4": FOUR_STAGES,
    "tc_i32_stages3": THREE_STAGES + TENSOR_CORE_SUM + WINDOW_I32,
    "claim": WARP_SPECIALIZED + WARP_CLAIM,
    "tc_i32_claim": WARP_SPECIALIZED + TENSOR_CORE_SUM + WINDOW_I32 + WARP_CLAIM,
}
# Also with key tiles of 128 rows (two m64 wgmma per warpgroup and tile).
PARAMS = {"tc_i32_kt128": ("tc_i32", "kt=128,min_blocks=2"),
          "tc_i32_stages3_kt128": ("tc_i32_stages3", "kt=128,min_blocks=2")}


def loads_only_source():
    source = variant_source(WARP_SPECIALIZED)
    first = source.index(LOADS_ONLY_FROM)
    last = source.index(LOADS_ONLY_TO)
    return source[:first] + LOADS_ONLY_BODY + source[last:]


def variant_source(replacements):
    source = jit.builtin_kernel_source("block_sparse_topk_tokens")
    for old, new in replacements:
        if old not in source:
            raise SystemExit(f"stage2_tensor_core_head_sum: the built-in source no longer has {old!r}")
        # The first occurrence: the kernel, not the hisa-variant comments.
        at = source.index("tile.kernel")
        source = source[:at] + source[at:].replace(old, new, 1)
    return source


def main():
    import stage2_source_ab

    sizes = [a for a in sys.argv[1:] if a.startswith("--sizes=")]
    directory = tempfile.mkdtemp(prefix="stage2_tc_")
    paths = []
    for name, replacements in VARIANTS.items():
        path = os.path.join(directory, f"{name}.mlir")
        with open(path, "w") as f:
            f.write(variant_source(replacements))
        paths.append(path)
    if "--loads-only" in sys.argv:
        path = os.path.join(directory, "loads_only.mlir")
        with open(path, "w") as f:
            f.write(loads_only_source())
        sys.argv = [sys.argv[0], path] + sizes
        stage2_source_ab.main()
        return
    for base, overrides in PARAMS.values():
        paths.append(os.path.join(directory, f"{base}.mlir:{overrides}"))
    sys.argv = [sys.argv[0]] + paths + sizes
    stage2_source_ab.main()


if __name__ == "__main__":
    main()
