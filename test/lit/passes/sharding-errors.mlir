// Every sharding mistake a user can write gets a diagnostic with a location.
// RUN: shardc-opt %s -split-input-file -verify-diagnostics -xf-propagate-sharding=function=f

shard.grid @mesh(shape = 4) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %s = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  // expected-error@+1 {{dimension 0 of size 6 is not divisible by mesh axes tp (4); pad it to 8}}
  %a = shard.shard %x to %s : tensor<6x8xf32>
  %y = xf.gelu %a : tensor<6x8xf32>
  return %y : tensor<6x8xf32>
}

// -----

shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
func.func @f(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s0 = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %s1 = shard.sharding @mesh split_axes = [[], [1]] : !shard.sharding
  %y = xf.gelu %x : tensor<8x8xf32>
  // expected-note@+1 {{the other annotation is here}}
  %a = shard.shard %y to %s0 : tensor<8x8xf32>
  // expected-error@+1 {{conflicting sharding annotations: [-, tp] here, [dp, -] on the same value}}
  %b = shard.shard %y to %s1 : tensor<8x8xf32>
  %z = xf.add %a, %b : tensor<8x8xf32>
  return %z : tensor<8x8xf32>
}

// -----

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error@+1 {{split axis 1 is not an axis of the mesh tp=2 (1 axes)}}
  %s = shard.sharding @mesh split_axes = [[1]] : !shard.sharding
  %a = shard.shard %x to %s : tensor<8x8xf32>
  return %a : tensor<8x8xf32>
}

// -----

shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
func.func @f(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // The upstream verifier catches an axis used twice.
  // expected-error@+1 {{grid axis duplicated}}
  %s = shard.sharding @mesh split_axes = [[0, 1], [1]] : !shard.sharding
  %a = shard.shard %x to %s : tensor<8x8xf32>
  return %a : tensor<8x8xf32>
}

// -----

// expected-error@+1 {{no shard.grid in the module; give a mesh}}
module {
  func.func @f(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
    return %x : tensor<8x8xf32>
  }
}

// -----

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error@+1 {{'func.call' has no sharding rule; shardc can shard xf ops only}}
  %y = func.call @g(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}
func.func private @g(tensor<8x8xf32>) -> tensor<8x8xf32>
