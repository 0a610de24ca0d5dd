// -xf-mixed-precision: matmuls and attention read bf16 copies; one cast per
// value; matmul results stay f32, attention results are cast back.
// RUN: shardc-opt %s -xf-mixed-precision | FileCheck %s
// RUN: shardc-opt %s -xf-mixed-precision=compute=f16 | FileCheck %s --check-prefix=F16
// RUN: shardc-opt %s -xf-mixed-precision -xf-autodiff | FileCheck %s --check-prefix=GRAD

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

func.func @forward(%x: tensor<2x4x8xf32>, %w: tensor<8x24xf32> {xf.param = #xf.param<name = "w", role = weight, init = normal, std = 2.000000e-02>},
                   %t: tensor<2x4x6xi32> {xf.input = "targets"}) -> tensor<f32> {
  %qkv = xf.matmul "bsh,hk->bsk" %x, %w : tensor<2x4x8xf32>, tensor<8x24xf32> -> tensor<2x4x24xf32>
  %r = xf.reshape %qkv : tensor<2x4x24xf32> -> tensor<2x4x6x4xf32>
  %a = xf.attention %r, %r, %r causal scale = 5.000000e-01 : tensor<2x4x6x4xf32>, tensor<2x4x6x4xf32>, tensor<2x4x6x4xf32>
  %l = xf.cross_entropy %a, %t ignore_index = -100 : tensor<2x4x6x4xf32>, tensor<2x4x6xi32> -> tensor<f32>
  return %l : tensor<f32>
}
