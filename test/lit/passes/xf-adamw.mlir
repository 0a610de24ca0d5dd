// -xf-adamw after -xf-autodiff: the complete training step.
// RUN: shardc-opt %S/../Inputs/train_small.mlir -xf-autodiff -xf-adamw="lr=1.0e-03 min-lr=1.0e-04 warmup=10 decay-steps=100 clip-grad=5.0e-01" | FileCheck %s
// RUN: shardc-opt %S/../Inputs/train_small.mlir -xf-autodiff="loss-scale=true" -xf-adamw="loss-scale-window=3" | FileCheck %s --check-prefix=FP16

// State arguments: moments per parameter, the update counter.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<8x8xf32> {xf.param = {{.*}}, xf.state = "param:w"}
// CHECK-SAME: {xf.state = "adam_m:wte"}
// CHECK-SAME: %[[MW:[^:]*]]: tensor<8x8xf32> {xf.state = "adam_m:w"}
// CHECK-SAME: {xf.state = "adam_v:wte"}
// CHECK-SAME: %[[VW:[^:]*]]: tensor<8x8xf32> {xf.state = "adam_v:w"}
// CHECK-SAME: %[[STEP:[^:]*]]: tensor<i32> {xf.state = "step"})
// CHECK-SAME: -> (tensor<f32> {xf.report = "loss"}, tensor<f32> {xf.report = "grad_norm"}, tensor<f32> {xf.report = "lr"}, tensor<16x8xf32> {xf.state = "param:wte"}, tensor<8x8xf32> {xf.state = "param:w"}
// CHECK-SAME: tensor<8x8xf32> {xf.state = "adam_m:w"}
// CHECK-SAME: tensor<i32> {xf.state = "step"})
// Global norm over every gradient, then clipping.
// CHECK-COUNT-5: xf.sum_squares
// CHECK: %[[NORM:.*]], %[[GSCALE:.*]], %{{.*}} = xf.clip_grad_norm %{{.*}} max_norm = 5.000000e-01
// CHECK: %[[LR:.*]] = xf.lr_schedule %[[STEP]] lr = 1.000000e-03 min_lr = 1.000000e-04 warmup = 10 decay_steps = 100
// Weight decay on matrices and embeddings, not on biases and norm scales.
// CHECK: xf.adamw {{.*}} weight_decay = 1.000000e-02 : tensor<16x8xf32>
// CHECK: xf.adamw {{.*}}, %[[MW]], %[[VW]], %[[LR]], %[[GSCALE]], %[[STEP]] beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<8x8xf32>
// CHECK: xf.adamw {{.*}} weight_decay = 0.000000e+00 : tensor<8xf32>
// CHECK: xf.adamw {{.*}} weight_decay = 0.000000e+00 : tensor<8xf32>
// CHECK: %[[NEXT:.*]] = xf.count_step %[[STEP]]
// CHECK-NOT: skip
// CHECK: return {{.*}}, %[[NEXT]] :

// fp16: overflow skips the update and the counter; the scale is state.
// FP16-LABEL: func.func @train_step(
// FP16-SAME: %[[S:[^:]*]]: tensor<f32> {xf.state = "loss_scale"}
// FP16-SAME: %[[GOOD:[^:]*]]: tensor<i32> {xf.state = "good_steps"})
// FP16-SAME: tensor<f32> {xf.report = "loss_scale"}, tensor<f32> {xf.report = "skipped"}
// FP16-SAME: tensor<f32> {xf.state = "loss_scale"}, tensor<i32> {xf.state = "good_steps"})
// FP16: %{{.*}}, %{{.*}}, %[[INF:.*]] = xf.clip_grad_norm %{{.*}} loss_scale %[[S]] max_norm = 1.000000e+00
// FP16: xf.adamw {{.*}} skip %[[INF]]
// FP16: xf.count_step %{{.*}} skip %[[INF]]
// FP16: xf.loss_scale_update %[[S]], %[[GOOD]], %[[INF]] window = 3 factor = 2.000000e+00 min_scale = 1.000000e+00
