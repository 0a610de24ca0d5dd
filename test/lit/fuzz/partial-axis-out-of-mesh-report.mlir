// Found by mutating sharded IR: xf.partial names an axis outside the 2x2 grid.
// Was: an out-of-bounds read in Mesh::axesName under -xf-report-sharding. Now: the verifier.
// RUN: not shardc-opt %s -xf-report-sharding -o /dev/null 2>&1 | FileCheck %s
// RUN: not shardc-opt %s -xf-partition -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: 'shard.shard' op 'xf.partial' names grid axis
module attributes {xf.model = {family = "llama", heads = 4 : i64, hidden = 16 : i64, layers = 1 : i64, name = "llama-custom", vocab = 64 : i64}} {
  shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
  func.func @forward(%arg0: tensor<2x8xi32> {xf.input = "tokens"}, %arg1: tensor<2x8xi32> {xf.input = "targets"}, %arg2: tensor<64x16xf32> {xf.param = #xf.param<name = "model.embed_tokens.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg3: tensor<16xf32> {xf.param = #xf.param<name = "model.layers.0.input_layernorm.weight", role = norm_scale, init = ones>}, %arg4: tensor<16x16xf32> {xf.param = #xf.param<name = "model.layers.0.self_attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg5: tensor<8x16xf32> {xf.param = #xf.param<name = "model.layers.0.self_attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg6: tensor<8x16xf32> {xf.param = #xf.param<name = "model.layers.0.self_attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg7: tensor<16x16xf32> {xf.param = #xf.param<name = "model.layers.0.self_attn.o_proj.weight", role = weight, init = normal, std = 0.014142135623730949>}, %arg8: tensor<16xf32> {xf.param = #xf.param<name = "model.layers.0.post_attention_layernorm.weight", role = norm_scale, init = ones>}, %arg9: tensor<64x16xf32> {xf.param = #xf.param<name = "model.layers.0.mlp.gate_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg10: tensor<64x16xf32> {xf.param = #xf.param<name = "model.layers.0.mlp.up_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg11: tensor<16x64xf32> {xf.param = #xf.param<name = "model.layers.0.mlp.down_proj.weight", role = weight, init = normal, std = 0.014142135623730949>}, %arg12: tensor<16xf32> {xf.param = #xf.param<name = "model.norm.weight", role = norm_scale, init = ones>}, %arg13: tensor<64x16xf32> {xf.param = #xf.param<name = "lm_head.weight", role = weight, init = normal, std = 2.000000e-02>}) -> tensor<f32> {
    %0 = xf.embedding %arg2, %arg0 : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
    %1 = xf.rmsnorm %0, %arg3 epsilon = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>
    %2 = xf.matmul "bsh,oh->bso" %1, %arg4 : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %3 = xf.reshape %2 : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
    %4 = xf.matmul "bsh,oh->bso" %1, %arg5 : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x8xf32>
    %5 = xf.reshape %4 : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %6 = xf.matmul "bsh,oh->bso" %1, %arg6 : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x8xf32>
    %7 = xf.reshape %6 : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %8 = xf.rope %5 theta = 1.000000e+04 : tensor<2x8x2x4xf32>
    %9 = xf.rope %3 theta = 1.000000e+04 : tensor<2x8x4x4xf32>
    %10 = xf.attention %9, %8, %7 causal scale = 5.000000e-01 : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>
    %11 = xf.reshape %10 : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
    %12 = xf.matmul "bsh,oh->bso" %11, %arg7 : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %13 = xf.add %0, %12 : tensor<2x8x16xf32>
    %14 = xf.rmsnorm %13, %arg8 epsilon = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>
    %15 = xf.matmul "bsh,oh->bso" %14, %arg9 : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
    %16 = xf.matmul "bsh,oh->bso" %14, %arg10 : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
    %17 = xf.swiglu %15, %16 : tensor<2x8x64xf32>
    %18 = xf.matmul "bsh,oh->bso" %17, %arg11 : tensor<2x8x64xf32>, tensor<16x64xf32> -> tensor<2x8x16xf32>
    %19 = xf.add %13, %18 : tensor<2x8x16xf32>
    %20 = xf.rmsnorm %19, %arg12 epsilon = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>
    %21 = xf.matmul "bsh,oh->bso" %20, %arg13 : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
    %22 = xf.cross_entropy %21, %arg1 ignore_index = -100 : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<f32>
    return %22 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<2x8xi32> {xf.input = "tokens", xf.micro_batch = 0 : i64}, %arg1: tensor<2x8xi32> {xf.input = "targets", xf.micro_batch = 0 : i64}, %arg2: tensor<64x16xf32> {xf.param = #xf.param<name = "model.embed_tokens.weight", role = embedding, init = normal, std = 2.000000e-02>, xf.state = "param:model.embed_tokens.weight"}, %arg3: tensor<16xf32> {xf.param = #xf.param<name = "model.layers.0.input_layernorm.weight", role = norm_scale, init = ones>, xf.state = "param:model.layers.0.input_layernorm.weight"}, %arg4: tensor<16x16xf32> {xf.param = #xf.param<name = "model.layers.0.self_attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:model.layers.0.self_attn.q_proj.weight"}, %arg5: tensor<8x16xf32> {xf.param = #xf.param<name = "model.layers.0.self_attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:model.layers.0.self_attn.k_proj.weight"}, %arg6: tensor<8x16xf32> {xf.param = #xf.param<name = "model.layers.0.self_attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:model.layers.0.self_attn.v_proj.weight"}, %arg7: tensor<16x16xf32> {xf.param = #xf.param<name = "model.layers.0.self_attn.o_proj.weight", role = weight, init = normal, std = 0.014142135623730949>, xf.state = "param:model.layers.0.self_attn.o_proj.weight"}, %arg8: tensor<16xf32> {xf.param = #xf.param<name = "model.layers.0.post_attention_layernorm.weight", role = norm_scale, init = ones>, xf.state = "param:model.layers.0.post_attention_layernorm.weight"}, %arg9: tensor<64x16xf32> {xf.param = #xf.param<name = "model.layers.0.mlp.gate_proj.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:model.layers.0.mlp.gate_proj.weight"}, %arg10: tensor<64x16xf32> {xf.param = #xf.param<name = "model.layers.0.mlp.up_proj.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:model.layers.0.mlp.up_proj.weight"}, %arg11: tensor<16x64xf32> {xf.param = #xf.param<name = "model.layers.0.mlp.down_proj.weight", role = weight, init = normal, std = 0.014142135623730949>, xf.state = "param:model.layers.0.mlp.down_proj.weight"}, %arg12: tensor<16xf32> {xf.param = #xf.param<name = "model.norm.weight", role = norm_scale, init = ones>, xf.state = "param:model.norm.weight"}, %arg13: tensor<64x16xf32> {xf.param = #xf.param<name = "lm_head.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:lm_head.weight"}, %arg14: tensor<64x16xf32> {xf.state = "adam_m:model.embed_tokens.weight"}, %arg15: tensor<16xf32> {xf.state = "adam_m:model.layers.0.input_layernorm.weight"}, %arg16: tensor<16x16xf32> {xf.state = "adam_m:model.layers.0.self_attn.q_proj.weight"}, %arg17: tensor<8x16xf32> {xf.state = "adam_m:model.layers.0.self_attn.k_proj.weight"}, %arg18: tensor<8x16xf32> {xf.state = "adam_m:model.layers.0.self_attn.v_proj.weight"}, %arg19: tensor<16x16xf32> {xf.state = "adam_m:model.layers.0.self_attn.o_proj.weight"}, %arg20: tensor<16xf32> {xf.state = "adam_m:model.layers.0.post_attention_layernorm.weight"}, %arg21: tensor<64x16xf32> {xf.state = "adam_m:model.layers.0.mlp.gate_proj.weight"}, %arg22: tensor<64x16xf32> {xf.state = "adam_m:model.layers.0.mlp.up_proj.weight"}, %arg23: tensor<16x64xf32> {xf.state = "adam_m:model.layers.0.mlp.down_proj.weight"}, %arg24: tensor<16xf32> {xf.state = "adam_m:model.norm.weight"}, %arg25: tensor<64x16xf32> {xf.state = "adam_m:lm_head.weight"}, %arg26: tensor<64x16xf32> {xf.state = "adam_v:model.embed_tokens.weight"}, %arg27: tensor<16xf32> {xf.state = "adam_v:model.layers.0.input_layernorm.weight"}, %arg28: tensor<16x16xf32> {xf.state = "adam_v:model.layers.0.self_attn.q_proj.weight"}, %arg29: tensor<8x16xf32> {xf.state = "adam_v:model.layers.0.self_attn.k_proj.weight"}, %arg30: tensor<8x16xf32> {xf.state = "adam_v:model.layers.0.self_attn.v_proj.weight"}, %arg31: tensor<16x16xf32> {xf.state = "adam_v:model.layers.0.self_attn.o_proj.weight"}, %arg32: tensor<16xf32> {xf.state = "adam_v:model.layers.0.post_attention_layernorm.weight"}, %arg33: tensor<64x16xf32> {xf.state = "adam_v:model.layers.0.mlp.gate_proj.weight"}, %arg34: tensor<64x16xf32> {xf.state = "adam_v:model.layers.0.mlp.up_proj.weight"}, %arg35: tensor<16x64xf32> {xf.state = "adam_v:model.layers.0.mlp.down_proj.weight"}, %arg36: tensor<16xf32> {xf.state = "adam_v:model.norm.weight"}, %arg37: tensor<64x16xf32> {xf.state = "adam_v:lm_head.weight"}, %arg38: tensor<i32> {xf.state = "step"}) -> (tensor<f32> {xf.report = "loss"}, tensor<f32> {xf.report = "grad_norm"}, tensor<f32> {xf.report = "lr"}, tensor<64x16xf32> {xf.state = "param:model.embed_tokens.weight"}, tensor<16xf32> {xf.state = "param:model.layers.0.input_layernorm.weight"}, tensor<16x16xf32> {xf.state = "param:model.layers.0.self_attn.q_proj.weight"}, tensor<8x16xf32> {xf.state = "param:model.layers.0.self_attn.k_proj.weight"}, tensor<8x16xf32> {xf.state = "param:model.layers.0.self_attn.v_proj.weight"}, tensor<16x16xf32> {xf.state = "param:model.layers.0.self_attn.o_proj.weight"}, tensor<16xf32> {xf.state = "param:model.layers.0.post_attention_layernorm.weight"}, tensor<64x16xf32> {xf.state = "param:model.layers.0.mlp.gate_proj.weight"}, tensor<64x16xf32> {xf.state = "param:model.layers.0.mlp.up_proj.weight"}, tensor<16x64xf32> {xf.state = "param:model.layers.0.mlp.down_proj.weight"}, tensor<16xf32> {xf.state = "param:model.norm.weight"}, tensor<64x16xf32> {xf.state = "param:lm_head.weight"}, tensor<64x16xf32> {xf.state = "adam_m:model.embed_tokens.weight"}, tensor<16xf32> {xf.state = "adam_m:model.layers.0.input_layernorm.weight"}, tensor<16x16xf32> {xf.state = "adam_m:model.layers.0.self_attn.q_proj.weight"}, tensor<8x16xf32> {xf.state = "adam_m:model.layers.0.self_attn.k_proj.weight"}, tensor<8x16xf32> {xf.state = "adam_m:model.layers.0.self_attn.v_proj.weight"}, tensor<16x16xf32> {xf.state = "adam_m:model.layers.0.self_attn.o_proj.weight"}, tensor<16xf32> {xf.state = "adam_m:model.layers.0.post_attention_layernorm.weight"}, tensor<64x16xf32> {xf.state = "adam_m:model.layers.0.mlp.gate_proj.weight"}, tensor<64x16xf32> {xf.state = "adam_m:model.layers.0.mlp.up_proj.weight"}, tensor<16x64xf32> {xf.state = "adam_m:model.layers.0.mlp.down_proj.weight"}, tensor<16xf32> {xf.state = "adam_m:model.norm.weight"}, tensor<64x16xf32> {xf.state = "adam_m:lm_head.weight"}, tensor<64x16xf32> {xf.state = "adam_v:model.embed_tokens.weight"}, tensor<16xf32> {xf.state = "adam_v:model.layers.0.input_layernorm.weight"}, tensor<16x16xf32> {xf.state = "adam_v:model.layers.0.self_attn.q_proj.weight"}, tensor<8x16xf32> {xf.state = "adam_v:model.layers.0.self_attn.k_proj.weight"}, tensor<8x16xf32> {xf.state = "adam_v:model.layers.0.self_attn.v_proj.weight"}, tensor<16x16xf32> {xf.state = "adam_v:model.layers.0.self_attn.o_proj.weight"}, tensor<16xf32> {xf.state = "adam_v:model.layers.0.post_attention_layernorm.weight"}, tensor<64x16xf32> {xf.state = "adam_v:model.layers.0.mlp.gate_proj.weight"}, tensor<64x16xf32> {xf.state = "adam_v:model.layers.0.mlp.up_proj.weight"}, tensor<16x64xf32> {xf.state = "adam_v:model.layers.0.mlp.down_proj.weight"}, tensor<16xf32> {xf.state = "adam_v:model.norm.weight"}, tensor<64x16xf32> {xf.state = "adam_v:lm_head.weight"}, tensor<i32> {xf.state = "step"}) {
    %sharding = shard.sharding @mesh split_axes = [[0], [], [1], []] : !shard.sharding
    %sharding_0 = shard.sharding @mesh split_axes = [[0], [], [1]] : !shard.sharding
    %sharding_1 = shard.sharding @mesh split_axes = [[0], [], []] : !shard.sharding
    %sharding_2 = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
    %sharding_3 = shard.sharding @mesh split_axes = [[1], []] : !shard.sharding
    %sharding_4 = shard.sharding @mesh split_axes = [[1, 0], []] : !shard.sharding
    %sharding_5 = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
    %sharding_6 = shard.sharding @mesh split_axes = [[0], [1]] : !shard.sharding
    %sharding_7 = shard.sharding @mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated = shard.shard %arg38 to %sharding_7 : tensor<i32>
    %sharding_annotated_8 = shard.shard %arg12 to %sharding_7 : tensor<16xf32>
    %sharding_annotated_9 = shard.shard %arg8 to %sharding_7 : tensor<16xf32>
    %sharding_annotated_10 = shard.shard %arg3 to %sharding_7 : tensor<16xf32>
    %sharding_11 = shard.sharding @mesh split_axes = [[], [1]] : !shard.sharding
    %sharding_annotated_12 = shard.shard %arg11 to %sharding_11 : tensor<16x64xf32>
    %sharding_annotated_13 = shard.shard %arg7 to %sharding_11 : tensor<16x16xf32>
    %sharding_annotated_14 = shard.shard %arg35 to %sharding_6 : tensor<16x64xf32>
    %sharding_annotated_15 = shard.shard %arg31 to %sharding_6 : tensor<16x16xf32>
    %sharding_annotated_16 = shard.shard %arg23 to %sharding_6 : tensor<16x64xf32>
    %sharding_annotated_17 = shard.shard %arg19 to %sharding_6 : tensor<16x16xf32>
    %sharding_annotated_18 = shard.shard %arg36 to %sharding_5 : tensor<16xf32>
    %sharding_annotated_19 = shard.shard %arg32 to %sharding_5 : tensor<16xf32>
    %sharding_annotated_20 = shard.shard %arg27 to %sharding_5 : tensor<16xf32>
    %sharding_annotated_21 = shard.shard %arg24 to %sharding_5 : tensor<16xf32>
    %sharding_annotated_22 = shard.shard %arg20 to %sharding_5 : tensor<16xf32>
    %sharding_annotated_23 = shard.shard %arg15 to %sharding_5 : tensor<16xf32>
    %sharding_annotated_24 = shard.shard %arg37 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_25 = shard.shard %arg34 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_26 = shard.shard %arg33 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_27 = shard.shard %arg30 to %sharding_4 : tensor<8x16xf32>
    %sharding_annotated_28 = shard.shard %arg29 to %sharding_4 : tensor<8x16xf32>
    %sharding_annotated_29 = shard.shard %arg28 to %sharding_4 : tensor<16x16xf32>
    %sharding_annotated_30 = shard.shard %arg26 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_31 = shard.shard %arg25 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_32 = shard.shard %arg22 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_33 = shard.shard %arg21 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_34 = shard.shard %arg18 to %sharding_4 : tensor<8x16xf32>
    %sharding_annotated_35 = shard.shard %arg17 to %sharding_4 : tensor<8x16xf32>
    %sharding_annotated_36 = shard.shard %arg16 to %sharding_4 : tensor<16x16xf32>
    %sharding_annotated_37 = shard.shard %arg14 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_38 = shard.shard %arg13 to %sharding_3 : tensor<64x16xf32>
    %sharding_annotated_39 = shard.shard %arg10 to %sharding_3 : tensor<64x16xf32>
    %sharding_annotated_40 = shard.shard %arg9 to %sharding_3 : tensor<64x16xf32>
    %sharding_annotated_41 = shard.shard %arg6 to %sharding_3 : tensor<8x16xf32>
    %sharding_annotated_42 = shard.shard %arg5 to %sharding_3 : tensor<8x16xf32>
    %sharding_annotated_43 = shard.shard %arg4 to %sharding_3 : tensor<16x16xf32>
    %sharding_annotated_44 = shard.shard %arg2 to %sharding_3 : tensor<64x16xf32>
    %sharding_annotated_45 = shard.shard %arg1 to %sharding_2 : tensor<2x8xi32>
    %sharding_annotated_46 = shard.shard %arg0 to %sharding_2 : tensor<2x8xi32>
    %0 = xf.embedding %sharding_annotated_44, %sharding_annotated_46 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
    %sharding_annotated_47 = shard.shard %0 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %1 = xf.rmsnorm %sharding_annotated_47, %sharding_annotated_10 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<2x8x16xf32>, tensor<16xf32>
    %sharding_annotated_48 = shard.shard %1 to %sharding_1 : tensor<2x8x16xf32>
    %2 = xf.matmul "bsh,oh->bso" %sharding_annotated_48, %sharding_annotated_43 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %sharding_annotated_49 = shard.shard %2 to %sharding_0 : tensor<2x8x16xf32>
    %3 = xf.reshape %sharding_annotated_49 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
    %sharding_annotated_50 = shard.shard %3 to %sharding : tensor<2x8x4x4xf32>
    %4 = xf.matmul "bsh,oh->bso" %sharding_annotated_48, %sharding_annotated_42 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x8xf32>
    %sharding_annotated_51 = shard.shard %4 to %sharding_0 : tensor<2x8x8xf32>
    %5 = xf.reshape %sharding_annotated_51 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %sharding_annotated_52 = shard.shard %5 to %sharding : tensor<2x8x2x4xf32>
    %6 = xf.matmul "bsh,oh->bso" %sharding_annotated_48, %sharding_annotated_41 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x8xf32>
    %sharding_annotated_53 = shard.shard %6 to %sharding_0 : tensor<2x8x8xf32>
    %7 = xf.reshape %sharding_annotated_53 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %sharding_annotated_54 = shard.shard %7 to %sharding : tensor<2x8x2x4xf32>
    %8 = xf.rope %sharding_annotated_52 theta = 1.000000e+04 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x2x4xf32>
    %sharding_annotated_55 = shard.shard %8 to %sharding : tensor<2x8x2x4xf32>
    %9 = xf.rope %sharding_annotated_50 theta = 1.000000e+04 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x4x4xf32>
    %sharding_annotated_56 = shard.shard %9 to %sharding : tensor<2x8x4x4xf32>
    %10 = xf.attention %sharding_annotated_56, %sharding_annotated_55, %sharding_annotated_54 causal scale = 5.000000e-01 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>, array<i16>, array<i16>]} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>
    %sharding_annotated_57 = shard.shard %10 to %sharding : tensor<2x8x4x4xf32>
    %11 = xf.reshape %sharding_annotated_57 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
    %sharding_annotated_58 = shard.shard %11 to %sharding_0 : tensor<2x8x16xf32>
    %12 = xf.matmul "bsh,oh->bso" %sharding_annotated_58, %sharding_annotated_13 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %sharding_annotated_59 = shard.shard %12 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %13 = xf.add %sharding_annotated_47, %sharding_annotated_59 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<2x8x16xf32>
    %sharding_annotated_60 = shard.shard %13 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %14 = xf.rmsnorm %sharding_annotated_60, %sharding_annotated_9 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<2x8x16xf32>, tensor<16xf32>
    %sharding_annotated_61 = shard.shard %14 to %sharding_1 : tensor<2x8x16xf32>
    %15 = xf.matmul "bsh,oh->bso" %sharding_annotated_61, %sharding_annotated_40 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
    %sharding_annotated_62 = shard.shard %15 to %sharding_0 : tensor<2x8x64xf32>
    %16 = xf.matmul "bsh,oh->bso" %sharding_annotated_61, %sharding_annotated_39 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
    %sharding_annotated_63 = shard.shard %16 to %sharding_0 : tensor<2x8x64xf32>
    %17 = xf.swiglu %sharding_annotated_62, %sharding_annotated_63 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<2x8x64xf32>
    %sharding_annotated_64 = shard.shard %17 to %sharding_0 : tensor<2x8x64xf32>
    %18 = xf.matmul "bsh,oh->bso" %sharding_annotated_64, %sharding_annotated_12 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x64xf32>, tensor<16x64xf32> -> tensor<2x8x16xf32>
    %sharding_annotated_65 = shard.shard %18 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %19 = xf.add %sharding_annotated_60, %sharding_annotated_65 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<2x8x16xf32>
    %sharding_annotated_66 = shard.shard %19 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %20 = xf.rmsnorm %sharding_annotated_66, %sharding_annotated_8 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<2x8x16xf32>, tensor<16xf32>
    %sharding_annotated_67 = shard.shard %20 to %sharding_1 : tensor<2x8x16xf32>
    %21 = xf.matmul "bsh,oh->bso" %sharding_annotated_67, %sharding_annotated_38 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
    %sharding_annotated_68 = shard.shard %21 to %sharding_0 : tensor<2x8x64xf32>
    %22 = xf.cross_entropy %sharding_annotated_68, %sharding_annotated_45 ignore_index = -100 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<f32>
    %sharding_annotated_69 = shard.shard %22 to %sharding_7 {xf.partial = array<i16: 0>} : tensor<f32>
    %23 = xf.fill 1.000000e+00 {xf.factor_axes = []} : tensor<f32>
    %sharding_annotated_70 = shard.shard %23 to %sharding_7 : tensor<f32>
    %24 = xf.cross_entropy_grad %sharding_annotated_70, %sharding_annotated_68, %sharding_annotated_45 ignore_index = -100 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<f32>, tensor<2x8x64xf32>, tensor<2x8xi32>
    %sharding_annotated_71 = shard.shard %24 to %sharding_0 : tensor<2x8x64xf32>
    %25 = xf.matmul "bso,oh->bsh" %sharding_annotated_71, %sharding_annotated_38 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x64xf32>, tensor<64x16xf32> -> tensor<2x8x16xf32>
    %sharding_annotated_72 = shard.shard %25 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %26 = xf.matmul "bsh,bso->oh" %sharding_annotated_67, %sharding_annotated_71 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<2x8x64xf32> -> tensor<64x16xf32>
    %sharding_annotated_73 = shard.shard %26 to %sharding_3 : tensor<64x16xf32>
    %dx, %dgamma = xf.rmsnorm_grad %sharding_annotated_72, %sharding_annotated_66, %sharding_annotated_8 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<2x8x16xf32>, tensor<16xf32>
    %sharding_annotated_74 = shard.shard %dx to %sharding_1 : tensor<2x8x16xf32>
    %sharding_annotated_75 = shard.shard %dgamma to %sharding_7 : tensor<16xf32>
    %27 = xf.matmul "bso,oh->bsh" %sharding_annotated_74, %sharding_annotated_12 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<16x64xf32> -> tensor<2x8x64xf32>
    %sharding_annotated_76 = shard.shard %27 to %sharding_0 : tensor<2x8x64xf32>
    %28 = xf.matmul "bsh,bso->oh" %sharding_annotated_64, %sharding_annotated_74 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x64xf32>, tensor<2x8x16xf32> -> tensor<16x64xf32>
    %sharding_annotated_77 = shard.shard %28 to %sharding_11 : tensor<16x64xf32>
    %dgate, %dup = xf.swiglu_grad %sharding_annotated_76, %sharding_annotated_62, %sharding_annotated_63 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<2x8x64xf32>
    %sharding_annotated_78 = shard.shard %dup to %sharding_0 : tensor<2x8x64xf32>
    %sharding_annotated_79 = shard.shard %dgate to %sharding_0 : tensor<2x8x64xf32>
    %29 = xf.matmul "bso,oh->bsh" %sharding_annotated_78, %sharding_annotated_39 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x64xf32>, tensor<64x16xf32> -> tensor<2x8x16xf32>
    %sharding_annotated_80 = shard.shard %29 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %30 = xf.matmul "bsh,bso->oh" %sharding_annotated_61, %sharding_annotated_78 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<2x8x64xf32> -> tensor<64x16xf32>
    %sharding_annotated_81 = shard.shard %30 to %sharding_3 : tensor<64x16xf32>
    %31 = xf.matmul "bso,oh->bsh" %sharding_annotated_79, %sharding_annotated_40 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x64xf32>, tensor<64x16xf32> -> tensor<2x8x16xf32>
    %sharding_annotated_82 = shard.shard %31 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %32 = xf.matmul "bsh,bso->oh" %sharding_annotated_61, %sharding_annotated_79 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<2x8x64xf32> -> tensor<64x16xf32>
    %sharding_annotated_83 = shard.shard %32 to %sharding_3 : tensor<64x16xf32>
    %33 = xf.add %sharding_annotated_80, %sharding_annotated_82 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<2x8x16xf32>
    %sharding_annotated_84 = shard.shard %33 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %dx_85, %dgamma_86 = xf.rmsnorm_grad %sharding_annotated_84, %sharding_annotated_60, %sharding_annotated_9 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<2x8x16xf32>, tensor<16xf32>
    %sharding_annotated_87 = shard.shard %dx_85 to %sharding_1 : tensor<2x8x16xf32>
    %sharding_annotated_88 = shard.shard %dgamma_86 to %sharding_7 : tensor<16xf32>
    %34 = xf.add %sharding_annotated_74, %sharding_annotated_87 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<2x8x16xf32>
    %sharding_annotated_89 = shard.shard %34 to %sharding_1 : tensor<2x8x16xf32>
    %35 = xf.matmul "bso,oh->bsh" %sharding_annotated_89, %sharding_annotated_13 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %sharding_annotated_90 = shard.shard %35 to %sharding_0 : tensor<2x8x16xf32>
    %36 = xf.matmul "bsh,bso->oh" %sharding_annotated_58, %sharding_annotated_89 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<16x16xf32>
    %sharding_annotated_91 = shard.shard %36 to %sharding_11 : tensor<16x16xf32>
    %37 = xf.reshape %sharding_annotated_90 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
    %sharding_annotated_92 = shard.shard %37 to %sharding : tensor<2x8x4x4xf32>
    %dq, %dk, %dv = xf.attention_grad %sharding_annotated_92, %sharding_annotated_56, %sharding_annotated_55, %sharding_annotated_54, %sharding_annotated_57 causal scale = 5.000000e-01 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>, array<i16>, array<i16>]} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>
    %sharding_annotated_93 = shard.shard %dv to %sharding : tensor<2x8x2x4xf32>
    %sharding_annotated_94 = shard.shard %dk to %sharding : tensor<2x8x2x4xf32>
    %sharding_annotated_95 = shard.shard %dq to %sharding : tensor<2x8x4x4xf32>
    %38 = xf.rope %sharding_annotated_95 theta = 1.000000e+04 inverse {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x4x4xf32>
    %sharding_annotated_96 = shard.shard %38 to %sharding : tensor<2x8x4x4xf32>
    %39 = xf.rope %sharding_annotated_94 theta = 1.000000e+04 inverse {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x2x4xf32>
    %sharding_annotated_97 = shard.shard %39 to %sharding : tensor<2x8x2x4xf32>
    %40 = xf.reshape %sharding_annotated_93 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x2x4xf32> -> tensor<2x8x8xf32>
    %sharding_annotated_98 = shard.shard %40 to %sharding_0 : tensor<2x8x8xf32>
    %41 = xf.matmul "bso,oh->bsh" %sharding_annotated_98, %sharding_annotated_41 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x8xf32>, tensor<8x16xf32> -> tensor<2x8x16xf32>
    %sharding_annotated_99 = shard.shard %41 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %42 = xf.matmul "bsh,bso->oh" %sharding_annotated_48, %sharding_annotated_98 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<2x8x8xf32> -> tensor<8x16xf32>
    %sharding_annotated_100 = shard.shard %42 to %sharding_3 : tensor<8x16xf32>
    %43 = xf.reshape %sharding_annotated_97 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x2x4xf32> -> tensor<2x8x8xf32>
    %sharding_annotated_101 = shard.shard %43 to %sharding_0 : tensor<2x8x8xf32>
    %44 = xf.matmul "bso,oh->bsh" %sharding_annotated_101, %sharding_annotated_42 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x8xf32>, tensor<8x16xf32> -> tensor<2x8x16xf32>
    %sharding_annotated_102 = shard.shard %44 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %45 = xf.matmul "bsh,bso->oh" %sharding_annotated_48, %sharding_annotated_101 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<2x8x8xf32> -> tensor<8x16xf32>
    %sharding_annotated_103 = shard.shard %45 to %sharding_3 : tensor<8x16xf32>
    %46 = xf.add %sharding_annotated_99, %sharding_annotated_102 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<2x8x16xf32>
    %sharding_annotated_104 = shard.shard %46 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %47 = xf.reshape %sharding_annotated_96 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
    %sharding_annotated_105 = shard.shard %47 to %sharding_0 : tensor<2x8x16xf32>
    %48 = xf.matmul "bso,oh->bsh" %sharding_annotated_105, %sharding_annotated_43 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %sharding_annotated_106 = shard.shard %48 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %49 = xf.matmul "bsh,bso->oh" %sharding_annotated_48, %sharding_annotated_105 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<16x16xf32>
    %sharding_annotated_107 = shard.shard %49 to %sharding_3 : tensor<16x16xf32>
    %50 = xf.add %sharding_annotated_104, %sharding_annotated_106 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<2x8x16xf32>
    %sharding_annotated_108 = shard.shard %50 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<2x8x16xf32>
    %dx_109, %dgamma_110 = xf.rmsnorm_grad %sharding_annotated_108, %sharding_annotated_47, %sharding_annotated_10 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<2x8x16xf32>, tensor<16xf32>
    %sharding_annotated_111 = shard.shard %dx_109 to %sharding_1 : tensor<2x8x16xf32>
    %sharding_annotated_112 = shard.shard %dgamma_110 to %sharding_7 : tensor<16xf32>
    %51 = xf.add %sharding_annotated_89, %sharding_annotated_111 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<2x8x16xf32>
    %sharding_annotated_113 = shard.shard %51 to %sharding_1 : tensor<2x8x16xf32>
    %52 = xf.embedding_grad %sharding_annotated_113, %sharding_annotated_46 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<2x8x16xf32>, tensor<2x8xi32> -> tensor<64x16xf32>
    %sharding_annotated_114 = shard.shard %52 to %sharding_3 : tensor<64x16xf32>
    %53 = xf.sum_squares %sharding_annotated_114 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_115 = shard.shard %53 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %54 = xf.sum_squares %sharding_annotated_112 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_116 = shard.shard %54 to %sharding_7 : tensor<f32>
    %55 = xf.add %sharding_annotated_115, %sharding_annotated_116 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_117 = shard.shard %55 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %56 = xf.sum_squares %sharding_annotated_107 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<16x16xf32>
    %sharding_annotated_118 = shard.shard %56 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %57 = xf.add %sharding_annotated_117, %sharding_annotated_118 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_119 = shard.shard %57 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %58 = xf.sum_squares %sharding_annotated_103 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<8x16xf32>
    %sharding_annotated_120 = shard.shard %58 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %59 = xf.add %sharding_annotated_119, %sharding_annotated_120 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_121 = shard.shard %59 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %60 = xf.sum_squares %sharding_annotated_100 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<8x16xf32>
    %sharding_annotated_122 = shard.shard %60 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %61 = xf.add %sharding_annotated_121, %sharding_annotated_122 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_123 = shard.shard %61 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %62 = xf.sum_squares %sharding_annotated_91 {xf.factor_axes = [array<i16>, array<i16: 1>]} : tensor<16x16xf32>
    %sharding_annotated_124 = shard.shard %62 to %sharding_7 {xf.partial = array<i16: 3>} : tensor<f32>
    %63 = xf.add %sharding_annotated_123, %sharding_annotated_124 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_125 = shard.shard %63 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %64 = xf.sum_squares %sharding_annotated_88 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_126 = shard.shard %64 to %sharding_7 : tensor<f32>
    %65 = xf.add %sharding_annotated_125, %sharding_annotated_126 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_127 = shard.shard %65 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %66 = xf.sum_squares %sharding_annotated_83 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_128 = shard.shard %66 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %67 = xf.add %sharding_annotated_127, %sharding_annotated_128 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_129 = shard.shard %67 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %68 = xf.sum_squares %sharding_annotated_81 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_130 = shard.shard %68 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %69 = xf.add %sharding_annotated_129, %sharding_annotated_130 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_131 = shard.shard %69 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %70 = xf.sum_squares %sharding_annotated_77 {xf.factor_axes = [array<i16>, array<i16: 1>]} : tensor<16x64xf32>
    %sharding_annotated_132 = shard.shard %70 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %71 = xf.add %sharding_annotated_131, %sharding_annotated_132 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_133 = shard.shard %71 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %72 = xf.sum_squares %sharding_annotated_75 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_134 = shard.shard %72 to %sharding_7 : tensor<f32>
    %73 = xf.add %sharding_annotated_133, %sharding_annotated_134 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_135 = shard.shard %73 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %74 = xf.sum_squares %sharding_annotated_73 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_136 = shard.shard %74 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %75 = xf.add %sharding_annotated_135, %sharding_annotated_136 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_137 = shard.shard %75 to %sharding_7 {xf.partial = array<i16: 1>} : tensor<f32>
    %norm, %grad_scale, %found_inf = xf.clip_grad_norm %sharding_annotated_137 max_norm = 1.000000e+00 {xf.factor_axes = []}
    %sharding_annotated_138 = shard.shard %found_inf to %sharding_7 : tensor<f32>
    %sharding_annotated_139 = shard.shard %grad_scale to %sharding_7 : tensor<f32>
    %sharding_annotated_140 = shard.shard %norm to %sharding_7 : tensor<f32>
    %76 = xf.lr_schedule %sharding_annotated lr = 6.000000e-04 min_lr = 1.000000e-05 warmup = 2 decay_steps = 10 {xf.factor_axes = []}
    %sharding_annotated_141 = shard.shard %76 to %sharding_7 : tensor<f32>
    %new_param, %new_m, %new_v = xf.adamw %sharding_annotated_44, %sharding_annotated_114, %sharding_annotated_37, %sharding_annotated_30, %sharding_annotated_141, %sharding_annotated_139, %sharding_annotated beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 1, 0>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_142 = shard.shard %new_v to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_143 = shard.shard %new_m to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_144 = shard.shard %new_param to %sharding_4 : tensor<64x16xf32>
    %new_param_145, %new_m_146, %new_v_147 = xf.adamw %sharding_annotated_10, %sharding_annotated_112, %sharding_annotated_23, %sharding_annotated_20, %sharding_annotated_141, %sharding_annotated_139, %sharding_annotated beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_148 = shard.shard %new_v_147 to %sharding_5 : tensor<16xf32>
    %sharding_annotated_149 = shard.shard %new_m_146 to %sharding_5 : tensor<16xf32>
    %sharding_annotated_150 = shard.shard %new_param_145 to %sharding_5 : tensor<16xf32>
    %new_param_151, %new_m_152, %new_v_153 = xf.adamw %sharding_annotated_43, %sharding_annotated_107, %sharding_annotated_36, %sharding_annotated_29, %sharding_annotated_141, %sharding_annotated_139, %sharding_annotated beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 1, 0>, array<i16>]} : tensor<16x16xf32>
    %sharding_annotated_154 = shard.shard %new_v_153 to %sharding_4 : tensor<16x16xf32>
    %sharding_annotated_155 = shard.shard %new_m_152 to %sharding_4 : tensor<16x16xf32>
    %sharding_annotated_156 = shard.shard %new_param_151 to %sharding_4 : tensor<16x16xf32>
    %new_param_157, %new_m_158, %new_v_159 = xf.adamw %sharding_annotated_42, %sharding_annotated_103, %sharding_annotated_35, %sharding_annotated_28, %sharding_annotated_141, %sharding_annotated_139, %sharding_annotated beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 1, 0>, array<i16>]} : tensor<8x16xf32>
    %sharding_annotated_160 = shard.shard %new_v_159 to %sharding_4 : tensor<8x16xf32>
    %sharding_annotated_161 = shard.shard %new_m_158 to %sharding_4 : tensor<8x16xf32>
    %sharding_annotated_162 = shard.shard %new_param_157 to %sharding_4 : tensor<8x16xf32>
    %new_param_163, %new_m_164, %new_v_165 = xf.adamw %sharding_annotated_41, %sharding_annotated_100, %sharding_annotated_34, %sharding_annotated_27, %sharding_annotated_141, %sharding_annotated_139, %sharding_annotated beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 1, 0>, array<i16>]} : tensor<8x16xf32>
    %sharding_annotated_166 = shard.shard %new_v_165 to %sharding_4 : tensor<8x16xf32>
    %sharding_annotated_167 = shard.shard %new_m_164 to %sharding_4 : tensor<8x16xf32>
    %sharding_annotated_168 = shard.shard %new_param_163 to %sharding_4 : tensor<8x16xf32>
    %new_param_169, %new_m_170, %new_v_171 = xf.adamw %sharding_annotated_13, %sharding_annotated_91, %sharding_annotated_17, %sharding_annotated_15, %sharding_annotated_141, %sharding_annotated_139, %sharding_annotated beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 0>, array<i16: 1>]} : tensor<16x16xf32>
    %sharding_annotated_172 = shard.shard %new_v_171 to %sharding_6 : tensor<16x16xf32>
    %sharding_annotated_173 = shard.shard %new_m_170 to %sharding_6 : tensor<16x16xf32>
    %sharding_annotated_174 = shard.shard %new_param_169 to %sharding_6 : tensor<16x16xf32>
    %new_param_175, %new_m_176, %new_v_177 = xf.adamw %sharding_annotated_9, %sharding_annotated_88, %sharding_annotated_22, %sharding_annotated_19, %sharding_annotated_141, %sharding_annotated_139, %sharding_annotated beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_178 = shard.shard %new_v_177 to %sharding_5 : tensor<16xf32>
    %sharding_annotated_179 = shard.shard %new_m_176 to %sharding_5 : tensor<16xf32>
    %sharding_annotated_180 = shard.shard %new_param_175 to %sharding_5 : tensor<16xf32>
    %new_param_181, %new_m_182, %new_v_183 = xf.adamw %sharding_annotated_40, %sharding_annotated_83, %sharding_annotated_33, %sharding_annotated_26, %sharding_annotated_141, %sharding_annotated_139, %sharding_annotated beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 1, 0>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_184 = shard.shard %new_v_183 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_185 = shard.shard %new_m_182 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_186 = shard.shard %new_param_181 to %sharding_4 : tensor<64x16xf32>
    %new_param_187, %new_m_188, %new_v_189 = xf.adamw %sharding_annotated_39, %sharding_annotated_81, %sharding_annotated_32, %sharding_annotated_25, %sharding_annotated_141, %sharding_annotated_139, %sharding_annotated beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 1, 0>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_190 = shard.shard %new_v_189 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_191 = shard.shard %new_m_188 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_192 = shard.shard %new_param_187 to %sharding_4 : tensor<64x16xf32>
    %new_param_193, %new_m_194, %new_v_195 = xf.adamw %sharding_annotated_12, %sharding_annotated_77, %sharding_annotated_16, %sharding_annotated_14, %sharding_annotated_141, %sharding_annotated_139, %sharding_annotated beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 0>, array<i16: 1>]} : tensor<16x64xf32>
    %sharding_annotated_196 = shard.shard %new_v_195 to %sharding_6 : tensor<16x64xf32>
    %sharding_annotated_197 = shard.shard %new_m_194 to %sharding_6 : tensor<16x64xf32>
    %sharding_annotated_198 = shard.shard %new_param_193 to %sharding_6 : tensor<16x64xf32>
    %new_param_199, %new_m_200, %new_v_201 = xf.adamw %sharding_annotated_8, %sharding_annotated_75, %sharding_annotated_21, %sharding_annotated_18, %sharding_annotated_141, %sharding_annotated_139, %sharding_annotated beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_202 = shard.shard %new_v_201 to %sharding_5 : tensor<16xf32>
    %sharding_annotated_203 = shard.shard %new_m_200 to %sharding_5 : tensor<16xf32>
    %sharding_annotated_204 = shard.shard %new_param_199 to %sharding_5 : tensor<16xf32>
    %new_param_205, %new_m_206, %new_v_207 = xf.adamw %sharding_annotated_38, %sharding_annotated_73, %sharding_annotated_31, %sharding_annotated_24, %sharding_annotated_141, %sharding_annotated_139, %sharding_annotated beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 1, 0>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_208 = shard.shard %new_v_207 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_209 = shard.shard %new_m_206 to %sharding_4 : tensor<64x16xf32>
    %sharding_annotated_210 = shard.shard %new_param_205 to %sharding_4 : tensor<64x16xf32>
    %77 = xf.count_step %sharding_annotated {xf.factor_axes = []}
    %sharding_annotated_211 = shard.shard %77 to %sharding_7 : tensor<i32>
    return %sharding_annotated_69, %sharding_annotated_140, %sharding_annotated_141, %sharding_annotated_144, %sharding_annotated_150, %sharding_annotated_156, %sharding_annotated_162, %sharding_annotated_168, %sharding_annotated_174, %sharding_annotated_180, %sharding_annotated_186, %sharding_annotated_192, %sharding_annotated_198, %sharding_annotated_204, %sharding_annotated_210, %sharding_annotated_143, %sharding_annotated_149, %sharding_annotated_155, %sharding_annotated_161, %sharding_annotated_167, %sharding_annotated_173, %sharding_annotated_179, %sharding_annotated_185, %sharding_annotated_191, %sharding_annotated_197, %sharding_annotated_203, %sharding_annotated_209, %sharding_annotated_142, %sharding_annotated_148, %sharding_annotated_154, %sharding_annotated_160, %sharding_annotated_166, %sharding_annotated_172, %sharding_annotated_178, %sharding_annotated_184, %sharding_annotated_190, %sharding_annotated_196, %sharding_annotated_202, %sharding_annotated_208, %sharding_annotated_211 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<64x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<i32>
  }
}

