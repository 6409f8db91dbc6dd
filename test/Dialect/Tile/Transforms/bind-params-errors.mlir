// RUN: not hisa-opt %s --tile-bind-params="params=hedas=32" 2>&1 | FileCheck %s --check-prefix=TYPO
// RUN: not hisa-opt %s --tile-bind-params="params=heads" 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not hisa-opt %s --tile-bind-params="params=heads=x" 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not hisa-opt %s --tile-bind-params="kernel=missing" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not hisa-opt %s --tile-bind-params="params=heads=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not hisa-opt %s --tile-bind-params="params=heads=4,heads=8" 2>&1 | FileCheck %s --check-prefix=TWICE

// Errors in the binding point at the kernel it binds (never at 0:0).
// TYPO: bind-params-errors.mlir:[[@LINE+6]]:1: error: parameter 'hedas' in 'params=hedas=32' is not declared by any bound kernel (parameters: heads)
// MALFORMED: error: malformed parameter binding '{{.*}}': expected name=integer
// MISSING: error: no tile.kernel named @missing
// TWICE: bind-params-errors.mlir:[[@LINE+3]]:1: error: parameter 'heads' is bound twice in 'params=heads=4,heads=8'
// ZERO: error: 'tile.kernel' op cannot bind parameters: dimension 'heads' is not a positive size with heads = 0

tile.kernel @k(%w: !tile.global<[?, heads], f32>) params {heads = 64} {
  %n = tile.dim %w, 0 : !tile.global<[?, heads], f32>
  tile.launch (%bx) in (%n) threads 32 {
  }
}
