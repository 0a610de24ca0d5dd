// RUN: shardc-opt %s -split-input-file -rt-bucket-all-reduces | FileCheck %s
// RUN: shardc-opt %s -split-input-file -rt-bucket-all-reduces=bucket-bytes=100 | FileCheck %s --check-prefix=SMALL
// RUN: shardc-opt %s -split-input-file -rt-bucket-all-reduces=bucket-bytes=0 | FileCheck %s --check-prefix=OFF

// Three gradient all-reduces whose outputs follow each other in the grads
// arena (arena 1; 64-byte aligned) become copies into their places and one
// in-place all-reduce of the range, issued before the first reader.
// CHECK-LABEL: func.func @step
// CHECK: rt.copy %{{.*}} to %[[A:.*]] : memref<16xf32>
// CHECK: rt.kernel "xf.gelu"
// CHECK: rt.copy %{{.*}} to %{{.*}} : memref<8xf32>
// CHECK: rt.copy %{{.*}} to %{{.*}} : memref<4x4xf32>
// CHECK: %[[B:.*]] = rt.view arena 1 offset 0 : memref<48xf32>
// CHECK-NEXT: rt.collective "shard.all_reduce" axes [0] ins(%[[B]] : memref<48xf32>) outs(%[[B]] : memref<48xf32>) {attrs = {reduction = "sum"}}
// CHECK-NEXT: rt.kernel "xf.sum_squares"
// CHECK-NOT: rt.collective
// With 100 bytes, the first two share a bucket and the third is alone.
// SMALL-LABEL: func.func @step
// SMALL: rt.view arena 1 offset 0 : memref<24xf32>
// SMALL-NEXT: rt.collective "shard.all_reduce" axes [0] ins({{.*}} : memref<24xf32>)
// SMALL: rt.collective "shard.all_reduce" axes [0] ins({{.*}} : memref<4x4xf32>) outs({{.*}} : memref<4x4xf32>)
// OFF-COUNT-3: rt.collective "shard.all_reduce"
func.func @step() {
  %a = rt.view arena 4 offset 0 : memref<16xf32>
  %ra = rt.view arena 1 offset 0 : memref<16xf32>
  rt.collective "shard.all_reduce" axes [0] ins(%a : memref<16xf32>) outs(%ra : memref<16xf32>) {attrs = {reduction = "sum"}}
  %x = rt.view arena 4 offset 512 : memref<16xf32>
  rt.kernel "xf.gelu" ins(%x : memref<16xf32>) outs(%x : memref<16xf32>) {attrs = {}}
  %b = rt.view arena 4 offset 64 : memref<8xf32>
  %rb = rt.view arena 1 offset 64 : memref<8xf32>
  rt.collective "shard.all_reduce" axes [0] ins(%b : memref<8xf32>) outs(%rb : memref<8xf32>) {attrs = {reduction = "sum"}}
  %c = rt.view arena 4 offset 128 : memref<4x4xf32>
  %rc = rt.view arena 1 offset 128 : memref<4x4xf32>
  rt.collective "shard.all_reduce" axes [0] ins(%c : memref<4x4xf32>) outs(%rc : memref<4x4xf32>) {attrs = {reduction = "sum"}}
  %n = rt.view arena 4 offset 256 : memref<f32>
  rt.kernel "xf.sum_squares" ins(%ra : memref<16xf32>) outs(%n : memref<f32>) {attrs = {}}
  return
}

// -----

// Different axes, a gap in the arena, or an output outside the grads arena
// end a bucket (single members stay as they were).
// CHECK-LABEL: func.func @step
// CHECK-COUNT-3: rt.collective "shard.all_reduce" axes
// CHECK-NOT: rt.copy
func.func @step() {
  %a = rt.view arena 4 offset 0 : memref<16xf32>
  %ra = rt.view arena 1 offset 0 : memref<16xf32>
  rt.collective "shard.all_reduce" axes [0] ins(%a : memref<16xf32>) outs(%ra : memref<16xf32>) {attrs = {reduction = "sum"}}
  %rb = rt.view arena 1 offset 64 : memref<16xf32>
  rt.collective "shard.all_reduce" axes [1] ins(%a : memref<16xf32>) outs(%rb : memref<16xf32>) {attrs = {reduction = "sum"}}
  %rc = rt.view arena 1 offset 1024 : memref<16xf32>
  rt.collective "shard.all_reduce" axes [1] ins(%a : memref<16xf32>) outs(%rc : memref<16xf32>) {attrs = {reduction = "sum"}}
  return
}
