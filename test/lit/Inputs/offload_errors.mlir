// The verifiers of xf.offload / xf.reload (test/lit/tools/offload.test runs
// this with -verify-diagnostics; it is not a test of its own).
func.func @reader(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{an offloaded value is read only by xf.reload, not by 'xf.gelu'}}
  %h = xf.offload %x : tensor<4xf32>
  %y = xf.gelu %h : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @orphan(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reloads a value that no xf.offload produced}}
  %y = xf.reload %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
