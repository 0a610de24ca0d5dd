// Found by mutating compiled-step IR: xf.factor_axes with fewer entries than the op's rule has factors.
// Was: uncaught shardc::rt::Error out of -xf-lower-to-rt. Now: the verifier, at the op.
// RUN: not shardc-opt %s -xf-plan-memory -xf-lower-to-rt -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: 'xf.cross_entropy' op 'xf.factor_axes' has 2 entries but the op's sharding rule has 3 factors
module attributes {xf.model = {family = "gpt2", heads = 2 : i64, hidden = 16 : i64, layers = 1 : i64, name = "gpt2-custom", vocab = 64 : i64}} {
  shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
  func.func @forward(%arg0: tensor<2x8xi32> {xf.input = "tokens"}, %arg1: tensor<2x8xi32> {xf.input = "targets"}, %arg2: tensor<64x16xf32> {xf.param = #xf.param<name = "transformer.wte.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg3: tensor<8x16xf32> {xf.param = #xf.param<name = "transformer.wpe.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg4: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.weight", role = norm_scale, init = ones>}, %arg5: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.bias", role = bias, init = zeros>}, %arg6: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.bias", role = bias, init = zeros>}, %arg7: tensor<16x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg8: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.bias", role = bias, init = zeros>}, %arg9: tensor<16x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg10: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.bias", role = bias, init = zeros>}, %arg11: tensor<16x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg12: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.bias", role = bias, init = zeros>}, %arg13: tensor<16x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.weight", role = weight, init = normal, std = 0.014142135623730949>}, %arg14: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.weight", role = norm_scale, init = ones>}, %arg15: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.bias", role = bias, init = zeros>}, %arg16: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.bias", role = bias, init = zeros>}, %arg17: tensor<16x64xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg18: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.bias", role = bias, init = zeros>}, %arg19: tensor<64x16xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.weight", role = weight, init = normal, std = 0.014142135623730949>}, %arg20: tensor<16xf32> {xf.param = #xf.param<name = "transformer.ln_f.weight", role = norm_scale, init = ones>}, %arg21: tensor<16xf32> {xf.param = #xf.param<name = "transformer.ln_f.bias", role = bias, init = zeros>}) -> tensor<f32> {
    %0 = xf.iota dim = 1 : tensor<2x8xi32>
    %1 = xf.embedding %arg3, %0 : tensor<8x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
    %2 = xf.embedding %arg2, %arg0 : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
    %3 = xf.add %2, %1 : tensor<2x8x16xf32>
    %4 = xf.layernorm %3, %arg4, %arg5 epsilon = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %5 = xf.matmul "bsh,ho->bso" %4, %arg7 : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %6 = xf.bias_add %5, %arg6 : tensor<2x8x16xf32>, tensor<16xf32>
    %7 = xf.reshape %6 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
    %8 = xf.matmul "bsh,ho->bso" %4, %arg9 : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %9 = xf.bias_add %8, %arg8 : tensor<2x8x16xf32>, tensor<16xf32>
    %10 = xf.reshape %9 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
    %11 = xf.matmul "bsh,ho->bso" %4, %arg11 : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %12 = xf.bias_add %11, %arg10 : tensor<2x8x16xf32>, tensor<16xf32>
    %13 = xf.reshape %12 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
    %14 = xf.attention %7, %10, %13 causal scale = 0.35355339059327373 : tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
    %15 = xf.reshape %14 : tensor<2x8x2x8xf32> -> tensor<2x8x16xf32>
    %16 = xf.matmul "bsh,ho->bso" %15, %arg13 : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %17 = xf.bias_add %16, %arg12 : tensor<2x8x16xf32>, tensor<16xf32>
    %18 = xf.add %3, %17 : tensor<2x8x16xf32>
    %19 = xf.layernorm %18, %arg14, %arg15 epsilon = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %20 = xf.matmul "bsh,ho->bso" %19, %arg17 : tensor<2x8x16xf32>, tensor<16x64xf32> -> tensor<2x8x64xf32>
    %21 = xf.bias_add %20, %arg16 : tensor<2x8x64xf32>, tensor<64xf32>
    %22 = xf.gelu %21 : tensor<2x8x64xf32>
    %23 = xf.matmul "bsh,ho->bso" %22, %arg19 : tensor<2x8x64xf32>, tensor<64x16xf32> -> tensor<2x8x16xf32>
    %24 = xf.bias_add %23, %arg18 : tensor<2x8x16xf32>, tensor<16xf32>
    %25 = xf.add %18, %24 : tensor<2x8x16xf32>
    %26 = xf.layernorm %25, %arg20, %arg21 epsilon = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %27 = xf.matmul "bsh,vh->bsv" %26, %arg2 : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
    %28 = xf.cross_entropy %27, %arg1 ignore_index = -100 : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<f32>
    return %28 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<2x8xi32> {xf.input = "tokens", xf.micro_batch = 0 : i64, xf.sharding = #shard<axisarray[[], []]>}, %arg1: tensor<2x8xi32> {xf.input = "targets", xf.micro_batch = 0 : i64, xf.sharding = #shard<axisarray[[], []]>}, %arg2: tensor<32x16xf32> {xf.param = #xf.param<name = "transformer.wte.weight", role = embedding, init = normal, std = 2.000000e-02>, xf.sharding = #shard<axisarray[[0], []]>, xf.state = "param:transformer.wte.weight"}, %arg3: tensor<8x16xf32> {xf.param = #xf.param<name = "transformer.wpe.weight", role = embedding, init = normal, std = 2.000000e-02>, xf.sharding = #shard<axisarray[[], []]>, xf.state = "param:transformer.wpe.weight"}, %arg4: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.weight", role = norm_scale, init = ones>, xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.h.0.ln_1.weight"}, %arg5: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.bias", role = bias, init = zeros>, xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.h.0.ln_1.bias"}, %arg6: tensor<8xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.bias", role = bias, init = zeros>, xf.sharding = #shard<axisarray[[0]]>, xf.state = "param:transformer.h.0.attn.q_proj.bias"}, %arg7: tensor<16x8xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>, xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "param:transformer.h.0.attn.q_proj.weight"}, %arg8: tensor<8xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.bias", role = bias, init = zeros>, xf.sharding = #shard<axisarray[[0]]>, xf.state = "param:transformer.h.0.attn.k_proj.bias"}, %arg9: tensor<16x8xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>, xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "param:transformer.h.0.attn.k_proj.weight"}, %arg10: tensor<8xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.bias", role = bias, init = zeros>, xf.sharding = #shard<axisarray[[0]]>, xf.state = "param:transformer.h.0.attn.v_proj.bias"}, %arg11: tensor<16x8xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>, xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "param:transformer.h.0.attn.v_proj.weight"}, %arg12: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.bias", role = bias, init = zeros>, xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.h.0.attn.c_proj.bias"}, %arg13: tensor<8x16xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.weight", role = weight, init = normal, std = 0.014142135623730949>, xf.sharding = #shard<axisarray[[0], []]>, xf.state = "param:transformer.h.0.attn.c_proj.weight"}, %arg14: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.weight", role = norm_scale, init = ones>, xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.h.0.ln_2.weight"}, %arg15: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.bias", role = bias, init = zeros>, xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.h.0.ln_2.bias"}, %arg16: tensor<32xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.bias", role = bias, init = zeros>, xf.sharding = #shard<axisarray[[0]]>, xf.state = "param:transformer.h.0.mlp.c_fc.bias"}, %arg17: tensor<16x32xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>, xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "param:transformer.h.0.mlp.c_fc.weight"}, %arg18: tensor<16xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.bias", role = bias, init = zeros>, xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.h.0.mlp.c_proj.bias"}, %arg19: tensor<32x16xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.weight", role = weight, init = normal, std = 0.014142135623730949>, xf.sharding = #shard<axisarray[[0], []]>, xf.state = "param:transformer.h.0.mlp.c_proj.weight"}, %arg20: tensor<16xf32> {xf.param = #xf.param<name = "transformer.ln_f.weight", role = norm_scale, init = ones>, xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.ln_f.weight"}, %arg21: tensor<16xf32> {xf.param = #xf.param<name = "transformer.ln_f.bias", role = bias, init = zeros>, xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.ln_f.bias"}, %arg22: tensor<32x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "adam_m:transformer.wte.weight"}, %arg23: tensor<8x16xf32> {xf.sharding = #shard<axisarray[[], []]>, xf.state = "adam_m:transformer.wpe.weight"}, %arg24: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.h.0.ln_1.weight"}, %arg25: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.h.0.ln_1.bias"}, %arg26: tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_m:transformer.h.0.attn.q_proj.bias"}, %arg27: tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_m:transformer.h.0.attn.q_proj.weight"}, %arg28: tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_m:transformer.h.0.attn.k_proj.bias"}, %arg29: tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_m:transformer.h.0.attn.k_proj.weight"}, %arg30: tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_m:transformer.h.0.attn.v_proj.bias"}, %arg31: tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_m:transformer.h.0.attn.v_proj.weight"}, %arg32: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.h.0.attn.c_proj.bias"}, %arg33: tensor<8x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "adam_m:transformer.h.0.attn.c_proj.weight"}, %arg34: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.h.0.ln_2.weight"}, %arg35: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.h.0.ln_2.bias"}, %arg36: tensor<32xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_m:transformer.h.0.mlp.c_fc.bias"}, %arg37: tensor<16x32xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_m:transformer.h.0.mlp.c_fc.weight"}, %arg38: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.h.0.mlp.c_proj.bias"}, %arg39: tensor<32x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "adam_m:transformer.h.0.mlp.c_proj.weight"}, %arg40: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.ln_f.weight"}, %arg41: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.ln_f.bias"}, %arg42: tensor<32x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "adam_v:transformer.wte.weight"}, %arg43: tensor<8x16xf32> {xf.sharding = #shard<axisarray[[], []]>, xf.state = "adam_v:transformer.wpe.weight"}, %arg44: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.h.0.ln_1.weight"}, %arg45: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.h.0.ln_1.bias"}, %arg46: tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_v:transformer.h.0.attn.q_proj.bias"}, %arg47: tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_v:transformer.h.0.attn.q_proj.weight"}, %arg48: tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_v:transformer.h.0.attn.k_proj.bias"}, %arg49: tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_v:transformer.h.0.attn.k_proj.weight"}, %arg50: tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_v:transformer.h.0.attn.v_proj.bias"}, %arg51: tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_v:transformer.h.0.attn.v_proj.weight"}, %arg52: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.h.0.attn.c_proj.bias"}, %arg53: tensor<8x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "adam_v:transformer.h.0.attn.c_proj.weight"}, %arg54: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.h.0.ln_2.weight"}, %arg55: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.h.0.ln_2.bias"}, %arg56: tensor<32xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_v:transformer.h.0.mlp.c_fc.bias"}, %arg57: tensor<16x32xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_v:transformer.h.0.mlp.c_fc.weight"}, %arg58: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.h.0.mlp.c_proj.bias"}, %arg59: tensor<32x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "adam_v:transformer.h.0.mlp.c_proj.weight"}, %arg60: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.ln_f.weight"}, %arg61: tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.ln_f.bias"}, %arg62: tensor<i32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "step"}) -> (tensor<f32> {xf.report = "loss", xf.sharding = #shard<axisarray[[]]>}, tensor<f32> {xf.report = "grad_norm", xf.sharding = #shard<axisarray[[]]>}, tensor<f32> {xf.report = "lr", xf.sharding = #shard<axisarray[[]]>}, tensor<32x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "param:transformer.wte.weight"}, tensor<8x16xf32> {xf.sharding = #shard<axisarray[[], []]>, xf.state = "param:transformer.wpe.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.h.0.ln_1.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.h.0.ln_1.bias"}, tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "param:transformer.h.0.attn.q_proj.bias"}, tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "param:transformer.h.0.attn.q_proj.weight"}, tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "param:transformer.h.0.attn.k_proj.bias"}, tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "param:transformer.h.0.attn.k_proj.weight"}, tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "param:transformer.h.0.attn.v_proj.bias"}, tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "param:transformer.h.0.attn.v_proj.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.h.0.attn.c_proj.bias"}, tensor<8x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "param:transformer.h.0.attn.c_proj.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.h.0.ln_2.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.h.0.ln_2.bias"}, tensor<32xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "param:transformer.h.0.mlp.c_fc.bias"}, tensor<16x32xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "param:transformer.h.0.mlp.c_fc.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.h.0.mlp.c_proj.bias"}, tensor<32x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "param:transformer.h.0.mlp.c_proj.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.ln_f.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "param:transformer.ln_f.bias"}, tensor<32x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "adam_m:transformer.wte.weight"}, tensor<8x16xf32> {xf.sharding = #shard<axisarray[[], []]>, xf.state = "adam_m:transformer.wpe.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.h.0.ln_1.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.h.0.ln_1.bias"}, tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_m:transformer.h.0.attn.q_proj.bias"}, tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_m:transformer.h.0.attn.q_proj.weight"}, tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_m:transformer.h.0.attn.k_proj.bias"}, tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_m:transformer.h.0.attn.k_proj.weight"}, tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_m:transformer.h.0.attn.v_proj.bias"}, tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_m:transformer.h.0.attn.v_proj.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.h.0.attn.c_proj.bias"}, tensor<8x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "adam_m:transformer.h.0.attn.c_proj.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.h.0.ln_2.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.h.0.ln_2.bias"}, tensor<32xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_m:transformer.h.0.mlp.c_fc.bias"}, tensor<16x32xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_m:transformer.h.0.mlp.c_fc.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.h.0.mlp.c_proj.bias"}, tensor<32x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "adam_m:transformer.h.0.mlp.c_proj.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.ln_f.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_m:transformer.ln_f.bias"}, tensor<32x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "adam_v:transformer.wte.weight"}, tensor<8x16xf32> {xf.sharding = #shard<axisarray[[], []]>, xf.state = "adam_v:transformer.wpe.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.h.0.ln_1.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.h.0.ln_1.bias"}, tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_v:transformer.h.0.attn.q_proj.bias"}, tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_v:transformer.h.0.attn.q_proj.weight"}, tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_v:transformer.h.0.attn.k_proj.bias"}, tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_v:transformer.h.0.attn.k_proj.weight"}, tensor<8xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_v:transformer.h.0.attn.v_proj.bias"}, tensor<16x8xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_v:transformer.h.0.attn.v_proj.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.h.0.attn.c_proj.bias"}, tensor<8x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "adam_v:transformer.h.0.attn.c_proj.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.h.0.ln_2.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.h.0.ln_2.bias"}, tensor<32xf32> {xf.sharding = #shard<axisarray[[0]]>, xf.state = "adam_v:transformer.h.0.mlp.c_fc.bias"}, tensor<16x32xf32> {xf.sharding = #shard<axisarray[[], [0]]>, xf.state = "adam_v:transformer.h.0.mlp.c_fc.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.h.0.mlp.c_proj.bias"}, tensor<32x16xf32> {xf.sharding = #shard<axisarray[[0], []]>, xf.state = "adam_v:transformer.h.0.mlp.c_proj.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.ln_f.weight"}, tensor<16xf32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "adam_v:transformer.ln_f.bias"}, tensor<i32> {xf.sharding = #shard<axisarray[[]]>, xf.state = "step"}) attributes {xf.grid = @mesh} {
    %0 = xf.iota dim = 1 {xf.factor_axes = [array<i16>, array<i16: 0>]} : tensor<2x4xi32>
    %1 = xf.embedding %arg3, %0 : tensor<8x16xf32>, tensor<2x4xi32> -> tensor<2x4x16xf32>
    %2 = xf.embedding %arg2, %arg0 {xf.factor_axes = [array<i16>, array<i16>, array<i16: 0>, array<i16>]} : tensor<32x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
    %reduce_scatter = shard.reduce_scatter %2 on @mesh grid_axes = [0] scatter_axis = 1 : tensor<2x8x16xf32> -> tensor<2x4x16xf32>
    %3 = xf.add %reduce_scatter, %1 : tensor<2x4x16xf32>
    %4 = xf.layernorm %3, %arg4, %arg5 epsilon = 1.000000e-05 : tensor<2x4x16xf32>, tensor<16xf32>, tensor<16xf32>
    %all_gather = shard.all_gather %4 on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
    %5 = xf.matmul "bsh,ho->bso" %all_gather, %arg7 : tensor<2x8x16xf32>, tensor<16x8xf32> -> tensor<2x8x8xf32>
    %6 = xf.bias_add %5, %arg6 : tensor<2x8x8xf32>, tensor<8xf32>
    %7 = xf.reshape %6 : tensor<2x8x8xf32> -> tensor<2x8x1x8xf32>
    %8 = xf.matmul "bsh,ho->bso" %all_gather, %arg9 : tensor<2x8x16xf32>, tensor<16x8xf32> -> tensor<2x8x8xf32>
    %9 = xf.bias_add %8, %arg8 : tensor<2x8x8xf32>, tensor<8xf32>
    %10 = xf.reshape %9 : tensor<2x8x8xf32> -> tensor<2x8x1x8xf32>
    %11 = xf.matmul "bsh,ho->bso" %all_gather, %arg11 : tensor<2x8x16xf32>, tensor<16x8xf32> -> tensor<2x8x8xf32>
    %12 = xf.bias_add %11, %arg10 : tensor<2x8x8xf32>, tensor<8xf32>
    %13 = xf.reshape %12 : tensor<2x8x8xf32> -> tensor<2x8x1x8xf32>
    %14 = xf.attention %7, %10, %13 causal scale = 0.35355339059327373 : tensor<2x8x1x8xf32>, tensor<2x8x1x8xf32>, tensor<2x8x1x8xf32>
    %15 = xf.reshape %14 : tensor<2x8x1x8xf32> -> tensor<2x8x8xf32>
    %16 = xf.matmul "bsh,ho->bso" %15, %arg13 : tensor<2x8x8xf32>, tensor<8x16xf32> -> tensor<2x8x16xf32>
    %reduce_scatter_0 = shard.reduce_scatter %16 on @mesh grid_axes = [0] scatter_axis = 1 : tensor<2x8x16xf32> -> tensor<2x4x16xf32>
    %17 = xf.bias_add %reduce_scatter_0, %arg12 : tensor<2x4x16xf32>, tensor<16xf32>
    %18 = xf.add %3, %17 : tensor<2x4x16xf32>
    %19 = xf.layernorm %18, %arg14, %arg15 epsilon = 1.000000e-05 : tensor<2x4x16xf32>, tensor<16xf32>, tensor<16xf32>
    %all_gather_1 = shard.all_gather %19 on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
    %20 = xf.matmul "bsh,ho->bso" %all_gather_1, %arg17 : tensor<2x8x16xf32>, tensor<16x32xf32> -> tensor<2x8x32xf32>
    %21 = xf.bias_add %20, %arg16 : tensor<2x8x32xf32>, tensor<32xf32>
    %22 = xf.gelu %21 : tensor<2x8x32xf32>
    %23 = xf.matmul "bsh,ho->bso" %22, %arg19 : tensor<2x8x32xf32>, tensor<32x16xf32> -> tensor<2x8x16xf32>
    %reduce_scatter_2 = shard.reduce_scatter %23 on @mesh grid_axes = [0] scatter_axis = 1 : tensor<2x8x16xf32> -> tensor<2x4x16xf32>
    %24 = xf.bias_add %reduce_scatter_2, %arg18 : tensor<2x4x16xf32>, tensor<16xf32>
    %25 = xf.add %18, %24 : tensor<2x4x16xf32>
    %26 = xf.layernorm %25, %arg20, %arg21 epsilon = 1.000000e-05 : tensor<2x4x16xf32>, tensor<16xf32>, tensor<16xf32>
    %all_gather_3 = shard.all_gather %26 on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
    %27 = xf.matmul "bsh,vh->bsv" %all_gather_3, %arg2 : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
    %28 = xf.cross_entropy %27, %arg1 ignore_index = -100 {xf.factor_axes = [array<i16>, array<i16: 0>]} : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
    %29 = xf.fill 1.000000e+00 : tensor<f32>
    %30 = xf.cross_entropy_grad %29, %27, %arg1 ignore_index = -100 {xf.factor_axes = [array<i16>, array<i16: 0>]} : tensor<f32>, tensor<2x8x32xf32>, tensor<2x8xi32>
    %31 = xf.matmul "bsv,vh->bsh" %30, %arg2 : tensor<2x8x32xf32>, tensor<32x16xf32> -> tensor<2x8x16xf32>
    %32 = xf.matmul "bsh,bsv->vh" %all_gather_3, %30 : tensor<2x8x16xf32>, tensor<2x8x32xf32> -> tensor<32x16xf32>
    %reduce_scatter_4 = shard.reduce_scatter %31 on @mesh grid_axes = [0] scatter_axis = 1 : tensor<2x8x16xf32> -> tensor<2x4x16xf32>
    %dx, %dgamma, %dbeta = xf.layernorm_grad %reduce_scatter_4, %25, %arg20 epsilon = 1.000000e-05 : tensor<2x4x16xf32>, tensor<16xf32>
    %33 = xf.reduce_sum %dx dims = [0, 1] : tensor<2x4x16xf32> -> tensor<16xf32>
    %all_gather_5 = shard.all_gather %dx on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
    %34 = xf.matmul "bso,ho->bsh" %all_gather_5, %arg19 : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
    %35 = xf.matmul "bsh,bso->ho" %22, %all_gather_5 : tensor<2x8x32xf32>, tensor<2x8x16xf32> -> tensor<32x16xf32>
    %36 = xf.gelu_grad %34, %21 : tensor<2x8x32xf32>
    %37 = xf.reduce_sum %36 dims = [0, 1] : tensor<2x8x32xf32> -> tensor<32xf32>
    %38 = xf.matmul "bso,ho->bsh" %36, %arg17 : tensor<2x8x32xf32>, tensor<16x32xf32> -> tensor<2x8x16xf32>
    %39 = xf.matmul "bsh,bso->ho" %all_gather_1, %36 : tensor<2x8x16xf32>, tensor<2x8x32xf32> -> tensor<16x32xf32>
    %reduce_scatter_6 = shard.reduce_scatter %38 on @mesh grid_axes = [0] scatter_axis = 1 : tensor<2x8x16xf32> -> tensor<2x4x16xf32>
    %dx_7, %dgamma_8, %dbeta_9 = xf.layernorm_grad %reduce_scatter_6, %18, %arg14 epsilon = 1.000000e-05 : tensor<2x4x16xf32>, tensor<16xf32>
    %40 = xf.add %dx, %dx_7 : tensor<2x4x16xf32>
    %41 = xf.reduce_sum %40 dims = [0, 1] : tensor<2x4x16xf32> -> tensor<16xf32>
    %all_gather_10 = shard.all_gather %40 on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
    %42 = xf.matmul "bso,ho->bsh" %all_gather_10, %arg13 : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x8xf32>
    %43 = xf.matmul "bsh,bso->ho" %15, %all_gather_10 : tensor<2x8x8xf32>, tensor<2x8x16xf32> -> tensor<8x16xf32>
    %44 = xf.reshape %42 : tensor<2x8x8xf32> -> tensor<2x8x1x8xf32>
    %dq, %dk, %dv = xf.attention_grad %44, %7, %10, %13, %14 causal scale = 0.35355339059327373 : tensor<2x8x1x8xf32>, tensor<2x8x1x8xf32>
    %45 = xf.reshape %dv : tensor<2x8x1x8xf32> -> tensor<2x8x8xf32>
    %46 = xf.reduce_sum %45 dims = [0, 1] : tensor<2x8x8xf32> -> tensor<8xf32>
    %47 = xf.matmul "bso,ho->bsh" %45, %arg11 : tensor<2x8x8xf32>, tensor<16x8xf32> -> tensor<2x8x16xf32>
    %48 = xf.matmul "bsh,bso->ho" %all_gather, %45 : tensor<2x8x16xf32>, tensor<2x8x8xf32> -> tensor<16x8xf32>
    %49 = xf.reshape %dk : tensor<2x8x1x8xf32> -> tensor<2x8x8xf32>
    %50 = xf.reduce_sum %49 dims = [0, 1] : tensor<2x8x8xf32> -> tensor<8xf32>
    %51 = xf.matmul "bso,ho->bsh" %49, %arg9 : tensor<2x8x8xf32>, tensor<16x8xf32> -> tensor<2x8x16xf32>
    %52 = xf.matmul "bsh,bso->ho" %all_gather, %49 : tensor<2x8x16xf32>, tensor<2x8x8xf32> -> tensor<16x8xf32>
    %53 = xf.add %47, %51 : tensor<2x8x16xf32>
    %54 = xf.reshape %dq : tensor<2x8x1x8xf32> -> tensor<2x8x8xf32>
    %55 = xf.reduce_sum %54 dims = [0, 1] : tensor<2x8x8xf32> -> tensor<8xf32>
    %56 = xf.matmul "bso,ho->bsh" %54, %arg7 : tensor<2x8x8xf32>, tensor<16x8xf32> -> tensor<2x8x16xf32>
    %57 = xf.matmul "bsh,bso->ho" %all_gather, %54 : tensor<2x8x16xf32>, tensor<2x8x8xf32> -> tensor<16x8xf32>
    %58 = xf.add %53, %56 : tensor<2x8x16xf32>
    %reduce_scatter_11 = shard.reduce_scatter %58 on @mesh grid_axes = [0] scatter_axis = 1 : tensor<2x8x16xf32> -> tensor<2x4x16xf32>
    %dx_12, %dgamma_13, %dbeta_14 = xf.layernorm_grad %reduce_scatter_11, %3, %arg4 epsilon = 1.000000e-05 : tensor<2x4x16xf32>, tensor<16xf32>
    %59 = xf.add %40, %dx_12 : tensor<2x4x16xf32>
    %all_gather_15 = shard.all_gather %59 on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
    %60 = xf.embedding_grad %all_gather_15, %arg0 {xf.factor_axes = [array<i16>, array<i16>, array<i16: 0>, array<i16>]} : tensor<2x8x16xf32>, tensor<2x8xi32> -> tensor<32x16xf32>
    %61 = xf.add %32, %60 : tensor<32x16xf32>
    %62 = xf.embedding_grad %59, %0 : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<8x16xf32>
    %63 = xf.sum_squares %61 : tensor<32x16xf32>
    %all_reduce = shard.all_reduce %62 on @mesh grid_axes = [0] : tensor<8x16xf32> -> tensor<8x16xf32>
    %64 = xf.sum_squares %all_reduce : tensor<8x16xf32>
    %65 = xf.scale %64 factor = 5.000000e-01 : tensor<f32>
    %66 = xf.add %63, %65 : tensor<f32>
    %all_reduce_16 = shard.all_reduce %dgamma_13 on @mesh grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>
    %67 = xf.sum_squares %all_reduce_16 : tensor<16xf32>
    %68 = xf.scale %67 factor = 5.000000e-01 : tensor<f32>
    %69 = xf.add %66, %68 : tensor<f32>
    %all_reduce_17 = shard.all_reduce %dbeta_14 on @mesh grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>
    %70 = xf.sum_squares %all_reduce_17 : tensor<16xf32>
    %71 = xf.scale %70 factor = 5.000000e-01 : tensor<f32>
    %72 = xf.add %69, %71 : tensor<f32>
    %73 = xf.sum_squares %55 : tensor<8xf32>
    %74 = xf.add %72, %73 : tensor<f32>
    %75 = xf.sum_squares %57 : tensor<16x8xf32>
    %76 = xf.add %74, %75 : tensor<f32>
    %77 = xf.sum_squares %50 : tensor<8xf32>
    %78 = xf.add %76, %77 : tensor<f32>
    %79 = xf.sum_squares %52 : tensor<16x8xf32>
    %80 = xf.add %78, %79 : tensor<f32>
    %81 = xf.sum_squares %46 : tensor<8xf32>
    %82 = xf.add %80, %81 : tensor<f32>
    %83 = xf.sum_squares %48 : tensor<16x8xf32>
    %84 = xf.add %82, %83 : tensor<f32>
    %all_reduce_18 = shard.all_reduce %41 on @mesh grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>
    %85 = xf.sum_squares %all_reduce_18 : tensor<16xf32>
    %86 = xf.scale %85 factor = 5.000000e-01 : tensor<f32>
    %87 = xf.add %84, %86 : tensor<f32>
    %88 = xf.sum_squares %43 : tensor<8x16xf32>
    %89 = xf.add %87, %88 : tensor<f32>
    %all_reduce_19 = shard.all_reduce %dgamma_8 on @mesh grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>
    %90 = xf.sum_squares %all_reduce_19 : tensor<16xf32>
    %91 = xf.scale %90 factor = 5.000000e-01 : tensor<f32>
    %92 = xf.add %89, %91 : tensor<f32>
    %all_reduce_20 = shard.all_reduce %dbeta_9 on @mesh grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>
    %93 = xf.sum_squares %all_reduce_20 : tensor<16xf32>
    %94 = xf.scale %93 factor = 5.000000e-01 : tensor<f32>
    %95 = xf.add %92, %94 : tensor<f32>
    %96 = xf.sum_squares %37 : tensor<32xf32>
    %97 = xf.add %95, %96 : tensor<f32>
    %98 = xf.sum_squares %39 : tensor<16x32xf32>
    %99 = xf.add %97, %98 : tensor<f32>
    %all_reduce_21 = shard.all_reduce %33 on @mesh grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>
    %100 = xf.sum_squares %all_reduce_21 : tensor<16xf32>
    %101 = xf.scale %100 factor = 5.000000e-01 : tensor<f32>
    %102 = xf.add %99, %101 : tensor<f32>
    %103 = xf.sum_squares %35 : tensor<32x16xf32>
    %104 = xf.add %102, %103 : tensor<f32>
    %all_reduce_22 = shard.all_reduce %dgamma on @mesh grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>
    %105 = xf.sum_squares %all_reduce_22 : tensor<16xf32>
    %106 = xf.scale %105 factor = 5.000000e-01 : tensor<f32>
    %107 = xf.add %104, %106 : tensor<f32>
    %all_reduce_23 = shard.all_reduce %dbeta on @mesh grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>
    %108 = xf.sum_squares %all_reduce_23 : tensor<16xf32>
    %109 = xf.scale %108 factor = 5.000000e-01 : tensor<f32>
    %110 = xf.add %107, %109 : tensor<f32>
    %all_reduce_24 = shard.all_reduce %110 on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
    %norm, %grad_scale, %found_inf = xf.clip_grad_norm %all_reduce_24 max_norm = 1.000000e+00
    %111 = xf.lr_schedule %arg62 lr = 6.000000e-04 min_lr = 1.000000e-05 warmup = 2 decay_steps = 10
    %new_param, %new_m, %new_v = xf.adamw %arg2, %61, %arg22, %arg42, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<32x16xf32>
    %new_param_25, %new_m_26, %new_v_27 = xf.adamw %arg3, %all_reduce, %arg23, %arg43, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<8x16xf32>
    %new_param_28, %new_m_29, %new_v_30 = xf.adamw %arg4, %all_reduce_16, %arg24, %arg44, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_31, %new_m_32, %new_v_33 = xf.adamw %arg5, %all_reduce_17, %arg25, %arg45, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_34, %new_m_35, %new_v_36 = xf.adamw %arg6, %55, %arg26, %arg46, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<8xf32>
    %new_param_37, %new_m_38, %new_v_39 = xf.adamw %arg7, %57, %arg27, %arg47, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<16x8xf32>
    %new_param_40, %new_m_41, %new_v_42 = xf.adamw %arg8, %50, %arg28, %arg48, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<8xf32>
    %new_param_43, %new_m_44, %new_v_45 = xf.adamw %arg9, %52, %arg29, %arg49, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<16x8xf32>
    %new_param_46, %new_m_47, %new_v_48 = xf.adamw %arg10, %46, %arg30, %arg50, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<8xf32>
    %new_param_49, %new_m_50, %new_v_51 = xf.adamw %arg11, %48, %arg31, %arg51, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<16x8xf32>
    %new_param_52, %new_m_53, %new_v_54 = xf.adamw %arg12, %all_reduce_18, %arg32, %arg52, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_55, %new_m_56, %new_v_57 = xf.adamw %arg13, %43, %arg33, %arg53, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<8x16xf32>
    %new_param_58, %new_m_59, %new_v_60 = xf.adamw %arg14, %all_reduce_19, %arg34, %arg54, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_61, %new_m_62, %new_v_63 = xf.adamw %arg15, %all_reduce_20, %arg35, %arg55, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_64, %new_m_65, %new_v_66 = xf.adamw %arg16, %37, %arg36, %arg56, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<32xf32>
    %new_param_67, %new_m_68, %new_v_69 = xf.adamw %arg17, %39, %arg37, %arg57, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<16x32xf32>
    %new_param_70, %new_m_71, %new_v_72 = xf.adamw %arg18, %all_reduce_21, %arg38, %arg58, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_73, %new_m_74, %new_v_75 = xf.adamw %arg19, %35, %arg39, %arg59, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<32x16xf32>
    %new_param_76, %new_m_77, %new_v_78 = xf.adamw %arg20, %all_reduce_22, %arg40, %arg60, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_79, %new_m_80, %new_v_81 = xf.adamw %arg21, %all_reduce_23, %arg41, %arg61, %111, %grad_scale, %arg62 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %112 = xf.count_step %arg62
    return %28, %norm, %111, %new_param, %new_param_25, %new_param_28, %new_param_31, %new_param_34, %new_param_37, %new_param_40, %new_param_43, %new_param_46, %new_param_49, %new_param_52, %new_param_55, %new_param_58, %new_param_61, %new_param_64, %new_param_67, %new_param_70, %new_param_73, %new_param_76, %new_param_79, %new_m, %new_m_26, %new_m_29, %new_m_32, %new_m_35, %new_m_38, %new_m_41, %new_m_44, %new_m_47, %new_m_50, %new_m_53, %new_m_56, %new_m_59, %new_m_62, %new_m_65, %new_m_68, %new_m_71, %new_m_74, %new_m_77, %new_m_80, %new_v, %new_v_27, %new_v_30, %new_v_33, %new_v_36, %new_v_39, %new_v_42, %new_v_45, %new_v_48, %new_v_51, %new_v_54, %new_v_57, %new_v_60, %new_v_63, %new_v_66, %new_v_69, %new_v_72, %new_v_75, %new_v_78, %new_v_81, %112 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<32x16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<16xf32>, tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<32x16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<16xf32>, tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<32x16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<16xf32>, tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i32>
  }
}

