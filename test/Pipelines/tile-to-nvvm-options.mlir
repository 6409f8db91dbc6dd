// One spelling of target features everywhere (the JIT's sm_90a,-tma):
// `features=-tma` keeps staged copies on cp.async; unknown features and
// malformed chips are refused, never ignored.
// RUN: hisa-opt %s --tile-to-nvvm | FileCheck %s --check-prefix=TMA
// RUN: hisa-opt %s --tile-to-nvvm="features=+tma" | FileCheck %s --check-prefix=TMA
// RUN: hisa-opt %s --tile-to-nvvm="features=-tma" | FileCheck %s --check-prefix=NO-TMA
// RUN: hisa-opt %s --tile-to-nvvm="chip=sm_90a features=+tma,-tma" | FileCheck %s --check-prefix=NO-TMA
// RUN: not hisa-opt %s --tile-to-nvvm="features=-wgmma" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not hisa-opt %s --tile-to-nvvm="features=+ptx80" 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: not hisa-opt %s --tile-to-nvvm="chip=gfx90a" 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not hisa-opt %s --tile-to-nvvm="tma=false" 2>&1 | FileCheck %s --check-prefix=OLD
// The JIT's spelling in chip= works too; the lowering gets the bare chip.
// RUN: hisa-opt %s --tile-to-nvvm="chip=sm_90a,-tma" | FileCheck %s --check-prefix=NO-TMA
// RUN: hisa-opt %s --tile-to-nvvm="chip=sm_90a,-tma" | hisa-translate --gpu-to-ptx | FileCheck %s --check-prefix=PTX-NO-TMA
// Chips the lowering cannot target are refused before LLVM would abort.
// RUN: not hisa-opt %s --tile-to-nvvm="chip=sm_120a" 2>&1 | FileCheck %s --check-prefix=SM120
// RUN: not hisa-opt %s --tile-to-nvvm="chip=sm_70" 2>&1 | FileCheck %s --check-prefix=SM70
// RUN: not hisa-opt %s --tile-to-nvvm="chip=sm_80a" 2>&1 | FileCheck %s --check-prefix=SM80A
// Numbers inside the range that are no chip (LLVM aborted in instruction
// selection on sm_85, exited on sm_88); the known chips lower.
// RUN: not hisa-opt %s --tile-to-nvvm="chip=sm_85" 2>&1 | FileCheck %s --check-prefix=SM85
// RUN: not hisa-opt %s --tile-to-nvvm="chip=sm_88" 2>&1 | FileCheck %s --check-prefix=SM88
// RUN: not hisa-opt %s --tile-to-nvvm="chip=sm_090" 2>&1 | FileCheck %s --check-prefix=SM090
// RUN: hisa-opt %s --tile-to-nvvm="chip=sm_80" | hisa-translate --gpu-to-ptx | FileCheck %s --check-prefix=PTX80
// RUN: hisa-opt %s --tile-to-nvvm="chip=sm_89" | hisa-translate --gpu-to-ptx | FileCheck %s --check-prefix=PTX89
// RUN: not hisa-opt %s --tile-to-nvvm="opt-level=-1" 2>&1 | FileCheck %s --check-prefix=LEVEL
// RUN: not hisa-opt %s --tile-to-nvvm="opt-level=99" 2>&1 | FileCheck %s --check-prefix=LEVEL99
// convert-tile-to-gpu's options travel through the pipeline (the JIT keeps
// the defaults: contraction on, a budget of 65536).
// RUN: hisa-opt %s --tile-to-nvvm | FileCheck %s --check-prefix=CONTRACT
// RUN: hisa-opt %s --tile-to-nvvm="fp-contract=false" | FileCheck %s --check-prefix=EXACT
// RUN: not hisa-opt %s --tile-to-nvvm="max-unrolled-ops=10" 2>&1 | FileCheck %s --check-prefix=BUDGET

// TMA: nvvm.cp.async.bulk.tensor.shared.cluster.global
// NO-TMA-NOT: cp.async.bulk.tensor
// NO-TMA: nvvm.cp.async.shared.global
// UNKNOWN: tile-to-nvvm: unknown feature '-wgmma' (known: +tma, -tma, +narrow-indices, -narrow-indices, +elide-sync, -elide-sync)
// PTX: tile-to-nvvm: unknown feature '+ptx80' (known: +tma, -tma, +narrow-indices, -narrow-indices, +elide-sync, -elide-sync)
// CHIP: tile-to-nvvm: invalid target 'gfx90a' (expected a chip such as sm_90a, optionally with features: sm_90a,-tma)
// OLD: no such option tma
// PTX-NO-TMA: .target sm_90a
// PTX-NO-TMA: cp.async.cg.shared.global
// SM120: tile-to-nvvm: unsupported target 'sm_120a' (hisa compiles for sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a: the lowering emits PTX ISA 8.0 and cp.async)
// SM70: tile-to-nvvm: unsupported target 'sm_70'
// SM80A: tile-to-nvvm: unsupported target 'sm_80a'
// SM85: tile-to-nvvm: unsupported target 'sm_85'
// SM88: tile-to-nvvm: unsupported target 'sm_88'
// SM090: tile-to-nvvm: unsupported target 'sm_090'
// PTX80: .target sm_80
// PTX89: .target sm_89
// LEVEL: tile-to-nvvm: opt-level must be 0 to 3, got -1
// LEVEL99: tile-to-nvvm: opt-level must be 0 to 3, got 99
// CONTRACT: llvm.fadd {{.*}}fastmathFlags = #llvm.fastmath<contract>
// EXACT-LABEL: llvm.func @stream
// EXACT-NOT: contract
// BUDGET: error: 'tile.launch' op would unroll to about {{[0-9]+}} operations per thread; the budget is 10
tile.kernel @stream(%x: !tile.global<[?, 64], f32>, %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %tile = tile.alloc : !tile.shared<[64, 64], f32>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    tile.clear %acc : !tile.frag<[64, 64], f32>
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 {
      %row = arith.muli %t, %c4 : index
      tile.copy %x[%row, %c0] to %tile : !tile.global<[?, 64], f32> to !tile.shared<[64, 64], f32>
      tile.parallel (%i, %j) in [64, 64] {
        %v = tile.load %tile[%i, %j] : !tile.shared<[64, 64], f32>
        %a = tile.load %acc[%i, %j] : !tile.frag<[64, 64], f32>
        %s = arith.addf %a, %v : f32
        tile.store %s, %acc[%i, %j] : !tile.frag<[64, 64], f32>
      }
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}

// +narrow-indices bounds the run-time sizes and narrows the index
// arithmetic that uses them (the kernels then refuse sizes from 2^31 on at
// launch; bound-dims.mlir checks the rewrite); off by default.
// RUN: hisa-opt %s --tile-to-nvvm="features=+narrow-indices" --mlir-print-ir-after=tile-bound-dims,tile-narrow-index-arithmetic 2>&1 >/dev/null | FileCheck %s --check-prefix=NARROW
// RUN: hisa-opt %s --tile-to-nvvm="chip=sm_90a,+narrow-indices" --mlir-print-ir-after=tile-bound-dims,tile-narrow-index-arithmetic 2>&1 >/dev/null | FileCheck %s --check-prefix=NARROW
// RUN: hisa-opt %s --tile-to-nvvm --mlir-print-ir-after=tile-bound-dims 2>&1 >/dev/null | FileCheck %s --check-prefix=NO-NARROW --allow-empty
// NARROW: IR Dump After TileBoundDims
// NARROW: IR Dump After TileNarrowIndexArithmetic
// NO-NARROW-NOT: TileBoundDims
