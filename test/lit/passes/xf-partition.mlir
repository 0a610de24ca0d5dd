// RUN: shardc-opt %s -split-input-file -xf-partition=function=f | FileCheck %s

// A row-parallel product whose pending sum meets a consumer that wants rows
// split: a reduce-scatter (not an all-reduce); the replicated result is then
// gathered at the return. Arguments get local types and xf.sharding.
shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x64xf32>, %w: tensor<64x16xf32>) -> tensor<8x16xf32> {
  %sx = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %sw = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %rep = shard.sharding @mesh split_axes = [[], []] : !shard.sharding
  %x1 = shard.shard %x to %sx : tensor<8x64xf32>
  %w1 = shard.shard %w to %sw : tensor<64x16xf32>
  %y = xf.matmul "bh,ho->bo" %x1, %w1 {xf.factor_axes = [array<i16>, array<i16: 0>, array<i16>]} : tensor<8x64xf32>, tensor<64x16xf32> -> tensor<8x16xf32>
  %y1 = shard.shard %y to %rep {xf.partial = array<i16: 0>} : tensor<8x16xf32>
  %z = xf.gelu %y1 {xf.factor_axes = [array<i16: 0>, array<i16>]} : tensor<8x16xf32>
  %sz = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %z1 = shard.shard %z to %sz : tensor<8x16xf32>
  return %z1 : tensor<8x16xf32>
}
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[X:.*]]: tensor<8x32xf32> {xf.sharding = #shard<axisarray{{\[\[}}], [0]]>}
// CHECK-SAME: %[[W:.*]]: tensor<32x16xf32> {xf.sharding = #shard<axisarray{{\[\[}}0], []]>}
// CHECK-SAME: -> (tensor<8x16xf32> {xf.sharding = #shard<axisarray{{\[\[}}], []]>})
// CHECK-SAME: attributes {xf.grid = @mesh}
// CHECK-NOT: shard.shard
// CHECK: %[[Y:.*]] = xf.matmul "bh,ho->bo" %[[X]], %[[W]] : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[RS:.*]] = shard.reduce_scatter %[[Y]] on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[Z:.*]] = xf.gelu %[[RS]] : tensor<4x16xf32>
// CHECK-NEXT: %[[G:.*]] = shard.all_gather %[[Z]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: return %[[G]]

// -----

// annotate_for_users: the stored shard is gathered before its uses, once per
// run of forward (or backward) ops: these two forward uses share one gather
// (ZeRO-3 gathers again for the backward: sharding-strategies.test, Z3).
shard.grid @mesh(shape = 4) {xf.axis_names = ["dp"]}
func.func @f(%w: tensor<8x4xf32>, %x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %sw = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %rep = shard.sharding @mesh split_axes = [[], []] : !shard.sharding
  %w1 = shard.shard %w to %sw : tensor<8x4xf32>
  %wu = shard.shard %w1 to %rep annotate_for_users : tensor<8x4xf32>
  %x1 = shard.shard %x to %rep : tensor<2x8xf32>
  %a = xf.matmul "bh,ho->bo" %x1, %wu {xf.factor_axes = [array<i16>, array<i16>, array<i16>]} : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %a1 = shard.shard %a to %rep : tensor<2x4xf32>
  %b = xf.matmul "bh,ho->bo" %x1, %wu {xf.factor_axes = [array<i16>, array<i16>, array<i16>]} : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %b1 = shard.shard %b to %rep : tensor<2x4xf32>
  %c = xf.add %a1, %b1 {xf.factor_axes = [array<i16>, array<i16>]} : tensor<2x4xf32>
  %c1 = shard.shard %c to %rep : tensor<2x4xf32>
  return %c1 : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[W:.*]]: tensor<2x4xf32> {xf.sharding = #shard<axisarray{{\[\[}}0], []]>}
// CHECK: %[[G1:.*]] = shard.all_gather %[[W]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT: xf.matmul "bh,ho->bo" %{{.*}}, %[[G1]]
// CHECK-NEXT: xf.matmul "bh,ho->bo" %{{.*}}, %[[G1]]

// -----

// A mean over a split token dim: the local op computes its share of the
// group's mean (it keeps xf.factor_axes to find its group), a pending sum
// all-reduced for the replicated result. A scalar without the sum joins it
// locally (x/n).
shard.grid @mesh(shape = 2) {xf.axis_names = ["dp"]}
func.func @f(%l: tensor<4x8x16xf32>, %t: tensor<4x8xi32>, %c: tensor<f32>) -> tensor<f32> {
  %sb = shard.sharding @mesh split_axes = [[0], [], []] : !shard.sharding
  %st = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %l1 = shard.shard %l to %sb : tensor<4x8x16xf32>
  %t1 = shard.shard %t to %st : tensor<4x8xi32>
  %c1 = shard.shard %c to %rep : tensor<f32>
  %loss = xf.cross_entropy %l1, %t1 ignore_index = -100 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<f32>
  %loss1 = shard.shard %loss to %rep {xf.partial = array<i16: 0>} : tensor<f32>
  %sum = xf.add %loss1, %c1 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 0>} : tensor<f32>
  %sum1 = shard.shard %sum to %rep {xf.partial = array<i16: 0>} : tensor<f32>
  return %sum1 : tensor<f32>
}
// CHECK-LABEL: func.func @f(
// CHECK: %[[L:.*]] = xf.cross_entropy {{.*}} {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<2x8x16xf32>, tensor<2x8xi32> -> tensor<f32>
// CHECK-NEXT: %[[C:.*]] = xf.scale %arg2 factor = 5.000000e-01 : tensor<f32>
// CHECK-NEXT: %[[A:.*]] = xf.add %[[L]], %[[C]] : tensor<f32>
// CHECK-NEXT: %[[R:.*]] = shard.all_reduce %[[A]] on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
// CHECK-NEXT: return %[[R]]

// -----

// An axis moving from one dim to another is one all-to-all.
shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %rows = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %cols = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %x1 = shard.shard %x to %rows : tensor<8x8xf32>
  %y = xf.gelu %x1 {xf.factor_axes = [array<i16>, array<i16: 0>]} : tensor<8x8xf32>
  %y1 = shard.shard %y to %cols : tensor<8x8xf32>
  return %y1 : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>
// CHECK: %[[T:.*]] = shard.all_to_all %[[X]] on @mesh grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT: xf.gelu %[[T]] : tensor<8x4xf32>
