// RUN: shardc-opt %s -split-input-file -xf-schedule | FileCheck %s

// A gradient reduction moves up to its input's definition; a parameter
// gather moves up to the first use of the previous gather (one layer of
// prefetch), not further.
shard.grid @mesh(shape = 2) {xf.axis_names = ["dp"]}
// CHECK-LABEL: func.func @train_step
// CHECK: %[[G1:.*]] = shard.all_gather %arg0
// CHECK-NEXT: %[[G2:.*]] = shard.all_gather %arg1
// CHECK-NEXT: %[[A:.*]] = xf.matmul "ij,jk->ik" %arg3, %[[G1]]
// CHECK-NEXT: %[[R:.*]] = shard.all_reduce %[[A]]
// CHECK-NEXT: %[[B:.*]] = xf.gelu %[[A]]
// CHECK-NEXT: %[[G3:.*]] = shard.all_gather %arg2
// CHECK-NEXT: %[[C:.*]] = xf.matmul "ij,jk->ik" %[[B]], %[[G2]]
// CHECK-NEXT: %[[D:.*]] = xf.matmul "ij,jk->ik" %[[C]], %[[G3]]
func.func @train_step(%w1: tensor<4x8xf32>, %w2: tensor<4x8xf32>, %w3: tensor<4x8xf32>, %x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %g1 = shard.all_gather %w1 on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %a = xf.matmul "ij,jk->ik" %x, %g1 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %b = xf.gelu %a : tensor<8x8xf32>
  %g2 = shard.all_gather %w2 on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %c = xf.matmul "ij,jk->ik" %b, %g2 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %g3 = shard.all_gather %w3 on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %d = xf.matmul "ij,jk->ik" %c, %g3 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %r = shard.all_reduce %a on @mesh grid_axes = [0] : tensor<8x8xf32> -> tensor<8x8xf32>
  return %d, %r : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A slice (local) that is its operand's only reader follows the operand's
// definition, so the whole value dies there (a gradient made whole on every
// rank and sliced to its optimizer shard); a slice of a value read elsewhere
// too stays.
shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
// CHECK-LABEL: func.func @train_step
// CHECK: %[[W:.*]] = xf.matmul "ij,jk->ik" %arg0, %arg1
// CHECK-NEXT: shard.all_slice %[[W]] on @mesh grid_axes = [0] slice_axis = 1
// CHECK-NEXT: %[[B:.*]] = xf.gelu %arg0
// CHECK-NEXT: %[[C:.*]] = xf.gelu %[[B]]
// CHECK-NEXT: shard.all_slice %[[B]]
func.func @train_step(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> (tensor<8x4xf32>, tensor<8x8xf32>, tensor<8x4xf32>) {
  %w = xf.matmul "ij,jk->ik" %x, %y : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %b = xf.gelu %x : tensor<8x8xf32>
  %c = xf.gelu %b : tensor<8x8xf32>
  %sb = shard.all_slice %b on @mesh grid_axes = [0] slice_axis = 1 : tensor<8x8xf32> -> tensor<8x4xf32>
  %sw = shard.all_slice %w on @mesh grid_axes = [0] slice_axis = 1 : tensor<8x8xf32> -> tensor<8x4xf32>
  return %sw, %c, %sb : tensor<8x4xf32>, tensor<8x8xf32>, tensor<8x4xf32>
}

// -----

// A bf16 weight gradient the partitioner widens for the f32 master right
// before its reduction, by the optimizer: the cast (read by the reduction
// alone) moves up with the reduce-scatter to the gradient's GEMM, so the
// gradient is not held until the end of the step; a cast read elsewhere too
// stays, and its reduction follows it.
shard.grid @mesh(shape = 2) {xf.axis_names = ["dp"]}
// CHECK-LABEL: func.func @train_step
// CHECK: %[[G:.*]] = xf.matmul "ij,jk->ik" %arg0, %arg1
// CHECK-NEXT: %[[W:.*]] = xf.cast %[[G]] : tensor<8x8xbf16> -> tensor<8x8xf32>
// CHECK-NEXT: shard.reduce_scatter %[[W]]
// CHECK-NEXT: %[[H:.*]] = xf.matmul "ij,jk->ik" %arg0, %arg0
// CHECK-NEXT: %[[E:.*]] = xf.gelu %[[H]]
// CHECK-NEXT: %[[V:.*]] = xf.cast %[[H]] : tensor<8x8xbf16> -> tensor<8x8xf32>
// CHECK-NEXT: shard.reduce_scatter %[[V]]
func.func @train_step(%x: tensor<8x8xbf16>, %y: tensor<8x8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xbf16>, tensor<8x8xf32>) {
  %g = xf.matmul "ij,jk->ik" %x, %y : tensor<8x8xbf16>, tensor<8x8xbf16> -> tensor<8x8xbf16>
  %h = xf.matmul "ij,jk->ik" %x, %x : tensor<8x8xbf16>, tensor<8x8xbf16> -> tensor<8x8xbf16>
  %e = xf.gelu %h : tensor<8x8xbf16>
  %w = xf.cast %g : tensor<8x8xbf16> -> tensor<8x8xf32>
  %rw = shard.reduce_scatter %w on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
  %v = xf.cast %h : tensor<8x8xbf16> -> tensor<8x8xf32>
  %rv = shard.reduce_scatter %v on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
  return %rw, %rv, %e, %v : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xbf16>, tensor<8x8xf32>
}
