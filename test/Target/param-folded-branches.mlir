// RUN: hisa-opt %s --tile-to-nvvm="params=exchange=0" | hisa-translate --gpu-to-ptx | FileCheck %s --check-prefix=OFF
// RUN: hisa-opt %s --tile-to-nvvm="params=exchange=1" | hisa-translate --gpu-to-ptx | FileCheck %s --check-prefix=ON

// A branch that a bound parameter decides is folded before the lowering
// (tile-to-nvvm canonicalizes after tile-bind-params). The lowering tracks
// the shared writes since the last barrier; a branch between two ops hides
// that the first one's barrier already covers the second, so without the
// fold each specialization here had one barrier more than it needs (in
// topk_f32's single-block plan, two adjacent barriers): 4 and 5 instead of
// 3 and 4 (one after the writes, one before the scan's reads, the scan's
// own two, and with the exchange one after it).
// OFF-LABEL: .entry param_folded_branch(
// OFF-COUNT-3: bar.sync
// OFF-NOT: bar.sync
// OFF: ret;
// ON-LABEL: .entry param_folded_branch(
// ON-COUNT-4: bar.sync
// ON-NOT: bar.sync
// ON: ret;
tile.kernel @param_folded_branch(%out: !tile.global<[256], i32>)
    params {exchange = 0} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %t = tile.alloc : !tile.shared<[256], i32>
    %u = tile.alloc : !tile.shared<[256], i32>
    tile.parallel (%i) in [256] {
      %v = arith.index_cast %i : index to i32
      tile.store %v, %t[%i] : !tile.shared<[256], i32>
    }
    %exchange = tile.param "exchange" : index
    %c0 = arith.constant 0 : index
    %on = arith.cmpi ne, %exchange, %c0 : index
    scf.if %on {
      tile.parallel (%i) in [256] {
        %c1_i = arith.constant 1 : index
        %j = arith.xori %i, %c1_i : index
        %v = tile.load %t[%j] : !tile.shared<[256], i32>
        tile.store %v, %u[%i] : !tile.shared<[256], i32>
      }
    }
    %total = tile.scan sum %t to %u reverse
        : !tile.shared<[256], i32> to !tile.shared<[256], i32>
    tile.copy %u to %out[%c0] : !tile.shared<[256], i32> to !tile.global<[256], i32>
  }
}
