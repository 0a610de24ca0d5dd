// RUN: shardc-opt %s | shardc-opt | FileCheck %s
// RUN: shardc-opt %s -mlir-print-op-generic | shardc-opt | FileCheck %s

// CHECK-LABEL: func.func @shardc_step
func.func @shardc_step() {
  // CHECK: %[[X:.*]] = rt.view arena 4 offset 0 : memref<2x8xf32>
  %x = rt.view arena 4 offset 0 : memref<2x8xf32>
  // CHECK: %[[G:.*]] = rt.view arena 0 offset 64 : memref<8xf32>
  %g = rt.view arena 0 offset 64 : memref<8xf32>
  %y = rt.view arena 4 offset 64 : memref<2x8xf32>
  // CHECK: rt.kernel "xf.layernorm" ins(%[[X]], %[[G]], %[[G]] : memref<2x8xf32>, memref<8xf32>, memref<8xf32>) outs(%{{.*}} : memref<2x8xf32>) {attrs = {epsilon = 1.000000e-05 : f64}}
  rt.kernel "xf.layernorm" ins(%x, %g, %g : memref<2x8xf32>, memref<8xf32>, memref<8xf32>) outs(%y : memref<2x8xf32>) {attrs = {epsilon = 1.0e-05 : f64}}
  // CHECK: rt.kernel "xf.iota" outs(%{{.*}} : memref<2x8xf32>) {attrs = {dim = 1 : i64}, result_axes = {{\[\[}}array<i16: 0>, array<i16>]]}
  rt.kernel "xf.iota" outs(%y : memref<2x8xf32>) {attrs = {dim = 1 : i64}, result_axes = [[array<i16: 0>, array<i16>]]}
  // CHECK: rt.collective "shard.all_reduce" axes [0, 1] ins(%{{.*}} : memref<2x8xf32>) outs(%{{.*}} : memref<2x8xf32>) {attrs = {reduction = "sum"}}
  rt.collective "shard.all_reduce" axes [0, 1] ins(%x : memref<2x8xf32>) outs(%y : memref<2x8xf32>) {attrs = {reduction = "sum"}}
  // CHECK: %[[E:.*]] = rt.collective_start "shard.all_gather" axes [1] ins(%{{.*}} : memref<8xf32>) outs(%{{.*}} : memref<8xf32>) {attrs = {gather_axis = 0 : index}}
  %e = rt.collective_start "shard.all_gather" axes [1] ins(%g : memref<8xf32>) outs(%g : memref<8xf32>) {attrs = {gather_axis = 0 : index}}
  // CHECK-NEXT: rt.wait %[[E]]
  rt.wait %e
  // A collective's planned staging.
  %s = rt.view arena 4 offset 256 : memref<256xi8>
  %z = rt.view arena 4 offset 512 : memref<4x8xf32>
  // CHECK: %[[F:.*]] = rt.collective_start "shard.all_gather" axes [1] ins(%{{.*}} : memref<2x8xf32>) outs(%{{.*}} : memref<4x8xf32>) scratch(%{{.*}} : memref<256xi8>) {attrs = {gather_axis = 0 : i64}}
  %f = rt.collective_start "shard.all_gather" axes [1] ins(%x : memref<2x8xf32>) outs(%z : memref<4x8xf32>) scratch(%s : memref<256xi8>) {attrs = {gather_axis = 0 : i64}}
  rt.wait %f
  // CHECK: rt.collective "shard.all_gather" axes [1] ins(%{{.*}} : memref<2x8xf32>) outs(%{{.*}} : memref<4x8xf32>) scratch(%{{.*}} : memref<256xi8>) {attrs = {gather_axis = 0 : i64}}
  rt.collective "shard.all_gather" axes [1] ins(%x : memref<2x8xf32>) outs(%z : memref<4x8xf32>) scratch(%s : memref<256xi8>) {attrs = {gather_axis = 0 : i64}}
  // CHECK: rt.copy %{{.*}} to %{{.*}} : memref<2x8xf32>
  rt.copy %x to %y : memref<2x8xf32>
  return
}
