// RUN: shardc-opt %s -split-input-file -xf-bucket-reduce-scatters | FileCheck %s
// RUN: shardc-opt %s -split-input-file -xf-bucket-reduce-scatters=bucket-bytes=150 | FileCheck %s --check-prefix=SMALL
// RUN: shardc-opt %s -split-input-file -xf-bucket-reduce-scatters=bucket-bytes=0 | FileCheck %s --check-prefix=OFF

// ZeRO's gradient reduce-scatters over dp (2 ranks), read only by the
// gradient norm (through a widening cast for the bf16 one): the f32 ones
// become one reduce-scatter of the gradients side by side, each viewed as
// [2, size / 2]; the bf16 one (another element type) and the one scattered
// on dim 1 of a [4, 8] (blocks not contiguous) and the one over tp (other
// axes) are left alone, and so is a reduce-scatter an activation reads.
shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
// CHECK-LABEL: func.func @train_step
// CHECK-DAG: shard.reduce_scatter %arg3 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8xbf16> -> tensor<4xbf16>
// CHECK-DAG: shard.reduce_scatter %arg4 on @mesh grid_axes = [0] scatter_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK-DAG: shard.reduce_scatter %arg5 on @mesh grid_axes = [1] scatter_axis = 0 : tensor<8xf32> -> tensor<4xf32>
// CHECK-DAG: shard.reduce_scatter %arg6 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8xf32> -> tensor<4xf32>
// CHECK-DAG: %[[A:.*]] = xf.reshape %arg0 : tensor<4x8xf32> -> tensor<2x16xf32>
// CHECK-DAG: %[[B:.*]] = xf.reshape %arg1 : tensor<8xf32> -> tensor<2x4xf32>
// CHECK-DAG: %[[C:.*]] = xf.reshape %arg2 : tensor<1x6x4xf32> -> tensor<2x12xf32>
// CHECK: %[[CAT:.*]] = xf.concat %[[A]], %[[B]], %[[C]] dim = 1 : tensor<2x16xf32>, tensor<2x4xf32>, tensor<2x12xf32> -> tensor<2x32xf32>
// CHECK: %[[RS:.*]] = shard.reduce_scatter %[[CAT]] on @mesh grid_axes = [0] scatter_axis = 0 : tensor<2x32xf32> -> tensor<1x32xf32>
// CHECK: %[[S:.*]]:3 = xf.split %[[RS]] dim = 1 : tensor<1x32xf32> -> tensor<1x16xf32>, tensor<1x4xf32>, tensor<1x12xf32>
// CHECK-DAG: %[[GA:.*]] = xf.reshape %[[S]]#0 : tensor<1x16xf32> -> tensor<2x8xf32>
// CHECK-DAG: %[[GB:.*]] = xf.reshape %[[S]]#1 : tensor<1x4xf32> -> tensor<4xf32>
// CHECK-DAG: %[[GC:.*]] = xf.reshape %[[S]]#2 : tensor<1x12xf32> -> tensor<1x3x4xf32>
// CHECK-DAG: xf.sum_squares %[[GA]]
// CHECK-DAG: xf.sum_squares %[[GB]]
// CHECK-DAG: xf.sum_squares %[[GC]]
// CHECK-NOT: shard.reduce_scatter
// A bucket closes once its inputs reach 150 bytes: the first two (128 + 32
// bytes), then the third alone (left as it was).
// SMALL-LABEL: func.func @train_step
// SMALL: xf.concat %{{.*}}, %{{.*}} dim = 1 : tensor<2x16xf32>, tensor<2x4xf32> -> tensor<2x20xf32>
// SMALL: shard.reduce_scatter %arg2 on @mesh grid_axes = [0] scatter_axis = 1 : tensor<1x6x4xf32> -> tensor<1x3x4xf32>
// SMALL-LABEL: func.func @train_step
// OFF-NOT: xf.concat
func.func @train_step(%g0: tensor<4x8xf32>, %g1: tensor<8xf32>, %g2: tensor<1x6x4xf32>,
                      %g3: tensor<8xbf16>, %g4: tensor<4x8xf32>, %g5: tensor<8xf32>,
                      %x: tensor<8xf32>)
    -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<4xf32>)
    attributes {xf.grid = @mesh} {
  %r0 = shard.reduce_scatter %g0 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  %r1 = shard.reduce_scatter %g1 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8xf32> -> tensor<4xf32>
  %r2 = shard.reduce_scatter %g2 on @mesh grid_axes = [0] scatter_axis = 1 : tensor<1x6x4xf32> -> tensor<1x3x4xf32>
  %r3 = shard.reduce_scatter %g3 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8xbf16> -> tensor<4xbf16>
  %r4 = shard.reduce_scatter %g4 on @mesh grid_axes = [0] scatter_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
  %r5 = shard.reduce_scatter %g5 on @mesh grid_axes = [1] scatter_axis = 0 : tensor<8xf32> -> tensor<4xf32>
  %r6 = shard.reduce_scatter %x on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8xf32> -> tensor<4xf32>
  %a = xf.gelu %r6 : tensor<4xf32>
  %s0 = xf.sum_squares %r0 : tensor<2x8xf32>
  %s1 = xf.sum_squares %r1 : tensor<4xf32>
  %s2 = xf.sum_squares %r2 : tensor<1x3x4xf32>
  %w3 = xf.cast %r3 : tensor<4xbf16> -> tensor<4xf32>
  %s3 = xf.sum_squares %w3 : tensor<4xf32>
  %s4 = xf.sum_squares %r4 : tensor<4x4xf32>
  %s5 = xf.sum_squares %r5 : tensor<4xf32>
  return %s0, %s1, %s2, %s3, %s4, %s5, %a : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<4xf32>
}

// -----

// A member read by something other than the optimizer before the bucket
// fills is no member; one read by the optimizer between members closes the
// bucket there (the reads come after the merged collective).
shard.grid @mesh(shape = 2) {xf.axis_names = ["dp"]}
// CHECK-LABEL: func.func @train_step
// CHECK: %[[CAT:.*]] = xf.concat %{{.*}}, %{{.*}} dim = 1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x4xf32>
// CHECK-NEXT: shard.reduce_scatter %[[CAT]]
// CHECK-NEXT: xf.split
// CHECK: xf.sum_squares
// CHECK: shard.reduce_scatter %arg2
func.func @train_step(%g0: tensor<4xf32>, %g1: tensor<4xf32>, %g2: tensor<4xf32>)
    -> (tensor<f32>, tensor<f32>, tensor<f32>) attributes {xf.grid = @mesh} {
  %r0 = shard.reduce_scatter %g0 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<4xf32> -> tensor<2xf32>
  %r1 = shard.reduce_scatter %g1 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<4xf32> -> tensor<2xf32>
  %s0 = xf.sum_squares %r0 : tensor<2xf32>
  %r2 = shard.reduce_scatter %g2 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<4xf32> -> tensor<2xf32>
  %s1 = xf.sum_squares %r1 : tensor<2xf32>
  %s2 = xf.sum_squares %r2 : tensor<2xf32>
  return %s0, %s1, %s2 : tensor<f32>, tensor<f32>, tensor<f32>
}
