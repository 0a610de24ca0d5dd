// RUN: shardc-opt %s -xf-propagate-sharding=function=mlp | FileCheck %s --check-prefix=MLP
// RUN: shardc-opt %s -xf-propagate-sharding=function=small_weight | FileCheck %s --check-prefix=SMALLW
// RUN: shardc-opt %s -xf-propagate-sharding=function=large_weight | FileCheck %s --check-prefix=LARGEW
// RUN: shardc-opt %s -xf-propagate-sharding=function=pending | FileCheck %s --check-prefix=PENDING

// Megatron MLP from one annotation: the first weight split on its output
// features (column parallel). The second weight becomes row parallel and the
// result a pending sum over tp, reduced once where a replicated value is needed.
shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x64xf32>, %w2: tensor<64x16xf32>) -> tensor<8x16xf32> {
  %col = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %a = shard.shard %w1 to %col : tensor<16x64xf32>
  %h = xf.matmul "bh,ho->bo" %x, %a : tensor<8x16xf32>, tensor<16x64xf32> -> tensor<8x64xf32>
  %g = xf.gelu %h : tensor<8x64xf32>
  %y = xf.matmul "bo,oh->bh" %g, %w2 : tensor<8x64xf32>, tensor<64x16xf32> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
// MLP-LABEL: func.func @mlp
// MLP-DAG: %[[ROW:.*]] = shard.sharding @mesh split_axes = {{\[\[}}0], []] : !shard.sharding
// MLP-DAG: %[[REP:.*]] = shard.sharding @mesh split_axes = {{\[\[}}], []] : !shard.sharding
// MLP-DAG: shard.shard %arg2 to %[[ROW]] : tensor<64x16xf32>
// MLP: xf.matmul "bh,ho->bo" {{.*}} {xf.factor_axes = [array<i16>, array<i16>, array<i16: 0>]}
// MLP: xf.gelu {{.*}} {xf.factor_axes = [array<i16>, array<i16: 0>]}
// MLP: %[[Y:.*]] = xf.matmul "bo,oh->bh" {{.*}} {xf.factor_axes = [array<i16>, array<i16: 0>, array<i16>]}
// MLP: shard.shard %[[Y]] to %[[REP]] {xf.partial = array<i16: 0>} : tensor<8x16xf32>

// A conflict decided by cost, not by order: the batch of x and the
// contracted dim of W are both split over the one axis. With a small weight,
// gathering the weight is cheaper (batch stays split); with a large weight,
// moving x to a split contraction is cheaper (the result is a pending sum).
// (Sizes are large enough that bytes, not link latency, decide.)
func.func @small_weight(%x: tensor<65536x1024xf32>, %w: tensor<1024x8xf32>) -> tensor<65536x8xf32> {
  %s = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %xa = shard.shard %x to %s : tensor<65536x1024xf32>
  %wa = shard.shard %w to %s : tensor<1024x8xf32>
  %y = xf.matmul "bh,ho->bo" %xa, %wa : tensor<65536x1024xf32>, tensor<1024x8xf32> -> tensor<65536x8xf32>
  return %y : tensor<65536x8xf32>
}
func.func @large_weight(%x: tensor<4x4096xf32>, %w: tensor<4096x65536xf32>) -> tensor<4x65536xf32> {
  %s = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %xa = shard.shard %x to %s : tensor<4x4096xf32>
  %wa = shard.shard %w to %s : tensor<4096x65536xf32>
  %y = xf.matmul "bh,ho->bo" %xa, %wa : tensor<4x4096xf32>, tensor<4096x65536xf32> -> tensor<4x65536xf32>
  return %y : tensor<4x65536xf32>
}
// SMALLW-LABEL: func.func @small_weight
// SMALLW: xf.matmul {{.*}} {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]}
// LARGEW-LABEL: func.func @large_weight
// LARGEW: xf.matmul {{.*}} {xf.factor_axes = [array<i16>, array<i16: 0>, array<i16>]}

// Pending sums pass through linear ops: two partial products added stay one
// pending sum; the norm needs a whole value.
func.func @pending(%x: tensor<8x64xf32>, %w1: tensor<64x16xf32>, %w2: tensor<64x16xf32>, %g: tensor<16xf32>) -> tensor<8x16xf32> {
  %s = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %r = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %xa = shard.shard %x to %s : tensor<8x64xf32>
  %w1a = shard.shard %w1 to %r : tensor<64x16xf32>
  %w2a = shard.shard %w2 to %r : tensor<64x16xf32>
  %p1 = xf.matmul "bh,ho->bo" %xa, %w1a : tensor<8x64xf32>, tensor<64x16xf32> -> tensor<8x16xf32>
  %p2 = xf.matmul "bh,ho->bo" %xa, %w2a : tensor<8x64xf32>, tensor<64x16xf32> -> tensor<8x16xf32>
  %sum = xf.add %p1, %p2 : tensor<8x16xf32>
  %y = xf.rmsnorm %sum, %g epsilon = 1.0e-05 : tensor<8x16xf32>, tensor<16xf32>
  return %y : tensor<8x16xf32>
}
// PENDING-LABEL: func.func @pending
// PENDING: %[[SUM:.*]] = xf.add {{.*}} {xf.factor_axes = [array<i16>, array<i16>], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 0>}
// PENDING-NEXT: shard.shard %[[SUM]] to %{{.*}} {xf.partial = array<i16: 0>}
// PENDING: xf.rmsnorm {{.*}} {xf.factor_axes = [array<i16>, array<i16>]}

// An annotation on an intermediate value alone: it spreads to the producer's
// operands (the weight stays whole: its rows are contracted) and to the users.
// RUN: shardc-opt %s -xf-propagate-sharding=function=intermediate | FileCheck %s --check-prefix=MID
func.func @intermediate(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %h = xf.matmul "bh,ho->bo" %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %rows = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %a = shard.shard %h to %rows : tensor<8x32xf32>
  %g = xf.gelu %a : tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}
// MID-LABEL: func.func @intermediate
// MID-DAG: shard.shard %arg0 to %[[ROWS:.*]] : tensor<8x16xf32>
// MID-DAG: %[[ROWS]] = shard.sharding @mesh split_axes = {{\[\[}}0], []]
// MID-DAG: shard.shard %arg1 to %{{.*}} : tensor<16x32xf32>
// MID: xf.matmul {{.*}} {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]}
// MID: xf.gelu {{.*}} {xf.factor_axes = [array<i16: 0>, array<i16>]}
