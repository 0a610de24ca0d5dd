// -xf-mixed-precision, activations=f32: matmuls and attention read bf16
// copies; one cast per value; matmul results stay f32, attention results are
// cast back.
// RUN: shardc-opt %s -xf-mixed-precision=activations=f32 | FileCheck %s
// RUN: shardc-opt %s -xf-mixed-precision="compute=f16 activations=f32" | FileCheck %s --check-prefix=F16
// RUN: shardc-opt %s -xf-mixed-precision=activations=f32 -xf-autodiff | FileCheck %s --check-prefix=GRAD
// The default (activations=compute, autocast's policy) on a pre-norm block:
// RUN: shardc-opt %s -xf-mixed-precision=function= | FileCheck %s --check-prefix=ACT
// RUN: shardc-opt %s -xf-mixed-precision=function=block -xf-autodiff=function=block | FileCheck %s --check-prefix=ACTGRAD
// The residual stream in bf16 too (residual=compute, Megatron-LM's default):
// RUN: shardc-opt %s -xf-mixed-precision="function=block residual=compute" | FileCheck %s --check-prefix=RES
// RUN: shardc-opt %s -xf-mixed-precision="function=block residual=compute" -xf-autodiff=function=block | FileCheck %s --check-prefix=RESGRAD
// RUN: not shardc-opt %s -xf-mixed-precision="activations=f32 residual=compute" 2>&1 | FileCheck %s --check-prefix=BADRES
// BADRES: error: -xf-mixed-precision: residual=compute needs activations=compute
// RUN: not shardc-opt %s -xf-mixed-precision=activations=bf8 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: -xf-mixed-precision: activations must be 'compute' or 'f32', got 'bf8'

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x8xf32>, %[[W:[^:]*]]: tensor<8x24xf32>
// CHECK: %[[WB:.*]] = xf.cast %[[W]] : tensor<8x24xf32> -> tensor<8x24xbf16>
// CHECK: %[[XB:.*]] = xf.cast %[[X]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK: %[[QKV:.*]] = xf.matmul "bsh,hk->bsk" %[[XB]], %[[WB]] : tensor<2x4x8xbf16>, tensor<8x24xbf16> -> tensor<2x4x24xf32>
// CHECK: %[[R:.*]] = xf.reshape %[[QKV]]
// CHECK: %[[RB:.*]] = xf.cast %[[R]] : tensor<2x4x6x4xf32> -> tensor<2x4x6x4xbf16>
// CHECK: %[[A:.*]] = xf.attention %[[RB]], %[[RB]], %[[RB]] causal {{.*}} : tensor<2x4x6x4xbf16>
// CHECK: %[[AF:.*]] = xf.cast %[[A]] : tensor<2x4x6x4xbf16> -> tensor<2x4x6x4xf32>
// CHECK: xf.cross_entropy %{{.*}} : tensor<2x4x6x4xf32>
// F16: xf.cast %{{.*}} : tensor<8x24xf32> -> tensor<8x24xf16>
// The parameter gradient comes back through the cast: f32.
// GRAD-LABEL: func.func @train_step(
// GRAD: %[[DWB:.*]] = xf.matmul "bsh,bsk->hk" {{.*}} : tensor<2x4x8xbf16>, tensor<2x4x24xbf16> -> tensor<8x24xbf16>
// GRAD: %[[DW:.*]] = xf.cast %[[DWB]] : tensor<8x24xbf16> -> tensor<8x24xf32>
// GRAD: return %{{.*}}, %[[DW]] : tensor<f32>, tensor<8x24xf32>

// The attention result stays bf16: the loss reads f32, so the one cast
// back is the loss's own.
// ACT-LABEL: func.func @forward(
// ACT: %[[Q:.*]] = xf.matmul {{.*}} -> tensor<2x4x24xbf16>
// ACT: %[[A:.*]] = xf.attention {{.*}} : tensor<2x4x6x4xbf16>, tensor<2x4x6x4xbf16>, tensor<2x4x6x4xbf16>
// ACT: %[[AF:.*]] = xf.cast %[[A]] : tensor<2x4x6x4xbf16> -> tensor<2x4x6x4xf32>
// ACT: xf.cross_entropy %[[AF]]

func.func @forward(%x: tensor<2x4x8xf32>, %w: tensor<8x24xf32> {xf.param = #xf.param<name = "w", role = weight, init = normal, std = 2.000000e-02>},
                   %t: tensor<2x4x6xi32> {xf.input = "targets"}) -> tensor<f32> {
  %qkv = xf.matmul "bsh,hk->bsk" %x, %w : tensor<2x4x8xf32>, tensor<8x24xf32> -> tensor<2x4x24xf32>
  %r = xf.reshape %qkv : tensor<2x4x24xf32> -> tensor<2x4x6x4xf32>
  %a = xf.attention %r, %r, %r causal scale = 5.000000e-01 : tensor<2x4x6x4xf32>, tensor<2x4x6x4xf32>, tensor<2x4x6x4xf32>
  %l = xf.cross_entropy %a, %t ignore_index = -100 : tensor<2x4x6x4xf32>, tensor<2x4x6xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// A pre-norm MLP block and the logits. The norm stores bf16 (its only
// readers are GEMMs); the GEMM result, the bias add (bias cast) and GELU stay
// bf16; the residual add widens the branch to f32; the logits stay f32 for
// the loss.
// ACT-LABEL: func.func @block(
// ACT-SAME: %[[X:[^:]*]]: tensor<2x4x8xf32>
// ACT-DAG: %[[W1:.*]] = xf.cast %{{.*}} : tensor<8x16xf32> -> tensor<8x16xbf16>
// ACT-DAG: %[[B1:.*]] = xf.cast %{{.*}} : tensor<16xf32> -> tensor<16xbf16>
// ACT: %[[H:.*]] = xf.layernorm %[[X]], {{.*}} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xbf16>
// ACT-NOT: xf.cast %[[H]]
// ACT: %[[U:.*]] = xf.matmul "bsh,hk->bsk" %[[H]], %[[W1]] : tensor<2x4x8xbf16>, tensor<8x16xbf16> -> tensor<2x4x16xbf16>
// ACT: %[[UB:.*]] = xf.bias_add %[[U]], %[[B1]] : tensor<2x4x16xbf16>, tensor<16xbf16>
// ACT: %[[G:.*]] = xf.gelu %[[UB]] : tensor<2x4x16xbf16>
// ACT: %[[D:.*]] = xf.matmul "bsk,kh->bsh" %[[G]], %{{.*}} : tensor<2x4x16xbf16>, tensor<16x8xbf16> -> tensor<2x4x8xbf16>
// ACT: %[[DF:.*]] = xf.cast %[[D]] : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// ACT: %[[Y:.*]] = xf.add %[[X]], %[[DF]] : tensor<2x4x8xf32>
// ACT: %[[N:.*]] = xf.layernorm %[[Y]], {{.*}} -> tensor<2x4x8xbf16>
// ACT: %[[L:.*]] = xf.matmul "bsh,vh->bsv" %[[N]], %{{.*}} : tensor<2x4x8xbf16>, tensor<32x8xbf16> -> tensor<2x4x32xf32>
// ACT: xf.cross_entropy %[[L]]

// residual=compute: the add narrows the f32 stream (the block input) once and
// stays bf16; the final norm reads bf16 with its scale and shift cast.
// RES-LABEL: func.func @block(
// RES-SAME: %[[X:[^:]*]]: tensor<2x4x8xf32>
// RES: %[[XB:.*]] = xf.cast %[[X]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// RES: %[[H:.*]] = xf.layernorm %[[X]], {{.*}} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xbf16>
// RES: %[[D:.*]] = xf.matmul "bsk,kh->bsh" {{.*}} -> tensor<2x4x8xbf16>
// RES: %[[Y:.*]] = xf.add %[[XB]], %[[D]] : tensor<2x4x8xbf16>
// RES: xf.layernorm %[[Y]], {{.*}} : tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>
// RES-NOT: -> tensor<2x4x8xf32>
// RES: xf.cross_entropy %{{.*}} : tensor<2x4x32xf32>
// RESGRAD-LABEL: func.func @train_step(
// RESGRAD: xf.layernorm_grad %{{.*}} : tensor<2x4x8xbf16>, tensor<8xbf16>
// RESGRAD: xf.layernorm_grad %{{.*}} : tensor<2x4x8xf32>, tensor<8xf32> dy tensor<2x4x8xbf16>

// Gradients have their value's type: the norm gradient reads a bf16 dy and
// returns an f32 dx; the residual add's gradient is cast to bf16 once for the
// branch; parameter gradients come back through their casts in f32.
// ACTGRAD-LABEL: func.func @train_step(
// ACTGRAD: xf.layernorm_grad %{{.*}} : tensor<2x4x8xf32>, tensor<8xf32> dy tensor<2x4x8xbf16>
// ACTGRAD: xf.cast %{{.*}} : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// ACTGRAD: xf.gelu_grad %{{.*}} : tensor<2x4x16xbf16>
// ACTGRAD: xf.reduce_sum %{{.*}} : tensor<2x4x16xbf16> -> tensor<16xbf16>
// ACTGRAD: xf.layernorm_grad %{{.*}} : tensor<2x4x8xf32>, tensor<8xf32> dy tensor<2x4x8xbf16>

func.func @block(%x: tensor<2x4x8xf32>,
                 %g1: tensor<8xf32> {xf.param = #xf.param<name = "g1", role = norm_scale, init = ones>},
                 %s1: tensor<8xf32> {xf.param = #xf.param<name = "s1", role = bias, init = zeros>},
                 %w1: tensor<8x16xf32> {xf.param = #xf.param<name = "w1", role = weight, init = normal, std = 2.000000e-02>},
                 %b1: tensor<16xf32> {xf.param = #xf.param<name = "b1", role = bias, init = zeros>},
                 %w2: tensor<16x8xf32> {xf.param = #xf.param<name = "w2", role = weight, init = normal, std = 2.000000e-02>},
                 %g2: tensor<8xf32> {xf.param = #xf.param<name = "g2", role = norm_scale, init = ones>},
                 %s2: tensor<8xf32> {xf.param = #xf.param<name = "s2", role = bias, init = zeros>},
                 %e: tensor<32x8xf32> {xf.param = #xf.param<name = "e", role = weight, init = normal, std = 2.000000e-02>},
                 %t: tensor<2x4xi32> {xf.input = "targets"}) -> tensor<f32> {
  %h = xf.layernorm %x, %g1, %s1 epsilon = 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %u = xf.matmul "bsh,hk->bsk" %h, %w1 : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  %ub = xf.bias_add %u, %b1 : tensor<2x4x16xf32>, tensor<16xf32>
  %gl = xf.gelu %ub : tensor<2x4x16xf32>
  %d = xf.matmul "bsk,kh->bsh" %gl, %w2 : tensor<2x4x16xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
  %y = xf.add %x, %d : tensor<2x4x8xf32>
  %n = xf.layernorm %y, %g2, %s2 epsilon = 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %l = xf.matmul "bsh,vh->bsv" %n, %e : tensor<2x4x8xf32>, tensor<32x8xf32> -> tensor<2x4x32xf32>
  %loss = xf.cross_entropy %l, %t ignore_index = -100 : tensor<2x4x32xf32>, tensor<2x4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// An add of two compute-type values (two GEMM branches) is no residual add:
// it runs on bf16 under either residual policy; the loss reads it widened.
// ACT-LABEL: func.func @branches(
// ACT: %[[A:.*]] = xf.matmul {{.*}} -> tensor<2x4x8xbf16>
// ACT: %[[B:.*]] = xf.matmul {{.*}} -> tensor<2x4x8xbf16>
// ACT: %[[S:.*]] = xf.add %[[A]], %[[B]] : tensor<2x4x8xbf16>
// ACT: %[[SF:.*]] = xf.cast %[[S]] : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// ACT: xf.cross_entropy %[[SF]]
func.func @branches(%x: tensor<2x4x8xf32>,
                    %w1: tensor<8x8xf32> {xf.param = #xf.param<name = "w1", role = weight, init = normal, std = 2.000000e-02>},
                    %w2: tensor<8x8xf32> {xf.param = #xf.param<name = "w2", role = weight, init = normal, std = 2.000000e-02>},
                    %t: tensor<2x4xi32> {xf.input = "targets"}) -> tensor<f32> {
  %a = xf.matmul "bsh,hk->bsk" %x, %w1 : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %b = xf.matmul "bsh,hk->bsk" %x, %w2 : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %s = xf.add %a, %b : tensor<2x4x8xf32>
  %loss = xf.cross_entropy %s, %t ignore_index = -100 : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
