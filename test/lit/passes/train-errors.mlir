// Bad input to the training passes: a diagnostic at the offending op.
// RUN: shardc-opt %s -split-input-file -verify-diagnostics -xf-autodiff

func.func @forward(%x: tensor<4x8xf32> {xf.param = #xf.param<name = "x", role = weight, init = normal, std = 2.000000e-02>}) -> tensor<4x8xf32> {
  %y = xf.gelu %x : tensor<4x8xf32>
  // expected-error @+1 {{@forward must return exactly one scalar loss (tensor<f32> or tensor<f64>) to be differentiated; it returns (tensor<4x8xf32>)}}
  return %y : tensor<4x8xf32>
}

// -----

func.func @forward(%x: tensor<4x8xf32> {xf.param = #xf.param<name = "x", role = weight, init = normal, std = 2.000000e-02>}) -> tensor<f32> {
  %y = xf.gelu %x : tensor<4x8xf32>
  // expected-error @+1 {{'xf.sum_squares' is not differentiable (it has no VJP rule), but the loss depends on its result}}
  %l = xf.sum_squares %y : tensor<4x8xf32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{-xf-autodiff: no function @forward with a body}}
module {
  func.func @model(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}
