// RUN: shardc-opt %s -split-input-file -xf-fuse-optimizer | FileCheck %s
// RUN: shardc-opt %s -split-input-file -xf-fuse-optimizer -xf-fuse-optimizer | FileCheck %s --check-prefix=TWICE

// The partitioned norm of a dp=2 x tp=2 step: sums of squares reduced over
// [dp, tp] or [dp], chained with the partitioner's rescaling of a reduced
// value (scale 0.5, then reduced over dp again: coefficient 1). The leaves
// regroup into one sum per set of axes, each reduced once. The updates
// become one call that also writes the bf16 copy; the ZeRO gather of a new
// weight between two updates moves after it.
shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
// CHECK-LABEL: func.func @train_step
// CHECK-DAG: %[[S01:.*]] = xf.multi_sum_squares %arg0, %arg2 : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-DAG: %[[S0:.*]] = xf.multi_sum_squares %arg1, %arg3 : tensor<8xf32>, tensor<2x8xf32>
// CHECK-DAG: %[[R01:.*]] = shard.all_reduce %[[S01]] on @mesh grid_axes = [0, 1]
// CHECK-DAG: %[[R0:.*]] = shard.all_reduce %[[S0]] on @mesh grid_axes = [0]
// CHECK: %[[T:.*]] = xf.add
// CHECK-NOT: xf.scale
// CHECK: xf.clip_grad_norm %[[T]]
// CHECK-NOT: xf.adamw
// CHECK: %[[NEW:.*]]:4, %{{.*}}:4, %{{.*}}:4, %[[COPY:.*]] = xf.multi_adamw params(%arg4, %arg5, %arg6, %arg7) grads(%arg0, %arg1, %arg2, %arg3) m(%arg8, %arg9, %arg10, %arg11) v(%arg12, %arg13, %arg14, %arg15) lr %arg16 grad_scale %{{.*}} step %arg17 beta1 = 9.000000e-01 beta2 = {{.*}} epsilon = 1.000000e-08 weight_decay = 1.000000e-01 decay = [1, 0, 1, 0] copies = [2] : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: shard.all_gather %[[NEW]]#0
// CHECK-NOT: xf.cast
// CHECK: return %{{.*}}, %{{.*}}, %[[COPY]] :
// TWICE-LABEL: func.func @train_step
// TWICE: xf.multi_sum_squares %arg0, %arg2
// TWICE: xf.multi_adamw
// TWICE-NOT: xf.multi_adamw
// TWICE-NOT: xf.adamw
// TWICE: {{-----}}
func.func @train_step(%g0: tensor<4x8xf32>, %g1: tensor<8xf32>, %g2: tensor<4x8xf32>, %g3: tensor<2x8xf32>,
                      %p0: tensor<4x8xf32>, %p1: tensor<8xf32>, %p2: tensor<4x8xf32>, %p3: tensor<2x8xf32>,
                      %m0: tensor<4x8xf32>, %m1: tensor<8xf32>, %m2: tensor<4x8xf32>, %m3: tensor<2x8xf32>,
                      %v0: tensor<4x8xf32>, %v1: tensor<8xf32>, %v2: tensor<4x8xf32>, %v3: tensor<2x8xf32>,
                      %lr: tensor<f32>, %step: tensor<i32>)
    -> (tensor<8x8xf32>, tensor<f32>, tensor<4x8xbf16>) attributes {xf.grid = @mesh} {
  %s0 = xf.sum_squares %g0 : tensor<4x8xf32>
  %s1 = xf.sum_squares %g1 : tensor<8xf32>
  %r0 = shard.all_reduce %s0 on @mesh grid_axes = [0, 1] : tensor<f32> -> tensor<f32>
  %r1 = shard.all_reduce %s1 on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
  %a0 = xf.add %r0, %r1 : tensor<f32>
  %h = xf.scale %a0 factor = 5.000000e-01 : tensor<f32>
  %s3 = xf.sum_squares %g3 : tensor<2x8xf32>
  %a1 = xf.add %h, %s3 : tensor<f32>
  %r2 = shard.all_reduce %a1 on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
  %s2 = xf.sum_squares %g2 : tensor<4x8xf32>
  %r3 = shard.all_reduce %s2 on @mesh grid_axes = [0, 1] : tensor<f32> -> tensor<f32>
  %total = xf.add %r2, %r3 : tensor<f32>
  %norm, %gs, %inf = xf.clip_grad_norm %total max_norm = 1.000000e+00
  %np0, %nm0, %nv0 = xf.adamw %p0, %g0, %m0, %v0, %lr, %gs, %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 1.000000e-01 : tensor<4x8xf32>
  %full = shard.all_gather %np0 on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %np1, %nm1, %nv1 = xf.adamw %p1, %g1, %m1, %v1, %lr, %gs, %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<8xf32>
  %np2, %nm2, %nv2 = xf.adamw %p2, %g2, %m2, %v2, %lr, %gs, %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 1.000000e-01 : tensor<4x8xf32>
  %np3, %nm3, %nv3 = xf.adamw %p3, %g3, %m3, %v3, %lr, %gs, %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<2x8xf32>
  %c2 = xf.cast %np2 : tensor<4x8xf32> -> tensor<4x8xbf16>
  return %full, %norm, %c2 : tensor<8x8xf32>, tensor<f32>, tensor<4x8xbf16>
}

// -----

// A pipelined norm: stage 1's partial sums cross to stage 0 once, then one
// reduction over dp for both stages' sums; each stage's updates are one call.
shard.grid @mesh(shape = 2x2) {xf.axis_names = ["pp", "dp"]}
// CHECK-LABEL: func.func @train_step
// CHECK-DAG: %[[A:.*]] = xf.multi_sum_squares %arg0, %arg1 {xf.stage = 0 : i64}
// CHECK-DAG: %[[B:.*]] = xf.multi_sum_squares %arg2, %arg3 {xf.stage = 1 : i64}
// CHECK-DAG: %[[T:.*]] = xf.transfer %[[B]] from 1 to 0 grid_axes = [0] {xf.stage = 1 : i64}
// CHECK-DAG: %[[S:.*]] = xf.add %[[A]], %[[T]] {xf.stage = 0 : i64}
// CHECK-DAG: %[[R:.*]] = shard.all_reduce %[[S]] on @mesh grid_axes = [1] {xf.stage = 0 : i64}
// CHECK: xf.clip_grad_norm %[[R]]
// CHECK: xf.multi_adamw params(%arg4, %arg5) {{.*}}xf.stage = 0
// CHECK: xf.multi_adamw params(%arg6, %arg7) {{.*}}xf.stage = 1
func.func @train_step(%g0: tensor<8xf32>, %g1: tensor<8xf32>, %g2: tensor<8xf32>, %g3: tensor<8xf32>,
                      %p0: tensor<8xf32>, %p1: tensor<8xf32>, %p2: tensor<8xf32>, %p3: tensor<8xf32>,
                      %lr: tensor<f32>, %step: tensor<i32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) attributes {xf.grid = @mesh} {
  %s0 = xf.sum_squares %g0 {xf.stage = 0 : i64} : tensor<8xf32>
  %s1 = xf.sum_squares %g1 {xf.stage = 0 : i64} : tensor<8xf32>
  %a0 = xf.add %s0, %s1 {xf.stage = 0 : i64} : tensor<f32>
  %s2 = xf.sum_squares %g2 {xf.stage = 1 : i64} : tensor<8xf32>
  %s3 = xf.sum_squares %g3 {xf.stage = 1 : i64} : tensor<8xf32>
  %a1 = xf.add %s2, %s3 {xf.stage = 1 : i64} : tensor<f32>
  %t = xf.transfer %a1 from 1 to 0 grid_axes = [0] {xf.stage = 1 : i64} : tensor<f32>
  %a = xf.add %a0, %t {xf.stage = 0 : i64} : tensor<f32>
  %r = shard.all_reduce %a on @mesh grid_axes = [1] {xf.stage = 0 : i64} : tensor<f32> -> tensor<f32>
  %norm, %gs, %inf = xf.clip_grad_norm %r max_norm = 1.000000e+00 {xf.stage = 0 : i64}
  %gs1 = xf.transfer %gs from 0 to 1 grid_axes = [0] {xf.stage = 0 : i64} : tensor<f32>
  %lr1 = xf.transfer %lr from 0 to 1 grid_axes = [0] {xf.stage = 0 : i64} : tensor<f32>
  %np0, %nm0, %nv0 = xf.adamw %p0, %g0, %p0, %p0, %lr, %gs, %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.stage = 0 : i64} : tensor<8xf32>
  %np1, %nm1, %nv1 = xf.adamw %p1, %g1, %p1, %p1, %lr, %gs, %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.stage = 0 : i64} : tensor<8xf32>
  %np2, %nm2, %nv2 = xf.adamw %p2, %g2, %p2, %p2, %lr1, %gs1, %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.stage = 1 : i64} : tensor<8xf32>
  %np3, %nm3, %nv3 = xf.adamw %p3, %g3, %p3, %p3, %lr1, %gs1, %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.stage = 1 : i64} : tensor<8xf32>
  return %np0, %np1, %np2, %np3 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// One rank, no mesh: the chained adds of the sums become one op.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[S:.*]] = xf.multi_sum_squares %arg0, %arg1, %arg2 : tensor<8xf32>, tensor<4xf32>, tensor<2x2xf32>
// CHECK-NEXT: xf.clip_grad_norm %[[S]]
func.func @train_step(%g0: tensor<8xf32>, %g1: tensor<4xf32>, %g2: tensor<2x2xf32>) -> tensor<f32> {
  %s0 = xf.sum_squares %g0 : tensor<8xf32>
  %s1 = xf.sum_squares %g1 : tensor<4xf32>
  %a = xf.add %s0, %s1 : tensor<f32>
  %s2 = xf.sum_squares %g2 : tensor<2x2xf32>
  %b = xf.add %a, %s2 : tensor<f32>
  %norm, %gs, %inf = xf.clip_grad_norm %b max_norm = 1.000000e+00
  return %norm : tensor<f32>
}

// -----

// Gradients reduced in bf16 (--low-precision-reductions) reach the optimizer
// through widening casts. The fused calls read the bf16 gradients directly
// (the kernels widen as they load: the same values, no f32 copy) where the
// optimizer is the casts' only reader; %w1 is also returned, so it stays.
shard.grid @mesh(shape = 2) {xf.axis_names = ["dp"]}
// CHECK-LABEL: func.func @train_step(%arg0: tensor<4x8xbf16>
// CHECK: %[[W1:.*]] = xf.cast %arg1 : tensor<8xbf16> -> tensor<8xf32>
// CHECK: xf.multi_sum_squares %arg0, %[[W1]] : tensor<4x8xbf16>, tensor<8xf32>
// CHECK: xf.multi_adamw params(%arg2, %arg3) grads(%arg0, %[[W1]]) {{.*}} : tensor<4x8xf32>, tensor<8xf32> grads tensor<4x8xbf16>, tensor<8xf32> -> tensor<4x8xbf16>
// CHECK-NOT: xf.cast %arg0
func.func @train_step(%b0: tensor<4x8xbf16>, %b1: tensor<8xbf16>,
                        %p0: tensor<4x8xf32>, %p1: tensor<8xf32>,
                        %m0: tensor<4x8xf32>, %m1: tensor<8xf32>,
                        %v0: tensor<4x8xf32>, %v1: tensor<8xf32>,
                        %lr: tensor<f32>, %step: tensor<i32>)
    -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xbf16>, tensor<8xf32>) attributes {xf.grid = @mesh} {
  %w0 = xf.cast %b0 : tensor<4x8xbf16> -> tensor<4x8xf32>
  %w1 = xf.cast %b1 : tensor<8xbf16> -> tensor<8xf32>
  %s0 = xf.sum_squares %w0 : tensor<4x8xf32>
  %s1 = xf.sum_squares %w1 : tensor<8xf32>
  %a = xf.add %s0, %s1 : tensor<f32>
  %r = shard.all_reduce %a on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
  %norm, %gs, %inf = xf.clip_grad_norm %r max_norm = 1.000000e+00
  %np0, %nm0, %nv0 = xf.adamw %p0, %w0, %m0, %v0, %lr, %gs, %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 1.000000e-01 : tensor<4x8xf32>
  %np1, %nm1, %nv1 = xf.adamw %p1, %w1, %m1, %v1, %lr, %gs, %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<8xf32>
  %c0 = xf.cast %np0 : tensor<4x8xf32> -> tensor<4x8xbf16>
  return %np0, %np1, %c0, %w1 : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xbf16>, tensor<8xf32>
}
