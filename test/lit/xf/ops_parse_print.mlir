// RUN: shardc-opt %s | FileCheck %s
// RUN: shardc-opt %s | shardc-opt | FileCheck %s
// RUN: shardc-opt %s -mlir-print-op-generic | shardc-opt | FileCheck %s

// Every xf op round-trips through the textual format, custom and generic.

// CHECK-LABEL: func.func @embedding_iota
// CHECK-SAME: {xf.input = "tokens"}
// CHECK-SAME: {xf.param = #xf.param<name = "transformer.wte.weight", role = embedding, init = normal, std = 2.000000e-02>}
// CHECK: xf.embedding %{{.*}}, %{{.*}} : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
// CHECK: xf.iota dim = 1 : tensor<2x8xi32>
func.func @embedding_iota(%tokens: tensor<2x8xi32> {xf.input = "tokens"},
    %wte: tensor<64x16xf32> {xf.param = #xf.param<name = "transformer.wte.weight", role = embedding, init = normal, std = 0.02>})
    -> (tensor<2x8x16xf32>, tensor<2x8xi32>) {
  %0 = xf.embedding %wte, %tokens : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
  %1 = xf.iota dim = 1 : tensor<2x8xi32>
  return %0, %1 : tensor<2x8x16xf32>, tensor<2x8xi32>
}

// CHECK-LABEL: func.func @params
// CHECK-SAME: role = weight, init = normal
// CHECK-SAME: role = bias, init = zeros
// CHECK-SAME: role = norm_scale, init = ones
func.func @params(
    %w: tensor<16x48xf32> {xf.param = #xf.param<name = "w", role = weight, init = normal, std = 0.02>},
    %b: tensor<48xf32> {xf.param = #xf.param<name = "b", role = bias, init = zeros>},
    %g: tensor<16xf32> {xf.param = #xf.param<name = "g", role = norm_scale, init = ones>}) {
  return
}

// CHECK-LABEL: func.func @contractions
// CHECK: xf.matmul "bsh,hk->bsk" %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<16x48xf32> -> tensor<2x8x48xf32>
// CHECK: xf.matmul "bsh,vh->bsv" %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
// CHECK: xf.matmul "bhqd,bhkd->bhqk" %{{.*}}, %{{.*}} : tensor<2x4x8x4xbf16>, tensor<2x4x8x4xbf16> -> tensor<2x4x8x8xf32>
func.func @contractions(%x: tensor<2x8x16xf32>, %w: tensor<16x48xf32>, %e: tensor<64x16xf32>,
    %q: tensor<2x4x8x4xbf16>, %k: tensor<2x4x8x4xbf16>)
    -> (tensor<2x8x48xf32>, tensor<2x8x64xf32>, tensor<2x4x8x8xf32>) {
  %0 = xf.matmul "bsh,hk->bsk" %x, %w : tensor<2x8x16xf32>, tensor<16x48xf32> -> tensor<2x8x48xf32>
  %1 = xf.matmul "bsh,vh->bsv" %x, %e : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
  %2 = xf.matmul "bhqd,bhkd->bhqk" %q, %k : tensor<2x4x8x4xbf16>, tensor<2x4x8x4xbf16> -> tensor<2x4x8x8xf32>
  return %0, %1, %2 : tensor<2x8x48xf32>, tensor<2x8x64xf32>, tensor<2x4x8x8xf32>
}

// A narrower operand: the add widens it (printed with all three types).
// CHECK-LABEL: func.func @mixed_add
// CHECK: xf.add %arg0, %arg1 : tensor<2x8xf32>, tensor<2x8xbf16> -> tensor<2x8xf32>
// CHECK: xf.add %arg1, %arg0 : tensor<2x8xbf16>, tensor<2x8xf32> -> tensor<2x8xf32>
func.func @mixed_add(%x: tensor<2x8xf32>, %y: tensor<2x8xbf16>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = xf.add %x, %y : tensor<2x8xf32>, tensor<2x8xbf16> -> tensor<2x8xf32>
  %1 = xf.add %y, %x : tensor<2x8xbf16>, tensor<2x8xf32> -> tensor<2x8xf32>
  return %0, %1 : tensor<2x8xf32>, tensor<2x8xf32>
}

// CHECK-LABEL: func.func @elementwise
// CHECK: xf.bias_add %{{.*}}, %{{.*}} : tensor<2x8x16xf16>, tensor<16xf16>
// CHECK: xf.add %{{.*}}, %{{.*}} : tensor<2x8x16xf16>
// CHECK: xf.gelu %{{.*}} : tensor<2x8x16xf16>
// CHECK: xf.swiglu %{{.*}}, %{{.*}} : tensor<2x8x16xf16>
// CHECK: xf.softmax %{{.*}} : tensor<2x8x16xf16>
// CHECK: xf.dropout %{{.*}} rate = 1.000000e-01 key = 7 : tensor<2x8x16xf16>
func.func @elementwise(%x: tensor<2x8x16xf16>, %b: tensor<16xf16>) -> tensor<2x8x16xf16> {
  %0 = xf.bias_add %x, %b : tensor<2x8x16xf16>, tensor<16xf16>
  %1 = xf.add %0, %x : tensor<2x8x16xf16>
  %2 = xf.gelu %1 : tensor<2x8x16xf16>
  %3 = xf.swiglu %2, %1 : tensor<2x8x16xf16>
  %4 = xf.softmax %3 : tensor<2x8x16xf16>
  %5 = xf.dropout %4 rate = 0.1 key = 7 : tensor<2x8x16xf16>
  return %5 : tensor<2x8x16xf16>
}

// CHECK-LABEL: func.func @norms
// CHECK: xf.layernorm %{{.*}}, %{{.*}}, %{{.*}} epsilon = 1.000000e-05 : tensor<2x8x16xbf16>, tensor<16xbf16>, tensor<16xbf16>
// CHECK: xf.rmsnorm %{{.*}}, %{{.*}} epsilon = 9.9999999999999995E-7 : tensor<2x8x16xbf16>, tensor<16xbf16>
func.func @norms(%x: tensor<2x8x16xbf16>, %g: tensor<16xbf16>, %b: tensor<16xbf16>) -> tensor<2x8x16xbf16> {
  %0 = xf.layernorm %x, %g, %b epsilon = 1.0e-5 : tensor<2x8x16xbf16>, tensor<16xbf16>, tensor<16xbf16>
  %1 = xf.rmsnorm %0, %g epsilon = 1.0e-6 : tensor<2x8x16xbf16>, tensor<16xbf16>
  return %1 : tensor<2x8x16xbf16>
}

// A norm storing its result in another float type: the type after `->`, and
// its gradient's dy type after `dy`; both omitted when equal to x's.
// CHECK-LABEL: func.func @norms_storage
// CHECK: xf.layernorm %{{.*}} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
// CHECK: xf.rmsnorm %{{.*}} : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf16>
// CHECK: xf.layernorm_grad %{{.*}} : tensor<2x8x16xf32>, tensor<16xf32> dy tensor<2x8x16xbf16>
// CHECK: xf.rmsnorm_grad %{{.*}} : tensor<2x8x16xf32>, tensor<16xf32>{{$}}
func.func @norms_storage(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %0 = xf.layernorm %x, %g, %b epsilon = 1.0e-5 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
  %1 = xf.rmsnorm %x, %g epsilon = 1.0e-6 : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf16>
  %2:3 = xf.layernorm_grad %0, %x, %g epsilon = 1.0e-5 : tensor<2x8x16xf32>, tensor<16xf32> dy tensor<2x8x16xbf16>
  %3:2 = xf.rmsnorm_grad %2#0, %x, %g epsilon = 1.0e-6 : tensor<2x8x16xf32>, tensor<16xf32>
  return %3#0 : tensor<2x8x16xf32>
}

// The residual gradient added as dx is written (`plus`).
// CHECK-LABEL: func.func @norm_grads_plus
// CHECK: xf.layernorm_grad %arg0, %arg1, %arg2 plus %arg3 : tensor<2x8x16xf32> epsilon = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32> dy tensor<2x8x16xbf16>
// CHECK: xf.rmsnorm_grad %{{.*}}, %arg1, %arg2 plus %arg3 : tensor<2x8x16xf32> epsilon = {{.*}} : tensor<2x8x16xf32>, tensor<16xf32>{{$}}
func.func @norm_grads_plus(%dy: tensor<2x8x16xbf16>, %x: tensor<2x8x16xf32>, %g: tensor<16xf32>,
                           %r: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %0:3 = xf.layernorm_grad %dy, %x, %g plus %r : tensor<2x8x16xf32> epsilon = 1.0e-5 : tensor<2x8x16xf32>, tensor<16xf32> dy tensor<2x8x16xbf16>
  %1:2 = xf.rmsnorm_grad %0#0, %x, %g plus %r : tensor<2x8x16xf32> epsilon = 1.0e-6 : tensor<2x8x16xf32>, tensor<16xf32>
  return %1#0 : tensor<2x8x16xf32>
}

// CHECK-LABEL: func.func @attention
// CHECK: xf.rope %{{.*}} theta = 1.000000e+04 : tensor<2x8x4x8xf32>
// CHECK: xf.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale = 0.35355339059327373 : tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
// CHECK: xf.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 1.250000e-01 : tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
func.func @attention(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x8xf32>)
    -> (tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>) {
  %qr = xf.rope %q theta = 10000.0 : tensor<2x8x4x8xf32>
  %0 = xf.attention %qr, %k, %v causal scale = 0.35355339059327373 : tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
  %1 = xf.attention %q, %k, %v scale = 0.125 : tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
  return %0, %1 : tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>
}

// CHECK-LABEL: func.func @packed
// CHECK: xf.concat %{{.*}}, %{{.*}}, %{{.*}} dim = 2 : tensor<16x2x2x8xf32>, tensor<16x2x1x8xf32>, tensor<16x2x1x8xf32> -> tensor<16x2x4x8xf32>
// CHECK: xf.split %{{.*}} dim = 2 : tensor<16x2x4x8xf32> -> tensor<16x2x2x8xf32>, tensor<16x2x2x8xf32>
// CHECK: xf.packed_attention %{{.*}} causal scale = 1.250000e-01 : tensor<2x8x2x4x8xf32> -> tensor<2x8x4x8xf32>
// CHECK: xf.packed_attention_grad %{{.*}}, %{{.*}}, %{{.*}} scale = 1.250000e-01 : tensor<2x8x4x8xf32>, tensor<2x8x2x4x8xf32>
func.func @packed(%q: tensor<16x2x2x8xf32>, %k: tensor<16x2x1x8xf32>, %qkv: tensor<2x8x2x4x8xf32>,
                  %dout: tensor<2x8x4x8xf32>)
    -> (tensor<16x2x2x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x2x4x8xf32>) {
  %w = xf.concat %q, %k, %k dim = 2 : tensor<16x2x2x8xf32>, tensor<16x2x1x8xf32>, tensor<16x2x1x8xf32> -> tensor<16x2x4x8xf32>
  %a:2 = xf.split %w dim = 2 : tensor<16x2x4x8xf32> -> tensor<16x2x2x8xf32>, tensor<16x2x2x8xf32>
  %o = xf.packed_attention %qkv causal scale = 0.125 : tensor<2x8x2x4x8xf32> -> tensor<2x8x4x8xf32>
  %d = xf.packed_attention_grad %dout, %qkv, %o scale = 0.125 : tensor<2x8x4x8xf32>, tensor<2x8x2x4x8xf32>
  return %a#1, %o, %d : tensor<16x2x2x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x2x4x8xf32>
}

// CHECK-LABEL: func.func @shapes
// CHECK: xf.reshape %{{.*}} : tensor<2x8x32xf32> -> tensor<2x8x4x8xf32>
// CHECK: xf.transpose %{{.*}} [0, 2, 1, 3] : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
// CHECK: xf.cast %{{.*}} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
// CHECK: xf.reshape %{{.*}} : tensor<2x8xi32> -> tensor<16xi32>
func.func @shapes(%x: tensor<2x8x32xf32>, %ids: tensor<2x8xi32>) -> (tensor<2x4x8x8xbf16>, tensor<16xi32>) {
  %0 = xf.reshape %x : tensor<2x8x32xf32> -> tensor<2x8x4x8xf32>
  %1 = xf.transpose %0 [0, 2, 1, 3] : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
  %2 = xf.cast %1 : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
  %3 = xf.reshape %ids : tensor<2x8xi32> -> tensor<16xi32>
  return %2, %3 : tensor<2x4x8x8xbf16>, tensor<16xi32>
}

// CHECK-LABEL: func.func @losses
// CHECK: xf.cross_entropy %{{.*}}, %{{.*}} ignore_index = -100 : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<f32>
// CHECK: xf.cross_entropy %{{.*}}, %{{.*}} mask %{{.*}} ignore_index = -1 : tensor<2x8x64xf32>, tensor<2x8xi32>, tensor<2x8xf32> -> tensor<f32>
// CHECK: xf.linear_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} vocab_major ignore_index = -100 : tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<2x8xi32> -> tensor<f32>
// CHECK: xf.linear_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} ignore_index = -100 : tensor<2x8x16xf64>, tensor<16x64xf64>, tensor<2x8xi32>, tensor<2x8xf64> -> tensor<f64>
// CHECK: xf.cross_entropy %{{.*}}, %{{.*}} ignore_index = -100 classes = 50 : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<f32>
// CHECK: xf.linear_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} vocab_major ignore_index = -100 classes = 64 : tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<2x8xi32> -> tensor<f32>
// CHECK: xf.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore_index = -100 classes = 60 : tensor<f32>, tensor<2x8x64xf32>, tensor<2x8xi32>
func.func @losses(%l: tensor<2x8x64xf32>, %t: tensor<2x8xi32>, %m: tensor<2x8xf32>,
    %x: tensor<2x8x16xf32>, %e: tensor<64x16xf32>,
    %xd: tensor<2x8x16xf64>, %wd: tensor<16x64xf64>, %md: tensor<2x8xf64>)
    -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f64>) {
  %0 = xf.cross_entropy %l, %t ignore_index = -100 : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<f32>
  %1 = xf.cross_entropy %l, %t mask %m ignore_index = -1 : tensor<2x8x64xf32>, tensor<2x8xi32>, tensor<2x8xf32> -> tensor<f32>
  %2 = xf.linear_cross_entropy %x, %e, %t vocab_major ignore_index = -100 : tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<2x8xi32> -> tensor<f32>
  %3 = xf.linear_cross_entropy %xd, %wd, %t mask %md ignore_index = -100 : tensor<2x8x16xf64>, tensor<16x64xf64>, tensor<2x8xi32>, tensor<2x8xf64> -> tensor<f64>
  // A padded vocabulary: the columns from `classes` on are no classes.
  %4 = xf.cross_entropy %l, %t ignore_index = -100 classes = 50 : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<f32>
  %5 = xf.linear_cross_entropy %x, %e, %t vocab_major ignore_index = -100 classes = 64 : tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<2x8xi32> -> tensor<f32>
  %6 = xf.cross_entropy_grad %0, %l, %t ignore_index = -100 classes = 60 : tensor<f32>, tensor<2x8x64xf32>, tensor<2x8xi32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f64>
}

// xf.multi_adamw: gradients in a narrower float than their parameters (read
// as they were reduced in bf16) are listed after `grads`; otherwise nothing.
// CHECK-LABEL: func.func @multi_adamw
// CHECK: xf.multi_adamw params(%{{.*}}, %{{.*}}) grads(%{{.*}}, %{{.*}}) {{.*}} copies = [] : tensor<4x8xf32>, tensor<8xf32>
// CHECK: xf.multi_adamw params(%{{.*}}, %{{.*}}) grads(%{{.*}}, %{{.*}}) {{.*}} copies = [0] : tensor<4x8xf32>, tensor<8xf32> grads tensor<4x8xbf16>, tensor<8xf32> -> tensor<4x8xbf16>
func.func @multi_adamw(%p0: tensor<4x8xf32>, %p1: tensor<8xf32>, %g0: tensor<4x8xf32>, %b0: tensor<4x8xbf16>,
                       %lr: tensor<f32>, %gs: tensor<f32>, %step: tensor<i32>) {
  %p:2, %m:2, %v:2 = xf.multi_adamw params(%p0, %p1) grads(%g0, %p1) m(%p0, %p1) v(%p0, %p1) lr %lr grad_scale %gs step %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 1.000000e-01 decay = [1, 0] copies = [] : tensor<4x8xf32>, tensor<8xf32>
  %q:2, %n:2, %w:2, %c = xf.multi_adamw params(%p0, %p1) grads(%b0, %p1) m(%p0, %p1) v(%p0, %p1) lr %lr grad_scale %gs step %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 1.000000e-01 decay = [1, 0] copies = [0] : tensor<4x8xf32>, tensor<8xf32> grads tensor<4x8xbf16>, tensor<8xf32> -> tensor<4x8xbf16>
  return
}
