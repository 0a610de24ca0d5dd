// Upstream interop: shardc-opt registers what upstream shard IR needs (linalg and the
// ShardingInterface models of linalg/arith/tensor/func), so upstream propagation and
// partition run as in mlir-opt. A Megatron MLP: column-split then row-split weights end
// in one all-reduce.
// RUN: shardc-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' | FileCheck %s

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W1:.*]]: tensor<8x8xf32>, %[[W2:.*]]: tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[H:.*]] = linalg.matmul ins(%[[X]], %[[W1]] : tensor<4x8xf32>, tensor<8x8xf32>)
// CHECK: %[[Y:.*]] = linalg.matmul ins(%[[H]], %[[W2]] : tensor<4x8xf32>, tensor<8x8xf32>)
// CHECK: %[[R:.*]] = shard.all_reduce %[[Y]] on @mesh grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: return %[[R]]
shard.grid @mesh(shape = 2)
func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %col = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %row = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %w1s = shard.shard %w1 to %col annotate_for_users : tensor<8x16xf32>
  %w2s = shard.shard %w2 to %row annotate_for_users : tensor<16x8xf32>
  %i1 = tensor.empty() : tensor<4x16xf32>
  %h = linalg.matmul ins(%x, %w1s : tensor<4x8xf32>, tensor<8x16xf32>) outs(%i1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %i2 = tensor.empty() : tensor<4x8xf32>
  %y = linalg.matmul ins(%h, %w2s : tensor<4x16xf32>, tensor<16x8xf32>) outs(%i2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
