// Inputs of train_ops.mlir's -verify-diagnostics run (not a test by itself:
// lit.cfg.py excludes this file).

func.func @reduce_dims(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{dims must be sorted, unique and in [0, 3)}}
  %0 = xf.reduce_sum %x dims = [1, 0] : tensor<2x4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @reduce_result(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{result type 'tensor<4xf32>' should be 'tensor<8xf32>'}}
  %0 = xf.reduce_sum %x dims = [0, 1] : tensor<2x4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @embedding_grad(%dy: tensor<2x4x8xf32>, %ids: tensor<2x5xi32>) {
  // expected-error @+1 {{dy 'tensor<2x4x8xf32>' must have the shape of ids followed by hidden (8)}}
  %0 = xf.embedding_grad %dy, %ids : tensor<2x4x8xf32>, tensor<2x5xi32> -> tensor<16x8xf32>
  return
}

// -----

func.func @lr(%step: tensor<i32>) {
  // expected-error @+1 {{need 0 <= min_lr <= lr}}
  %lr = xf.lr_schedule %step lr = 1.000000e-05 min_lr = 1.000000e-03 warmup = 5 decay_steps = 50
  return
}

// -----

func.func @adamw(%p: tensor<8xf32>, %lr: tensor<f32>, %step: tensor<i32>) {
  // expected-error @+1 {{beta1 and beta2 must be in [0, 1)}}
  %p2, %m2, %v2 = xf.adamw %p, %p, %p, %p, %lr, %lr, %step beta1 = 1.000000e+00 beta2 = 9.990000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<8xf32>
  return
}

// -----

func.func @scale_window(%s: tensor<f32>, %g: tensor<i32>) {
  // expected-error @+1 {{window must be at least 1, got 0}}
  %s2, %g2 = xf.loss_scale_update %s, %g, %s window = 0 factor = 2.000000e+00 min_scale = 1.000000e+00
  return
}

// -----

func.func @ce_grad(%dl: tensor<f32>, %x: tensor<2x4x8xf32>, %ids: tensor<2x5xi32>) {
  // expected-error @+1 {{targets 'tensor<2x5xi32>' must have the shape of logits}}
  %0 = xf.cross_entropy_grad %dl, %x, %ids ignore_index = -1 : tensor<f32>, tensor<2x4x8xf32>, tensor<2x5xi32>
  return
}
