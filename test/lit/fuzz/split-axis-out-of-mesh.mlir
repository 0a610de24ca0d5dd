// shardc-fuzz --seed 7 --case 18258 (and 10982): a shard.sharding splitting over axis 5 of a
// 2-axis grid. Upstream's verifier accepts it (it checks only negative and repeated axes);
// -xf-report-sharding then asked std::string for a name past the mesh (length_error/bad_alloc).
// RUN: not shardc-opt %s -xf-report-sharding=function=f -o /dev/null 2>&1 | FileCheck %s
// RUN: not shardc-opt %s -xf-partition=function=f -o /dev/null 2>&1 | FileCheck %s
// RUN: not shardc-opt %s -xf-propagate-sharding=function=f -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: split axis 5 is not an axis of the mesh dp=2,tp=2 (2 axes)
shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @mesh split_axes = [[5], []] : !shard.sharding
  %x1 = shard.shard %x to %s : tensor<8x4xf32>
  %y = xf.gelu %x1 : tensor<8x4xf32>
  %y1 = shard.shard %y to %s : tensor<8x4xf32>
  return %y1 : tensor<8x4xf32>
}
