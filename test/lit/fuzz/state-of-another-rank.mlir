// shardc-fuzz --seed 2 --case 2624: one xf.state string of a BERT step swapped for another's.
// Was: a segfault in planReshard (the result was paired with an argument of another rank).
// Now: the verifier rejects two results of one state.
// RUN: not shardc-opt %s -xf-grid=mesh=dp=2,fsdp=2,tp=2 -xf-propagate-sharding="strategy=mics+tp" -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: 'func.func' op results #36 and #51 carry the same xf.state
module attributes {xf.model = {family = "bert", heads = 2 : i64, hidden = 16 : i64, layers = 1 : i64, name = "fuzz-bert", vocab = 64 : i64}} {
  func.func @forward(%arg0: tensor<4x8xi32> {xf.input = "tokens"}, %arg1: tensor<4x8xi32> {xf.input = "token_types"}, %arg2: tensor<4x8xi32> {xf.input = "targets"}, %arg3: tensor<64x16xf32> {xf.param = #xf.param<name = "bert.embeddings.word_embeddings.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg4: tensor<8x16xf32> {xf.param = #xf.param<name = "bert.embeddings.position_embeddings.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg5: tensor<2x16xf32> {xf.param = #xf.param<name = "bert.embeddings.token_type_embeddings.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg6: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.ln.weight", role = norm_scale, init = ones>}, %arg7: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.ln.bias", role = bias, init = zeros>}, %arg8: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.self.query.bias", role = bias, init = zeros>}, %arg9: tensor<16x16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.self.query.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg10: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.self.key.bias", role = bias, init = zeros>}, %arg11: tensor<16x16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.self.key.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg12: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.self.value.bias", role = bias, init = zeros>}, %arg13: tensor<16x16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.self.value.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg14: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.output.dense.bias", role = bias, init = zeros>}, %arg15: tensor<16x16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.output.dense.weight", role = weight, init = normal, std = 0.014142135623730949>}, %arg16: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.mlp.ln.weight", role = norm_scale, init = ones>}, %arg17: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.mlp.ln.bias", role = bias, init = zeros>}, %arg18: tensor<64xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.intermediate.dense.bias", role = bias, init = zeros>}, %arg19: tensor<64x16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.intermediate.dense.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg20: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.output.dense.bias", role = bias, init = zeros>}, %arg21: tensor<16x64xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.output.dense.weight", role = weight, init = normal, std = 0.014142135623730949>}, %arg22: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.final_layernorm.weight", role = norm_scale, init = ones>}, %arg23: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.final_layernorm.bias", role = bias, init = zeros>}, %arg24: tensor<16xf32> {xf.param = #xf.param<name = "cls.predictions.transform.dense.bias", role = bias, init = zeros>}, %arg25: tensor<16x16xf32> {xf.param = #xf.param<name = "cls.predictions.transform.dense.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg26: tensor<16xf32> {xf.param = #xf.param<name = "cls.predictions.transform.LayerNorm.weight", role = norm_scale, init = ones>}, %arg27: tensor<16xf32> {xf.param = #xf.param<name = "cls.predictions.transform.LayerNorm.bias", role = bias, init = zeros>}, %arg28: tensor<64xf32> {xf.param = #xf.param<name = "cls.predictions.bias", role = bias, init = zeros>}) -> tensor<f32> {
    %0 = xf.embedding %arg5, %arg1 : tensor<2x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %1 = xf.iota dim = 1 : tensor<4x8xi32>
    %2 = xf.embedding %arg4, %1 : tensor<8x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %3 = xf.embedding %arg3, %arg0 : tensor<64x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %4 = xf.add %3, %2 : tensor<4x8x16xf32>
    %5 = xf.add %4, %0 : tensor<4x8x16xf32>
    %6 = xf.layernorm %5, %arg6, %arg7 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %7 = xf.matmul "bsh,oh->bso" %6, %arg9 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %8 = xf.bias_add %7, %arg8 : tensor<4x8x16xf32>, tensor<16xf32>
    %9 = xf.reshape %8 : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %10 = xf.matmul "bsh,oh->bso" %6, %arg11 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %11 = xf.bias_add %10, %arg10 : tensor<4x8x16xf32>, tensor<16xf32>
    %12 = xf.reshape %11 : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %13 = xf.matmul "bsh,oh->bso" %6, %arg13 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %14 = xf.bias_add %13, %arg12 : tensor<4x8x16xf32>, tensor<16xf32>
    %15 = xf.reshape %14 : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %16 = xf.attention %9, %12, %15 scale = 0.35355339059327373 : tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>
    %17 = xf.reshape %16 : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %18 = xf.matmul "bsh,oh->bso" %17, %arg15 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %19 = xf.bias_add %18, %arg14 : tensor<4x8x16xf32>, tensor<16xf32>
    %20 = xf.add %5, %19 : tensor<4x8x16xf32>
    %21 = xf.layernorm %20, %arg16, %arg17 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %22 = xf.matmul "bsh,oh->bso" %21, %arg19 : tensor<4x8x16xf32>, tensor<64x16xf32> -> tensor<4x8x64xf32>
    %23 = xf.bias_add %22, %arg18 : tensor<4x8x64xf32>, tensor<64xf32>
    %24 = xf.gelu %23 : tensor<4x8x64xf32>
    %25 = xf.matmul "bsh,oh->bso" %24, %arg21 : tensor<4x8x64xf32>, tensor<16x64xf32> -> tensor<4x8x16xf32>
    %26 = xf.bias_add %25, %arg20 : tensor<4x8x16xf32>, tensor<16xf32>
    %27 = xf.add %20, %26 : tensor<4x8x16xf32>
    %28 = xf.layernorm %27, %arg22, %arg23 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %29 = xf.matmul "bsh,oh->bso" %28, %arg25 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %30 = xf.bias_add %29, %arg24 : tensor<4x8x16xf32>, tensor<16xf32>
    %31 = xf.gelu %30 : tensor<4x8x16xf32>
    %32 = xf.layernorm %31, %arg26, %arg27 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %33 = xf.matmul "bsh,vh->bsv" %32, %arg3 : tensor<4x8x16xf32>, tensor<64x16xf32> -> tensor<4x8x64xf32>
    %34 = xf.bias_add %33, %arg28 : tensor<4x8x64xf32>, tensor<64xf32>
    %35 = xf.cross_entropy %34, %arg2 ignore_index = -100 : tensor<4x8x64xf32>, tensor<4x8xi32> -> tensor<f32>
    return %35 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<4x8xi32> {xf.input = "tokens", xf.micro_batch = 0 : i64}, %arg1: tensor<4x8xi32> {xf.input = "token_types", xf.micro_batch = 0 : i64}, %arg2: tensor<4x8xi32> {xf.input = "targets", xf.micro_batch = 0 : i64}, %arg3: tensor<64x16xf32> {xf.param = #xf.param<name = "bert.embeddings.word_embeddings.weight", role = embedding, init = normal, std = 2.000000e-02>, xf.state = "param:bert.embeddings.word_embeddings.weight"}, %arg4: tensor<8x16xf32> {xf.param = #xf.param<name = "bert.embeddings.position_embeddings.weight", role = embedding, init = normal, std = 2.000000e-02>, xf.state = "param:bert.embeddings.position_embeddings.weight"}, %arg5: tensor<2x16xf32> {xf.param = #xf.param<name = "bert.embeddings.token_type_embeddings.weight", role = embedding, init = normal, std = 2.000000e-02>, xf.state = "param:bert.embeddings.token_type_embeddings.weight"}, %arg6: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.ln.weight", role = norm_scale, init = ones>, xf.state = "param:bert.encoder.layer.0.attention.ln.weight"}, %arg7: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.ln.bias", role = bias, init = zeros>, xf.state = "param:bert.encoder.layer.0.attention.ln.bias"}, %arg8: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.self.query.bias", role = bias, init = zeros>, xf.state = "param:bert.encoder.layer.0.attention.self.query.bias"}, %arg9: tensor<16x16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.self.query.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:bert.encoder.layer.0.attention.self.query.weight"}, %arg10: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.self.key.bias", role = bias, init = zeros>, xf.state = "param:bert.encoder.layer.0.attention.self.key.bias"}, %arg11: tensor<16x16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.self.key.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:bert.encoder.layer.0.attention.self.key.weight"}, %arg12: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.self.value.bias", role = bias, init = zeros>, xf.state = "param:bert.encoder.layer.0.attention.self.value.bias"}, %arg13: tensor<16x16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.self.value.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:bert.encoder.layer.0.attention.self.value.weight"}, %arg14: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.output.dense.bias", role = bias, init = zeros>, xf.state = "param:bert.encoder.layer.0.attention.output.dense.bias"}, %arg15: tensor<16x16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.attention.output.dense.weight", role = weight, init = normal, std = 0.014142135623730949>, xf.state = "param:bert.encoder.layer.0.attention.output.dense.weight"}, %arg16: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.mlp.ln.weight", role = norm_scale, init = ones>, xf.state = "param:bert.encoder.layer.0.mlp.ln.weight"}, %arg17: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.mlp.ln.bias", role = bias, init = zeros>, xf.state = "param:bert.encoder.layer.0.mlp.ln.bias"}, %arg18: tensor<64xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.intermediate.dense.bias", role = bias, init = zeros>, xf.state = "param:bert.encoder.layer.0.intermediate.dense.bias"}, %arg19: tensor<64x16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.intermediate.dense.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:bert.encoder.layer.0.intermediate.dense.weight"}, %arg20: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.output.dense.bias", role = bias, init = zeros>, xf.state = "param:bert.encoder.layer.0.output.dense.bias"}, %arg21: tensor<16x64xf32> {xf.param = #xf.param<name = "bert.encoder.layer.0.output.dense.weight", role = weight, init = normal, std = 0.014142135623730949>, xf.state = "param:bert.encoder.layer.0.output.dense.weight"}, %arg22: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.final_layernorm.weight", role = norm_scale, init = ones>, xf.state = "param:bert.encoder.final_layernorm.weight"}, %arg23: tensor<16xf32> {xf.param = #xf.param<name = "bert.encoder.final_layernorm.bias", role = bias, init = zeros>, xf.state = "param:bert.encoder.final_layernorm.bias"}, %arg24: tensor<16xf32> {xf.param = #xf.param<name = "cls.predictions.transform.dense.bias", role = bias, init = zeros>, xf.state = "param:cls.predictions.transform.dense.bias"}, %arg25: tensor<16x16xf32> {xf.param = #xf.param<name = "cls.predictions.transform.dense.weight", role = weight, init = normal, std = 2.000000e-02>, xf.state = "param:cls.predictions.transform.dense.weight"}, %arg26: tensor<16xf32> {xf.param = #xf.param<name = "cls.predictions.transform.LayerNorm.weight", role = norm_scale, init = ones>, xf.state = "param:cls.predictions.transform.LayerNorm.weight"}, %arg27: tensor<16xf32> {xf.param = #xf.param<name = "cls.predictions.transform.LayerNorm.bias", role = bias, init = zeros>, xf.state = "param:cls.predictions.transform.LayerNorm.bias"}, %arg28: tensor<64xf32> {xf.param = #xf.param<name = "cls.predictions.bias", role = bias, init = zeros>, xf.state = "param:cls.predictions.bias"}, %arg29: tensor<64x16xf32> {xf.state = "adam_m:bert.embeddings.word_embeddings.weight"}, %arg30: tensor<8x16xf32> {xf.state = "adam_m:bert.embeddings.position_embeddings.weight"}, %arg31: tensor<2x16xf32> {xf.state = "adam_m:bert.embeddings.token_type_embeddings.weight"}, %arg32: tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.ln.weight"}, %arg33: tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.ln.bias"}, %arg34: tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.query.bias"}, %arg35: tensor<16x16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.query.weight"}, %arg36: tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.key.bias"}, %arg37: tensor<16x16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.key.weight"}, %arg38: tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.value.bias"}, %arg39: tensor<16x16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.value.weight"}, %arg40: tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.output.dense.bias"}, %arg41: tensor<16x16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.output.dense.weight"}, %arg42: tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.mlp.ln.weight"}, %arg43: tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.mlp.ln.bias"}, %arg44: tensor<64xf32> {xf.state = "adam_m:bert.encoder.layer.0.intermediate.dense.bias"}, %arg45: tensor<64x16xf32> {xf.state = "adam_m:bert.encoder.layer.0.intermediate.dense.weight"}, %arg46: tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.output.dense.bias"}, %arg47: tensor<16x64xf32> {xf.state = "adam_m:bert.encoder.layer.0.output.dense.weight"}, %arg48: tensor<16xf32> {xf.state = "adam_m:bert.encoder.final_layernorm.weight"}, %arg49: tensor<16xf32> {xf.state = "adam_m:bert.encoder.final_layernorm.bias"}, %arg50: tensor<16xf32> {xf.state = "adam_m:cls.predictions.transform.dense.bias"}, %arg51: tensor<16x16xf32> {xf.state = "adam_m:cls.predictions.transform.dense.weight"}, %arg52: tensor<16xf32> {xf.state = "adam_m:cls.predictions.transform.LayerNorm.weight"}, %arg53: tensor<16xf32> {xf.state = "adam_m:cls.predictions.transform.LayerNorm.bias"}, %arg54: tensor<64xf32> {xf.state = "adam_m:cls.predictions.bias"}, %arg55: tensor<64x16xf32> {xf.state = "adam_v:bert.embeddings.word_embeddings.weight"}, %arg56: tensor<8x16xf32> {xf.state = "adam_v:bert.embeddings.position_embeddings.weight"}, %arg57: tensor<2x16xf32> {xf.state = "adam_v:bert.embeddings.token_type_embeddings.weight"}, %arg58: tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.ln.weight"}, %arg59: tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.ln.bias"}, %arg60: tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.self.query.bias"}, %arg61: tensor<16x16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.self.query.weight"}, %arg62: tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.self.key.bias"}, %arg63: tensor<16x16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.self.key.weight"}, %arg64: tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.self.value.bias"}, %arg65: tensor<16x16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.self.value.weight"}, %arg66: tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.output.dense.bias"}, %arg67: tensor<16x16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.output.dense.weight"}, %arg68: tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.mlp.ln.weight"}, %arg69: tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.mlp.ln.bias"}, %arg70: tensor<64xf32> {xf.state = "adam_v:bert.encoder.layer.0.intermediate.dense.bias"}, %arg71: tensor<64x16xf32> {xf.state = "adam_v:bert.encoder.layer.0.intermediate.dense.weight"}, %arg72: tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.output.dense.bias"}, %arg73: tensor<16x64xf32> {xf.state = "adam_v:bert.encoder.layer.0.output.dense.weight"}, %arg74: tensor<16xf32> {xf.state = "adam_v:bert.encoder.final_layernorm.weight"}, %arg75: tensor<16xf32> {xf.state = "adam_v:bert.encoder.final_layernorm.bias"}, %arg76: tensor<16xf32> {xf.state = "adam_v:cls.predictions.transform.dense.bias"}, %arg77: tensor<16x16xf32> {xf.state = "adam_v:cls.predictions.transform.dense.weight"}, %arg78: tensor<16xf32> {xf.state = "adam_v:cls.predictions.transform.LayerNorm.weight"}, %arg79: tensor<16xf32> {xf.state = "adam_v:cls.predictions.transform.LayerNorm.bias"}, %arg80: tensor<64xf32> {xf.state = "adam_v:cls.predictions.bias"}, %arg81: tensor<i32> {xf.state = "step"}) -> (tensor<f32> {xf.report = "loss"}, tensor<f32> {xf.report = "grad_norm"}, tensor<f32> {xf.report = "lr"}, tensor<64x16xf32> {xf.state = "param:bert.embeddings.word_embeddings.weight"}, tensor<8x16xf32> {xf.state = "param:bert.embeddings.position_embeddings.weight"}, tensor<2x16xf32> {xf.state = "param:bert.embeddings.token_type_embeddings.weight"}, tensor<16xf32> {xf.state = "param:bert.encoder.layer.0.attention.ln.weight"}, tensor<16xf32> {xf.state = "param:bert.encoder.layer.0.attention.ln.bias"}, tensor<16xf32> {xf.state = "param:bert.encoder.layer.0.attention.self.query.bias"}, tensor<16x16xf32> {xf.state = "param:bert.encoder.layer.0.attention.self.query.weight"}, tensor<16xf32> {xf.state = "param:bert.encoder.layer.0.attention.self.key.bias"}, tensor<16x16xf32> {xf.state = "param:bert.encoder.layer.0.attention.self.key.weight"}, tensor<16xf32> {xf.state = "param:bert.encoder.layer.0.attention.self.value.bias"}, tensor<16x16xf32> {xf.state = "param:bert.encoder.layer.0.attention.self.value.weight"}, tensor<16xf32> {xf.state = "param:bert.encoder.layer.0.attention.output.dense.bias"}, tensor<16x16xf32> {xf.state = "param:bert.encoder.layer.0.attention.output.dense.weight"}, tensor<16xf32> {xf.state = "param:bert.encoder.layer.0.mlp.ln.weight"}, tensor<16xf32> {xf.state = "param:bert.encoder.layer.0.mlp.ln.bias"}, tensor<64xf32> {xf.state = "param:bert.encoder.layer.0.intermediate.dense.bias"}, tensor<64x16xf32> {xf.state = "param:bert.encoder.layer.0.intermediate.dense.weight"}, tensor<16xf32> {xf.state = "param:bert.encoder.layer.0.output.dense.bias"}, tensor<16x64xf32> {xf.state = "param:bert.encoder.layer.0.output.dense.weight"}, tensor<16xf32> {xf.state = "param:bert.encoder.final_layernorm.weight"}, tensor<16xf32> {xf.state = "param:bert.encoder.final_layernorm.bias"}, tensor<16xf32> {xf.state = "param:cls.predictions.transform.dense.bias"}, tensor<16x16xf32> {xf.state = "param:cls.predictions.transform.dense.weight"}, tensor<16xf32> {xf.state = "param:cls.predictions.transform.LayerNorm.weight"}, tensor<16xf32> {xf.state = "param:cls.predictions.transform.LayerNorm.bias"}, tensor<64xf32> {xf.state = "param:cls.predictions.bias"}, tensor<64x16xf32> {xf.state = "adam_m:bert.embeddings.word_embeddings.weight"}, tensor<8x16xf32> {xf.state = "adam_m:bert.embeddings.position_embeddings.weight"}, tensor<2x16xf32> {xf.state = "adam_m:bert.embeddings.token_type_embeddings.weight"}, tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.ln.weight"}, tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.ln.bias"}, tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.query.bias"}, tensor<16x16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.query.weight"}, tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.key.bias"}, tensor<16x16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.key.weight"}, tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.value.bias"}, tensor<16x16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.value.weight"}, tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.output.dense.bias"}, tensor<16x16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.output.dense.weight"}, tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.mlp.ln.weight"}, tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.mlp.ln.bias"}, tensor<64xf32> {xf.state = "adam_m:bert.encoder.layer.0.intermediate.dense.bias"}, tensor<64x16xf32> {xf.state = "adam_m:bert.encoder.layer.0.intermediate.dense.weight"}, tensor<16xf32> {xf.state = "adam_m:bert.encoder.layer.0.output.dense.bias"}, tensor<16x64xf32> {xf.state = "adam_m:bert.encoder.layer.0.output.dense.weight"}, tensor<16xf32> {xf.state = "adam_m:bert.encoder.final_layernorm.weight"}, tensor<16xf32> {xf.state = "adam_m:bert.encoder.final_layernorm.bias"}, tensor<16xf32> {xf.state = "adam_m:cls.predictions.transform.dense.bias"}, tensor<16x16xf32> {xf.state = "adam_m:bert.encoder.layer.0.attention.self.key.bias"}, tensor<16xf32> {xf.state = "adam_m:cls.predictions.transform.LayerNorm.weight"}, tensor<16xf32> {xf.state = "adam_m:cls.predictions.transform.LayerNorm.bias"}, tensor<64xf32> {xf.state = "adam_m:cls.predictions.bias"}, tensor<64x16xf32> {xf.state = "adam_v:bert.embeddings.word_embeddings.weight"}, tensor<8x16xf32> {xf.state = "adam_v:bert.embeddings.position_embeddings.weight"}, tensor<2x16xf32> {xf.state = "adam_v:bert.embeddings.token_type_embeddings.weight"}, tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.ln.weight"}, tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.ln.bias"}, tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.self.query.bias"}, tensor<16x16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.self.query.weight"}, tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.self.key.bias"}, tensor<16x16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.self.key.weight"}, tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.self.value.bias"}, tensor<16x16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.self.value.weight"}, tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.output.dense.bias"}, tensor<16x16xf32> {xf.state = "adam_v:bert.encoder.layer.0.attention.output.dense.weight"}, tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.mlp.ln.weight"}, tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.mlp.ln.bias"}, tensor<64xf32> {xf.state = "adam_v:bert.encoder.layer.0.intermediate.dense.bias"}, tensor<64x16xf32> {xf.state = "adam_v:bert.encoder.layer.0.intermediate.dense.weight"}, tensor<16xf32> {xf.state = "adam_v:bert.encoder.layer.0.output.dense.bias"}, tensor<16x64xf32> {xf.state = "adam_v:bert.encoder.layer.0.output.dense.weight"}, tensor<16xf32> {xf.state = "adam_v:bert.encoder.final_layernorm.weight"}, tensor<16xf32> {xf.state = "adam_v:bert.encoder.final_layernorm.bias"}, tensor<16xf32> {xf.state = "adam_v:cls.predictions.transform.dense.bias"}, tensor<16x16xf32> {xf.state = "adam_v:cls.predictions.transform.dense.weight"}, tensor<16xf32> {xf.state = "adam_v:cls.predictions.transform.LayerNorm.weight"}, tensor<16xf32> {xf.state = "adam_v:cls.predictions.transform.LayerNorm.bias"}, tensor<64xf32> {xf.state = "adam_v:cls.predictions.bias"}, tensor<i32> {xf.state = "step"}) {
    %0 = xf.embedding %arg5, %arg1 : tensor<2x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %1 = xf.iota dim = 1 : tensor<4x8xi32>
    %2 = xf.embedding %arg4, %1 : tensor<8x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %3 = xf.embedding %arg3, %arg0 : tensor<64x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %4 = xf.add %3, %2 : tensor<4x8x16xf32>
    %5 = xf.add %4, %0 : tensor<4x8x16xf32>
    %6 = xf.layernorm %5, %arg6, %arg7 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %7 = xf.matmul "bsh,oh->bso" %6, %arg9 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %8 = xf.bias_add %7, %arg8 : tensor<4x8x16xf32>, tensor<16xf32>
    %9 = xf.reshape %8 : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %10 = xf.matmul "bsh,oh->bso" %6, %arg11 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %11 = xf.bias_add %10, %arg10 : tensor<4x8x16xf32>, tensor<16xf32>
    %12 = xf.reshape %11 : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %13 = xf.matmul "bsh,oh->bso" %6, %arg13 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %14 = xf.bias_add %13, %arg12 : tensor<4x8x16xf32>, tensor<16xf32>
    %15 = xf.reshape %14 : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %16 = xf.attention %9, %12, %15 scale = 0.35355339059327373 : tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>
    %17 = xf.reshape %16 : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %18 = xf.matmul "bsh,oh->bso" %17, %arg15 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %19 = xf.bias_add %18, %arg14 : tensor<4x8x16xf32>, tensor<16xf32>
    %20 = xf.add %5, %19 : tensor<4x8x16xf32>
    %21 = xf.layernorm %20, %arg16, %arg17 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %22 = xf.matmul "bsh,oh->bso" %21, %arg19 : tensor<4x8x16xf32>, tensor<64x16xf32> -> tensor<4x8x64xf32>
    %23 = xf.bias_add %22, %arg18 : tensor<4x8x64xf32>, tensor<64xf32>
    %24 = xf.gelu %23 : tensor<4x8x64xf32>
    %25 = xf.matmul "bsh,oh->bso" %24, %arg21 : tensor<4x8x64xf32>, tensor<16x64xf32> -> tensor<4x8x16xf32>
    %26 = xf.bias_add %25, %arg20 : tensor<4x8x16xf32>, tensor<16xf32>
    %27 = xf.add %20, %26 : tensor<4x8x16xf32>
    %28 = xf.layernorm %27, %arg22, %arg23 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %29 = xf.matmul "bsh,oh->bso" %28, %arg25 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %30 = xf.bias_add %29, %arg24 : tensor<4x8x16xf32>, tensor<16xf32>
    %31 = xf.gelu %30 : tensor<4x8x16xf32>
    %32 = xf.layernorm %31, %arg26, %arg27 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %33 = xf.matmul "bsh,vh->bsv" %32, %arg3 : tensor<4x8x16xf32>, tensor<64x16xf32> -> tensor<4x8x64xf32>
    %34 = xf.bias_add %33, %arg28 : tensor<4x8x64xf32>, tensor<64xf32>
    %35 = xf.cross_entropy %34, %arg2 ignore_index = -100 : tensor<4x8x64xf32>, tensor<4x8xi32> -> tensor<f32>
    %36 = xf.fill 1.000000e+00 : tensor<f32>
    %37 = xf.cross_entropy_grad %36, %34, %arg2 ignore_index = -100 : tensor<f32>, tensor<4x8x64xf32>, tensor<4x8xi32>
    %38 = xf.reduce_sum %37 dims = [0, 1] : tensor<4x8x64xf32> -> tensor<64xf32>
    %39 = xf.matmul "bsv,vh->bsh" %37, %arg3 : tensor<4x8x64xf32>, tensor<64x16xf32> -> tensor<4x8x16xf32>
    %40 = xf.matmul "bsh,bsv->vh" %32, %37 : tensor<4x8x16xf32>, tensor<4x8x64xf32> -> tensor<64x16xf32>
    %dx, %dgamma, %dbeta = xf.layernorm_grad %39, %31, %arg26 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>
    %41 = xf.gelu_grad %dx, %30 : tensor<4x8x16xf32>
    %42 = xf.reduce_sum %41 dims = [0, 1] : tensor<4x8x16xf32> -> tensor<16xf32>
    %43 = xf.matmul "bso,oh->bsh" %41, %arg25 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %44 = xf.matmul "bsh,bso->oh" %28, %41 : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %dx_0, %dgamma_1, %dbeta_2 = xf.layernorm_grad %43, %27, %arg22 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>
    %45 = xf.reduce_sum %dx_0 dims = [0, 1] : tensor<4x8x16xf32> -> tensor<16xf32>
    %46 = xf.matmul "bso,oh->bsh" %dx_0, %arg21 : tensor<4x8x16xf32>, tensor<16x64xf32> -> tensor<4x8x64xf32>
    %47 = xf.matmul "bsh,bso->oh" %24, %dx_0 : tensor<4x8x64xf32>, tensor<4x8x16xf32> -> tensor<16x64xf32>
    %48 = xf.gelu_grad %46, %23 : tensor<4x8x64xf32>
    %49 = xf.reduce_sum %48 dims = [0, 1] : tensor<4x8x64xf32> -> tensor<64xf32>
    %50 = xf.matmul "bso,oh->bsh" %48, %arg19 : tensor<4x8x64xf32>, tensor<64x16xf32> -> tensor<4x8x16xf32>
    %51 = xf.matmul "bsh,bso->oh" %21, %48 : tensor<4x8x16xf32>, tensor<4x8x64xf32> -> tensor<64x16xf32>
    %dx_3, %dgamma_4, %dbeta_5 = xf.layernorm_grad %50, %20, %arg16 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>
    %52 = xf.add %dx_0, %dx_3 : tensor<4x8x16xf32>
    %53 = xf.reduce_sum %52 dims = [0, 1] : tensor<4x8x16xf32> -> tensor<16xf32>
    %54 = xf.matmul "bso,oh->bsh" %52, %arg15 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %55 = xf.matmul "bsh,bso->oh" %17, %52 : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %56 = xf.reshape %54 : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
    %dq, %dk, %dv = xf.attention_grad %56, %9, %12, %15, %16 scale = 0.35355339059327373 : tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>
    %57 = xf.reshape %dv : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %58 = xf.reduce_sum %57 dims = [0, 1] : tensor<4x8x16xf32> -> tensor<16xf32>
    %59 = xf.matmul "bso,oh->bsh" %57, %arg13 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %60 = xf.matmul "bsh,bso->oh" %6, %57 : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %61 = xf.reshape %dk : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %62 = xf.reduce_sum %61 dims = [0, 1] : tensor<4x8x16xf32> -> tensor<16xf32>
    %63 = xf.matmul "bso,oh->bsh" %61, %arg11 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %64 = xf.matmul "bsh,bso->oh" %6, %61 : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %65 = xf.add %59, %63 : tensor<4x8x16xf32>
    %66 = xf.reshape %dq : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %67 = xf.reduce_sum %66 dims = [0, 1] : tensor<4x8x16xf32> -> tensor<16xf32>
    %68 = xf.matmul "bso,oh->bsh" %66, %arg9 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %69 = xf.matmul "bsh,bso->oh" %6, %66 : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<16x16xf32>
    %70 = xf.add %65, %68 : tensor<4x8x16xf32>
    %dx_6, %dgamma_7, %dbeta_8 = xf.layernorm_grad %70, %5, %arg6 epsilon = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>
    %71 = xf.add %52, %dx_6 : tensor<4x8x16xf32>
    %72 = xf.embedding_grad %71, %arg0 : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<64x16xf32>
    %73 = xf.add %40, %72 : tensor<64x16xf32>
    %74 = xf.embedding_grad %71, %1 : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<8x16xf32>
    %75 = xf.embedding_grad %71, %arg1 : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<2x16xf32>
    %76 = xf.sum_squares %73 : tensor<64x16xf32>
    %77 = xf.sum_squares %74 : tensor<8x16xf32>
    %78 = xf.add %76, %77 : tensor<f32>
    %79 = xf.sum_squares %75 : tensor<2x16xf32>
    %80 = xf.add %78, %79 : tensor<f32>
    %81 = xf.sum_squares %dgamma_7 : tensor<16xf32>
    %82 = xf.add %80, %81 : tensor<f32>
    %83 = xf.sum_squares %dbeta_8 : tensor<16xf32>
    %84 = xf.add %82, %83 : tensor<f32>
    %85 = xf.sum_squares %67 : tensor<16xf32>
    %86 = xf.add %84, %85 : tensor<f32>
    %87 = xf.sum_squares %69 : tensor<16x16xf32>
    %88 = xf.add %86, %87 : tensor<f32>
    %89 = xf.sum_squares %62 : tensor<16xf32>
    %90 = xf.add %88, %89 : tensor<f32>
    %91 = xf.sum_squares %64 : tensor<16x16xf32>
    %92 = xf.add %90, %91 : tensor<f32>
    %93 = xf.sum_squares %58 : tensor<16xf32>
    %94 = xf.add %92, %93 : tensor<f32>
    %95 = xf.sum_squares %60 : tensor<16x16xf32>
    %96 = xf.add %94, %95 : tensor<f32>
    %97 = xf.sum_squares %53 : tensor<16xf32>
    %98 = xf.add %96, %97 : tensor<f32>
    %99 = xf.sum_squares %55 : tensor<16x16xf32>
    %100 = xf.add %98, %99 : tensor<f32>
    %101 = xf.sum_squares %dgamma_4 : tensor<16xf32>
    %102 = xf.add %100, %101 : tensor<f32>
    %103 = xf.sum_squares %dbeta_5 : tensor<16xf32>
    %104 = xf.add %102, %103 : tensor<f32>
    %105 = xf.sum_squares %49 : tensor<64xf32>
    %106 = xf.add %104, %105 : tensor<f32>
    %107 = xf.sum_squares %51 : tensor<64x16xf32>
    %108 = xf.add %106, %107 : tensor<f32>
    %109 = xf.sum_squares %45 : tensor<16xf32>
    %110 = xf.add %108, %109 : tensor<f32>
    %111 = xf.sum_squares %47 : tensor<16x64xf32>
    %112 = xf.add %110, %111 : tensor<f32>
    %113 = xf.sum_squares %dgamma_1 : tensor<16xf32>
    %114 = xf.add %112, %113 : tensor<f32>
    %115 = xf.sum_squares %dbeta_2 : tensor<16xf32>
    %116 = xf.add %114, %115 : tensor<f32>
    %117 = xf.sum_squares %42 : tensor<16xf32>
    %118 = xf.add %116, %117 : tensor<f32>
    %119 = xf.sum_squares %44 : tensor<16x16xf32>
    %120 = xf.add %118, %119 : tensor<f32>
    %121 = xf.sum_squares %dgamma : tensor<16xf32>
    %122 = xf.add %120, %121 : tensor<f32>
    %123 = xf.sum_squares %dbeta : tensor<16xf32>
    %124 = xf.add %122, %123 : tensor<f32>
    %125 = xf.sum_squares %38 : tensor<64xf32>
    %126 = xf.add %124, %125 : tensor<f32>
    %norm, %grad_scale, %found_inf = xf.clip_grad_norm %126 max_norm = 1.000000e+00
    %127 = xf.lr_schedule %arg81 lr = 1.500000e-04 min_lr = 1.000000e-05 warmup = 0 decay_steps = 0
    %new_param, %new_m, %new_v = xf.adamw %arg3, %73, %arg29, %arg55, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<64x16xf32>
    %new_param_9, %new_m_10, %new_v_11 = xf.adamw %arg4, %74, %arg30, %arg56, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<8x16xf32>
    %new_param_12, %new_m_13, %new_v_14 = xf.adamw %arg5, %75, %arg31, %arg57, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<2x16xf32>
    %new_param_15, %new_m_16, %new_v_17 = xf.adamw %arg6, %dgamma_7, %arg32, %arg58, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_18, %new_m_19, %new_v_20 = xf.adamw %arg7, %dbeta_8, %arg33, %arg59, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_21, %new_m_22, %new_v_23 = xf.adamw %arg8, %67, %arg34, %arg60, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_24, %new_m_25, %new_v_26 = xf.adamw %arg9, %69, %arg35, %arg61, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<16x16xf32>
    %new_param_27, %new_m_28, %new_v_29 = xf.adamw %arg10, %62, %arg36, %arg62, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_30, %new_m_31, %new_v_32 = xf.adamw %arg11, %64, %arg37, %arg63, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<16x16xf32>
    %new_param_33, %new_m_34, %new_v_35 = xf.adamw %arg12, %58, %arg38, %arg64, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_36, %new_m_37, %new_v_38 = xf.adamw %arg13, %60, %arg39, %arg65, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<16x16xf32>
    %new_param_39, %new_m_40, %new_v_41 = xf.adamw %arg14, %53, %arg40, %arg66, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_42, %new_m_43, %new_v_44 = xf.adamw %arg15, %55, %arg41, %arg67, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<16x16xf32>
    %new_param_45, %new_m_46, %new_v_47 = xf.adamw %arg16, %dgamma_4, %arg42, %arg68, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_48, %new_m_49, %new_v_50 = xf.adamw %arg17, %dbeta_5, %arg43, %arg69, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_51, %new_m_52, %new_v_53 = xf.adamw %arg18, %49, %arg44, %arg70, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<64xf32>
    %new_param_54, %new_m_55, %new_v_56 = xf.adamw %arg19, %51, %arg45, %arg71, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<64x16xf32>
    %new_param_57, %new_m_58, %new_v_59 = xf.adamw %arg20, %45, %arg46, %arg72, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_60, %new_m_61, %new_v_62 = xf.adamw %arg21, %47, %arg47, %arg73, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<16x64xf32>
    %new_param_63, %new_m_64, %new_v_65 = xf.adamw %arg22, %dgamma_1, %arg48, %arg74, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_66, %new_m_67, %new_v_68 = xf.adamw %arg23, %dbeta_2, %arg49, %arg75, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_69, %new_m_70, %new_v_71 = xf.adamw %arg24, %42, %arg50, %arg76, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_72, %new_m_73, %new_v_74 = xf.adamw %arg25, %44, %arg51, %arg77, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<16x16xf32>
    %new_param_75, %new_m_76, %new_v_77 = xf.adamw %arg26, %dgamma, %arg52, %arg78, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_78, %new_m_79, %new_v_80 = xf.adamw %arg27, %dbeta, %arg53, %arg79, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<16xf32>
    %new_param_81, %new_m_82, %new_v_83 = xf.adamw %arg28, %38, %arg54, %arg80, %127, %grad_scale, %arg81 beta1 = 9.000000e-01 beta2 = 0.94999999999999996 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<64xf32>
    %128 = xf.count_step %arg81
    return %35, %norm, %127, %new_param, %new_param_9, %new_param_12, %new_param_15, %new_param_18, %new_param_21, %new_param_24, %new_param_27, %new_param_30, %new_param_33, %new_param_36, %new_param_39, %new_param_42, %new_param_45, %new_param_48, %new_param_51, %new_param_54, %new_param_57, %new_param_60, %new_param_63, %new_param_66, %new_param_69, %new_param_72, %new_param_75, %new_param_78, %new_param_81, %new_m, %new_m_10, %new_m_13, %new_m_16, %new_m_19, %new_m_22, %new_m_25, %new_m_28, %new_m_31, %new_m_34, %new_m_37, %new_m_40, %new_m_43, %new_m_46, %new_m_49, %new_m_52, %new_m_55, %new_m_58, %new_m_61, %new_m_64, %new_m_67, %new_m_70, %new_m_73, %new_m_76, %new_m_79, %new_m_82, %new_v, %new_v_11, %new_v_14, %new_v_17, %new_v_20, %new_v_23, %new_v_26, %new_v_29, %new_v_32, %new_v_35, %new_v_38, %new_v_41, %new_v_44, %new_v_47, %new_v_50, %new_v_53, %new_v_56, %new_v_59, %new_v_62, %new_v_65, %new_v_68, %new_v_71, %new_v_74, %new_v_77, %new_v_80, %new_v_83, %128 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<64x16xf32>, tensor<8x16xf32>, tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64xf32>, tensor<64x16xf32>, tensor<16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64xf32>, tensor<64x16xf32>, tensor<8x16xf32>, tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64xf32>, tensor<64x16xf32>, tensor<16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64xf32>, tensor<64x16xf32>, tensor<8x16xf32>, tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64xf32>, tensor<64x16xf32>, tensor<16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64xf32>, tensor<i32>
  }
}

