// RUN: shardc-opt %s -split-input-file -xf-fuse-linear-cross-entropy | FileCheck %s

// Tied embedding ([vocab, hidden]): vocab_major.
// CHECK-LABEL: func.func @tied
// CHECK-NOT: xf.matmul
// CHECK: %[[L:.*]] = xf.linear_cross_entropy %arg0, %arg1, %arg2 vocab_major ignore_index = -100 : tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<2x8xi32> -> tensor<f32>
// CHECK: return %[[L]]
func.func @tied(%x: tensor<2x8x16xf32>, %wte: tensor<64x16xf32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %l = xf.matmul "bsh,vh->bsv" %x, %wte : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
  %loss = xf.cross_entropy %l, %t ignore_index = -100 : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A padded vocabulary: the fused op keeps `classes`, and so does its VJP.
// CHECK-LABEL: func.func @padded
// CHECK: xf.linear_cross_entropy %arg0, %arg1, %arg2 vocab_major ignore_index = -100 classes = 60 :
func.func @padded(%x: tensor<2x8x16xf32>, %wte: tensor<64x16xf32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %l = xf.matmul "bsh,vh->bsv" %x, %wte : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
  %loss = xf.cross_entropy %l, %t ignore_index = -100 classes = 60 : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// [hidden, vocab] weight with a mask: not vocab_major, mask kept.
// CHECK-LABEL: func.func @untied_mask
// CHECK: xf.linear_cross_entropy %arg0, %arg1, %arg2 mask %arg3 ignore_index = 0 : tensor<8x16xf32>, tensor<16x64xf32>, tensor<8xi32>, tensor<8xf32> -> tensor<f32>
func.func @untied_mask(%x: tensor<8x16xf32>, %w: tensor<16x64xf32>, %t: tensor<8xi32>, %m: tensor<8xf32>) -> tensor<f32> {
  %l = xf.matmul "th,hv->tv" %x, %w : tensor<8x16xf32>, tensor<16x64xf32> -> tensor<8x64xf32>
  %loss = xf.cross_entropy %l, %t mask %m ignore_index = 0 : tensor<8x64xf32>, tensor<8xi32>, tensor<8xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The logits have another user: no fusion.
// CHECK-LABEL: func.func @logits_used
// CHECK: xf.matmul
// CHECK: xf.cross_entropy
// CHECK-NOT: xf.linear_cross_entropy
func.func @logits_used(%x: tensor<8x16xf32>, %w: tensor<16x64xf32>, %t: tensor<8xi32>) -> (tensor<f32>, tensor<8x64xf32>) {
  %l = xf.matmul "th,hv->tv" %x, %w : tensor<8x16xf32>, tensor<16x64xf32> -> tensor<8x64xf32>
  %loss = xf.cross_entropy %l, %t ignore_index = -100 : tensor<8x64xf32>, tensor<8xi32> -> tensor<f32>
  return %loss, %l : tensor<f32>, tensor<8x64xf32>
}

// -----

// Token dimensions reordered by the matmul: no fusion.
// CHECK-LABEL: func.func @reordered
// CHECK: xf.matmul "bsh,vh->sbv"
// CHECK-NOT: xf.linear_cross_entropy
func.func @reordered(%x: tensor<2x8x16xf32>, %w: tensor<64x16xf32>, %t: tensor<8x2xi32>) -> tensor<f32> {
  %l = xf.matmul "bsh,vh->sbv" %x, %w : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<8x2x64xf32>
  %loss = xf.cross_entropy %l, %t ignore_index = -100 : tensor<8x2x64xf32>, tensor<8x2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Widening bf16 -> f32 matmul: the fused op has no widening form; no fusion.
// CHECK-LABEL: func.func @widened
// CHECK-NOT: xf.linear_cross_entropy
func.func @widened(%x: tensor<8x16xbf16>, %w: tensor<16x64xbf16>, %t: tensor<8xi32>) -> tensor<f32> {
  %l = xf.matmul "th,hv->tv" %x, %w : tensor<8x16xbf16>, tensor<16x64xbf16> -> tensor<8x64xf32>
  %loss = xf.cross_entropy %l, %t ignore_index = -100 : tensor<8x64xf32>, tensor<8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
