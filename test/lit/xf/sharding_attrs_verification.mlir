// The sharding passes' discardable attributes are verified where they sit:
// every pass that reads one may trust it.
// RUN: shardc-opt %s -split-input-file -verify-diagnostics

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error@+1 {{'xf.factor_axes' names grid axis 5 but @mesh has 1 axes}}
  %y = xf.gelu %x {xf.factor_axes = [array<i16: 5>, array<i16>]} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error@+1 {{'xf.factor_axes' has 3 entries but the op's sharding rule has 2 factors}}
  %y = xf.gelu %x {xf.factor_axes = [array<i16>, array<i16>, array<i16>]} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error@+1 {{'xf.factor_axes' names grid axis 0 twice}}
  %y = xf.gelu %x {xf.factor_axes = [array<i16: 0>, array<i16: 0>]} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error@+1 {{'xf.factor_axes' names grid axis -1; axes are numbered from 0}}
  %y = xf.gelu %x {xf.factor_axes = [array<i16: -1>, array<i16>]} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<8x4xf32> {
  // expected-error@+1 {{'xf.factor_axes' splits factor 1, which the op's sharding rule keeps whole}}
  %y = xf.layernorm %x, %g, %b epsilon = 1.0e-05 {xf.factor_axes = [array<i16>, array<i16: 0>]} : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error@+1 {{'xf.factor_axes' must be an array of array<i16>}}
  %y = xf.gelu %x {xf.factor_axes = [1, 2]} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error@+1 {{'xf.factor_axes' on an op without a sharding rule}}
  return {xf.factor_axes = [array<i16>]} %x : tensor<8x4xf32>
}

// -----

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error@+1 {{'xf.linear_group' is 3 but the op has 0 linear groups}}
  %y = xf.gelu %x {xf.factor_axes = [array<i16>, array<i16>], xf.linear_partial = array<i16: 0>, xf.linear_group = 3 : i64} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error@+1 {{'xf.linear_partial' and 'xf.linear_group' need 'xf.factor_axes'}}
  %y = xf.gelu %x {xf.linear_partial = array<i16: 0>, xf.linear_group = 0 : i64} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %rep = shard.sharding @mesh split_axes = [[], []] : !shard.sharding
  // expected-error@+1 {{'xf.partial' names grid axis 3 but @mesh has 2 axes}}
  %x1 = shard.shard %x to %rep {xf.partial = array<i16: 3>} : tensor<8x4xf32>
  return %x1 : tensor<8x4xf32>
}

// -----

shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %rep = shard.sharding @mesh split_axes = [[], []] : !shard.sharding
  // expected-error@+1 {{'xf.partial' must be an array<i16> on a shard.shard}}
  %x1 = shard.shard %x to %rep {xf.partial = [1]} : tensor<8x4xf32>
  return %x1 : tensor<8x4xf32>
}

// -----

// xf.gather_once (ZeRO-1/2: one gather for the whole step) only on a
// users-annotation, or the all_gather made from one.
shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %split = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %rep = shard.sharding @mesh split_axes = [[], []] : !shard.sharding
  %x0 = shard.shard %x to %split : tensor<8x4xf32>
  %x1 = shard.shard %x0 to %rep annotate_for_users {xf.gather_once} : tensor<8x4xf32>
  // expected-error@+1 {{'xf.gather_once' must be a unit attribute on a shard.shard annotate_for_users or the shard.all_gather made from one}}
  %x2 = shard.shard %x1 to %rep {xf.gather_once} : tensor<8x4xf32>
  return %x2 : tensor<8x4xf32>
}

// -----

// expected-error@+1 {{'xf.axis_names' names 1 axes but the grid has 2}}
shard.grid @mesh(shape = 2x2) {xf.axis_names = ["tp"]}

// -----

// expected-error@+1 {{grid axis 'dp' is named twice}}
shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "dp"]}

// -----

// expected-error@+1 {{'xf.axis_names' must hold identifiers, got "2x"}}
shard.grid @mesh(shape = 2x2) {xf.axis_names = ["2x", "dp"]}

// -----

// expected-error@+1 {{grid axis 'tp' must have a static positive size}}
shard.grid @mesh(shape = 0) {xf.axis_names = ["tp"]}

// -----

// expected-error@+1 {{the grid has more than 16777216 devices}}
shard.grid @mesh(shape = 65536x65536) {xf.axis_names = ["dp", "tp"]}

// -----

// expected-error@+1 {{'xf.axis_names' belongs on a shard.grid}}
func.func @f() attributes {xf.axis_names = ["tp"]} {
  return
}

// -----

// expected-error@+1 {{'xf.grid' names @nowhere, which is not a shard.grid}}
func.func @f() attributes {xf.grid = @nowhere} {
  return
}

// -----

// expected-error@+1 {{unknown xf attribute 'xf.frobnicate'}}
func.func @f() attributes {xf.frobnicate = 1} {
  return
}

// -----

// expected-error@+1 {{result #0: 'xf.report' must be a string}}
func.func @f(%x: tensor<f32>) -> (tensor<f32> {xf.report = 1}) {
  return %x : tensor<f32>
}

// -----

// expected-error@+1 {{result #0 (xf.state "adam_m:w") has type 'tensor<4xf32>' but argument #0 of the same state has 'tensor<4x4xf32>'}}
func.func @f(%m: tensor<4x4xf32> {xf.state = "adam_m:w"}, %x: tensor<4xf32>) -> (tensor<4xf32> {xf.state = "adam_m:w"}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{arguments #0 and #1 carry the same xf.state "step"}}
func.func @f(%a: tensor<i32> {xf.state = "step"}, %b: tensor<i32> {xf.state = "step"}) -> (tensor<i32> {xf.state = "step"}) {
  return %a : tensor<i32>
}

// -----

// expected-error@+1 {{result #0 is the gradient of 'w', which is not a parameter of the function}}
func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32> {xf.grad = "w"}) {
  return %x : tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
// expected-error@+1 {{argument #0: 'xf.sharding' names grid axis 3 but @mesh has 1 axes}}
func.func @f(%x: tensor<4xf32> {xf.sharding = #shard<axisarray[[3]]>}) attributes {xf.grid = @mesh} {
  return
}

// -----

// expected-error@+1 {{'xf.attention_rows' must be "split" or "whole" on a function}}
func.func @f() attributes {xf.attention_rows = "auto"} {
  return
}

// -----

func.func @ok() attributes {xf.attention_rows = "split"} {
  return
}
