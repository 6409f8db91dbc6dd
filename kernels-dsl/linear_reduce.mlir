// The second step of a split-k linear (kernels-dsl/linear.mlir, variant
// linear_partial): y [m, cols] bf16 = the sum over s of partial [splits, m,
// cols] f32, added in split order (deterministic). One block per row and
// 1024 columns.

tile.kernel @linear_reduce(%partial: !tile.global<[?, ?, ?], f32>,
                           %y: !tile.global<[?, ?], bf16>) {
  %rows = tile.dim %y, 0 : !tile.global<[?, ?], bf16>
  %cols = tile.dim %y, 1 : !tile.global<[?, ?], bf16>
  %c1024 = arith.constant 1024 : index
  %chunks = arith.ceildivui %cols, %c1024 : index
  tile.launch (%chunk, %row) in (%chunks, %rows) threads 256 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %splits = tile.dim %partial, 0 : !tile.global<[?, ?, ?], f32>
    %first = arith.muli %chunk, %c1024 : index
    tile.parallel (%l) in [1024] {
      %col = arith.addi %first, %l : index
      %inside = arith.cmpi ult, %col, %cols : index
      scf.if %inside {
        %sum = scf.for %s = %c0 to %splits step %c1 iter_args(%acc = %zero) -> (f32) {
          %v = tile.load %partial[%s, %row, %col] : !tile.global<[?, ?, ?], f32>
          %next = arith.addf %acc, %v : f32
          scf.yield %next : f32
        }
        %rounded = arith.truncf %sum : f32 to bf16
        tile.store %rounded, %y[%row, %col] : !tile.global<[?, ?], bf16>
      }
    }
  }
}
