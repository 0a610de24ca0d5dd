// RUN: shardc-opt %s -xf-bucket-all-gathers | FileCheck %s
// RUN: shardc-opt %s -xf-bucket-all-gathers=bucket-bytes=150 | FileCheck %s --check-prefix=SMALL
// RUN: shardc-opt %s -xf-bucket-all-gathers=bucket-bytes=0 | FileCheck %s --check-prefix=OFF

// ZeRO-1's whole-step gathers (xf.gather_once) of parameter shards over dp
// (2 ranks): the f32 ones with contiguous blocks become one gather of the
// blocks side by side, each viewed as [1, size], where the first of them
// was; left alone: a bf16 one (another element type), one gathered on dim 1
// of a [4, 4] (blocks not contiguous), one over tp (other axes), one
// without xf.gather_once (ZeRO-3's per-use gather) and one of a computed
// value (not a step argument).
shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
// CHECK-LABEL: func.func @train_step
// CHECK: %[[A:.*]] = xf.reshape %arg0 : tensor<2x8xf32> -> tensor<1x16xf32>
// CHECK: %[[B:.*]] = xf.reshape %arg1 : tensor<4xf32> -> tensor<1x4xf32>
// CHECK: %[[C:.*]] = xf.reshape %arg2 : tensor<1x3x4xf32> -> tensor<1x12xf32>
// CHECK: %[[CAT:.*]] = xf.concat %[[A]], %[[B]], %[[C]] dim = 1 : tensor<1x16xf32>, tensor<1x4xf32>, tensor<1x12xf32> -> tensor<1x32xf32>
// CHECK: %[[G:.*]] = shard.all_gather %[[CAT]] on @mesh grid_axes = [0] gather_axis = 0 {xf.gather_once} : tensor<1x32xf32> -> tensor<2x32xf32>
// CHECK: %[[S:.*]]:3 = xf.split %[[G]] dim = 1 : tensor<2x32xf32> -> tensor<2x16xf32>, tensor<2x4xf32>, tensor<2x12xf32>
// CHECK: %[[GA:.*]] = xf.reshape %[[S]]#0 : tensor<2x16xf32> -> tensor<4x8xf32>
// CHECK: %[[GB:.*]] = xf.reshape %[[S]]#1 : tensor<2x4xf32> -> tensor<8xf32>
// CHECK: %[[GC:.*]] = xf.reshape %[[S]]#2 : tensor<2x12xf32> -> tensor<1x6x4xf32>
// CHECK: xf.gelu %[[GA]]
// CHECK-DAG: shard.all_gather %arg3 on @mesh grid_axes = [0] gather_axis = 0 {xf.gather_once} : tensor<4xbf16> -> tensor<8xbf16>
// CHECK-DAG: shard.all_gather %arg4 on @mesh grid_axes = [0] gather_axis = 1 {xf.gather_once} : tensor<4x4xf32> -> tensor<4x8xf32>
// CHECK-DAG: shard.all_gather %arg5 on @mesh grid_axes = [1] gather_axis = 0 {xf.gather_once} : tensor<4xf32> -> tensor<8xf32>
// CHECK-DAG: shard.all_gather %arg6 on @mesh grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
// CHECK-DAG: shard.all_gather %{{.*}} on @mesh grid_axes = [0] gather_axis = 0 {xf.gather_once} : tensor<4xf32> -> tensor<8xf32>
// CHECK-DAG: xf.gelu %[[GB]]
// CHECK-DAG: xf.gelu %[[GC]]
// A bucket closes once its gathered bytes reach 150: the first two (128 + 32
// bytes), then the third alone (left as it was).
// SMALL-LABEL: func.func @train_step
// SMALL: xf.concat %{{.*}}, %{{.*}} dim = 1 : tensor<1x16xf32>, tensor<1x4xf32> -> tensor<1x20xf32>
// SMALL: shard.all_gather %arg2 on @mesh grid_axes = [0] gather_axis = 1 {xf.gather_once} : tensor<1x3x4xf32> -> tensor<1x6x4xf32>
// OFF-LABEL: func.func @train_step
// OFF-NOT: xf.concat
func.func @train_step(%p0: tensor<2x8xf32>, %p1: tensor<4xf32>, %p2: tensor<1x3x4xf32>,
                      %p3: tensor<4xbf16>, %p4: tensor<4x4xf32>, %p5: tensor<4xf32>,
                      %p6: tensor<4xf32>, %x: tensor<4xf32>)
    -> (tensor<4x8xf32>, tensor<8xf32>, tensor<1x6x4xf32>, tensor<8xbf16>, tensor<4x8xf32>,
        tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    attributes {xf.grid = @mesh} {
  %g0 = shard.all_gather %p0 on @mesh grid_axes = [0] gather_axis = 0 {xf.gather_once} : tensor<2x8xf32> -> tensor<4x8xf32>
  %a0 = xf.gelu %g0 : tensor<4x8xf32>
  %g1 = shard.all_gather %p1 on @mesh grid_axes = [0] gather_axis = 0 {xf.gather_once} : tensor<4xf32> -> tensor<8xf32>
  %a1 = xf.gelu %g1 : tensor<8xf32>
  %g2 = shard.all_gather %p2 on @mesh grid_axes = [0] gather_axis = 1 {xf.gather_once} : tensor<1x3x4xf32> -> tensor<1x6x4xf32>
  %a2 = xf.gelu %g2 : tensor<1x6x4xf32>
  %g3 = shard.all_gather %p3 on @mesh grid_axes = [0] gather_axis = 0 {xf.gather_once} : tensor<4xbf16> -> tensor<8xbf16>
  %g4 = shard.all_gather %p4 on @mesh grid_axes = [0] gather_axis = 1 {xf.gather_once} : tensor<4x4xf32> -> tensor<4x8xf32>
  %g5 = shard.all_gather %p5 on @mesh grid_axes = [1] gather_axis = 0 {xf.gather_once} : tensor<4xf32> -> tensor<8xf32>
  %g6 = shard.all_gather %p6 on @mesh grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
  %y = xf.gelu %x : tensor<4xf32>
  %g7 = shard.all_gather %y on @mesh grid_axes = [0] gather_axis = 0 {xf.gather_once} : tensor<4xf32> -> tensor<8xf32>
  return %a0, %a1, %a2, %g3, %g4, %g5, %g6, %g7 : tensor<4x8xf32>, tensor<8xf32>, tensor<1x6x4xf32>, tensor<8xbf16>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
