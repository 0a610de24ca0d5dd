// -example-split-factor, loaded into the installed shardc-opt as a plugin
// (%shardc-opt: lit.cfg.py). The IR, the remarks, another axis, an error.
// RUN: %shardc-opt %s --pass-pipeline='builtin.module(example-split-factor{axis=dp})' 2>/dev/null | FileCheck %s
// RUN: %shardc-opt %s --pass-pipeline='builtin.module(example-split-factor{axis=dp})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: %shardc-opt %s --pass-pipeline='builtin.module(example-split-factor{axis=tp})' 2>/dev/null | FileCheck %s --check-prefix=TP
// RUN: not %shardc-opt %s --pass-pipeline='builtin.module(example-split-factor{axis=pp})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR

// ERR: :[[@LINE+1]]:1: error: example-split-factor: the mesh dp=4,tp=2 has no axis 'pp'
shard.grid @mesh(shape = 4x2) {xf.axis_names = ["dp", "tp"]}

// Data parallel: every op splits its batch (factor 0 of each rule).
// CHECK-LABEL: func.func @mlp
// CHECK: xf.matmul "bh,ho->bo" {{.*}} {example.split = {factor = 0 : i64, kind = "parallel", size = 8 : i64}}
// CHECK: xf.gelu {{.*}} {example.split = {factor = 0 : i64, kind = "parallel", size = 8 : i64}}
// CHECK: xf.matmul "bo,oh->bh" {{.*}} {example.split = {factor = 0 : i64, kind = "parallel", size = 8 : i64}}
// TP-LABEL: func.func @mlp
// TP-COUNT-3: {example.split = {factor = 0 : i64, kind = "parallel", size = 8 : i64}}
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x64xf32>, %w2: tensor<64x16xf32>) -> tensor<8x16xf32> {
  %h = xf.matmul "bh,ho->bo" %x, %w1 : tensor<8x16xf32>, tensor<16x64xf32> -> tensor<8x64xf32>
  // REMARK: :[[@LINE-1]]:8: remark: split factor 0 (parallel, size 8) over 'dp' (4 devices) of "bh,ho->bo"
  %g = xf.gelu %h : tensor<8x64xf32>
  // REMARK: :[[@LINE-1]]:8: remark: split factor 0 (parallel, size 8) over 'dp' (4 devices)
  %y = xf.matmul "bo,oh->bh" %g, %w2 : tensor<8x64xf32>, tensor<64x16xf32> -> tensor<8x16xf32>
  // REMARK: :[[@LINE-1]]:8: remark: split factor 0 (parallel, size 8) over 'dp' (4 devices) of "bo,oh->bh"
  return %y : tensor<8x16xf32>
}
// REMARK: remark: example-split-factor: 3 of 3 ops split over 'dp'; xf.matmul: 2 of 2

// A batch of 2 over 4 devices: the matmul falls back to its contraction (a
// partial sum), softmax has no factor left (its rows are 3, its last dim is
// Replicated), the reshape splits the heads it creates (major-most), not the
// head dim (minor: never split).
// CHECK-LABEL: func.func @small
// CHECK: xf.matmul {{.*}} {example.split = {factor = 1 : i64, kind = "reduction", size = 16 : i64}}
// CHECK: xf.softmax %{{[a-z0-9]+}} : tensor<3x5xf32>
// CHECK: xf.reshape {{.*}} {example.split = {factor = 1 : i64, kind = "parallel", size = 4 : i64}}
// Over tp (2 devices) the batch of 2 splits again.
// TP-LABEL: func.func @small
// TP: xf.matmul {{.*}} {example.split = {factor = 0 : i64, kind = "parallel", size = 2 : i64}}
// TP: xf.softmax %{{[a-z0-9]+}} : tensor<3x5xf32>
// TP: xf.reshape {{.*}} {example.split = {factor = 0 : i64, kind = "parallel", size = 2 : i64}}
func.func @small(%x: tensor<2x16xf32>, %w: tensor<16x6xf32>, %z: tensor<3x5xf32>, %v: tensor<2x64xf32>)
    -> (tensor<2x6xf32>, tensor<3x5xf32>, tensor<2x4x16xf32>) {
  %y = xf.matmul "bh,ho->bo" %x, %w : tensor<2x16xf32>, tensor<16x6xf32> -> tensor<2x6xf32>
  // REMARK: :[[@LINE-1]]:8: remark: split factor 1 (reduction, size 16) over 'dp' (4 devices) of "bh,ho->bo"; the results become partial sums
  %s = xf.softmax %z : tensor<3x5xf32>
  // REMARK: :[[@LINE-1]]:8: remark: no factor splits evenly over 'dp' (4 devices): stays replicated
  %r = xf.reshape %v : tensor<2x64xf32> -> tensor<2x4x16xf32>
  // REMARK: :[[@LINE-1]]:8: remark: split factor 1 (parallel, size 4) over 'dp' (4 devices)
  return %y, %s, %r : tensor<2x6xf32>, tensor<3x5xf32>, tensor<2x4x16xf32>
}
// REMARK: remark: example-split-factor: 2 of 3 ops split over 'dp'; xf.matmul: 1 of 1
