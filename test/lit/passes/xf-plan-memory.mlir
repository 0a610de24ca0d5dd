// RUN: shardc-opt %s -split-input-file -verify-diagnostics -xf-plan-memory=function=chain | FileCheck %s
// Sizes only (placements=0, what the step report and the planner run): the
// same arenas, and no buffer or scratch places written.
// RUN: shardc-opt %s -split-input-file -verify-diagnostics -xf-plan-memory=function=chain > %t.placed
// RUN: shardc-opt %s -split-input-file -verify-diagnostics -xf-plan-memory="function=chain placements=0" > %t.sizes
// RUN: grep -o "rt.arena_bytes = array<[^>]*>, rt.planned_bytes = [0-9]*" %t.placed > %t.placed.sizes
// RUN: grep -o "rt.arena_bytes = array<[^>]*>, rt.planned_bytes = [0-9]*" %t.sizes | diff - %t.placed.sizes
// RUN: test -s %t.placed.sizes
// RUN: not grep -E "rt.buffers? =|rt.scratch =" %t.sizes

// A workspace value's bytes are reused once it is dead. GELU may run in place
// (the op table's in-place pair (0, 0)), so each result takes over its dying
// operand's buffer: one workspace buffer for the chain. The argument (inputs
// arena) is never overwritten.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: rt.buffer = array<i64: 3, 0>
// CHECK-SAME: rt.arena_bytes = array<i64: 0, 0, 0, 64, 64, 0>, rt.planned_bytes = 128
// CHECK: xf.gelu %arg0 {rt.buffers = [array<i64: 4, 0>]}
// CHECK: xf.gelu %0 {rt.buffers = [array<i64: 4, 0>]}
// CHECK: xf.gelu %1 {rt.buffers = [array<i64: 4, 0>]}
func.func @chain(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = xf.gelu %x : tensor<16xf32>
  %b = xf.gelu %a : tensor<16xf32>
  %c = xf.gelu %b : tensor<16xf32>
  return %c : tensor<16xf32>
}

// -----

// Without an in-place pair (softmax_grad may overwrite dy but not y; a
// transpose none) a result never overlaps its operands: %t cannot take %a's
// place, %g takes %t's (dy, operand 0) but not %b's (y, operand 1).
// CHECK-LABEL: func.func @chain
// CHECK: xf.gelu %arg0 {rt.buffers = [array<i64: 4, 0>]}
// CHECK: xf.transpose %0 {{.*}}rt.buffers = [array<i64: 4, 64>]
// CHECK: xf.softmax %1 {rt.buffers = [array<i64: 4, 0>]}
// CHECK: xf.softmax_grad %1, %2 {rt.buffers = [array<i64: 4, 64>]}
func.func @chain(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = xf.gelu %x : tensor<4x4xf32>
  %t = xf.transpose %a [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
  %b = xf.softmax %t : tensor<4x4xf32>
  %g = xf.softmax_grad %t, %b : tensor<4x4xf32>
  return %g : tensor<4x4xf32>
}

// -----

// A value still used later keeps its bytes: %b cannot take %a's place (read
// by %d); %c takes %b's, and the add writes over %c (dying), not over %a.
// CHECK-LABEL: func.func @chain
// CHECK: xf.gelu %arg0 {rt.buffers = [array<i64: 4, 0>]}
// CHECK: xf.gelu %0 {rt.buffers = [array<i64: 4, 64>]}
// CHECK: xf.gelu %1 {rt.buffers = [array<i64: 4, 64>]}
// CHECK: xf.add %2, %0 {rt.buffers = [array<i64: 4, 64>]}
func.func @chain(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = xf.gelu %x : tensor<16xf32>
  %b = xf.gelu %a : tensor<16xf32>
  %c = xf.gelu %b : tensor<16xf32>
  %d = xf.add %c, %a : tensor<16xf32>
  return %d : tensor<16xf32>
}

// -----

// A reshape of a value that lives on is a view of its bytes too (the op
// table's viewInPlace): %r shares %a's buffer while %a is read again. Nothing
// takes that buffer while either lives: %g (the last reader of %r) gets a
// new one; only the add, where the group's last member %a dies, may write
// over it.
// CHECK-LABEL: func.func @chain
// CHECK: xf.gelu %arg0 {rt.buffers = [array<i64: 4, 0>]}
// CHECK: xf.reshape %0 {rt.buffers = [array<i64: 4, 0>]}
// CHECK: xf.gelu %1 {rt.buffers = [array<i64: 4, 64>]}
// CHECK: xf.reshape %2 {rt.buffers = [array<i64: 4, 64>]}
// CHECK: xf.add %3, %0 {rt.buffers = [array<i64: 4, 64>]}
func.func @chain(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = xf.gelu %x : tensor<16xf32>
  %r = xf.reshape %a : tensor<16xf32> -> tensor<4x4xf32>
  %g = xf.gelu %r : tensor<4x4xf32>
  %h = xf.reshape %g : tensor<4x4xf32> -> tensor<16xf32>
  %d = xf.add %h, %a : tensor<16xf32>
  return %d : tensor<16xf32>
}

// -----

// expected-error @below {{xf-plan-memory: no function @chain}}
module {
  func.func @other(%x: tensor<16xf32>) -> tensor<16xf32> {
    return %x : tensor<16xf32>
  }
}

// -----

// Offloaded activations (xf.offload results) live in the host arena (5), by
// liveness: %h1 dies at its reload, so %h2 takes its bytes. The host arena is
// not part of the planned (device) bytes. The offloaded value's workspace is
// free from the offload on: the first gelu's result takes it.
// CHECK-LABEL: func.func @chain(%arg0: tensor<16xf32> {rt.buffer = array<i64: 3, 0>}) -> tensor<16xf32> attributes {rt.activation_bytes = 128 : i64, rt.arena_bytes = array<i64: 0, 0, 0, 64, 128, 64>
// CHECK-SAME: rt.planned_bytes = 192
// CHECK: %[[A:.*]] = xf.gelu %arg0 {rt.buffers = [array<i64: 4, 0>]}
// CHECK: %[[H1:.*]] = xf.offload %[[A]] {rt.buffers = [array<i64: 5, 0>]}
// CHECK: xf.reload %[[H1]] {rt.buffers = [array<i64: 4, {{[0-9]+}}>]}
// CHECK: xf.offload %{{.*}} {rt.buffers = [array<i64: 5, 0>]}
func.func @chain(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = xf.gelu %x : tensor<16xf32>
  %h1 = xf.offload %a : tensor<16xf32>
  %b = xf.gelu %x : tensor<16xf32>
  %a2 = xf.reload %h1 : tensor<16xf32>
  %c = xf.add %a2, %b : tensor<16xf32>
  %h2 = xf.offload %c : tensor<16xf32>
  %c2 = xf.reload %h2 : tensor<16xf32>
  return %c2 : tensor<16xf32>
}

// -----

// A kernel's scratch (runtime/program/KernelScratch.h; the layernorm
// gradient's partial sums: 2 x 4 slots x 8 columns of f32 = 256 bytes) is
// workspace beside the op's operands and results for the op's duration
// (rt.scratch = offset, bytes; 256-byte aligned, as the GPU kernels' own
// workspace was: the block [384, 832) holds it at 512), counted in the
// planned peak, and free again after it: the matmul's result takes those
// bytes. A GEMM in cuBLASLt's layouts needs none. rt.activation_bytes is the
// workspace the same values need without any scratch.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: rt.activation_bytes = 640 : i64, rt.arena_bytes = array<i64: 0, 0, 0, 320, 832, 0>, rt.planned_bytes = 1152
// CHECK: xf.gelu %arg0 {rt.buffers = [array<i64: 4, 0>]}
// CHECK: xf.layernorm_grad {{.*}}{rt.buffers = [array<i64: 4, 128>, array<i64: 4, 256>, array<i64: 4, 320>], rt.scratch = array<i64: 512, 256>}
// CHECK: xf.transpose {{.*}}{rt.buffers = [array<i64: 4, 0>]}
// CHECK: xf.matmul {{.*}}{rt.buffers = [array<i64: 4, 384>]}
// CHECK-NEXT: return
func.func @chain(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) -> (tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %a = xf.gelu %dy : tensor<4x8xf32>
  %dx, %dg, %db = xf.layernorm_grad %a, %x, %g epsilon = 1.0e-5 : tensor<4x8xf32>, tensor<8xf32>
  %t = xf.transpose %dx [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %w = xf.matmul "ik,kj->ij" %t, %dx : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  return %w, %dg, %db : tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The collectives' staging is placed after the values (two phases): it takes
// the lowest bytes free of every value held while it is (from the input's
// producer to the output's first reader), and never pushes a value up. The
// all-gather on the inner axis stages its 256-byte result (two 128-byte
// blocks): the gathered value takes the lowest free bytes (128) and the
// staging goes above the values held over its ops ([384, 832), 256-byte
// aligned at 512). Placed first, the staging had taken [128, 576) and pushed
// the gathered value to 576.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: rt.activation_bytes = 384 : i64, rt.arena_bytes = array<i64: 0, 0, 0, 128, 832, 0>
// CHECK: xf.gelu %arg0 {rt.buffers = [array<i64: 4, 0>]}
// CHECK: shard.all_gather {{.*}} {rt.buffers = [array<i64: 4, 128>], rt.scratch = array<i64: 512, 256>}
// CHECK: xf.gelu %{{.*}} {rt.buffers = [array<i64: 4, 128>]}
module {
  shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
  func.func @chain(%x: tensor<2x2x8xf32>) -> tensor<2x4x8xf32> attributes {xf.grid = @mesh} {
    %a = xf.gelu %x : tensor<2x2x8xf32>
    %g = shard.all_gather %a on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x2x8xf32> -> tensor<2x4x8xf32>
    %b = xf.gelu %g : tensor<2x4x8xf32>
    return %b : tensor<2x4x8xf32>
  }
}
