// shardc-fuzz --seed 7 --case 59609 (before xf.optimizer changed the corpus): a sharded GPT-2 step
// whose shard.sharding splits over axis 2 of a 2-axis grid. Was: a segfault in the rest of the
// pipeline. Now: the sharding passes check split axes against the mesh.
// RUN: not shardc-opt %s --pass-pipeline='builtin.module(func.func(xf-partition,xf-schedule),xf-plan-memory,xf-lower-to-rt,func.func(rt-bucket-all-reduces{bucket-bytes=256},rt-schedule-collectives{overlap=1}),rt-to-llvm)' -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: split axis 2 is not an axis of the mesh dp=2,tp=2 (2 axes)
module attributes {xf.model = {family = "gpt2", heads = 2 : i64, hidden = 16 : i64, layers = 1 : i64, name = "fuzz-gpt2", vocab = 64 : i64}} {
  shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
  func.func @forward(%arg0: tensor<4x8xi32> {xf.input = "tokens"}, %arg1: tensor<4x8xi32> {xf.input = "targets"}, %arg2: tensor<64x16xf32> {xf.param = #xf.param<name = "transformer.wte.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg3: tensor<8x16xf32> {xf.param = #xf.param<name = "transformer.wpe.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg4: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.weight", role = norm_scale, init = ones>}, %arg5: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.bias", role = bias, init = zeros>}, %arg6: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.bias", role = bias, init = zeros>}, %arg7: tensor<16x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg8: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.bias", role = bias, init = zeros>}, %arg9: tensor<16x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg10: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.bias", role = bias, init = zeros>}, %arg11: tensor<16x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg12: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.bias", role = bias, init = zeros>}, %arg13: tensor<16x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.weight", role = weight, init = normal, std = 0.014142135623730949>}, %arg14: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.weight", role = norm_scale, init = ones>}, %arg15: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.bias", role = bias, init = zeros>}, %arg16: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.bias", role = bias, init = zeros>}, %arg17: tensor<16x64xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg18: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.bias", role = bias, init = zeros>}, %arg19: tensor<64x16xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.weight", role = weight, init = normal, std = 0.014142135623730949>}, %arg20: tensor<16xf32> {xf.param = #xf.param<name = "transformer.ln_f.weight", role = norm_scale, init = ones>}, %arg21: tensor<16xf32> {xf.param = #xf.param<name = "transformer.ln_f.bias", role = bias, init = zeros>}) -> tensor<f32> {
    %0 = xf.iota dim = 1 : tensor<4x8xi32>
    %1 = xf.embedding %arg3, %0 : tensor<8x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %2 = xf.embedding %arg2, %arg0 : tensor<64x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %3 = xf.add %2, %1 : tensor<4x8x16xf32>
    %4 = xf.layernorm %3, %arg4, %arg5 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %5 = xf.matmul "bsh,ho->bso" %4, %arg7 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %6 = xf.bias_add %5, %arg6 : tensor<4x8x16xf32>, tensor<16xf32>
    %7 = xf.reshape %6 : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %8 = xf.matmul "bsh,ho->bso" %4, %arg9 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %9 = xf.bias_add %8, %arg8 : tensor<4x8x16xf32>, tensor<16xf32>
    %10 = xf.reshape %9 : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %11 = xf.matmul "bsh,ho->bso" %4, %arg11 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %12 = xf.bias_add %11, %arg10 : tensor<4x8x16xf32>, tensor<16xf32>
    %13 = xf.reshape %12 : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %14 = xf.attention %7, %10, %13 causal scale = 0.35355339059327373 : tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>
    %15 = xf.reshape %14 : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %16 = xf.matmul "bsh,ho->bso" %15, %arg13 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %17 = xf.bias_add %16, %arg12 : tensor<4x8x16xf32>, tensor<16xf32>
    %18 = xf.add %3, %17 : tensor<4x8x16xf32>
    %19 = xf.layernorm %18, %arg14, %arg15 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %20 = xf.matmul "bsh,ho->bso" %19, %arg17 : tensor<4x8x16xf32>, tensor<16x64xf32> -> tensor<4x8x64xf32>
    %21 = xf.bias_add %20, %arg16 : tensor<4x8x64xf32>, tensor<64xf32>
    %22 = xf.gelu %21 : tensor<4x8x64xf32>
    %23 = xf.matmul "bsh,ho->bso" %22, %arg19 : tensor<4x8x64xf32>, tensor<64x16xf32> -> tensor<4x8x16xf32>
    %24 = xf.bias_add %23, %arg18 : tensor<4x8x16xf32>, tensor<16xf32>
    %25 = xf.add %18, %24 : tensor<4x8x16xf32>
    %26 = xf.layernorm %25, %arg20, %arg21 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %27 = xf.matmul "bsh,vh->bsv" %26, %arg2 : tensor<4x8x16xf32>, tensor<64x16xf32> -> tensor<4x8x64xf32>
    %28 = xf.cross_entropy %27, %arg1 ignore_index = -100 : tensor<4x8x64xf32>, tensor<4x8xi32> -> tensor<f32>
    return %28 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<4x8xi32> {xf.input = "tokens", xf.micro_batch = 0 : i64}, %arg1: tensor<4x8xi32> {xf.input = "targets", xf.micro_batch = 0 : i64}, %arg2: tensor<4x8xi32> {xf.input = "tokens", xf.micro_batch = 1 : i64}, %arg3: tensor<4x8xi32> {xf.input = "targets", xf.micro_batch = 1 : i64}, %arg4: tensor<64x16xf32> {xf.param = #xf.param<name = "transformer.wte.weight", role = embedding, init = normal, std = 2.000000e-02>, xf.state = "param:transformer.wte.weight"}, %arg5: tensor<8x16xf32> {xf.param = #xf.param<name = "transformer.wpe.weight", role = embedding, init = normal, std = 2.000000e-02>, xf.state = "param:transformer.wpe.weight"}, %arg6: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.weight", role = norm_scale, init = ones>, xf.state = "param:transformer.h.0.ln_1.weight"}, %arg7: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.bias", role = bias, init = zeros>, xf.state = "param:transformer.h.0.ln_1.bias"}, %arg8: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.bias", role = bias, init = zeros>, xf.state = "param:transformer.h.0.attn.q_proj.bias"}, %arg9: tensor<16x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:transformer.h.0.attn.q_proj.weight"}, %arg10: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.bias", role = bias, init = zeros>, xf.state = "param:transformer.h.0.attn.k_proj.bias"}, %arg11: tensor<16x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:transformer.h.0.attn.k_proj.weight"}, %arg12: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.bias", role = bias, init = zeros>, xf.state = "param:transformer.h.0.attn.v_proj.bias"}, %arg13: tensor<16x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:transformer.h.0.attn.v_proj.weight"}, %arg14: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.bias", role = bias, init = zeros>, xf.state = "param:transformer.h.0.attn.c_proj.bias"}, %arg15: tensor<16x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.weight", role = weight, init = normal, std = 0.014142135623730949>, xf.state = "param:transformer.h.0.attn.c_proj.weight"}, %arg16: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.weight", role = norm_scale, init = ones>, xf.state = "param:transformer.h.0.ln_2.weight"}, %arg17: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.bias", role = bias, init = zeros>, xf.state = "param:transformer.h.0.ln_2.bias"}, %arg18: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.bias", role = bias, init = zeros>, xf.state = "param:transformer.h.0.mlp.c_fc.bias"}, %arg19: tensor<16x64xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:transformer.h.0.mlp.c_fc.weight"}, %arg20: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.bias", role = bias, init = zeros>, xf.state = "param:transformer.h.0.mlp.c_proj.bias"}, %arg21: tensor<64x16xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.weight", role = weight, init = normal, std = 0.014142135623730949>, xf.state = "param:transformer.h.0.mlp.c_proj.weight"}, %arg22: tensor<16xf32> {xf.param = #xf.param<name = "transformer.ln_f.weight", role = norm_scale, init = ones>, xf.state = "param:transformer.ln_f.weight"}, %arg23: tensor<16xf32> {xf.param = #xf.param<name = "transformer.ln_f.bias", role = bias, init = zeros>, xf.state = "param:transformer.ln_f.bias"}, %arg24: tensor<64x16xf32> {xf.state = "adam_m:transformer.wte.weight"}, %arg25: tensor<8x16xf32> {xf.state = "adam_m:transformer.wpe.weight"}, %arg26: tensor<16xf32> {xf.state = "adam_m:transformer.h.0.ln_1.weight"}, %arg27: tensor<16xf32> {xf.state = "adam_m:transformer.h.0.ln_1.bias"}, %arg28: tensor<16xf32> {xf.state = "adam_m:transformer.h.0.attn.q_proj.bias"}, %arg29: tensor<16x16xf32> {xf.state = "adam_m:transformer.h.0.attn.q_proj.weight"}, %arg30: tensor<16xf32> {xf.state = "adam_m:transformer.h.0.attn.k_proj.bias"}, %arg31: tensor<16x16xf32> {xf.state = "adam_m:transformer.h.0.attn.k_proj.weight"}, %arg32: tensor<16xf32> {xf.state = "adam_m:transformer.h.0.attn.v_proj.bias"}, %arg33: tensor<16x16xf32> {xf.state = "adam_m:transformer.h.0.attn.v_proj.weight"}, %arg34: tensor<16xf32> {xf.state = "adam_m:transformer.h.0.attn.c_proj.bias"}, %arg35: tensor<16x16xf32> {xf.state = "adam_m:transformer.h.0.attn.c_proj.weight"}, %arg36: tensor<16xf32> {xf.state = "adam_m:transformer.h.0.ln_2.weight"}, %arg37: tensor<16xf32> {xf.state = "adam_m:transformer.h.0h.ln_2.bias"}, %arg38: tensor<64xf32> {xf.state = "adam_m:transformer.h.0.mlp.c_fc.bias"}, %arg39: tensor<16x64xf32> {xf.state = "adam_m:transformer.h.0.mlp.c_fc.weight"}, %arg40: tensor<16xf32> {xf.state = "adam_m:transformer.h.0.mlp.c_proj.bias"}, %arg41: tensor<64x16xf32> {xf.state = "adam_m:transformer.h.0.mlp.c_proj.weight"}, %arg42: tensor<16xf32> {xf.state = "adam_m:transformer.ln_f.weight"}, %arg43: tensor<16xf32> {xf.state = "adam_m:transformer.ln_f.bias"}, %arg44: tensor<64x16xf32> {xf.state = "adam_v:transformer.wte.weight"}, %arg45: tensor<8x16xf32> {xf.state = "adam_v:transformer.wpe.weight"}, %arg46: tensor<16xf32> {xf.state = "adam_v:transformer.h.0.ln_1.weight"}, %arg47: tensor<16xf32> {xf.state = "adam_v:transformer.h.0.ln_1.bias"}, %arg48: tensor<16xf32> {xf.state = "adam_v:transformer.h.0.attn.q_proj.bias"}, %arg49: tensor<16x16xf32> {xf.state = "adam_v:transformer.h.0.attn.q_proj.weight"}, %arg50: tensor<16xf32> {xf.state = "adam_v:transformer.h.0.attn.k_proj.bias"}, %arg51: tensor<16x16xf32> {xf.state = "adam_v:transformer.h.0.attn.k_proj.weight"}, %arg52: tensor<16xf32> {xf.state = "adam_v:transformer.h.0.attn.v_proj.bias"}, %arg53: tensor<16x16xf32> {xf.state = "adam_v:transformer.h.0.attn.v_proj.weight"}, %arg54: tensor<16xf32> {xf.state = "adam_v:transformer.h.0.attn.c_proj.bias"}, %arg55: tensor<16x16xf32> {xf.state = "adam_v:transformer.h.0.attn.c_proj.weight"}, %arg56: tensor<16xf32> {xf.state = "adam_v:transformer.h.0.ln_2.weight"}, %arg57: tensor<16xf32> {xf.state = "adam_v:transformer.h.0.ln_2.bias"}, %arg58: tensor<64xf32> {xf.state = "adam_v:transformer.h.0.mlp.c_fc.bias"}, %arg59: tensor<16x64xf32> {xf.state = "adam_v:transformer.h.0.mlp.c_fc.weight"}, %arg60: tensor<16xf32> {xf.state = "adam_v:transformer.h.0.mlp.c_proj.bias"}, %arg61: tensor<64x16xf32> {xf.state = "adam_v:transformer.h.0.mlp.c_proj.weight"}, %arg62: tensor<16xf32> {xf.state = "adam_v:transformer.ln_f.weight"}, %arg63: tensor<16xf32> {xf.state = "adam_v:transformer.ln_f.bias"}, %arg64: tensor<i32> {xf.state = "step"}) -> (tensor<f32> {xf.report = "loss"}, tensor<f32> {xf.report = "grad_norm"}, tensor<f32> {xf.report = "lr"}, tensor<64x16xf32> {xf.state = "param:transformer.wte.weight"}, tensor<8x16xf32> {xf.state = "param:transformer.wpe.weight"}, tensor<16xf32> {xf.state = "param:transformer.h.0.ln_1.weight"}, tensor<16xf32> {xf.state = "param:transformer.h.0.ln_1.bias"}, tensor<16xf32> {xf.state = "param:transformer.h.0.attn.q_proj.bias"}, tensor<16x16xf32> {xf.state = "param:transformer.h.0.attn.q_proj.weight"}, tensor<16xf32> {xf.state = "param:transformer.h.0.attn.k_proj.bias"}, tensor<16x16xf32> {xf.state = "param:transformer.h.0.attn.k_proj.weight"}, tensor<16xf32> {xf.state = "param:transformer.h.0.attn.v_proj.bias"}, tensor<16x16xf32> {xf.state = "param:transformer.h.0.attn.v_proj.weight"}, tensor<16xf32> {xf.state = "param:transformer.h.0.attn.c_proj.bias"}, tensor<16x16xf32> {xf.state = "param:transformer.h.0.attn.c_proj.weight"}, tensor<16xf32> {xf.state = "param:transformer.h.0.ln_2.weight"}, tensor<16xf32> {xf.state = "param:transformer.h.0.ln_2.bias"}, tensor<64xf32> {xf.state = "param:transformer.h.0.mlp.c_fc.bias"}, tensor<16x64xf32> {xf.state = "param:transformer.h.0.mlp.c_fc.weight"}, tensor<16xf32> {xf.state = "param:transformer.h.0.mlp.c_proj.bias"}, tensor<64x16xf32> {xf.state = "param:transformer.h.0.mlp.c_proj.weight"}, tensor<16xf32> {xf.state = "param:transformer.ln_f.weight"}, tensor<16xf32> {xf.state = "param:transformer.ln_f.bias"}, tensor<64x16xf32> {xf.state = "adam_m:transformer.wte.weight"}, tensor<8x16xf32> {xf.state = "adam_m:transformer.wpe.weight"}, tensor<16xf32> {xf.state = "adam_m:transformer.h.0.ln_1.weight"}, tensor<16xf32> {xf.state = "adam_m:transformer.h.0.ln_1.bias"}, tensor<16xf32> {xf.state = "adam_m:transformer.h.0.attn.q_proj.bias"}, tensor<16x16xf32> {xf.state = "adam_m:transformer.h.0.attn.q_proj.weight"}, tensor<16xf32> {xf.state = "adam_m:transformer.h.0.attn.k_proj.bias"}, tensor<16x16xf32> {xf.state = "adam_m:transformer.h.0.attn.k_proj.weight"}, tensor<16xf32> {xf.state = "adam_m:transformer.h.0.attn.v_proj.bias"}, tensor<16x16xf32> {xf.state = "adam_m:transformer.h.0.attn.v_proj.weight"}, tensor<16xf32> {xf.state = "adam_m:transformer.h.0.attn.c_proj.bias"}, tensor<16x16xf32> {xf.state = "adam_m:transformer.h.0.attn.c_proj.weight"}, tensor<16xf32> {xf.state = "adam_m:transformer.h.0.ln_2.weight"}, tensor<16xf32> {xf.state = "adam_m:transformer.h.0.ln_2.bias"}, tensor<64xf32> {xf.state = "adam_m:transformer.h.0.mlp.c_fc.bias"}, tensor<16x64xf32> {xf.state = "adam_m:transformer.h.0.mlp.c_fc.weight"}, tensor<16xf32> {xf.state = "adam_m:transformer.h.0.mlp.c_proj.bias"}, tensor<64x16xf32> {xf.state = "adam_m:transformer.h.0.mlp.c_proj.weight"}, tensor<16xf32> {xf.state = "adam_m:transformer.ln_f.weight"}, tensor<16xf32> {xf.state = "adam_m:transformer.ln_f.bias"}, tensor<64x16xf32> {xf.state = "adam_v:transformer.wte.weight"}, tensor<8x16xf32> {xf.state = "adam_v:transformer.wpe.weight"}, tensor<16xf32> {xf.state = "adam_v:transformer.h.0.ln_1.weight"}, tensor<16xf32> {xf.state = "adam_v:transformer.h.0.ln_1.bias"}, tensor<16xf32> {xf.state = "adam_v:transformer.h.0.attn.q_proj.bias"}, tensor<16x16xf32> {xf.state = "adam_v:transformer.h.0.attn.q_proj.weight"}, tensor<16xf32> {xf.state = "adam_v:transformer.h.0.attn.k_proj.bias"}, tensor<16x16xf32> {xf.state = "adam_v:transformer.h.0.attn.k_proj.weight"}, tensor<16xf32> {xf.state = "adam_v:transformer.h.0.attn.v_proj.bias"}, tensor<16x16xf32> {xf.state = "adam_v:transformer.h.0.attn.v_proj.weight"}, tensor<16xf32> {xf.state = "adam_v:transformer.h.0.attn.c_proj.bias"}, tensor<16x16xf32> {xf.state = "adam_v:transformer.h.0.attn.c_proj.weight"}, tensor<16xf32> {xf.state = "adam_v:transformer.h.0.ln_2.weight"}, tensor<16xf32> {xf.state = "adam_v:transformer.h.0.ln_2.bias"}, tensor<64xf32> {xf.state = "adam_v:transformer.h.0.mlp.c_fc.bias"}, tensor<16x64xf32> {xf.state = "adam_v:transformer.h.0.mlp.c_fc.weight"}, tensor<16xf32> {xf.state = "adam_v:transformer.h.0.mlp.c_proj.bias"}, tensor<64x16xf32> {xf.state = "adam_v:transformer.h.0.mlp.c_proj.weight"}, tensor<16xf32> {xf.state = "adam_v:transformer.ln_f.weight"}, tensor<16xf32> {xf.state = "adam_v:transformer.ln_f.bias"}, tensor<i32> {xf.state = "step"}) attributes {xf.optimizer = {adam_eps = 1.000000e-08 : f64, beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, clip_grad = 1.000000e+00 : f64, decay_steps = 0 : i64, loss_scale = 6.553600e+04 : f64, loss_scale_window = 2000 : i64, lr = 1.500000e-04 : f64, min_lr = 1.000000e-05 : f64, warmup = 0 : i64, weight_decay = 1.000000e-02 : f64}} {
    %sharding = shard.sharding @mesh split_axes = [[0], [], [1], []] : !shard.sharding
    %sharding_0 = shard.sharding @mesh split_axes = [[0], [], [1]] : !shard.sharding
    %sharding_1 = shard.sharding @mesh split_axes = [[0], [], []] : !shard.sharding
    %sharding_2 = shard.sharding @mesh split_axes = [[1]] : !shard.sharding
    %sharding_annotated = shard.shard %arg18 to %sharding_2 : tensor<64xf32>
    %sharding_annotated_3 = shard.shard %arg12 to %sharding_2 : tensor<16xf32>
    %sharding_annotated_4 = shard.shard %arg10 to %sharding_2 : tensor<16xf32>
    %sharding_annotated_5 = shard.shard %arg8 to %sharding_2 : tensor<16xf32>
    %sharding_6 = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
    %sharding_7 = shard.sharding @mesh split_axes = [[1], []] : !shard.sharding
    %sharding_annotated_8 = shard.shard %arg21 to %sharding_7 : tensor<64x16xf32>
    %sharding_annotated_9 = shard.shard %arg15 to %sharding_7 : tensor<16x16xf32>
    %sharding_10 = shard.sharding @mesh split_axes = [[], [2]] : !shard.sharding
    %sharding_11 = shard.sharding @mesh split_axes = [[1, 0], []] : !shard.sharding
    %sharding_12 = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
    %sharding_13 = shard.sharding @mesh split_axes = [[0], [1]] : !shard.sharding
    %sharding_14 = shard.sharding @mesh split_axes = [[], []] : !shard.sharding
    %sharding_annotated_15 = shard.shard %arg5 to %sharding_14 : tensor<8x16xf32>
    %sharding_16 = shard.sharding @mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_17 = shard.shard %arg64 to %sharding_16 : tensor<i32>
    %sharding_annotated_18 = shard.shard %arg23 to %sharding_16 : tensor<16xf32>
    %sharding_annotated_19 = shard.shard %arg22 to %sharding_16 : tensor<16xf32>
    %sharding_annotated_20 = shard.shard %arg20 to %sharding_16 : tensor<16xf32>
    %sharding_annotated_21 = shard.shard %arg17 to %sharding_16 : tensor<16xf32>
    %sharding_annotated_22 = shard.shard %arg16 to %sharding_16 : tensor<16xf32>
    %sharding_annotated_23 = shard.shard %arg14 to %sharding_16 : tensor<16xf32>
    %sharding_annotated_24 = shard.shard %arg7 to %sharding_16 : tensor<16xf32>
    %sharding_annotated_25 = shard.shard %arg6 to %sharding_16 : tensor<16xf32>
    %sharding_annotated_26 = shard.shard %arg59 to %sharding_13 : tensor<16x64xf32>
    %sharding_annotated_27 = shard.shard %arg53 to %sharding_13 : tensor<16x16xf32>
    %sharding_annotated_28 = shard.shard %arg51 to %sharding_13 : tensor<16x16xf32>
    %sharding_annotated_29 = shard.shard %arg49 to %sharding_13 : tensor<16x16xf32>
    %sharding_annotated_30 = shard.shard %arg39 to %sharding_13 : tensor<16x64xf32>
    %sharding_annotated_31 = shard.shard %arg33 to %sharding_13 : tensor<16x16xf32>
    %sharding_annotated_32 = shard.shard %arg31 to %sharding_13 : tensor<16x16xf32>
    %sharding_annotated_33 = shard.shard %arg29 to %sharding_13 : tensor<16x16xf32>
    %sharding_annotated_34 = shard.shard %arg63 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_35 = shard.shard %arg62 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_36 = shard.shard %arg60 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_37 = shard.shard %arg58 to %sharding_12 : tensor<64xf32>
    %sharding_annotated_38 = shard.shard %arg57 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_39 = shard.shard %arg56 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_40 = shard.shard %arg54 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_41 = shard.shard %arg52 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_42 = shard.shard %arg50 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_43 = shard.shard %arg48 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_44 = shard.shard %arg47 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_45 = shard.shard %arg46 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_46 = shard.shard %arg43 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_47 = shard.shard %arg42 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_48 = shard.shard %arg40 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_49 = shard.shard %arg38 to %sharding_12 : tensor<64xf32>
    %sharding_annotated_50 = shard.shard %arg37 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_51 = shard.shard %arg36 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_52 = shard.shard %arg34 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_53 = shard.shard %arg32 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_54 = shard.shard %arg30 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_55 = shard.shard %arg28 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_56 = shard.shard %arg27 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_57 = shard.shard %arg26 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_58 = shard.shard %arg61 to %sharding_11 : tensor<64x16xf32>
    %sharding_annotated_59 = shard.shard %arg55 to %sharding_11 : tensor<16x16xf32>
    %sharding_annotated_60 = shard.shard %arg44 to %sharding_11 : tensor<64x16xf32>
    %sharding_annotated_61 = shard.shard %arg41 to %sharding_11 : tensor<64x16xf32>
    %sharding_annotated_62 = shard.shard %arg35 to %sharding_11 : tensor<16x16xf32>
    %sharding_annotated_63 = shard.shard %arg24 to %sharding_11 : tensor<64x16xf32>
    %sharding_annotated_64 = shard.shard %arg19 to %sharding_10 : tensor<16x64xf32>
    %sharding_annotated_65 = shard.shard %arg13 to %sharding_10 : tensor<16x16xf32>
    %sharding_annotated_66 = shard.shard %arg11 to %sharding_10 : tensor<16x16xf32>
    %sharding_annotated_67 = shard.shard %arg9 to %sharding_10 : tensor<16x16xf32>
    %sharding_annotated_68 = shard.shard %arg4 to %sharding_7 : tensor<64x16xf32>
    %sharding_annotated_69 = shard.shard %arg45 to %sharding_6 : tensor<8x16xf32>
    %sharding_annotated_70 = shard.shard %arg25 to %sharding_6 : tensor<8x16xf32>
    %sharding_annotated_71 = shard.shard %arg3 to %sharding_6 : tensor<4x8xi32>
    %sharding_annotated_72 = shard.shard %arg2 to %sharding_6 : tensor<4x8xi32>
    %sharding_annotated_73 = shard.shard %arg1 to %sharding_6 : tensor<4x8xi32>
    %sharding_annotated_74 = shard.shard %arg0 to %sharding_6 : tensor<4x8xi32>
    %0 = xf.iota dim = 1 {xf.factor_axes = [array<i16: 0>, array<i16>]} : tensor<4x8xi32>
    %sharding_annotated_75 = shard.shard %0 to %sharding_6 : tensor<4x8xi32>
    %1 = xf.embedding %sharding_annotated_15, %sharding_annotated_75 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16>]} : tensor<8x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %sharding_annotated_76 = shard.shard %1 to %sharding_1 : tensor<4x8x16xf32>
    %2 = xf.embedding %sharding_annotated_68, %sharding_annotated_74 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<64x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %sharding_annotated_77 = shard.shard %2 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %3 = xf.add %sharding_annotated_77, %sharding_annotated_76 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>
    %sharding_annotated_78 = shard.shard %3 to %sharding_1 : tensor<4x8x16xf32>
    %4 = xf.layernorm %sharding_annotated_78, %sharding_annotated_25, %sharding_annotated_24 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %sharding_annotated_79 = shard.shard %4 to %sharding_1 : tensor<4x8x16xf32>
    %5 = xf.matmul "bsh,ho->bso" %sharding_annotated_79, %sharding_annotated_67 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_80 = shard.shard %5 to %sharding_0 : tensor<4x8x16xf32>
    %6 = xf.bias_add %sharding_annotated_80, %sharding_annotated_5 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_81 = shard.shard %6 to %sharding_0 : tensor<4x8x16xf32>
    %7 = xf.reshape %sharding_annotated_81 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %sharding_annotated_82 = shard.shard %7 to %sharding : tensor<4x8x2x8xf32>
    %8 = xf.matmul "bsh,ho->bso" %sharding_annotated_79, %sharding_annotated_66 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_83 = shard.shard %8 to %sharding_0 : tensor<4x8x16xf32>
    %9 = xf.bias_add %sharding_annotated_83, %sharding_annotated_4 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_84 = shard.shard %9 to %sharding_0 : tensor<4x8x16xf32>
    %10 = xf.reshape %sharding_annotated_84 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %sharding_annotated_85 = shard.shard %10 to %sharding : tensor<4x8x2x8xf32>
    %11 = xf.matmul "bsh,ho->bso" %sharding_annotated_79, %sharding_annotated_65 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_86 = shard.shard %11 to %sharding_0 : tensor<4x8x16xf32>
    %12 = xf.bias_add %sharding_annotated_86, %sharding_annotated_3 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_87 = shard.shard %12 to %sharding_0 : tensor<4x8x16xf32>
    %13 = xf.reshape %sharding_annotated_87 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %sharding_annotated_88 = shard.shard %13 to %sharding : tensor<4x8x2x8xf32>
    %14 = xf.attention %sharding_annotated_82, %sharding_annotated_85, %sharding_annotated_88 causal scale = 0.35355339059327373 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>
    %sharding_annotated_89 = shard.shard %14 to %sharding : tensor<4x8x2x8xf32>
    %15 = xf.reshape %sharding_annotated_89 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_90 = shard.shard %15 to %sharding_0 : tensor<4x8x16xf32>
    %16 = xf.matmul "bsh,ho->bso" %sharding_annotated_90, %sharding_annotated_9 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_91 = shard.shard %16 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %17 = xf.bias_add %sharding_annotated_91, %sharding_annotated_23 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_92 = shard.shard %17 to %sharding_1 : tensor<4x8x16xf32>
    %18 = xf.add %sharding_annotated_78, %sharding_annotated_92 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>
    %sharding_annotated_93 = shard.shard %18 to %sharding_1 : tensor<4x8x16xf32>
    %19 = xf.layernorm %sharding_annotated_93, %sharding_annotated_22, %sharding_annotated_21 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %sharding_annotated_94 = shard.shard %19 to %sharding_1 : tensor<4x8x16xf32>
    %20 = xf.matmul "bsh,ho->bso" %sharding_annotated_94, %sharding_annotated_64 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16x64xf32> -> tensor<4x8x64xf32>
    %sharding_annotated_95 = shard.shard %20 to %sharding_0 : tensor<4x8x64xf32>
    %21 = xf.bias_add %sharding_annotated_95, %sharding_annotated {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x64xf32>, tensor<64xf32>
    %sharding_annotated_96 = shard.shard %21 to %sharding_0 : tensor<4x8x64xf32>
    %22 = xf.gelu %sharding_annotated_96 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x64xf32>
    %sharding_annotated_97 = shard.shard %22 to %sharding_0 : tensor<4x8x64xf32>
    %23 = xf.matmul "bsh,ho->bso" %sharding_annotated_97, %sharding_annotated_8 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x64xf32>, tensor<64x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_98 = shard.shard %23 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %24 = xf.bias_add %sharding_annotated_98, %sharding_annotated_20 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_99 = shard.shard %24 to %sharding_1 : tensor<4x8x16xf32>
    %25 = xf.add %sharding_annotated_93, %sharding_annotated_99 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>
    %sharding_annotated_100 = shard.shard %25 to %sharding_1 : tensor<4x8x16xf32>
    %26 = xf.layernorm %sharding_annotated_100, %sharding_annotated_19, %sharding_annotated_18 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %sharding_annotated_101 = shard.shard %26 to %sharding_1 : tensor<4x8x16xf32>
    %27 = xf.matmul "bsh,vh->bsv" %sharding_annotated_101, %sharding_annotated_68 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<64x16xf32> -> tensor<4x8x64xf32>
    %sharding_annotated_102 = shard.shard %27 to %sharding_0 : tensor<4x8x64xf32>
    %28 = xf.cross_entropy %sharding_annotated_102, %sharding_annotated_73 ignore_index = -100 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x64xf32>, tensor<4x8xi32> -> tensor<f32>
    %sharding_annotated_103 = shard.shard %28 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<f32>
    %29 = xf.fill 5.000000e-01 {xf.factor_axes = []} : tensor<f32>
    %sharding_annotated_104 = shard.shard %29 to %sharding_16 : tensor<f32>
    %30 = xf.cross_entropy_grad %sharding_annotated_104, %sharding_annotated_102, %sharding_annotated_73 ignore_index = -100 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<f32>, tensor<4x8x64xf32>, tensor<4x8xi32>
    %sharding_annotated_105 = shard.shard %30 to %sharding_0 : tensor<4x8x64xf32>
    %31 = xf.matmul "bsv,vh->bsh" %sharding_annotated_105, %sharding_annotated_68 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x64xf32>, tensor<64x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_106 = shard.shard %31 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %32 = xf.matmul "bsh,bsv->vh" %sharding_annotated_101, %sharding_annotated_105 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<4x8x64xf32> -> tensor<64x16xf32>
    %sharding_annotated_107 = shard.shard %32 to %sharding_7 {xf.partial = array<i16: 0>} : tensor<64x16xf32>
    %dx, %dgamma, %dbeta = xf.layernorm_grad %sharding_annotated_106, %sharding_annotated_100, %sharding_annotated_19 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_108 = shard.shard %dbeta to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %sharding_annotated_109 = shard.shard %dgamma to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %sharding_annotated_110 = shard.shard %dx to %sharding_1 : tensor<4x8x16xf32>
    %33 = xf.reduce_sum %sharding_annotated_110 dims = [0, 1] {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32> -> tensor<16xf32>
    %sharding_annotated_111 = shard.shard %33 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %34 = xf.matmul "bso,ho->bsh" %sharding_annotated_110, %sharding_annotated_8 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<64x16xf32> -> tensor<4x8x64xf32>
    %sharding_annotated_112 = shard.shard %34 to %sharding_0 : tensor<4x8x64xf32>
    %35 = xf.matmul "bsh,bso->ho" %sharding_annotated_97, %sharding_annotated_110 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x64xf32>, tensor<4x8x16xf32> -> tensor<64x16xf32>
    %sharding_annotated_113 = shard.shard %35 to %sharding_7 {xf.partial = array<i16: 0>} : tensor<64x16xf32>
    %36 = xf.gelu_grad %sharding_annotated_112, %sharding_annotated_96 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x64xf32>
    %sharding_annotated_114 = shard.shard %36 to %sharding_0 : tensor<4x8x64xf32>
    %37 = xf.reduce_sum %sharding_annotated_114 dims = [0, 1] {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x64xf32> -> tensor<64xf32>
    %sharding_annotated_115 = shard.shard %37 to %sharding_2 {xf.partial = array<i16: 0>} : tensor<64xf32>
    %38 = xf.matmul "bso,ho->bsh" %sharding_annotated_114, %sharding_annotated_64 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x64xf32>, tensor<16x64xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_116 = shard.shard %38 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %39 = xf.matmul "bsh,bso->ho" %sharding_annotated_94, %sharding_annotated_114 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<4x8x64xf32> -> tensor<16x64xf32>
    %sharding_annotated_117 = shard.shard %39 to %sharding_10 {xf.partial = array<i16: 0>} : tensor<16x64xf32>
    %dx_118, %dgamma_119, %dbeta_120 = xf.layernorm_grad %sharding_annotated_116, %sharding_annotated_93, %sharding_annotated_22 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_121 = shard.shard %dbeta_120 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %sharding_annotated_122 = shard.shard %dgamma_119 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %sharding_annotated_123 = shard.shard %dx_118 to %sharding_1 : tensor<4x8x16xf32>
    %40 = xf.add %sharding_annotated_110, %sharding_annotated_123 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>
    %sharding_annotated_124 = shard.shard %40 to %sharding_1 : tensor<4x8x16xf32>
    %41 = xf.reduce_sum %sharding_annotated_124 dims = [0, 1] {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32> -> tensor<16xf32>
    %sharding_annotated_125 = shard.shard %41 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %42 = xf.matmul "bso,ho->bsh" %sharding_annotated_124, %sharding_annotated_9 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_126 = shard.shard %42 to %sharding_0 : tensor<4x8x16xf32>
    %43 = xf.matmul "bsh,bso->ho" %sharding_annotated_90, %sharding_annotated_124 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %sharding_annotated_127 = shard.shard %43 to %sharding_7 {xf.partial = array<i16: 0>} : tensor<16x16xf32>
    %44 = xf.reshape %sharding_annotated_126 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %sharding_annotated_128 = shard.shard %44 to %sharding : tensor<4x8x2x8xf32>
    %dq, %dk, %dv = xf.attention_grad %sharding_annotated_128, %sharding_annotated_82, %sharding_annotated_85, %sharding_annotated_88, %sharding_annotated_89 causal scale = 0.35355339059327373 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>
    %sharding_annotated_129 = shard.shard %dv to %sharding : tensor<4x8x2x8xf32>
    %sharding_annotated_130 = shard.shard %dk to %sharding : tensor<4x8x2x8xf32>
    %sharding_annotated_131 = shard.shard %dq to %sharding : tensor<4x8x2x8xf32>
    %45 = xf.reshape %sharding_annotated_129 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_132 = shard.shard %45 to %sharding_0 : tensor<4x8x16xf32>
    %46 = xf.reduce_sum %sharding_annotated_132 dims = [0, 1] {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32> -> tensor<16xf32>
    %sharding_annotated_133 = shard.shard %46 to %sharding_2 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %47 = xf.matmul "bso,ho->bsh" %sharding_annotated_132, %sharding_annotated_65 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_134 = shard.shard %47 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %48 = xf.matmul "bsh,bso->ho" %sharding_annotated_79, %sharding_annotated_132 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %sharding_annotated_135 = shard.shard %48 to %sharding_10 {xf.partial = array<i16: 0>} : tensor<16x16xf32>
    %49 = xf.reshape %sharding_annotated_130 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_136 = shard.shard %49 to %sharding_0 : tensor<4x8x16xf32>
    %50 = xf.reduce_sum %sharding_annotated_136 dims = [0, 1] {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32> -> tensor<16xf32>
    %sharding_annotated_137 = shard.shard %50 to %sharding_2 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %51 = xf.matmul "bso,ho->bsh" %sharding_annotated_136, %sharding_annotated_66 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_138 = shard.shard %51 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %52 = xf.matmul "bsh,bso->ho" %sharding_annotated_79, %sharding_annotated_136 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %sharding_annotated_139 = shard.shard %52 to %sharding_10 {xf.partial = array<i16: 0>} : tensor<16x16xf32>
    %53 = xf.add %sharding_annotated_134, %sharding_annotated_138 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<4x8x16xf32>
    %sharding_annotated_140 = shard.shard %53 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %54 = xf.reshape %sharding_annotated_131 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_141 = shard.shard %54 to %sharding_0 : tensor<4x8x16xf32>
    %55 = xf.reduce_sum %sharding_annotated_141 dims = [0, 1] {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32> -> tensor<16xf32>
    %sharding_annotated_142 = shard.shard %55 to %sharding_2 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %56 = xf.matmul "bso,ho->bsh" %sharding_annotated_141, %sharding_annotated_67 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_143 = shard.shard %56 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %57 = xf.matmul "bsh,bso->ho" %sharding_annotated_79, %sharding_annotated_141 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %sharding_annotated_144 = shard.shard %57 to %sharding_10 {xf.partial = array<i16: 0>} : tensor<16x16xf32>
    %58 = xf.add %sharding_annotated_140, %sharding_annotated_143 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<4x8x16xf32>
    %sharding_annotated_145 = shard.shard %58 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %dx_146, %dgamma_147, %dbeta_148 = xf.layernorm_grad %sharding_annotated_145, %sharding_annotated_78, %sharding_annotated_25 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_149 = shard.shard %dbeta_148 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %sharding_annotated_150 = shard.shard %dgamma_147 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %sharding_annotated_151 = shard.shard %dx_146 to %sharding_1 : tensor<4x8x16xf32>
    %59 = xf.add %sharding_annotated_124, %sharding_annotated_151 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>
    %sharding_annotated_152 = shard.shard %59 to %sharding_1 : tensor<4x8x16xf32>
    %60 = xf.embedding_grad %sharding_annotated_152, %sharding_annotated_74 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<64x16xf32>
    %sharding_annotated_153 = shard.shard %60 to %sharding_7 {xf.partial = array<i16: 0>} : tensor<64x16xf32>
    %61 = xf.add %sharding_annotated_107, %sharding_annotated_153 {xf.factor_axes = [array<i16: 1>, array<i16>], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 0>} : tensor<64x16xf32>
    %sharding_annotated_154 = shard.shard %61 to %sharding_7 {xf.partial = array<i16: 0>} : tensor<64x16xf32>
    %62 = xf.embedding_grad %sharding_annotated_152, %sharding_annotated_75 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<8x16xf32>
    %sharding_annotated_155 = shard.shard %62 to %sharding_14 {xf.partial = array<i16: 0>} : tensor<8x16xf32>
    %63 = xf.iota dim = 1 {xf.factor_axes = [array<i16: 0>, array<i16>]} : tensor<4x8xi32>
    %sharding_annotated_156 = shard.shard %63 to %sharding_6 : tensor<4x8xi32>
    %64 = xf.embedding %sharding_annotated_15, %sharding_annotated_156 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16>]} : tensor<8x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %sharding_annotated_157 = shard.shard %64 to %sharding_1 : tensor<4x8x16xf32>
    %65 = xf.embedding %sharding_annotated_68, %sharding_annotated_72 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<64x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %sharding_annotated_158 = shard.shard %65 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %66 = xf.add %sharding_annotated_158, %sharding_annotated_157 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>
    %sharding_annotated_159 = shard.shard %66 to %sharding_1 : tensor<4x8x16xf32>
    %67 = xf.layernorm %sharding_annotated_159, %sharding_annotated_25, %sharding_annotated_24 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %sharding_annotated_160 = shard.shard %67 to %sharding_1 : tensor<4x8x16xf32>
    %68 = xf.matmul "bsh,ho->bso" %sharding_annotated_160, %sharding_annotated_67 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_161 = shard.shard %68 to %sharding_0 : tensor<4x8x16xf32>
    %69 = xf.bias_add %sharding_annotated_161, %sharding_annotated_5 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_162 = shard.shard %69 to %sharding_0 : tensor<4x8x16xf32>
    %70 = xf.reshape %sharding_annotated_162 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %sharding_annotated_163 = shard.shard %70 to %sharding : tensor<4x8x2x8xf32>
    %71 = xf.matmul "bsh,ho->bso" %sharding_annotated_160, %sharding_annotated_66 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_164 = shard.shard %71 to %sharding_0 : tensor<4x8x16xf32>
    %72 = xf.bias_add %sharding_annotated_164, %sharding_annotated_4 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_165 = shard.shard %72 to %sharding_0 : tensor<4x8x16xf32>
    %73 = xf.reshape %sharding_annotated_165 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %sharding_annotated_166 = shard.shard %73 to %sharding : tensor<4x8x2x8xf32>
    %74 = xf.matmul "bsh,ho->bso" %sharding_annotated_160, %sharding_annotated_65 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_167 = shard.shard %74 to %sharding_0 : tensor<4x8x16xf32>
    %75 = xf.bias_add %sharding_annotated_167, %sharding_annotated_3 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_168 = shard.shard %75 to %sharding_0 : tensor<4x8x16xf32>
    %76 = xf.reshape %sharding_annotated_168 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %sharding_annotated_169 = shard.shard %76 to %sharding : tensor<4x8x2x8xf32>
    %77 = xf.attention %sharding_annotated_163, %sharding_annotated_166, %sharding_annotated_169 causal scale = 0.35355339059327373 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>
    %sharding_annotated_170 = shard.shard %77 to %sharding : tensor<4x8x2x8xf32>
    %78 = xf.reshape %sharding_annotated_170 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_171 = shard.shard %78 to %sharding_0 : tensor<4x8x16xf32>
    %79 = xf.matmul "bsh,ho->bso" %sharding_annotated_171, %sharding_annotated_9 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_172 = shard.shard %79 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %80 = xf.bias_add %sharding_annotated_172, %sharding_annotated_23 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_173 = shard.shard %80 to %sharding_1 : tensor<4x8x16xf32>
    %81 = xf.add %sharding_annotated_159, %sharding_annotated_173 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>
    %sharding_annotated_174 = shard.shard %81 to %sharding_1 : tensor<4x8x16xf32>
    %82 = xf.layernorm %sharding_annotated_174, %sharding_annotated_22, %sharding_annotated_21 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %sharding_annotated_175 = shard.shard %82 to %sharding_1 : tensor<4x8x16xf32>
    %83 = xf.matmul "bsh,ho->bso" %sharding_annotated_175, %sharding_annotated_64 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16x64xf32> -> tensor<4x8x64xf32>
    %sharding_annotated_176 = shard.shard %83 to %sharding_0 : tensor<4x8x64xf32>
    %84 = xf.bias_add %sharding_annotated_176, %sharding_annotated {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x64xf32>, tensor<64xf32>
    %sharding_annotated_177 = shard.shard %84 to %sharding_0 : tensor<4x8x64xf32>
    %85 = xf.gelu %sharding_annotated_177 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x64xf32>
    %sharding_annotated_178 = shard.shard %85 to %sharding_0 : tensor<4x8x64xf32>
    %86 = xf.matmul "bsh,ho->bso" %sharding_annotated_178, %sharding_annotated_8 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x64xf32>, tensor<64x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_179 = shard.shard %86 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %87 = xf.bias_add %sharding_annotated_179, %sharding_annotated_20 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_180 = shard.shard %87 to %sharding_1 : tensor<4x8x16xf32>
    %88 = xf.add %sharding_annotated_174, %sharding_annotated_180 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>
    %sharding_annotated_181 = shard.shard %88 to %sharding_1 : tensor<4x8x16xf32>
    %89 = xf.layernorm %sharding_annotated_181, %sharding_annotated_19, %sharding_annotated_18 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %sharding_annotated_182 = shard.shard %89 to %sharding_1 : tensor<4x8x16xf32>
    %90 = xf.matmul "bsh,vh->bsv" %sharding_annotated_182, %sharding_annotated_68 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<64x16xf32> -> tensor<4x8x64xf32>
    %sharding_annotated_183 = shard.shard %90 to %sharding_0 : tensor<4x8x64xf32>
    %91 = xf.cross_entropy %sharding_annotated_183, %sharding_annotated_71 ignore_index = -100 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x64xf32>, tensor<4x8xi32> -> tensor<f32>
    %sharding_annotated_184 = shard.shard %91 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<f32>
    %92 = xf.fill 5.000000e-01 {xf.factor_axes = []} : tensor<f32>
    %sharding_annotated_185 = shard.shard %92 to %sharding_16 : tensor<f32>
    %93 = xf.cross_entropy_grad %sharding_annotated_185, %sharding_annotated_183, %sharding_annotated_71 ignore_index = -100 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<f32>, tensor<4x8x64xf32>, tensor<4x8xi32>
    %sharding_annotated_186 = shard.shard %93 to %sharding_0 : tensor<4x8x64xf32>
    %94 = xf.matmul "bsv,vh->bsh" %sharding_annotated_186, %sharding_annotated_68 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x64xf32>, tensor<64x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_187 = shard.shard %94 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %95 = xf.matmul "bsh,bsv->vh" %sharding_annotated_182, %sharding_annotated_186 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<4x8x64xf32> -> tensor<64x16xf32>
    %sharding_annotated_188 = shard.shard %95 to %sharding_7 {xf.partial = array<i16: 0>} : tensor<64x16xf32>
    %96 = xf.add %sharding_annotated_154, %sharding_annotated_188 {xf.factor_axes = [array<i16: 1>, array<i16>], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 0>} : tensor<64x16xf32>
    %sharding_annotated_189 = shard.shard %96 to %sharding_7 {xf.partial = array<i16: 0>} : tensor<64x16xf32>
    %dx_190, %dgamma_191, %dbeta_192 = xf.layernorm_grad %sharding_annotated_187, %sharding_annotated_181, %sharding_annotated_19 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_193 = shard.shard %dbeta_192 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %sharding_annotated_194 = shard.shard %dgamma_191 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %sharding_annotated_195 = shard.shard %dx_190 to %sharding_1 : tensor<4x8x16xf32>
    %97 = xf.add %sharding_annotated_109, %sharding_annotated_194 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_196 = shard.shard %97 to %sharding_16 : tensor<16xf32>
    %98 = xf.add %sharding_annotated_108, %sharding_annotated_193 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_197 = shard.shard %98 to %sharding_16 : tensor<16xf32>
    %99 = xf.reduce_sum %sharding_annotated_195 dims = [0, 1] {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32> -> tensor<16xf32>
    %sharding_annotated_198 = shard.shard %99 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %100 = xf.add %sharding_annotated_111, %sharding_annotated_198 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_199 = shard.shard %100 to %sharding_16 : tensor<16xf32>
    %101 = xf.matmul "bso,ho->bsh" %sharding_annotated_195, %sharding_annotated_8 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<64x16xf32> -> tensor<4x8x64xf32>
    %sharding_annotated_200 = shard.shard %101 to %sharding_0 : tensor<4x8x64xf32>
    %102 = xf.matmul "bsh,bso->ho" %sharding_annotated_178, %sharding_annotated_195 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x64xf32>, tensor<4x8x16xf32> -> tensor<64x16xf32>
    %sharding_annotated_201 = shard.shard %102 to %sharding_7 {xf.partial = array<i16: 0>} : tensor<64x16xf32>
    %103 = xf.add %sharding_annotated_113, %sharding_annotated_201 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_202 = shard.shard %103 to %sharding_7 : tensor<64x16xf32>
    %104 = xf.gelu_grad %sharding_annotated_200, %sharding_annotated_177 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x64xf32>
    %sharding_annotated_203 = shard.shard %104 to %sharding_0 : tensor<4x8x64xf32>
    %105 = xf.reduce_sum %sharding_annotated_203 dims = [0, 1] {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x64xf32> -> tensor<64xf32>
    %sharding_annotated_204 = shard.shard %105 to %sharding_2 {xf.partial = array<i16: 0>} : tensor<64xf32>
    %106 = xf.add %sharding_annotated_115, %sharding_annotated_204 {xf.factor_axes = [array<i16>]} : tensor<64xf32>
    %sharding_annotated_205 = shard.shard %106 to %sharding_16 : tensor<64xf32>
    %107 = xf.matmul "bso,ho->bsh" %sharding_annotated_203, %sharding_annotated_64 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x64xf32>, tensor<16x64xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_206 = shard.shard %107 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %108 = xf.matmul "bsh,bso->ho" %sharding_annotated_175, %sharding_annotated_203 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<4x8x64xf32> -> tensor<16x64xf32>
    %sharding_annotated_207 = shard.shard %108 to %sharding_10 {xf.partial = array<i16: 0>} : tensor<16x64xf32>
    %109 = xf.add %sharding_annotated_117, %sharding_annotated_207 {xf.factor_axes = [array<i16>, array<i16: 1>]} : tensor<16x64xf32>
    %sharding_annotated_208 = shard.shard %109 to %sharding_10 : tensor<16x64xf32>
    %dx_209, %dgamma_210, %dbeta_211 = xf.layernorm_grad %sharding_annotated_206, %sharding_annotated_174, %sharding_annotated_22 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_212 = shard.shard %dbeta_211 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %sharding_annotated_213 = shard.shard %dgamma_210 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %sharding_annotated_214 = shard.shard %dx_209 to %sharding_1 : tensor<4x8x16xf32>
    %110 = xf.add %sharding_annotated_195, %sharding_annotated_214 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>
    %sharding_annotated_215 = shard.shard %110 to %sharding_1 : tensor<4x8x16xf32>
    %111 = xf.add %sharding_annotated_122, %sharding_annotated_213 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_216 = shard.shard %111 to %sharding_16 : tensor<16xf32>
    %112 = xf.add %sharding_annotated_121, %sharding_annotated_212 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_217 = shard.shard %112 to %sharding_16 : tensor<16xf32>
    %113 = xf.reduce_sum %sharding_annotated_215 dims = [0, 1] {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32> -> tensor<16xf32>
    %sharding_annotated_218 = shard.shard %113 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %114 = xf.add %sharding_annotated_125, %sharding_annotated_218 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_219 = shard.shard %114 to %sharding_16 : tensor<16xf32>
    %115 = xf.matmul "bso,ho->bsh" %sharding_annotated_215, %sharding_annotated_9 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_220 = shard.shard %115 to %sharding_0 : tensor<4x8x16xf32>
    %116 = xf.matmul "bsh,bso->ho" %sharding_annotated_171, %sharding_annotated_215 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %sharding_annotated_221 = shard.shard %116 to %sharding_7 {xf.partial = array<i16: 0>} : tensor<16x16xf32>
    %117 = xf.add %sharding_annotated_127, %sharding_annotated_221 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<16x16xf32>
    %sharding_annotated_222 = shard.shard %117 to %sharding_7 : tensor<16x16xf32>
    %118 = xf.reshape %sharding_annotated_220 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %sharding_annotated_223 = shard.shard %118 to %sharding : tensor<4x8x2x8xf32>
    %dq_224, %dk_225, %dv_226 = xf.attention_grad %sharding_annotated_223, %sharding_annotated_163, %sharding_annotated_166, %sharding_annotated_169, %sharding_annotated_170 causal scale = 0.35355339059327373 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>
    %sharding_annotated_227 = shard.shard %dv_226 to %sharding : tensor<4x8x2x8xf32>
    %sharding_annotated_228 = shard.shard %dk_225 to %sharding : tensor<4x8x2x8xf32>
    %sharding_annotated_229 = shard.shard %dq_224 to %sharding : tensor<4x8x2x8xf32>
    %119 = xf.reshape %sharding_annotated_227 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_230 = shard.shard %119 to %sharding_0 : tensor<4x8x16xf32>
    %120 = xf.reduce_sum %sharding_annotated_230 dims = [0, 1] {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32> -> tensor<16xf32>
    %sharding_annotated_231 = shard.shard %120 to %sharding_2 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %121 = xf.add %sharding_annotated_133, %sharding_annotated_231 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_232 = shard.shard %121 to %sharding_16 : tensor<16xf32>
    %122 = xf.matmul "bso,ho->bsh" %sharding_annotated_230, %sharding_annotated_65 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_233 = shard.shard %122 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %123 = xf.matmul "bsh,bso->ho" %sharding_annotated_160, %sharding_annotated_230 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %sharding_annotated_234 = shard.shard %123 to %sharding_10 {xf.partial = array<i16: 0>} : tensor<16x16xf32>
    %124 = xf.add %sharding_annotated_135, %sharding_annotated_234 {xf.factor_axes = [array<i16>, array<i16: 1>]} : tensor<16x16xf32>
    %sharding_annotated_235 = shard.shard %124 to %sharding_10 : tensor<16x16xf32>
    %125 = xf.reshape %sharding_annotated_228 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_236 = shard.shard %125 to %sharding_0 : tensor<4x8x16xf32>
    %126 = xf.reduce_sum %sharding_annotated_236 dims = [0, 1] {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32> -> tensor<16xf32>
    %sharding_annotated_237 = shard.shard %126 to %sharding_2 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %127 = xf.add %sharding_annotated_137, %sharding_annotated_237 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_238 = shard.shard %127 to %sharding_16 : tensor<16xf32>
    %128 = xf.matmul "bso,ho->bsh" %sharding_annotated_236, %sharding_annotated_66 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_239 = shard.shard %128 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %129 = xf.matmul "bsh,bso->ho" %sharding_annotated_160, %sharding_annotated_236 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %sharding_annotated_240 = shard.shard %129 to %sharding_10 {xf.partial = array<i16: 0>} : tensor<16x16xf32>
    %130 = xf.add %sharding_annotated_233, %sharding_annotated_239 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<4x8x16xf32>
    %sharding_annotated_241 = shard.shard %130 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %131 = xf.add %sharding_annotated_139, %sharding_annotated_240 {xf.factor_axes = [array<i16>, array<i16: 1>]} : tensor<16x16xf32>
    %sharding_annotated_242 = shard.shard %131 to %sharding_10 : tensor<16x16xf32>
    %132 = xf.reshape %sharding_annotated_229 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_243 = shard.shard %132 to %sharding_0 : tensor<4x8x16xf32>
    %133 = xf.reduce_sum %sharding_annotated_243 dims = [0, 1] {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32> -> tensor<16xf32>
    %sharding_annotated_244 = shard.shard %133 to %sharding_2 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %134 = xf.add %sharding_annotated_142, %sharding_annotated_244 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_245 = shard.shard %134 to %sharding_16 : tensor<16xf32>
    %135 = xf.matmul "bso,ho->bsh" %sharding_annotated_243, %sharding_annotated_67 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %sharding_annotated_246 = shard.shard %135 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %136 = xf.matmul "bsh,bso->ho" %sharding_annotated_160, %sharding_annotated_243 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16: 1>]} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %sharding_annotated_247 = shard.shard %136 to %sharding_10 {xf.partial = array<i16: 0>} : tensor<16x16xf32>
    %137 = xf.add %sharding_annotated_241, %sharding_annotated_246 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<4x8x16xf32>
    %sharding_annotated_248 = shard.shard %137 to %sharding_1 {xf.partial = array<i16: 1>} : tensor<4x8x16xf32>
    %138 = xf.add %sharding_annotated_144, %sharding_annotated_247 {xf.factor_axes = [array<i16>, array<i16: 1>]} : tensor<16x16xf32>
    %sharding_annotated_249 = shard.shard %138 to %sharding_10 : tensor<16x16xf32>
    %dx_250, %dgamma_251, %dbeta_252 = xf.layernorm_grad %sharding_annotated_248, %sharding_annotated_159, %sharding_annotated_25 epsilon = 1.000000e-05 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<16xf32>
    %sharding_annotated_253 = shard.shard %dbeta_252 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %sharding_annotated_254 = shard.shard %dgamma_251 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<16xf32>
    %sharding_annotated_255 = shard.shard %dx_250 to %sharding_1 : tensor<4x8x16xf32>
    %139 = xf.add %sharding_annotated_215, %sharding_annotated_255 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>]} : tensor<4x8x16xf32>
    %sharding_annotated_256 = shard.shard %139 to %sharding_1 : tensor<4x8x16xf32>
    %140 = xf.add %sharding_annotated_150, %sharding_annotated_254 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_257 = shard.shard %140 to %sharding_16 : tensor<16xf32>
    %141 = xf.add %sharding_annotated_149, %sharding_annotated_253 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_258 = shard.shard %141 to %sharding_16 : tensor<16xf32>
    %142 = xf.embedding_grad %sharding_annotated_256, %sharding_annotated_72 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>, array<i16>]} : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<64x16xf32>
    %sharding_annotated_259 = shard.shard %142 to %sharding_7 {xf.partial = array<i16: 0>} : tensor<64x16xf32>
    %143 = xf.add %sharding_annotated_189, %sharding_annotated_259 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_260 = shard.shard %143 to %sharding_7 : tensor<64x16xf32>
    %144 = xf.embedding_grad %sharding_annotated_256, %sharding_annotated_156 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16>, array<i16>]} : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<8x16xf32>
    %sharding_annotated_261 = shard.shard %144 to %sharding_14 {xf.partial = array<i16: 0>} : tensor<8x16xf32>
    %145 = xf.add %sharding_annotated_155, %sharding_annotated_261 {xf.factor_axes = [array<i16>, array<i16>]} : tensor<8x16xf32>
    %sharding_annotated_262 = shard.shard %145 to %sharding_14 : tensor<8x16xf32>
    %146 = xf.add %sharding_annotated_103, %sharding_annotated_184 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 0>} : tensor<f32>
    %sharding_annotated_263 = shard.shard %146 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<f32>
    %147 = xf.scale %sharding_annotated_263 factor = 5.000000e-01 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 0>} : tensor<f32>
    %sharding_annotated_264 = shard.shard %147 to %sharding_16 {xf.partial = array<i16: 0>} : tensor<f32>
    %148 = xf.sum_squares %sharding_annotated_260 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_265 = shard.shard %148 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %149 = xf.sum_squares %sharding_annotated_262 {xf.factor_axes = [array<i16>, array<i16>]} : tensor<8x16xf32>
    %sharding_annotated_266 = shard.shard %149 to %sharding_16 : tensor<f32>
    %150 = xf.add %sharding_annotated_265, %sharding_annotated_266 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_267 = shard.shard %150 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %151 = xf.sum_squares %sharding_annotated_257 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_268 = shard.shard %151 to %sharding_16 : tensor<f32>
    %152 = xf.add %sharding_annotated_267, %sharding_annotated_268 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_269 = shard.shard %152 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %153 = xf.sum_squares %sharding_annotated_258 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_270 = shard.shard %153 to %sharding_16 : tensor<f32>
    %154 = xf.add %sharding_annotated_269, %sharding_annotated_270 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_271 = shard.shard %154 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %155 = xf.sum_squares %sharding_annotated_245 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_272 = shard.shard %155 to %sharding_16 : tensor<f32>
    %156 = xf.add %sharding_annotated_271, %sharding_annotated_272 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_273 = shard.shard %156 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %157 = xf.sum_squares %sharding_annotated_249 {xf.factor_axes = [array<i16>, array<i16: 1>]} : tensor<16x16xf32>
    %sharding_annotated_274 = shard.shard %157 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %158 = xf.add %sharding_annotated_273, %sharding_annotated_274 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_275 = shard.shard %158 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %159 = xf.sum_squares %sharding_annotated_238 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_276 = shard.shard %159 to %sharding_16 : tensor<f32>
    %160 = xf.add %sharding_annotated_275, %sharding_annotated_276 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_277 = shard.shard %160 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %161 = xf.sum_squares %sharding_annotated_242 {xf.factor_axes = [array<i16>, array<i16: 1>]} : tensor<16x16xf32>
    %sharding_annotated_278 = shard.shard %161 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %162 = xf.add %sharding_annotated_277, %sharding_annotated_278 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_279 = shard.shard %162 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %163 = xf.sum_squares %sharding_annotated_232 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_280 = shard.shard %163 to %sharding_16 : tensor<f32>
    %164 = xf.add %sharding_annotated_279, %sharding_annotated_280 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_281 = shard.shard %164 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %165 = xf.sum_squares %sharding_annotated_235 {xf.factor_axes = [array<i16>, array<i16: 1>]} : tensor<16x16xf32>
    %sharding_annotated_282 = shard.shard %165 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %166 = xf.add %sharding_annotated_281, %sharding_annotated_282 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_283 = shard.shard %166 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %167 = xf.sum_squares %sharding_annotated_219 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_284 = shard.shard %167 to %sharding_16 : tensor<f32>
    %168 = xf.add %sharding_annotated_283, %sharding_annotated_284 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_285 = shard.shard %168 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %169 = xf.sum_squares %sharding_annotated_222 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<16x16xf32>
    %sharding_annotated_286 = shard.shard %169 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %170 = xf.add %sharding_annotated_285, %sharding_annotated_286 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_287 = shard.shard %170 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %171 = xf.sum_squares %sharding_annotated_216 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_288 = shard.shard %171 to %sharding_16 : tensor<f32>
    %172 = xf.add %sharding_annotated_287, %sharding_annotated_288 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_289 = shard.shard %172 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %173 = xf.sum_squares %sharding_annotated_217 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_290 = shard.shard %173 to %sharding_16 : tensor<f32>
    %174 = xf.add %sharding_annotated_289, %sharding_annotated_290 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_291 = shard.shard %174 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %175 = xf.sum_squares %sharding_annotated_205 {xf.factor_axes = [array<i16>]} : tensor<64xf32>
    %sharding_annotated_292 = shard.shard %175 to %sharding_16 : tensor<f32>
    %176 = xf.add %sharding_annotated_291, %sharding_annotated_292 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_293 = shard.shard %176 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %177 = xf.sum_squares %sharding_annotated_208 {xf.factor_axes = [array<i16>, array<i16: 1>]} : tensor<16x64xf32>
    %sharding_annotated_294 = shard.shard %177 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %178 = xf.add %sharding_annotated_293, %sharding_annotated_294 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_295 = shard.shard %178 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %179 = xf.sum_squares %sharding_annotated_199 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_296 = shard.shard %179 to %sharding_16 : tensor<f32>
    %180 = xf.add %sharding_annotated_295, %sharding_annotated_296 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_297 = shard.shard %180 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %181 = xf.sum_squares %sharding_annotated_202 {xf.factor_axes = [array<i16: 1>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_298 = shard.shard %181 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %182 = xf.add %sharding_annotated_297, %sharding_annotated_298 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_299 = shard.shard %182 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %183 = xf.sum_squares %sharding_annotated_196 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_300 = shard.shard %183 to %sharding_16 : tensor<f32>
    %184 = xf.add %sharding_annotated_299, %sharding_annotated_300 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_301 = shard.shard %184 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %185 = xf.sum_squares %sharding_annotated_197 {xf.factor_axes = [array<i16>]} : tensor<16xf32>
    %sharding_annotated_302 = shard.shard %185 to %sharding_16 : tensor<f32>
    %186 = xf.add %sharding_annotated_301, %sharding_annotated_302 {xf.factor_axes = [], xf.linear_group = 0 : i64, xf.linear_partial = array<i16: 1>} : tensor<f32>
    %sharding_annotated_303 = shard.shard %186 to %sharding_16 {xf.partial = array<i16: 1>} : tensor<f32>
    %norm, %grad_scale, %found_inf = xf.clip_grad_norm %sharding_annotated_303 max_norm = 1.000000e+00 {xf.factor_axes = []}
    %sharding_annotated_304 = shard.shard %found_inf to %sharding_16 : tensor<f32>
    %sharding_annotated_305 = shard.shard %grad_scale to %sharding_16 : tensor<f32>
    %sharding_annotated_306 = shard.shard %norm to %sharding_16 : tensor<f32>
    %187 = xf.lr_schedule %sharding_annotated_17 lr = 1.500000e-04 min_lr = 1.000000e-05 warmup = 0 decay_steps = 0 {xf.factor_axes = []}
    %sharding_annotated_307 = shard.shard %187 to %sharding_16 : tensor<f32>
    %new_param, %new_m, %new_v = xf.adamw %sharding_annotated_68, %sharding_annotated_260, %sharding_annotated_63, %sharding_annotated_60, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 1, 0>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_308 = shard.shard %new_v to %sharding_11 : tensor<64x16xf32>
    %sharding_annotated_309 = shard.shard %new_m to %sharding_11 : tensor<64x16xf32>
    %sharding_annotated_310 = shard.shard %new_param to %sharding_11 : tensor<64x16xf32>
    %new_param_311, %new_m_312, %new_v_313 = xf.adamw %sharding_annotated_15, %sharding_annotated_262, %sharding_annotated_70, %sharding_annotated_69, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 0>, array<i16>]} : tensor<8x16xf32>
    %sharding_annotated_314 = shard.shard %new_v_313 to %sharding_6 : tensor<8x16xf32>
    %sharding_annotated_315 = shard.shard %new_m_312 to %sharding_6 : tensor<8x16xf32>
    %sharding_annotated_316 = shard.shard %new_param_311 to %sharding_6 : tensor<8x16xf32>
    %new_param_317, %new_m_318, %new_v_319 = xf.adamw %sharding_annotated_25, %sharding_annotated_257, %sharding_annotated_57, %sharding_annotated_45, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_320 = shard.shard %new_v_319 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_321 = shard.shard %new_m_318 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_322 = shard.shard %new_param_317 to %sharding_12 : tensor<16xf32>
    %new_param_323, %new_m_324, %new_v_325 = xf.adamw %sharding_annotated_24, %sharding_annotated_258, %sharding_annotated_56, %sharding_annotated_44, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_326 = shard.shard %new_v_325 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_327 = shard.shard %new_m_324 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_328 = shard.shard %new_param_323 to %sharding_12 : tensor<16xf32>
    %new_param_329, %new_m_330, %new_v_331 = xf.adamw %sharding_annotated_5, %sharding_annotated_245, %sharding_annotated_55, %sharding_annotated_43, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_332 = shard.shard %new_v_331 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_333 = shard.shard %new_m_330 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_334 = shard.shard %new_param_329 to %sharding_12 : tensor<16xf32>
    %new_param_335, %new_m_336, %new_v_337 = xf.adamw %sharding_annotated_67, %sharding_annotated_249, %sharding_annotated_33, %sharding_annotated_29, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 0>, array<i16: 1>]} : tensor<16x16xf32>
    %sharding_annotated_338 = shard.shard %new_v_337 to %sharding_13 : tensor<16x16xf32>
    %sharding_annotated_339 = shard.shard %new_m_336 to %sharding_13 : tensor<16x16xf32>
    %sharding_annotated_340 = shard.shard %new_param_335 to %sharding_13 : tensor<16x16xf32>
    %new_param_341, %new_m_342, %new_v_343 = xf.adamw %sharding_annotated_4, %sharding_annotated_238, %sharding_annotated_54, %sharding_annotated_42, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_344 = shard.shard %new_v_343 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_345 = shard.shard %new_m_342 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_346 = shard.shard %new_param_341 to %sharding_12 : tensor<16xf32>
    %new_param_347, %new_m_348, %new_v_349 = xf.adamw %sharding_annotated_66, %sharding_annotated_242, %sharding_annotated_32, %sharding_annotated_28, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 0>, array<i16: 1>]} : tensor<16x16xf32>
    %sharding_annotated_350 = shard.shard %new_v_349 to %sharding_13 : tensor<16x16xf32>
    %sharding_annotated_351 = shard.shard %new_m_348 to %sharding_13 : tensor<16x16xf32>
    %sharding_annotated_352 = shard.shard %new_param_347 to %sharding_13 : tensor<16x16xf32>
    %new_param_353, %new_m_354, %new_v_355 = xf.adamw %sharding_annotated_3, %sharding_annotated_232, %sharding_annotated_53, %sharding_annotated_41, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_356 = shard.shard %new_v_355 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_357 = shard.shard %new_m_354 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_358 = shard.shard %new_param_353 to %sharding_12 : tensor<16xf32>
    %new_param_359, %new_m_360, %new_v_361 = xf.adamw %sharding_annotated_65, %sharding_annotated_235, %sharding_annotated_31, %sharding_annotated_27, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 0>, array<i16: 1>]} : tensor<16x16xf32>
    %sharding_annotated_362 = shard.shard %new_v_361 to %sharding_13 : tensor<16x16xf32>
    %sharding_annotated_363 = shard.shard %new_m_360 to %sharding_13 : tensor<16x16xf32>
    %sharding_annotated_364 = shard.shard %new_param_359 to %sharding_13 : tensor<16x16xf32>
    %new_param_365, %new_m_366, %new_v_367 = xf.adamw %sharding_annotated_23, %sharding_annotated_219, %sharding_annotated_52, %sharding_annotated_40, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_368 = shard.shard %new_v_367 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_369 = shard.shard %new_m_366 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_370 = shard.shard %new_param_365 to %sharding_12 : tensor<16xf32>
    %new_param_371, %new_m_372, %new_v_373 = xf.adamw %sharding_annotated_9, %sharding_annotated_222, %sharding_annotated_62, %sharding_annotated_59, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 1, 0>, array<i16>]} : tensor<16x16xf32>
    %sharding_annotated_374 = shard.shard %new_v_373 to %sharding_11 : tensor<16x16xf32>
    %sharding_annotated_375 = shard.shard %new_m_372 to %sharding_11 : tensor<16x16xf32>
    %sharding_annotated_376 = shard.shard %new_param_371 to %sharding_11 : tensor<16x16xf32>
    %new_param_377, %new_m_378, %new_v_379 = xf.adamw %sharding_annotated_22, %sharding_annotated_216, %sharding_annotated_51, %sharding_annotated_39, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_380 = shard.shard %new_v_379 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_381 = shard.shard %new_m_378 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_382 = shard.shard %new_param_377 to %sharding_12 : tensor<16xf32>
    %new_param_383, %new_m_384, %new_v_385 = xf.adamw %sharding_annotated_21, %sharding_annotated_217, %sharding_annotated_50, %sharding_annotated_38, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_386 = shard.shard %new_v_385 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_387 = shard.shard %new_m_384 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_388 = shard.shard %new_param_383 to %sharding_12 : tensor<16xf32>
    %new_param_389, %new_m_390, %new_v_391 = xf.adamw %sharding_annotated, %sharding_annotated_205, %sharding_annotated_49, %sharding_annotated_37, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<64xf32>
    %sharding_annotated_392 = shard.shard %new_v_391 to %sharding_12 : tensor<64xf32>
    %sharding_annotated_393 = shard.shard %new_m_390 to %sharding_12 : tensor<64xf32>
    %sharding_annotated_394 = shard.shard %new_param_389 to %sharding_12 : tensor<64xf32>
    %new_param_395, %new_m_396, %new_v_397 = xf.adamw %sharding_annotated_64, %sharding_annotated_208, %sharding_annotated_30, %sharding_annotated_26, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 0>, array<i16: 1>]} : tensor<16x64xf32>
    %sharding_annotated_398 = shard.shard %new_v_397 to %sharding_13 : tensor<16x64xf32>
    %sharding_annotated_399 = shard.shard %new_m_396 to %sharding_13 : tensor<16x64xf32>
    %sharding_annotated_400 = shard.shard %new_param_395 to %sharding_13 : tensor<16x64xf32>
    %new_param_401, %new_m_402, %new_v_403 = xf.adamw %sharding_annotated_20, %sharding_annotated_199, %sharding_annotated_48, %sharding_annotated_36, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_404 = shard.shard %new_v_403 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_405 = shard.shard %new_m_402 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_406 = shard.shard %new_param_401 to %sharding_12 : tensor<16xf32>
    %new_param_407, %new_m_408, %new_v_409 = xf.adamw %sharding_annotated_8, %sharding_annotated_202, %sharding_annotated_61, %sharding_annotated_58, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 {xf.factor_axes = [array<i16: 1, 0>, array<i16>]} : tensor<64x16xf32>
    %sharding_annotated_410 = shard.shard %new_v_409 to %sharding_11 : tensor<64x16xf32>
    %sharding_annotated_411 = shard.shard %new_m_408 to %sharding_11 : tensor<64x16xf32>
    %sharding_annotated_412 = shard.shard %new_param_407 to %sharding_11 : tensor<64x16xf32>
    %new_param_413, %new_m_414, %new_v_415 = xf.adamw %sharding_annotated_19, %sharding_annotated_196, %sharding_annotated_47, %sharding_annotated_35, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_416 = shard.shard %new_v_415 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_417 = shard.shard %new_m_414 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_418 = shard.shard %new_param_413 to %sharding_12 : tensor<16xf32>
    %new_param_419, %new_m_420, %new_v_421 = xf.adamw %sharding_annotated_18, %sharding_annotated_197, %sharding_annotated_46, %sharding_annotated_34, %sharding_annotated_307, %sharding_annotated_305, %sharding_annotated_17 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 {xf.factor_axes = [array<i16: 0>]} : tensor<16xf32>
    %sharding_annotated_422 = shard.shard %new_v_421 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_423 = shard.shard %new_m_420 to %sharding_12 : tensor<16xf32>
    %sharding_annotated_424 = shard.shard %new_param_419 to %sharding_12 : tensor<16xf32>
    %188 = xf.count_step %sharding_annotated_17 {xf.factor_axes = []}
    %sharding_annotated_425 = shard.shard %188 to %sharding_16 : tensor<i32>
    return %sharding_annotated_264, %sharding_annotated_306, %sharding_annotated_307, %sharding_annotated_310, %sharding_annotated_316, %sharding_annotated_322, %sharding_annotated_328, %sharding_annotated_334, %sharding_annotated_340, %sharding_annotated_346, %sharding_annotated_352, %sharding_annotated_358, %sharding_annotated_364, %sharding_annotated_370, %sharding_annotated_376, %sharding_annotated_382, %sharding_annotated_388, %sharding_annotated_394, %sharding_annotated_400, %sharding_annotated_406, %sharding_annotated_412, %sharding_annotated_418, %sharding_annotated_424, %sharding_annotated_309, %sharding_annotated_315, %sharding_annotated_321, %sharding_annotated_327, %sharding_annotated_333, %sharding_annotated_339, %sharding_annotated_345, %sharding_annotated_351, %sharding_annotated_357, %sharding_annotated_363, %sharding_annotated_369, %sharding_annotated_375, %sharding_annotated_381, %sharding_annotated_387, %sharding_annotated_393, %sharding_annotated_399, %sharding_annotated_405, %sharding_annotated_411, %sharding_annotated_417, %sharding_annotated_423, %sharding_annotated_308, %sharding_annotated_314, %sharding_annotated_320, %sharding_annotated_326, %sharding_annotated_332, %sharding_annotated_338, %sharding_annotated_344, %sharding_annotated_350, %sharding_annotated_356, %sharding_annotated_362, %sharding_annotated_368, %sharding_annotated_374, %sharding_annotated_380, %sharding_annotated_386, %sharding_annotated_392, %sharding_annotated_398, %sharding_annotated_404, %sharding_annotated_410, %sharding_annotated_416, %sharding_annotated_422, %sharding_annotated_425 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<64x16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i32>
  }
}

