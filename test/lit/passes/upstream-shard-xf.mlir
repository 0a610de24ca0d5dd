// Upstream sharding on xf ops: shardc-opt attaches upstream's ShardingInterface to
// every xf op, derived from the op's own sharding rule (dialects/xf/XfUpstreamSharding.cpp),
// so upstream `sharding-propagation` and `shard-partition` run on xf IR. The numeric check
// against shardc's own partition is test/unit/compiler/UpstreamShardingTest.cpp.
// RUN: shardc-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' | FileCheck %s

shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}

// Megatron MLP with its residual (B=2, S=4, H=8, 4H=32) on tp=2: W1 column-split, W2
// row-split, annotated for their users; propagation splits b1, the hidden activation and
// gelu on the 4H features. Per device: W1 8x16, b1 16, W2 16x8; x, b2 and the output
// whole. The row-parallel matmul contracts the split features: its partial sums are
// all-reduced once, right after it; nothing else communicates.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[W1:.*]]: tensor<8x16xf32>, %[[B1:.*]]: tensor<16xf32>, %[[W2:.*]]: tensor<16x8xf32>, %[[B2:.*]]: tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[H:.*]] = xf.matmul "bsh,hk->bsk" %[[X]], %[[W1]] : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[HB:.*]] = xf.bias_add %[[H]], %[[B1]] : tensor<2x4x16xf32>, tensor<16xf32>
// CHECK-NEXT: %[[G:.*]] = xf.gelu %[[HB]] : tensor<2x4x16xf32>
// CHECK-NEXT: %[[Y:.*]] = xf.matmul "bsk,kh->bsh" %[[G]], %[[W2]] : tensor<2x4x16xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[R:.*]] = shard.all_reduce %[[Y]] on @mesh grid_axes = [0] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[YB:.*]] = xf.bias_add %[[R]], %[[B2]] : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[O:.*]] = xf.add %[[X]], %[[YB]] : tensor<2x4x8xf32>
// CHECK-NEXT: return %[[O]] : tensor<2x4x8xf32>
// CHECK-NEXT: }
func.func @mlp(%x: tensor<2x4x8xf32>, %w1: tensor<8x32xf32>, %b1: tensor<32xf32>,
               %w2: tensor<32x8xf32>, %b2: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %col = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %row = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %w1s = shard.shard %w1 to %col annotate_for_users : tensor<8x32xf32>
  %w2s = shard.shard %w2 to %row annotate_for_users : tensor<32x8xf32>
  %h = xf.matmul "bsh,hk->bsk" %x, %w1s : tensor<2x4x8xf32>, tensor<8x32xf32> -> tensor<2x4x32xf32>
  %hb = xf.bias_add %h, %b1 : tensor<2x4x32xf32>, tensor<32xf32>
  %g = xf.gelu %hb : tensor<2x4x32xf32>
  %y = xf.matmul "bsk,kh->bsh" %g, %w2s : tensor<2x4x32xf32>, tensor<32x8xf32> -> tensor<2x4x8xf32>
  %yb = xf.bias_add %y, %b2 : tensor<2x4x8xf32>, tensor<8xf32>
  %r = xf.add %x, %yb : tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// Dimensions made of several factors map to their major factor: the head-splitting
// reshapes (32 -> 4x8 heads x head_dim) and grouped-query attention (4 query heads =
// 2 kv heads x group 2) split over tp with the kv heads; the merging reshape and the
// row-parallel output projection follow, then one all-reduce. The layernorm keeps its
// normalized dimension whole (a Replicated factor), which it already is here.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: tensor<16x16xf32>, %{{.*}}: tensor<16x8xf32>, %{{.*}}: tensor<16x8xf32>, %{{.*}}: tensor<16x16xf32>
// CHECK: xf.reshape %{{.*}} : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
// CHECK: xf.reshape %{{.*}} : tensor<2x8x8xf32> -> tensor<2x8x1x8xf32>
// CHECK: xf.attention {{.*}} : tensor<2x8x2x8xf32>, tensor<2x8x1x8xf32>, tensor<2x8x1x8xf32>
// CHECK-NEXT: xf.reshape %{{.*}} : tensor<2x8x2x8xf32> -> tensor<2x8x16xf32>
// CHECK-NEXT: %[[P:.*]] = xf.matmul "bsk,kh->bsh" {{.*}} -> tensor<2x8x16xf32>
// CHECK-NEXT: %[[AR:.*]] = shard.all_reduce %[[P]] on @mesh grid_axes = [0] : tensor<2x8x16xf32> -> tensor<2x8x16xf32>
// CHECK-NEXT: xf.layernorm %[[AR]], {{.*}} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
// CHECK-NEXT: return
func.func @attention(%x: tensor<2x8x16xf32>, %wq: tensor<16x32xf32>, %wk: tensor<16x16xf32>,
                     %wv: tensor<16x16xf32>, %wo: tensor<32x16xf32>, %ga: tensor<16xf32>,
                     %be: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %col = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %wqs = shard.shard %wq to %col annotate_for_users : tensor<16x32xf32>
  %wks = shard.shard %wk to %col annotate_for_users : tensor<16x16xf32>
  %wvs = shard.shard %wv to %col annotate_for_users : tensor<16x16xf32>
  %q = xf.matmul "bsh,hk->bsk" %x, %wqs : tensor<2x8x16xf32>, tensor<16x32xf32> -> tensor<2x8x32xf32>
  %k = xf.matmul "bsh,hk->bsk" %x, %wks : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %v = xf.matmul "bsh,hk->bsk" %x, %wvs : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %q4 = xf.reshape %q : tensor<2x8x32xf32> -> tensor<2x8x4x8xf32>
  %k4 = xf.reshape %k : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %v4 = xf.reshape %v : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %a = xf.attention %q4, %k4, %v4 causal scale = 0.35355339059327373 : tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
  %a3 = xf.reshape %a : tensor<2x8x4x8xf32> -> tensor<2x8x32xf32>
  %o = xf.matmul "bsk,kh->bsh" %a3, %wo : tensor<2x8x32xf32>, tensor<32x16xf32> -> tensor<2x8x16xf32>
  %n = xf.layernorm %o, %ga, %be epsilon = 1.0e-5 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %n : tensor<2x8x16xf32>
}

// Factors that must stay whole are gathered before the op: the normalized dimension of
// a layernorm, and the tokens of a cross-entropy (a mean: shardc's partition keeps it
// split with a count exchange, which upstream partition cannot express).
// CHECK-LABEL: func.func @whole
// CHECK-SAME: (%[[XS:.*]]: tensor<2x8x8xf32>, %{{.*}}: tensor<16xf32>, %{{.*}}: tensor<16xf32>, %[[LS:.*]]: tensor<2x8x16xf32>, %{{.*}}: tensor<4x8xi32>)
// CHECK-DAG: shard.all_gather %[[XS]] on @mesh grid_axes = [0] gather_axis = 2 : tensor<2x8x8xf32> -> tensor<2x8x16xf32>
// CHECK-DAG: shard.all_gather %[[LS]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x8x16xf32> -> tensor<4x8x16xf32>
// CHECK: xf.layernorm {{.*}} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
// CHECK: xf.cross_entropy {{.*}} : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<f32>
func.func @whole(%x: tensor<2x8x16xf32>, %ga: tensor<16xf32>, %be: tensor<16xf32>,
                 %l: tensor<4x8x16xf32>, %t: tensor<4x8xi32>) -> (tensor<2x8x16xf32>, tensor<f32>) {
  %feat = shard.sharding @mesh split_axes = [[], [], [0]] : !shard.sharding
  %batch = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %feat annotate_for_users : tensor<2x8x16xf32>
  %n = xf.layernorm %xs, %ga, %be epsilon = 1.0e-5 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  %ls = shard.shard %l to %batch annotate_for_users : tensor<4x8x16xf32>
  %loss = xf.cross_entropy %ls, %t ignore_index = -100 : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<f32>
  return %n, %loss : tensor<2x8x16xf32>, tensor<f32>
}

// Factors no result has are reduction loops (sum): split, the local results are
// all-reduced.
// CHECK-LABEL: func.func @reductions
// CHECK-SAME: (%[[A:.*]]: tensor<4x4xf32>)
// CHECK-NEXT: %[[SS:.*]] = xf.sum_squares %[[A]] : tensor<4x4xf32>
// CHECK-NEXT: %[[SSR:.*]] = shard.all_reduce %[[SS]] on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
// CHECK-NEXT: %[[RS:.*]] = xf.reduce_sum %[[A]] dims = [0] : tensor<4x4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[RSR:.*]] = shard.all_reduce %[[RS]] on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: return %[[SSR]], %[[RSR]]
func.func @reductions(%x: tensor<8x4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %rows = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %rows : tensor<8x4xf32>
  %n = xf.sum_squares %xs : tensor<8x4xf32>
  %s = xf.reduce_sum %xs dims = [0] : tensor<8x4xf32> -> tensor<4xf32>
  return %n, %s : tensor<f32>, tensor<4xf32>
}
