module attributes {xf.model = {batch = 4 : i64, dropout = 0.000000e+00 : f64, dtype = "f32", family = "gpt2", ffn = 256 : i64, heads = 4 : i64, hidden = 64 : i64, init_std = 2.000000e-02 : f64, kv_heads = 4 : i64, layers = 4 : i64, name = "gpt2-tiny", norm_eps = 1.000000e-05 : f64, positions = 64 : i64, pre_ln = true, rope_theta = 1.000000e+04 : f64, seq = 32 : i64, type_vocab = 2 : i64, vocab = 50257 : i64, vocab_pad = 128 : i64}} {
  func.func @forward(%arg0: tensor<4x32xi32> {xf.input = "tokens"}, %arg1: tensor<4x32xi32> {xf.input = "targets"}, %arg2: tensor<50304x64xf32> {xf.param = #xf.param<name = "transformer.wte.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg3: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.wpe.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg4: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.weight", role = norm_scale, init = ones>}, %arg5: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.bias", role = bias, init = zeros>}, %arg6: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.bias", role = bias, init = zeros>}, %arg7: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg8: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.bias", role = bias, init = zeros>}, %arg9: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg10: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.bias", role = bias, init = zeros>}, %arg11: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg12: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.bias", role = bias, init = zeros>}, %arg13: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.weight", role = weight, init = normal, std = 0.0070710678118654745>}, %arg14: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.weight", role = norm_scale, init = ones>}, %arg15: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.bias", role = bias, init = zeros>}, %arg16: tensor<256xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.bias", role = bias, init = zeros>}, %arg17: tensor<64x256xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg18: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.bias", role = bias, init = zeros>}, %arg19: tensor<256x64xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.weight", role = weight, init = normal, std = 0.0070710678118654745>}, %arg20: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.ln_1.weight", role = norm_scale, init = ones>}, %arg21: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.ln_1.bias", role = bias, init = zeros>}, %arg22: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.q_proj.bias", role = bias, init = zeros>}, %arg23: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg24: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.k_proj.bias", role = bias, init = zeros>}, %arg25: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg26: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.v_proj.bias", role = bias, init = zeros>}, %arg27: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg28: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.c_proj.bias", role = bias, init = zeros>}, %arg29: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.c_proj.weight", role = weight, init = normal, std = 0.0070710678118654745>}, %arg30: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.ln_2.weight", role = norm_scale, init = ones>}, %arg31: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.ln_2.bias", role = bias, init = zeros>}, %arg32: tensor<256xf32> {xf.param = #xf.param<name = "transformer.h.1.mlp.c_fc.bias", role = bias, init = zeros>}, %arg33: tensor<64x256xf32> {xf.param = #xf.param<name = "transformer.h.1.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg34: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.1.mlp.c_proj.bias", role = bias, init = zeros>}, %arg35: tensor<256x64xf32> {xf.param = #xf.param<name = "transformer.h.1.mlp.c_proj.weight", role = weight, init = normal, std = 0.0070710678118654745>}, %arg36: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.2.ln_1.weight", role = norm_scale, init = ones>}, %arg37: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.2.ln_1.bias", role = bias, init = zeros>}, %arg38: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.q_proj.bias", role = bias, init = zeros>}, %arg39: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg40: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.k_proj.bias", role = bias, init = zeros>}, %arg41: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg42: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.v_proj.bias", role = bias, init = zeros>}, %arg43: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg44: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.c_proj.bias", role = bias, init = zeros>}, %arg45: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.c_proj.weight", role = weight, init = normal, std = 0.0070710678118654745>}, %arg46: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.2.ln_2.weight", role = norm_scale, init = ones>}, %arg47: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.2.ln_2.bias", role = bias, init = zeros>}, %arg48: tensor<256xf32> {xf.param = #xf.param<name = "transformer.h.2.mlp.c_fc.bias", role = bias, init = zeros>}, %arg49: tensor<64x256xf32> {xf.param = #xf.param<name = "transformer.h.2.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg50: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.2.mlp.c_proj.bias", role = bias, init = zeros>}, %arg51: tensor<256x64xf32> {xf.param = #xf.param<name = "transformer.h.2.mlp.c_proj.weight", role = weight, init = normal, std = 0.0070710678118654745>}, %arg52: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.3.ln_1.weight", role = norm_scale, init = ones>}, %arg53: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.3.ln_1.bias", role = bias, init = zeros>}, %arg54: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.q_proj.bias", role = bias, init = zeros>}, %arg55: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg56: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.k_proj.bias", role = bias, init = zeros>}, %arg57: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg58: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.v_proj.bias", role = bias, init = zeros>}, %arg59: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg60: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.c_proj.bias", role = bias, init = zeros>}, %arg61: tensor<64x64xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.c_proj.weight", role = weight, init = normal, std = 0.0070710678118654745>}, %arg62: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.3.ln_2.weight", role = norm_scale, init = ones>}, %arg63: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.3.ln_2.bias", role = bias, init = zeros>}, %arg64: tensor<256xf32> {xf.param = #xf.param<name = "transformer.h.3.mlp.c_fc.bias", role = bias, init = zeros>}, %arg65: tensor<64x256xf32> {xf.param = #xf.param<name = "transformer.h.3.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg66: tensor<64xf32> {xf.param = #xf.param<name = "transformer.h.3.mlp.c_proj.bias", role = bias, init = zeros>}, %arg67: tensor<256x64xf32> {xf.param = #xf.param<name = "transformer.h.3.mlp.c_proj.weight", role = weight, init = normal, std = 0.0070710678118654745>}, %arg68: tensor<64xf32> {xf.param = #xf.param<name = "transformer.ln_f.weight", role = norm_scale, init = ones>}, %arg69: tensor<64xf32> {xf.param = #xf.param<name = "transformer.ln_f.bias", role = bias, init = zeros>}) -> tensor<f32> {
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
    %49 = xf.matmul "bsh,ho->bso" %48, %arg39 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %50 = xf.bias_add %49, %arg38 : tensor<4x32x64xf32>, tensor<64xf32>
    %51 = xf.reshape %50 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
    %52 = xf.matmul "bsh,ho->bso" %48, %arg41 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %53 = xf.bias_add %52, %arg40 : tensor<4x32x64xf32>, tensor<64xf32>
    %54 = xf.reshape %53 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
    %55 = xf.matmul "bsh,ho->bso" %48, %arg43 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %56 = xf.bias_add %55, %arg42 : tensor<4x32x64xf32>, tensor<64xf32>
    %57 = xf.reshape %56 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
    %58 = xf.attention %51, %54, %57 causal scale = 2.500000e-01 : tensor<4x32x4x16xf32>, tensor<4x32x4x16xf32>, tensor<4x32x4x16xf32>
    %59 = xf.reshape %58 : tensor<4x32x4x16xf32> -> tensor<4x32x64xf32>
    %60 = xf.matmul "bsh,ho->bso" %59, %arg45 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %61 = xf.bias_add %60, %arg44 : tensor<4x32x64xf32>, tensor<64xf32>
    %62 = xf.add %47, %61 : tensor<4x32x64xf32>
    %63 = xf.layernorm %62, %arg46, %arg47 epsilon = 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %64 = xf.matmul "bsh,ho->bso" %63, %arg49 : tensor<4x32x64xf32>, tensor<64x256xf32> -> tensor<4x32x256xf32>
    %65 = xf.bias_add %64, %arg48 : tensor<4x32x256xf32>, tensor<256xf32>
    %66 = xf.gelu %65 : tensor<4x32x256xf32>
    %67 = xf.matmul "bsh,ho->bso" %66, %arg51 : tensor<4x32x256xf32>, tensor<256x64xf32> -> tensor<4x32x64xf32>
    %68 = xf.bias_add %67, %arg50 : tensor<4x32x64xf32>, tensor<64xf32>
    %69 = xf.add %62, %68 : tensor<4x32x64xf32>
    %70 = xf.layernorm %69, %arg52, %arg53 epsilon = 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %71 = xf.matmul "bsh,ho->bso" %70, %arg55 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %72 = xf.bias_add %71, %arg54 : tensor<4x32x64xf32>, tensor<64xf32>
    %73 = xf.reshape %72 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
    %74 = xf.matmul "bsh,ho->bso" %70, %arg57 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %75 = xf.bias_add %74, %arg56 : tensor<4x32x64xf32>, tensor<64xf32>
    %76 = xf.reshape %75 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
    %77 = xf.matmul "bsh,ho->bso" %70, %arg59 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %78 = xf.bias_add %77, %arg58 : tensor<4x32x64xf32>, tensor<64xf32>
    %79 = xf.reshape %78 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
    %80 = xf.attention %73, %76, %79 causal scale = 2.500000e-01 : tensor<4x32x4x16xf32>, tensor<4x32x4x16xf32>, tensor<4x32x4x16xf32>
    %81 = xf.reshape %80 : tensor<4x32x4x16xf32> -> tensor<4x32x64xf32>
    %82 = xf.matmul "bsh,ho->bso" %81, %arg61 : tensor<4x32x64xf32>, tensor<64x64xf32> -> tensor<4x32x64xf32>
    %83 = xf.bias_add %82, %arg60 : tensor<4x32x64xf32>, tensor<64xf32>
    %84 = xf.add %69, %83 : tensor<4x32x64xf32>
    %85 = xf.layernorm %84, %arg62, %arg63 epsilon = 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %86 = xf.matmul "bsh,ho->bso" %85, %arg65 : tensor<4x32x64xf32>, tensor<64x256xf32> -> tensor<4x32x256xf32>
    %87 = xf.bias_add %86, %arg64 : tensor<4x32x256xf32>, tensor<256xf32>
    %88 = xf.gelu %87 : tensor<4x32x256xf32>
    %89 = xf.matmul "bsh,ho->bso" %88, %arg67 : tensor<4x32x256xf32>, tensor<256x64xf32> -> tensor<4x32x64xf32>
    %90 = xf.bias_add %89, %arg66 : tensor<4x32x64xf32>, tensor<64xf32>
    %91 = xf.add %84, %90 : tensor<4x32x64xf32>
    %92 = xf.layernorm %91, %arg68, %arg69 epsilon = 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %93 = xf.matmul "bsh,vh->bsv" %92, %arg2 : tensor<4x32x64xf32>, tensor<50304x64xf32> -> tensor<4x32x50304xf32>
    %94 = xf.cross_entropy %93, %arg1 ignore_index = -100 classes = 50257 : tensor<4x32x50304xf32>, tensor<4x32xi32> -> tensor<f32>
    return %94 : tensor<f32>
  }
}
