// RUN: not hisa-opt %s --tile-bind-params="params=hedas=32" 2>&1 | FileCheck %s --check-prefix=TYPO
// RUN: not hisa-opt %s --tile-bind-params="params=heads" 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not hisa-opt %s --tile-bind-params="params=heads=x" 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not hisa-opt %s --tile-bind-params="kernel=missing" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not hisa-opt %s --tile-bind-params="params=heads=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// TYPO: error: parameter 'hedas' is not declared by any bound kernel
// MALFORMED: error: malformed parameter binding '{{.*}}': expected name=integer
// MISSING: error: no tile.kernel named @missing
// ZERO: error: 'tile.kernel' op cannot bind parameters: dimension 'heads' is not a positive size with heads = 0

tile.kernel @k(%w: !tile.global<[?, heads], f32>) params {heads = 64} {
  %n = tile.dim %w, 0 : !tile.global<[?, heads], f32>
  tile.launch (%bx) in (%n) threads 32 {
  }
}
