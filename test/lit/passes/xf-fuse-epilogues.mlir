// RUN: shardc-opt %s -split-input-file -xf-fuse-epilogues | FileCheck %s

// An MLP's forward and backward in bf16, as -xf-mixed-precision and
// -xf-autodiff write it: c_fc's bias and GELU, c_proj's bias, the dGELU of
// the gradient GEMM, the weight gradients with their bias gradients, and
// the widening of the gradients to their f32 masters.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[H:.*]], %[[PRE:.*]] = xf.matmul_bias_gelu "bsh,ho->bso" %arg0, %arg1, %arg2 {xf.stage = 0 : i64} : tensor<2x4x8xbf16>, tensor<8x16xbf16>, tensor<16xbf16> -> tensor<2x4x16xbf16>, tensor<2x4x16xbf16>
// CHECK: %[[Y:.*]] = xf.matmul_bias "bsh,ho->bso" %[[H]], %arg3, %arg4 {{.*}}-> tensor<2x4x8xbf16>
// CHECK: %[[DW2:.*]], %[[DB2:.*]] = xf.matmul_bgrad "bsh,bso->ho" %[[H]], %arg5 {{.*}}-> tensor<16x8xf32>, tensor<8xf32>
// CHECK: %[[DPRE:.*]] = xf.matmul_dgelu "bso,ho->bsh" %arg5, %arg3, %[[PRE]]
// CHECK: %[[DW1:.*]], %[[DB1:.*]] = xf.matmul_bgrad "bsh,bso->ho" %arg0, %[[DPRE]] {{.*}}-> tensor<8x16xf32>, tensor<16xf32>
// CHECK-NOT: xf.cast
// CHECK-NOT: xf.reduce_sum
// CHECK-NOT: xf.gelu
// CHECK: return %[[Y]], %[[DW1]], %[[DB1]], %[[DW2]], %[[DB2]]
func.func @train_step(%x: tensor<2x4x8xbf16>, %w1: tensor<8x16xbf16>, %b1: tensor<16xbf16>,
                      %w2: tensor<16x8xbf16>, %b2: tensor<8xbf16>, %dy: tensor<2x4x8xbf16>)
    -> (tensor<2x4x8xbf16>, tensor<8x16xf32>, tensor<16xf32>, tensor<16x8xf32>, tensor<8xf32>) {
  %0 = xf.matmul "bsh,ho->bso" %x, %w1 {xf.stage = 0 : i64} : tensor<2x4x8xbf16>, tensor<8x16xbf16> -> tensor<2x4x16xbf16>
  %1 = xf.bias_add %0, %b1 : tensor<2x4x16xbf16>, tensor<16xbf16>
  %2 = xf.gelu %1 : tensor<2x4x16xbf16>
  %3 = xf.matmul "bsh,ho->bso" %2, %w2 : tensor<2x4x16xbf16>, tensor<16x8xbf16> -> tensor<2x4x8xbf16>
  %4 = xf.bias_add %3, %b2 : tensor<2x4x8xbf16>, tensor<8xbf16>
  %db2 = xf.reduce_sum %dy dims = [0, 1] : tensor<2x4x8xbf16> -> tensor<8xbf16>
  %5 = xf.matmul "bso,ho->bsh" %dy, %w2 : tensor<2x4x8xbf16>, tensor<16x8xbf16> -> tensor<2x4x16xbf16>
  %dw2 = xf.matmul "bsh,bso->ho" %2, %dy : tensor<2x4x16xbf16>, tensor<2x4x8xbf16> -> tensor<16x8xbf16>
  %6 = xf.gelu_grad %5, %1 : tensor<2x4x16xbf16>
  %db1 = xf.reduce_sum %6 dims = [0, 1] : tensor<2x4x16xbf16> -> tensor<16xbf16>
  %dw1 = xf.matmul "bsh,bso->ho" %x, %6 : tensor<2x4x8xbf16>, tensor<2x4x16xbf16> -> tensor<8x16xbf16>
  %c1 = xf.cast %dw1 : tensor<8x16xbf16> -> tensor<8x16xf32>
  %c2 = xf.cast %db1 : tensor<16xbf16> -> tensor<16xf32>
  %c3 = xf.cast %dw2 : tensor<16x8xbf16> -> tensor<16x8xf32>
  %c4 = xf.cast %db2 : tensor<8xbf16> -> tensor<8xf32>
  return %4, %c1, %c2, %c3, %c4 : tensor<2x4x8xbf16>, tensor<8x16xf32>, tensor<16xf32>, tensor<16x8xf32>, tensor<8xf32>
}

// -----

// Left alone: a product read twice, a row-parallel sum between the GEMM and
// its bias, a reduce_sum over other dims than the GEMM contracts.
shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
// CHECK-LABEL: func.func @apart
// CHECK: xf.matmul "bsh,ho->bso" %arg0, %arg1
// CHECK: xf.bias_add
// CHECK: xf.matmul "bsh,ho->bso" %arg0, %arg1
// CHECK: shard.all_reduce
// CHECK: xf.bias_add
// CHECK: xf.reduce_sum %arg3 dims = [0]
// CHECK: xf.matmul "bsh,bso->ho"
// CHECK-NOT: xf.matmul_
func.func @apart(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %dy: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>) attributes {xf.grid = @mesh} {
  %0 = xf.matmul "bsh,ho->bso" %x, %w : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %1 = xf.bias_add %0, %b : tensor<2x4x8xf32>, tensor<8xf32>
  %2 = xf.matmul "bsh,ho->bso" %x, %w : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %3 = shard.all_reduce %2 on @mesh grid_axes = [0] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %4 = xf.bias_add %3, %b : tensor<2x4x8xf32>, tensor<8xf32>
  %5 = xf.reduce_sum %dy dims = [0] : tensor<2x4x8xf32> -> tensor<4x8xf32>
  %6 = xf.matmul "bsh,bso->ho" %x, %dy : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<8x8xf32>
  return %0, %1, %4, %5, %6 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>
}

// -----

// The residual stream in f32, the branch in bf16: the widening cast folds
// into the add (either operand); a cast that something else also reads
// stays for that reader; a narrowing cast and an f32 -> f64 widening do not
// fold.
// CHECK-LABEL: func.func @residual_adds
// CHECK: %[[A:.*]] = xf.add %arg0, %arg1 : tensor<2x4x8xf32>, tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK: %[[B:.*]] = xf.add %arg2, %[[A]] : tensor<2x4x8xf16>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK: %[[W:.*]] = xf.cast %arg1 : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK: %[[C:.*]] = xf.add %[[B]], %arg1 : tensor<2x4x8xf32>, tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK: %[[N:.*]] = xf.cast %[[C]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK: %[[D:.*]] = xf.add %[[N]], %arg1 : tensor<2x4x8xbf16>
// CHECK: %[[E:.*]] = xf.cast %[[C]] : tensor<2x4x8xf32> -> tensor<2x4x8xf64>
// CHECK: %[[F:.*]] = xf.add %arg3, %[[E]] : tensor<2x4x8xf64>
// CHECK: return %[[C]], %[[W]], %[[D]], %[[F]]
func.func @residual_adds(%x: tensor<2x4x8xf32>, %y: tensor<2x4x8xbf16>, %z: tensor<2x4x8xf16>,
                         %g: tensor<2x4x8xf64>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4x8xf64>) {
  %0 = xf.cast %y : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
  %1 = xf.add %x, %0 : tensor<2x4x8xf32>
  %2 = xf.cast %z : tensor<2x4x8xf16> -> tensor<2x4x8xf32>
  %3 = xf.add %2, %1 : tensor<2x4x8xf32>
  %4 = xf.cast %y : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
  %5 = xf.add %3, %4 : tensor<2x4x8xf32>
  %6 = xf.cast %5 : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  %7 = xf.add %6, %y : tensor<2x4x8xbf16>
  %8 = xf.cast %5 : tensor<2x4x8xf32> -> tensor<2x4x8xf64>
  %9 = xf.add %g, %8 : tensor<2x4x8xf64>
  return %5, %4, %7, %9 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4x8xf64>
}

// -----

// The residual stream's gradient joins a norm's input gradient in the norm's
// kernel: the first add folds (r on either side); the second does not (its
// dx is also returned), nor the third (its other operand is defined after
// the norm's gradient).
// CHECK-LABEL: func.func @residual_gradients
// CHECK: %[[G1:[a-z_0-9]+]], %{{.*}}, %{{.*}} = xf.layernorm_grad %arg0, %arg1, %arg2 plus %arg3 : tensor<2x4x8xf32> epsilon
// CHECK: %[[G2:[a-z_0-9]+]], %{{.*}} = xf.rmsnorm_grad %arg0, %arg1, %arg2 epsilon
// CHECK: %[[A2:.*]] = xf.add %[[G1]], %[[G2]]
// CHECK: %[[G3:[a-z_0-9]+]], %{{.*}}, %{{.*}} = xf.layernorm_grad %arg0, %arg1, %arg2 epsilon
// CHECK: %[[L:.*]] = xf.gelu %arg1
// CHECK: %[[A3:.*]] = xf.add %[[G3]], %[[L]]
// CHECK: return %[[A2]], %[[G2]], %[[A3]]
func.func @residual_gradients(%dy: tensor<2x4x8xbf16>, %x: tensor<2x4x8xf32>, %g: tensor<8xf32>,
                              %r: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %0:3 = xf.layernorm_grad %dy, %x, %g epsilon = 1.0e-5 : tensor<2x4x8xf32>, tensor<8xf32> dy tensor<2x4x8xbf16>
  %1 = xf.add %r, %0#0 : tensor<2x4x8xf32>
  %2:2 = xf.rmsnorm_grad %dy, %x, %g epsilon = 1.0e-6 : tensor<2x4x8xf32>, tensor<8xf32> dy tensor<2x4x8xbf16>
  %3 = xf.add %1, %2#0 : tensor<2x4x8xf32>
  %4:3 = xf.layernorm_grad %dy, %x, %g epsilon = 1.0e-5 : tensor<2x4x8xf32>, tensor<8xf32> dy tensor<2x4x8xbf16>
  %5 = xf.gelu %x : tensor<2x4x8xf32>
  %6 = xf.add %4#0, %5 : tensor<2x4x8xf32>
  return %3, %2#0, %6 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// A packed weight's gradient (-xf-fuse-qkv) reaches its f32 masters through
// reshapes and a split, each piece widened: the GEMM stores f32 and the views
// carry f32 (the casts go); the bias gradient's sum too. Not when a piece has
// another reader.
// CHECK-LABEL: func.func @packed_gradient
// CHECK: %[[W:.*]], %[[B:.*]] = xf.matmul_bgrad "bsh,bso->ho" %arg0, %arg1 : tensor<2x4x8xbf16>, tensor<2x4x24xbf16> -> tensor<8x24xf32>, tensor<24xf32>
// CHECK: xf.reshape %[[W]] : tensor<8x24xf32> -> tensor<8x1x3x8xf32>
// CHECK: xf.split {{.*}} : tensor<8x1x3x8xf32> -> tensor<8x1x1x8xf32>, tensor<8x1x1x8xf32>, tensor<8x1x1x8xf32>
// CHECK: xf.split {{.*}} : tensor<1x3x8xf32> -> tensor<1x1x8xf32>, tensor<1x1x8xf32>, tensor<1x1x8xf32>
// CHECK-NOT: xf.cast
// CHECK: return
func.func @packed_gradient(%x: tensor<2x4x8xbf16>, %dy: tensor<2x4x24xbf16>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dw = xf.matmul "bsh,bso->ho" %x, %dy : tensor<2x4x8xbf16>, tensor<2x4x24xbf16> -> tensor<8x24xbf16>
  %p = xf.reshape %dw : tensor<8x24xbf16> -> tensor<8x1x3x8xbf16>
  %s:3 = xf.split %p dim = 2 : tensor<8x1x3x8xbf16> -> tensor<8x1x1x8xbf16>, tensor<8x1x1x8xbf16>, tensor<8x1x1x8xbf16>
  %q = xf.reshape %s#0 : tensor<8x1x1x8xbf16> -> tensor<8x8xbf16>
  %k = xf.reshape %s#1 : tensor<8x1x1x8xbf16> -> tensor<8x8xbf16>
  %v = xf.reshape %s#2 : tensor<8x1x1x8xbf16> -> tensor<8x8xbf16>
  %qf = xf.cast %q : tensor<8x8xbf16> -> tensor<8x8xf32>
  %kf = xf.cast %k : tensor<8x8xbf16> -> tensor<8x8xf32>
  %vf = xf.cast %v : tensor<8x8xbf16> -> tensor<8x8xf32>
  %db = xf.reduce_sum %dy dims = [0, 1] : tensor<2x4x24xbf16> -> tensor<24xbf16>
  %pb = xf.reshape %db : tensor<24xbf16> -> tensor<1x3x8xbf16>
  %sb:3 = xf.split %pb dim = 1 : tensor<1x3x8xbf16> -> tensor<1x1x8xbf16>, tensor<1x1x8xbf16>, tensor<1x1x8xbf16>
  %bq = xf.reshape %sb#0 : tensor<1x1x8xbf16> -> tensor<8xbf16>
  %bk = xf.reshape %sb#1 : tensor<1x1x8xbf16> -> tensor<8xbf16>
  %bv = xf.reshape %sb#2 : tensor<1x1x8xbf16> -> tensor<8xbf16>
  %bqf = xf.cast %bq : tensor<8xbf16> -> tensor<8xf32>
  %bkf = xf.cast %bk : tensor<8xbf16> -> tensor<8xf32>
  %bvf = xf.cast %bv : tensor<8xbf16> -> tensor<8xf32>
  return %qf, %kf, %vf, %bqf, %bkf, %bvf : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @packed_gradient_read_narrow
// CHECK: xf.matmul "bsh,bso->ho" {{.*}} -> tensor<8x24xbf16>
// CHECK: xf.cast
func.func @packed_gradient_read_narrow(%x: tensor<2x4x8xbf16>, %dy: tensor<2x4x24xbf16>)
    -> (tensor<8x8xf32>, tensor<8x1x1x8xbf16>) {
  %dw = xf.matmul "bsh,bso->ho" %x, %dy : tensor<2x4x8xbf16>, tensor<2x4x24xbf16> -> tensor<8x24xbf16>
  %p = xf.reshape %dw : tensor<8x24xbf16> -> tensor<8x1x3x8xbf16>
  %s:3 = xf.split %p dim = 2 : tensor<8x1x3x8xbf16> -> tensor<8x1x1x8xbf16>, tensor<8x1x1x8xbf16>, tensor<8x1x1x8xbf16>
  %q = xf.reshape %s#0 : tensor<8x1x1x8xbf16> -> tensor<8x8xbf16>
  %qf = xf.cast %q : tensor<8x8xbf16> -> tensor<8x8xf32>
  return %qf, %s#1 : tensor<8x8xf32>, tensor<8x1x1x8xbf16>
}
