// RUN: hisa-opt %s --tile-bind-params -verify-diagnostics

// Binding before inlining would leave the call's types (now numbers) apart
// from the function's (parameter names): refused with the fix.
func.func private @clear(%t: !tile.shared<[n], i32>) {
  %z = arith.constant 0 : i32
  tile.fill %t, %z : !tile.shared<[n], i32>, i32
  return
}

tile.kernel @caller(%out: !tile.global<[1], i32>) params {n = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %t = tile.alloc : !tile.shared<[n], i32>
    // expected-error @+1 {{calls a device function that is not inlined yet; run tile-inline-functions before tile-bind-params}}
    func.call @clear(%t) : (!tile.shared<[n], i32>) -> ()
  }
}
