// -xf-autodiff: the gradient function of a small model that exercises
// gradient accumulation (the embedding table is read by the lookup and the
// tied head; the embedding output feeds the matmul and the residual; the
// bias is read by bias_add and layernorm), dropout and an unused parameter.
// RUN: shardc-opt %S/../Inputs/train_small.mlir -xf-autodiff | FileCheck %s
// RUN: shardc-opt %S/../Inputs/train_small.mlir -xf-autodiff="micro-batches=2 output=grads" | FileCheck %s --check-prefix=MB
// RUN: shardc-opt %S/../Inputs/train_small.mlir -xf-autodiff="loss-scale=true" | FileCheck %s --check-prefix=SCALE

// The forward stays.
// CHECK-LABEL: func.func @forward(
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<2x4xi32> {xf.input = "tokens", xf.micro_batch = 0 : i64}
// CHECK-SAME: %[[WTE:[^:]*]]: tensor<16x8xf32> {xf.param = {{.*}}, xf.state = "param:wte"}
// CHECK-SAME: %[[W:[^:]*]]: tensor<8x8xf32> {xf.param = {{.*}}, xf.state = "param:w"}
// CHECK-SAME: -> (tensor<f32> {xf.report = "loss"}, tensor<16x8xf32> {xf.grad = "wte"}, tensor<8x8xf32> {xf.grad = "w"}, tensor<8xf32> {xf.grad = "b"}, tensor<8xf32> {xf.grad = "g"}, tensor<8xf32> {xf.grad = "unused"})
// CHECK: %[[E:.*]] = xf.embedding %[[WTE]], %[[TOK]]
// CHECK: %[[LOSS:.*]] = xf.linear_cross_entropy
// CHECK: %[[SEED:.*]] = xf.fill 1.000000e+00 : tensor<f32>
// CHECK: %[[DX:.*]], %[[DWHEAD:.*]] = xf.linear_cross_entropy_grad %[[SEED]]
// CHECK: %[[DN:.*]], %[[DG:.*]], %[[DBETA:.*]] = xf.layernorm_grad %[[DX]]
// The dropout backward is the same mask (same key) applied to the gradient.
// CHECK: %[[DD:.*]] = xf.dropout %[[DN]] rate = 1.000000e-01 key = 7
// CHECK: %[[DBIAS:.*]] = xf.reduce_sum %[[DD]] dims = [0, 1] : tensor<2x4x8xf32> -> tensor<8xf32>
// CHECK: %[[DB:.*]] = xf.add %[[DBETA]], %[[DBIAS]]
// CHECK: %[[DE1:.*]] = xf.matmul "bsk,hk->bsh" %[[DD]], %[[W]]
// CHECK: %[[DW:.*]] = xf.matmul "bsh,bsk->hk" %[[E]], %[[DD]]
// CHECK: %[[DE:.*]] = xf.add %[[DX]], %[[DE1]]
// CHECK: %[[DLOOKUP:.*]] = xf.embedding_grad %[[DE]], %[[TOK]] : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<16x8xf32>
// CHECK: %[[DWTE:.*]] = xf.add %[[DWHEAD]], %[[DLOOKUP]]
// CHECK: %[[ZERO:.*]] = xf.fill 0.000000e+00 : tensor<8xf32>
// CHECK: return %[[LOSS]], %[[DWTE]], %[[DW]], %[[DB]], %[[DG]], %[[ZERO]]

// Two micro-batches: two sets of inputs, the second forward's dropout gets its
// own key, seeds of 1/2, gradients summed across micro-batches, mean loss.
// MB-LABEL: func.func @grads(
// MB-SAME: {xf.input = "tokens", xf.micro_batch = 0 : i64}
// MB-SAME: {xf.input = "targets", xf.micro_batch = 0 : i64}
// MB-SAME: {xf.input = "tokens", xf.micro_batch = 1 : i64}
// MB-SAME: {xf.input = "targets", xf.micro_batch = 1 : i64}
// MB: %[[L0:.*]] = xf.linear_cross_entropy
// MB: xf.fill 5.000000e-01 : tensor<f32>
// MB: xf.dropout {{.*}} key = 7 :
// MB: xf.dropout {{.*}} key = 4294967303 :
// MB: %[[L1:.*]] = xf.linear_cross_entropy
// MB: xf.fill 5.000000e-01 : tensor<f32>
// MB: %[[SUM:.*]] = xf.add %[[L0]], %[[L1]] : tensor<f32>
// MB: %[[MEAN:.*]] = xf.scale %[[SUM]] factor = 5.000000e-01
// MB: return %[[MEAN]],

// Loss scaling: an f32 scalar argument seeds the backward.
// SCALE-LABEL: func.func @train_step(
// SCALE-SAME: %[[S:[^:]*]]: tensor<f32> {xf.state = "loss_scale"})
// SCALE: xf.linear_cross_entropy_grad %[[S]],
