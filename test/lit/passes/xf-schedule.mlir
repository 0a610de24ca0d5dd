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
