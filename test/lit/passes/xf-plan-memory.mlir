// RUN: shardc-opt %s -split-input-file -verify-diagnostics -xf-plan-memory=function=chain | FileCheck %s

// A workspace value's bytes are reused once it is dead: %c takes %a's place
// (64-byte aligned), the workspace peak is two buffers.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: rt.buffer = array<i64: 3, 0>
// CHECK-SAME: rt.arena_bytes = array<i64: 0, 0, 0, 64, 128>, rt.planned_bytes = 192
// CHECK: xf.gelu %arg0 {rt.buffers = [array<i64: 4, 0>]}
// CHECK: xf.gelu %0 {rt.buffers = [array<i64: 4, 64>]}
// CHECK: xf.gelu %1 {rt.buffers = [array<i64: 4, 0>]}
func.func @chain(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = xf.gelu %x : tensor<16xf32>
  %b = xf.gelu %a : tensor<16xf32>
  %c = xf.gelu %b : tensor<16xf32>
  return %c : tensor<16xf32>
}

// -----

// A result never overlaps its operands, and a value still used later keeps
// its bytes: %d cannot take %a's place (read by %e), it takes %b's.
// CHECK-LABEL: func.func @chain
// CHECK: xf.gelu %arg0 {rt.buffers = [array<i64: 4, 0>]}
// CHECK: xf.gelu %0 {rt.buffers = [array<i64: 4, 64>]}
// CHECK: xf.gelu %1 {rt.buffers = [array<i64: 4, 128>]}
// CHECK: xf.add %2, %0 {rt.buffers = [array<i64: 4, 64>]}
func.func @chain(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = xf.gelu %x : tensor<16xf32>
  %b = xf.gelu %a : tensor<16xf32>
  %c = xf.gelu %b : tensor<16xf32>
  %d = xf.add %c, %a : tensor<16xf32>
  return %d : tensor<16xf32>
}

// -----

// expected-error @below {{xf-plan-memory: no function @chain}}
module {
  func.func @other(%x: tensor<16xf32>) -> tensor<16xf32> {
    return %x : tensor<16xf32>
  }
}
