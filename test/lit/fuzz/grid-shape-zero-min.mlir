// A grid of size 0 used by a collective: upstream ReduceScatterOp::verifySymbolUses divides
// by the group size (mlir-opt-22 crashes the same way). With xf.axis_names the xf dialect
// rejects the grid first; without them the upstream crash remains (README, known limits).
// RUN: not shardc-opt %s -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: 'shard.grid' op grid axis 'tp' must have a static positive size
shard.grid @mesh(shape = 0) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = shard.reduce_scatter %x on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
