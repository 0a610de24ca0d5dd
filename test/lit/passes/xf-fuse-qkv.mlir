// RUN: shardc-opt %s -split-input-file -xf-fuse-qkv='function=' | FileCheck %s
// RUN: shardc-opt %s -split-input-file -xf-fuse-qkv='function= heads-divisible-by=4' | FileCheck %s --check-prefix=DIV
// RUN: shardc-opt %models/gpt2-tiny.mlir --pass-pipeline='builtin.module(shardc-train-step{fuse-qkv=true})' | FileCheck %s --check-prefix=GRAD
// RUN: shardc-opt %models/gpt2-tiny.mlir --pass-pipeline='builtin.module(shardc-train-step{fuse-qkv=true},shardc-shard{function=train_step mesh=dp=2,tp=2 strategy=dp+tp})' | FileCheck %s --check-prefix=TP
// RUN: shardc-opt %models/gpt2-tiny.mlir --pass-pipeline='builtin.module(shardc-train-step{fuse-qkv=true precision=bf16})' | FileCheck %s --check-prefix=BF16
// Under bf16 the packed weight is built from the optimizer's bf16 copies
// (the casts pushed through the reshapes and the concat to the parameters),
// not cast from f32 each step.
// BF16-LABEL: func.func @train_step
// BF16-NOT: xf.cast {{.*}}tensor<64x192xf32>
// BF16: xf.concat {{.*}} -> tensor<64x4x3x16xbf16>
// BF16-NOT: xf.cast {{.*}}tensor<64x192xf32>
// BF16: xf.matmul "bsh,ho->bso" %{{.*}}, %{{.*}} : tensor<4x32x64xbf16>, tensor<64x192xbf16> -> tensor<4x32x192xbf16>
// With selective recomputation and two micro-batches: per micro-batch and
// layer the forward's two concats (weights, biases) and the backward's
// rebuilt weight (a replay: -xf-recompute leaves it), 12 in all, none dead.
// RUN: shardc-opt %models/gpt2-tiny.mlir --pass-pipeline='builtin.module(shardc-train-step{fuse-qkv=true recompute=selective micro-batches=2})' | FileCheck %s --check-prefix=RC
// RC-LABEL: func.func @train_step
// RC-COUNT-12: xf.concat
// RC-NOT: xf.concat
// Five heads on tp=2: the projections stay apart (their attention may still
// split its query rows over tp, which the packed form cannot); on a mesh
// whose tp axis divides them they are fused.
// RUN: shardc gen --preset gpt2-tiny --hidden 80 --heads 5 -o %t.h5.mlir
// RUN: shardc-opt %t.h5.mlir --pass-pipeline='builtin.module(shardc-train-step{fuse-qkv=true mesh=dp=2,tp=2 strategy=dp+tp})' | FileCheck %s --check-prefix=H5
// RUN: shardc-opt %t.h5.mlir --pass-pipeline='builtin.module(shardc-train-step{fuse-qkv=true mesh=dp=2,tp=5 strategy=dp+tp})' | FileCheck %s --check-prefix=H5TP5
// H5-LABEL: func.func @train_step
// H5-NOT: xf.packed_attention
// H5: xf.attention
// H5TP5-LABEL: func.func @train_step
// H5TP5: xf.packed_attention
// Tensor parallelism moves the same bytes as with three GEMMs (the column
// split of each weight is a split of the packed layout's kv heads).
// RUN: shardc explain %models/gpt2-tiny.mlir --mesh dp=2,tp=2 --strategy dp+tp | sed -n '/^collectives per step/,/^memory per device/p' > %t.apart
// RUN: shardc explain %models/gpt2-tiny.mlir --mesh dp=2,tp=2 --strategy dp+tp --fuse-qkv | sed -n '/^collectives per step/,/^memory per device/p' > %t.fused
// RUN: diff %t.apart %t.fused
// RUN: FileCheck %s --check-prefix=COLL < %t.fused
// COLL: collectives per step
// COLL: all_reduce

// Multi-head attention with biases (GPT-2): the weights as [in, kv_heads,
// 3, head_dim], one GEMM, one bias add, attention reading the packed result.
// CHECK-LABEL: func.func @mha
// CHECK-DAG: %[[WQ:.*]] = xf.reshape %arg1 : tensor<16x16xf32> -> tensor<16x2x1x8xf32>
// CHECK-DAG: %[[WK:.*]] = xf.reshape %arg2 : tensor<16x16xf32> -> tensor<16x2x1x8xf32>
// CHECK-DAG: %[[WV:.*]] = xf.reshape %arg3 : tensor<16x16xf32> -> tensor<16x2x1x8xf32>
// CHECK: %[[W:.*]] = xf.concat %[[WQ]], %[[WK]], %[[WV]] dim = 2 : {{.*}} -> tensor<16x2x3x8xf32>
// CHECK: %[[WF:.*]] = xf.reshape %[[W]] : tensor<16x2x3x8xf32> -> tensor<16x48xf32>
// CHECK: %[[MM:.*]] = xf.matmul "bsh,ho->bso" %arg0, %[[WF]] : tensor<2x8x16xf32>, tensor<16x48xf32> -> tensor<2x8x48xf32>
// CHECK: %[[B:.*]] = xf.concat {{.*}} dim = 1 : tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32> -> tensor<2x3x8xf32>
// CHECK: %[[BF:.*]] = xf.reshape %[[B]] : tensor<2x3x8xf32> -> tensor<48xf32>
// CHECK: %[[QKV:.*]] = xf.bias_add %[[MM]], %[[BF]]
// CHECK: %[[P:.*]] = xf.reshape %[[QKV]] : tensor<2x8x48xf32> -> tensor<2x8x2x3x8xf32>
// CHECK: xf.packed_attention %[[P]] causal scale = {{.*}} : tensor<2x8x2x3x8xf32> -> tensor<2x8x2x8xf32>
// CHECK-NOT: xf.attention
// Two kv heads: heads-divisible-by=4 leaves it alone.
// DIV-LABEL: func.func @mha
// DIV-NOT: xf.packed_attention
// DIV: xf.attention
// The backward (GPT-2 tiny's step): one GEMM for dx and one for dW of the
// three projections; the weight gradients handed back by xf.split.
// GRAD-LABEL: func.func @train_step
// GRAD-COUNT-2: xf.packed_attention %{{.*}} causal scale = 2.500000e-01 : tensor<4x32x4x3x16xf32> -> tensor<4x32x4x16xf32>
// GRAD: xf.packed_attention_grad {{.*}} : tensor<4x32x4x16xf32>, tensor<4x32x4x3x16xf32>
// The packed weight is rebuilt from the parameters for the dx GEMM (not kept
// from the forward), marked as a replay.
// GRAD: %[[W2:.*]] = xf.concat {{.*}} dim = 2 {xf.recomputed} : {{.*}} -> tensor<64x4x3x16xf32>
// GRAD-NEXT: %[[WF2:.*]] = xf.reshape %[[W2]] {xf.recomputed} : tensor<64x4x3x16xf32> -> tensor<64x192xf32>
// GRAD-NEXT: xf.matmul "bso,ho->bsh" %{{.*}}, %[[WF2]] : tensor<4x32x192xf32>, tensor<64x192xf32> -> tensor<4x32x64xf32>
// GRAD: xf.split {{.*}} dim = 2 : tensor<64x4x3x16xf32> -> tensor<64x4x1x16xf32>, tensor<64x4x1x16xf32>, tensor<64x4x1x16xf32>
// GRAD-NOT: xf.attention_grad
// Sharded over dp=2, tp=2: each rank's packed block is its batch half and
// its two of the four heads, whole (query, key, value) groups.
// TP-LABEL: func.func @train_step
// TP: xf.packed_attention %{{.*}} : tensor<2x32x2x3x16xf32> -> tensor<2x32x2x16xf32>
// TP: xf.packed_attention_grad {{.*}} : tensor<2x32x2x16xf32>, tensor<2x32x2x3x16xf32>
func.func @mha(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<16x16xf32>, %wv: tensor<16x16xf32>,
               %bq: tensor<16xf32>, %bk: tensor<16xf32>, %bv: tensor<16xf32>) -> tensor<2x8x2x8xf32> {
  %q0 = xf.matmul "bsh,ho->bso" %x, %wq : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %q1 = xf.bias_add %q0, %bq : tensor<2x8x16xf32>, tensor<16xf32>
  %q = xf.reshape %q1 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %k0 = xf.matmul "bsh,ho->bso" %x, %wk : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %k1 = xf.bias_add %k0, %bk : tensor<2x8x16xf32>, tensor<16xf32>
  %k = xf.reshape %k1 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %v0 = xf.matmul "bsh,ho->bso" %x, %wv : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %v1 = xf.bias_add %v0, %bv : tensor<2x8x16xf32>, tensor<16xf32>
  %v = xf.reshape %v1 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %o = xf.attention %q, %k, %v causal scale = 0.35355339 : tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
  return %o : tensor<2x8x2x8xf32>
}

// -----

// Grouped-query heads without biases: 4 query heads over 2 kv heads, the
// query weight as [in, 2, 2, head_dim], slots = group + 2 = 4.
// CHECK-LABEL: func.func @gqa
// CHECK: xf.reshape %arg1 : tensor<16x32xf32> -> tensor<16x2x2x8xf32>
// CHECK: xf.concat {{.*}} dim = 2 : tensor<16x2x2x8xf32>, tensor<16x2x1x8xf32>, tensor<16x2x1x8xf32> -> tensor<16x2x4x8xf32>
// CHECK: xf.matmul "bsh,ho->bso" %arg0, {{.*}} -> tensor<2x8x64xf32>
// CHECK-NOT: xf.bias_add
// CHECK: xf.packed_attention {{.*}} scale = {{.*}} : tensor<2x8x2x4x8xf32> -> tensor<2x8x4x8xf32>
func.func @gqa(%x: tensor<2x8x16xf32>, %wq: tensor<16x32xf32>, %wk: tensor<16x16xf32>, %wv: tensor<16x16xf32>) -> tensor<2x8x4x8xf32> {
  %q0 = xf.matmul "bsh,ho->bso" %x, %wq : tensor<2x8x16xf32>, tensor<16x32xf32> -> tensor<2x8x32xf32>
  %q = xf.reshape %q0 : tensor<2x8x32xf32> -> tensor<2x8x4x8xf32>
  %k0 = xf.matmul "bsh,ho->bso" %x, %wk : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %k = xf.reshape %k0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %v0 = xf.matmul "bsh,ho->bso" %x, %wv : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %v = xf.reshape %v0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %o = xf.attention %q, %k, %v scale = 0.35355339 : tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
  return %o : tensor<2x8x4x8xf32>
}

// -----

// Left apart: rotary embeddings between projection and attention (LLaMA),
// projections of different inputs, and a projection with another reader.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: xf.packed_attention
// CHECK-COUNT-3: xf.attention
func.func @not_fused(%x: tensor<2x8x16xf32>, %y: tensor<2x8x16xf32>, %w: tensor<16x16xf32>)
    -> (tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x16xf32>) {
  %q0 = xf.matmul "bsh,ho->bso" %x, %w : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %q1 = xf.reshape %q0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %q = xf.rope %q1 theta = 1.000000e+04 : tensor<2x8x2x8xf32>
  %k0 = xf.matmul "bsh,ho->bso" %x, %w : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %k = xf.reshape %k0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %v0 = xf.matmul "bsh,ho->bso" %x, %w : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %v = xf.reshape %v0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %o1 = xf.attention %q, %k, %v causal scale = 0.35355339 : tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
  %a0 = xf.matmul "bsh,ho->bso" %x, %w : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %a = xf.reshape %a0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %b0 = xf.matmul "bsh,ho->bso" %y, %w : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %b = xf.reshape %b0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %c0 = xf.matmul "bsh,ho->bso" %x, %w : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %c = xf.reshape %c0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %o2 = xf.attention %a, %b, %c causal scale = 0.35355339 : tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
  %d0 = xf.matmul "bsh,ho->bso" %x, %w : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %d = xf.reshape %d0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %e0 = xf.matmul "bsh,ho->bso" %x, %w : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %e = xf.reshape %e0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %f0 = xf.matmul "bsh,ho->bso" %x, %w : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %f = xf.reshape %f0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %o3 = xf.attention %d, %e, %f causal scale = 0.35355339 : tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
  return %o1, %o2, %o3, %f0 : tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x16xf32>
}
