tile.kernel @gemm_panels() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
  }
}
