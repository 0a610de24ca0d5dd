module attributes {xf.model = {batch = 4 : i64, dropout = 0.000000e+00 : f64, dtype = "f32", family = "gpt2", ffn = 256 : i64, heads = 4 : i64, hidden = 64 : i64, init_std = 2.000000e-02 : f64, kv_heads = 4 : i64, layers = 2 : i64, name = "gpt2-tiny", norm_eps = 1.000000e-05 : f64, positions = 64 : i64, pre_ln = true, rope_theta = 1.000000e+04 : f64, seq = 32 : i64, type_vocab = 2 : i64, vocab = 50257 : i64, vocab_pad = 128 : i64}} {
  func.func @forward(%arg0: tensor<4x32xi32> {xf.input = "tokens"}, %arg1: tensor<4x32xi32> {xf.input = "targets"}, %arg2: tensor<50304x64xf32> {xf.param = #xf.param<name = "transformer.wte.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg3: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.wpe.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg4: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.weight", role = norm_scale, init = ones>}, %arg5: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.bias", role = bias, init = zeros>}, %arg6: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.bias", role = bias, init = zeros>}, %arg7: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg8: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.bias", role = bias, init = zeros>}, %arg9: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg10: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.bias", role = bias, init = zeros>}, %arg11: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg12: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.bias", role = bias, init = zeros>}, %arg13: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.weight", role = weight, init = normal, std = 1.000000e-02>}, %arg14: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.weight", role = norm_scale, init = ones>}, %arg15: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.bias", role = bias, init = zeros>}, %arg16: tensor<256xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.bias", role = bias, init = zeros>}, %arg17: tensor<64x256xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg18: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.bias", role = bias, init = zeros>}, %arg19: tensor<256x64xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.weight", role = weight, init = normal, std = 1.000000e-02>}, %arg20: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.ln_1.weight", role = norm_scale, init = ones>}, %arg21: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.ln_1.bias", role = bias, init = zeros>}, %arg22: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.q_proj.bias", role = bias, init = zeros>}, %arg23: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg24: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.k_proj.bias", role = bias, init = zeros>}, %arg25: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg26: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.v_proj.bias", role = bias, init = zeros>}, %arg27: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg28: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.c_proj.bias", role = bias, init = zeros>}, %arg29: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.c_proj.weight", role = weight, init = normal, std = 1.000000e-02>}, %arg30: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.ln_2.weight", role = norm_scale, init = ones>}, %arg31: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.ln_2.bias", role = bias, init = zeros>}, %arg32: tensor<256xf32> {xf.param = #xf.param<name = "transformer.h.1.mlp.c_fc.bias", role = bias, init = zeros>}, %arg33: tensor<64x256xf32> {xf.param = #xf.param<name = "transformer.h.1.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg34: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.mlp.c_proj.bias", role = bias, init = zeros>}, %arg35: tensor<256x64xf32> {xf.param = #xf.param<name = "transformer.h.1.mlp.c_proj.weight", role = weight, init = normal, std = 1.000000e-02>}, %arg36: tensor<64xf32> {xf.param = #xf.param<name = "transformer.ln_f.weight", role = norm_scale, init = ones>}, %arg37: tensor<64xf32> {xf.param = #xf.param<name = "transformer.ln_f.bias", role = bias, init = zeros>}) -> tensor<f32> {
    %0 = xf.iota dim = 1 : tensor<4x32xi32>
    %1 = xf.embedding %arg3, %0 : tensor<64x64xf32>, tensor<4x32xi32> -> tensor<4x32x64xf32>
    %2 = xf.embedding %arg2, %arg0 : tensor<50304x64xf32>, tensor<4x32xi32> -> tensor<4x32x64xf32>
    %3 = xf.add %2, %1 : tensor<4x32x64xf32>
    %4 = xf.layernorm %3, %arg4, %arg5 epsilon = 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %5 = xf.matmul "bsh,ho->bso" %4, %arg7 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %6 = xf.bias_add %5, %arg6 : tensor<4x32x64xf32>, tensor<64xf32>
    %7 = xf.reshape %6 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
    %8 = xf.matmul "bsh,ho->bso" %4, %arg9 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %9 = xf.bias_add %8, %arg8 : tensor<4x32x64xf32>, tensor<64xf32>
    %10 = xf.reshape %9 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
    %11 = xf.matmul "bsh,ho->bso" %4, %arg11 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %12 = xf.bias_add %11, %arg10 : tensor<4x32x64xf32>, tensor<64xf32>
    %13 = xf.reshape %12 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
    %14 = xf.attention %7, %10, %13 causal scale = 2.500000e-01 : tensor<4x32x4x16xf32>, tensor<4x32x4x16xf32>, tensor<4x32x4x16xf32>
    %15 = xf.reshape %14 : tensor<4x32x4x16xf32> -> tensor<4x32x64xf32>
    %16 = xf.matmul "bsh,ho->bso" %15, %arg13 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %17 = xf.bias_add %16, %arg12 : tensor<4x32x64xf32>, tensor<64xf32>
    %18 = xf.add %3, %17 : tensor<4x32x64xf32>
    %19 = xf.layernorm %18, %arg14, %arg15 epsilon = 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %20 = xf.matmul "bsh,ho->bso" %19, %arg17 : tensor<4x32x64xf32>, tensor<64x256xf32> -> tensor<4x32x256xf32>
    %21 = xf.bias_add %20, %arg16 : tensor<4x32x256xf32>, tensor<256xf32>
    %22 = xf.gelu %21 : tensor<4x32x256xf32>
    %23 = xf.matmul "bsh,ho->bso" %22, %arg19 : tensor<4x32x256xf32>, tensor<256x64xf32> -> tensor<4x32x64xf32>
    %24 = xf.bias_add %23, %arg18 : tensor<4x32x64xf32>, tensor<64xf32>
    %25 = xf.add %18, %24 : tensor<4x32x64xf32>
    %26 = xf.layernorm %25, %arg20, %arg21 epsilon = 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %27 = xf.matmul "bsh,ho->bso" %26, %arg23 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %28 = xf.bias_add %27, %arg22 : tensor<4x32x64xf32>, tensor<64xf32>
    %29 = xf.reshape %28 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
    %30 = xf.matmul "bsh,ho->bso" %26, %arg25 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %31 = xf.bias_add %30, %arg24 : tensor<4x32x64xf32>, tensor<64xf32>
    %32 = xf.reshape %31 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
    %33 = xf.matmul "bsh,ho->bso" %26, %arg27 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %34 = xf.bias_add %33, %arg26 : tensor<4x32x64xf32>, tensor<64xf32>
    %35 = xf.reshape %34 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
    %36 = xf.attention %29, %32, %35 causal scale = 2.500000e-01 : tensor<4x32x4x16xf32>, tensor<4x32x4x16xf32>, tensor<4x32x4x16xf32>
    %37 = xf.reshape %36 : tensor<4x32x4x16xf32> -> tensor<4x32x64xf32>
    %38 = xf.matmul "bsh,ho->bso" %37, %arg29 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %39 = xf.bias_add %38, %arg28 : tensor<4x32x64xf32>, tensor<64xf32>
    %40 = xf.add %25, %39 : tensor<4x32x64xf32>
    %41 = xf.layernorm %40, %arg30, %arg31 epsilon = 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %42 = xf.matmul "bsh,ho->bso" %41, %arg33 : tensor<4x32x64xf32>, tensor<64x256xf32> -> tensor<4x32x256xf32>
    %43 = xf.bias_add %42, %arg32 : tensor<4x32x256xf32>, tensor<256xf32>
    %44 = xf.gelu %43 : tensor<4x32x256xf32>
    %45 = xf.matmul "bsh,ho->bso" %44, %arg35 : tensor<4x32x256xf32>, tensor<256x64xf32> -> tensor<4x32x64xf32>
    %46 = xf.bias_add %45, %arg34 : tensor<4x32x64xf32>, tensor<64xf32>
    %47 = xf.add %40, %46 : tensor<4x32x64xf32>
    %48 = xf.layernorm %47, %arg36, %arg37 epsilon = 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %49 = xf.matmul "bsh,vh->bsv" %48, %arg2 : tensor<4x32x64xf32>, tensor<50304x64xf32> -> tensor<4x32x50304xf32>
    %50 = xf.cross_entropy %49, %arg1 ignore_index = -100 classes = 50257 : tensor<4x32x50304xf32>, tensor<4x32xi32> -> tensor<f32>
    return %50 : tensor<f32>
  }
}
