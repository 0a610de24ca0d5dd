// Hand-written or damaged annotations: diagnostics, never a crash.
// RUN: shardc-opt %s -split-input-file -verify-diagnostics -xf-partition=function=f
// (Axes outside the grid, repeated axes and bad xf.partial are verifier errors:
// test/lit/xf/sharding_attrs_verification.mlir.)

shard.grid @mesh(shape = 4) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %s = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %rep = shard.sharding @mesh split_axes = [[], []] : !shard.sharding
  %x1 = shard.shard %x to %rep : tensor<6x4xf32>
  // expected-error@+1 {{invalid sharding decision: factor 0 of size 6 is not divisible by tp (4)}}
  %y = xf.gelu %x1 {xf.factor_axes = [array<i16: 0>, array<i16>]} : tensor<6x4xf32>
  %y1 = shard.shard %y to %s : tensor<6x4xf32>
  return %y1 : tensor<6x4xf32>
}

// -----

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %rep = shard.sharding @mesh split_axes = [[], []] : !shard.sharding
  %x1 = shard.shard %x to %rep : tensor<8x4xf32>
  // expected-error@+1 {{result #0 has no sharding annotation; run -xf-propagate-sharding first}}
  %y = xf.gelu %x1 {xf.factor_axes = [array<i16>, array<i16>]} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
