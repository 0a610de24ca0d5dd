// RUN: shardc-opt %s -split-input-file -rt-schedule-collectives | FileCheck %s
// RUN: shardc-opt %s -split-input-file -rt-schedule-collectives=overlap=false | FileCheck %s --check-prefix=NOOVERLAP

// The start rises above compute that does not touch its buffers and stops
// at the kernel writing its input; the wait sinks to the first kernel that
// reads its output. Views move to the top.
// CHECK-LABEL: func.func @step
// CHECK-COUNT-5: rt.view
// CHECK-NEXT: rt.kernel "xf.gelu" ins(%{{.*}}) outs(%[[IN:[0-9]+]]
// CHECK-NEXT: %[[E:.*]] = rt.collective_start "shard.all_reduce" axes [0] ins(%[[IN]]
// CHECK-NEXT: rt.kernel "xf.scale"
// CHECK-NEXT: rt.kernel "xf.scale"
// CHECK-NEXT: rt.wait %[[E]]
// CHECK-NEXT: rt.kernel "xf.add"
// NOOVERLAP-LABEL: func.func @step
// NOOVERLAP: rt.kernel "xf.scale"
// NOOVERLAP-NEXT: %[[E:.*]] = rt.collective_start
// NOOVERLAP-NEXT: rt.wait %[[E]]
// NOOVERLAP-NEXT: rt.kernel "xf.scale"
func.func @step() {
  %x = rt.view arena 4 offset 0 : memref<64xf32>
  %g = rt.view arena 4 offset 256 : memref<64xf32>
  rt.kernel "xf.gelu" ins(%x : memref<64xf32>) outs(%g : memref<64xf32>) {attrs = {}}
  %y = rt.view arena 4 offset 512 : memref<64xf32>
  rt.kernel "xf.scale" ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) {attrs = {factor = 2.0 : f64}}
  %s = rt.view arena 1 offset 0 : memref<64xf32>
  rt.collective "shard.all_reduce" axes [0] ins(%g : memref<64xf32>) outs(%s : memref<64xf32>) {attrs = {reduction = "sum"}}
  %z = rt.view arena 4 offset 768 : memref<64xf32>
  rt.kernel "xf.scale" ins(%y : memref<64xf32>) outs(%z : memref<64xf32>) {attrs = {factor = 2.0 : f64}}
  rt.kernel "xf.add" ins(%s, %z : memref<64xf32>, memref<64xf32>) outs(%y : memref<64xf32>) {attrs = {}}
  return
}

// -----

// A kernel reusing the collective's input bytes (a planned reuse) ends the
// window: the input must stay unchanged while in flight.
// CHECK-LABEL: func.func @step
// CHECK: %[[E:.*]] = rt.collective_start
// CHECK-NEXT: rt.wait %[[E]]
// CHECK-NEXT: rt.kernel "xf.fill"
func.func @step() {
  %g = rt.view arena 4 offset 0 : memref<f32>
  %s = rt.view arena 4 offset 64 : memref<f32>
  rt.collective "shard.all_reduce" axes [0] ins(%g : memref<f32>) outs(%s : memref<f32>) {attrs = {reduction = "sum"}}
  %reused = rt.view arena 4 offset 0 : memref<f32>
  rt.kernel "xf.fill" outs(%reused : memref<f32>) {attrs = {value = 1.0 : f64}}
  return
}
