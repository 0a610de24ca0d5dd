// The backward and optimizer ops round-trip (custom and generic form) and
// their verifiers reject what a pass or a user can get wrong.
// RUN: shardc-opt %s | FileCheck %s
// RUN: shardc-opt %s -mlir-print-op-generic | shardc-opt | FileCheck %s
// RUN: shardc-opt %S/train_ops_invalid.mlir -split-input-file -verify-diagnostics

// CHECK-LABEL: func.func @grads(
func.func @grads(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>, %g: tensor<8xf32>,
                 %ids: tensor<2x4xi32>, %q: tensor<2x4x4x2xf32>, %kv: tensor<2x4x2x2xf32>,
                 %dl: tensor<f32>, %w: tensor<16x8xf32>, %m: tensor<2x4xf32>) {
  // CHECK: xf.fill 1.000000e+00 : tensor<f32>
  %0 = xf.fill 1.000000e+00 : tensor<f32>
  // CHECK: xf.scale %{{.*}} factor = 2.500000e-01 : tensor<2x4x8xf32>
  %1 = xf.scale %dy factor = 2.500000e-01 : tensor<2x4x8xf32>
  // CHECK: xf.reduce_sum %{{.*}} dims = [0, 1] : tensor<2x4x8xf32> -> tensor<8xf32>
  %2 = xf.reduce_sum %dy dims = [0, 1] : tensor<2x4x8xf32> -> tensor<8xf32>
  // CHECK: xf.gelu_grad %{{.*}}, %{{.*}} : tensor<2x4x8xf32>
  %3 = xf.gelu_grad %dy, %x : tensor<2x4x8xf32>
  // CHECK: xf.swiglu_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8xf32>
  %4:2 = xf.swiglu_grad %dy, %x, %x : tensor<2x4x8xf32>
  // CHECK: xf.softmax_grad
  %5 = xf.softmax_grad %dy, %x : tensor<2x4x8xf32>
  // CHECK: xf.layernorm_grad %{{.*}}, %{{.*}}, %{{.*}} epsilon = 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>
  %6:3 = xf.layernorm_grad %dy, %x, %g epsilon = 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>
  // CHECK: xf.rmsnorm_grad
  %7:2 = xf.rmsnorm_grad %dy, %x, %g epsilon = 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>
  // CHECK: xf.attention_grad %{{.*}} causal scale = 5.000000e-01 : tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>
  %8:3 = xf.attention_grad %q, %q, %kv, %kv, %q causal scale = 5.000000e-01 : tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>
  // CHECK: xf.rope %{{.*}} theta = 1.000000e+04 inverse : tensor<2x4x4x2xf32>
  %9 = xf.rope %q theta = 1.000000e+04 inverse : tensor<2x4x4x2xf32>
  // CHECK: xf.embedding_grad %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<16x8xf32>
  %10 = xf.embedding_grad %dy, %ids : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<16x8xf32>
  // CHECK: xf.linear_cross_entropy_grad %{{.*}} mask %{{.*}} vocab_major ignore_index = -100
  %11:2 = xf.linear_cross_entropy_grad %dl, %x, %w, %ids mask %m vocab_major ignore_index = -100 : tensor<f32>, tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4xi32>, tensor<2x4xf32>
  // CHECK: xf.cross_entropy_grad %{{.*}} ignore_index = -1 : tensor<f32>, tensor<2x4x8xf32>, tensor<2x4xi32>
  %12 = xf.cross_entropy_grad %dl, %x, %ids ignore_index = -1 : tensor<f32>, tensor<2x4x8xf32>, tensor<2x4xi32>
  return
}

// CHECK-LABEL: func.func @optimizer(
func.func @optimizer(%p: tensor<8xf32>, %gr: tensor<8xf32>, %step: tensor<i32>, %s: tensor<f32>) {
  // CHECK: xf.sum_squares %{{.*}} : tensor<8xf32>
  %0 = xf.sum_squares %gr : tensor<8xf32>
  // CHECK: xf.clip_grad_norm %{{.*}} loss_scale %{{.*}} max_norm = 1.000000e+00
  %norm, %gs, %inf = xf.clip_grad_norm %0 loss_scale %s max_norm = 1.000000e+00
  // CHECK: xf.lr_schedule %{{.*}} lr = 1.000000e-03 min_lr = 1.000000e-05 warmup = 5 decay_steps = 50
  %lr = xf.lr_schedule %step lr = 1.000000e-03 min_lr = 1.000000e-05 warmup = 5 decay_steps = 50
  // CHECK: xf.adamw {{.*}} skip %{{.*}} beta1
  %p2, %m2, %v2 = xf.adamw %p, %gr, %gr, %gr, %lr, %gs, %step skip %inf beta1 = 9.000000e-01 beta2 = 9.990000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<8xf32>
  // CHECK: xf.count_step %{{.*}} skip
  %next = xf.count_step %step skip %inf
  // CHECK: xf.loss_scale_update {{.*}} window = 2000
  %s2, %g2 = xf.loss_scale_update %s, %step, %inf window = 2000 factor = 2.000000e+00 min_scale = 1.000000e+00
  return
}
