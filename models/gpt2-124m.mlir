module attributes {xf.model = {batch = 4 : i64, dropout = 0.000000e+00 : f64, dtype = "f32", family = "gpt2", ffn = 3072 : i64, heads = 12 : i64, hidden = 768 : i64, init_std = 2.000000e-02 : f64, kv_heads = 12 : i64, layers = 12 : i64, name = "gpt2-124m", norm_eps = 1.000000e-05 : f64, positions = 1024 : i64, pre_ln = true, rope_theta = 1.000000e+04 : f64, seq = 1024 : i64, type_vocab = 2 : i64, vocab = 50257 : i64, vocab_pad = 128 : i64}} {
  func.func @forward(%arg0: tensor<4x1024xi32> {xf.input = "tokens"}, %arg1: tensor<4x1024xi32> {xf.input = "targets"}, %arg2: tensor<50304x768xf32> {xf.param = #xf.param<name = "transformer.wte.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg3: tensor<1024x768xf32> {xf.param = #xf.param<name = "transformer.wpe.weight", role = embedding, init = normal, std = 2.000000e-02>}, %arg4: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.weight", role = norm_scale, init = ones>}, %arg5: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_1.bias", role = bias, init = zeros>}, %arg6: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.bias", role = bias, init = zeros>}, %arg7: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg8: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.bias", role = bias, init = zeros>}, %arg9: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg10: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.bias", role = bias, init = zeros>}, %arg11: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg12: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.bias", role = bias, init = zeros>}, %arg13: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.0.attn.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg14: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.weight", role = norm_scale, init = ones>}, %arg15: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.0.ln_2.bias", role = bias, init = zeros>}, %arg16: tensor<3072xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.bias", role = bias, init = zeros>}, %arg17: tensor<768x3072xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg18: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.bias", role = bias, init = zeros>}, %arg19: tensor<3072x768xf32> {xf.param = #xf.param<name = "transformer.h.0.mlp.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg20: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.1.ln_1.weight", role = norm_scale, init = ones>}, %arg21: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.1.ln_1.bias", role = bias, init = zeros>}, %arg22: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.q_proj.bias", role = bias, init = zeros>}, %arg23: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg24: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.k_proj.bias", role = bias, init = zeros>}, %arg25: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg26: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.v_proj.bias", role = bias, init = zeros>}, %arg27: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg28: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.c_proj.bias", role = bias, init = zeros>}, %arg29: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.1.attn.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg30: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.1.ln_2.weight", role = norm_scale, init = ones>}, %arg31: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.1.ln_2.bias", role = bias, init = zeros>}, %arg32: tensor<3072xf32> {xf.param = #xf.param<name = "transformer.h.1.mlp.c_fc.bias", role = bias, init = zeros>}, %arg33: tensor<768x3072xf32> {xf.param = #xf.param<name = "transformer.h.1.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg34: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.1.mlp.c_proj.bias", role = bias, init = zeros>}, %arg35: tensor<3072x768xf32> {xf.param = #xf.param<name = "transformer.h.1.mlp.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg36: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.2.ln_1.weight", role = norm_scale, init = ones>}, %arg37: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.2.ln_1.bias", role = bias, init = zeros>}, %arg38: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.q_proj.bias", role = bias, init = zeros>}, %arg39: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg40: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.k_proj.bias", role = bias, init = zeros>}, %arg41: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg42: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.v_proj.bias", role = bias, init = zeros>}, %arg43: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg44: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.c_proj.bias", role = bias, init = zeros>}, %arg45: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.2.attn.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg46: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.2.ln_2.weight", role = norm_scale, init = ones>}, %arg47: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.2.ln_2.bias", role = bias, init = zeros>}, %arg48: tensor<3072xf32> {xf.param = #xf.param<name = "transformer.h.2.mlp.c_fc.bias", role = bias, init = zeros>}, %arg49: tensor<768x3072xf32> {xf.param = #xf.param<name = "transformer.h.2.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg50: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.2.mlp.c_proj.bias", role = bias, init = zeros>}, %arg51: tensor<3072x768xf32> {xf.param = #xf.param<name = "transformer.h.2.mlp.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg52: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.3.ln_1.weight", role = norm_scale, init = ones>}, %arg53: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.3.ln_1.bias", role = bias, init = zeros>}, %arg54: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.q_proj.bias", role = bias, init = zeros>}, %arg55: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg56: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.k_proj.bias", role = bias, init = zeros>}, %arg57: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg58: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.v_proj.bias", role = bias, init = zeros>}, %arg59: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg60: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.c_proj.bias", role = bias, init = zeros>}, %arg61: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.3.attn.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg62: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.3.ln_2.weight", role = norm_scale, init = ones>}, %arg63: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.3.ln_2.bias", role = bias, init = zeros>}, %arg64: tensor<3072xf32> {xf.param = #xf.param<name = "transformer.h.3.mlp.c_fc.bias", role = bias, init = zeros>}, %arg65: tensor<768x3072xf32> {xf.param = #xf.param<name = "transformer.h.3.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg66: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.3.mlp.c_proj.bias", role = bias, init = zeros>}, %arg67: tensor<3072x768xf32> {xf.param = #xf.param<name = "transformer.h.3.mlp.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg68: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.4.ln_1.weight", role = norm_scale, init = ones>}, %arg69: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.4.ln_1.bias", role = bias, init = zeros>}, %arg70: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.4.attn.q_proj.bias", role = bias, init = zeros>}, %arg71: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.4.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg72: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.4.attn.k_proj.bias", role = bias, init = zeros>}, %arg73: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.4.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg74: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.4.attn.v_proj.bias", role = bias, init = zeros>}, %arg75: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.4.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg76: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.4.attn.c_proj.bias", role = bias, init = zeros>}, %arg77: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.4.attn.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg78: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.4.ln_2.weight", role = norm_scale, init = ones>}, %arg79: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.4.ln_2.bias", role = bias, init = zeros>}, %arg80: tensor<3072xf32> {xf.param = #xf.param<name = "transformer.h.4.mlp.c_fc.bias", role = bias, init = zeros>}, %arg81: tensor<768x3072xf32> {xf.param = #xf.param<name = "transformer.h.4.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg82: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.4.mlp.c_proj.bias", role = bias, init = zeros>}, %arg83: tensor<3072x768xf32> {xf.param = #xf.param<name = "transformer.h.4.mlp.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg84: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.5.ln_1.weight", role = norm_scale, init = ones>}, %arg85: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.5.ln_1.bias", role = bias, init = zeros>}, %arg86: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.5.attn.q_proj.bias", role = bias, init = zeros>}, %arg87: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.5.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg88: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.5.attn.k_proj.bias", role = bias, init = zeros>}, %arg89: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.5.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg90: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.5.attn.v_proj.bias", role = bias, init = zeros>}, %arg91: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.5.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg92: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.5.attn.c_proj.bias", role = bias, init = zeros>}, %arg93: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.5.attn.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg94: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.5.ln_2.weight", role = norm_scale, init = ones>}, %arg95: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.5.ln_2.bias", role = bias, init = zeros>}, %arg96: tensor<3072xf32> {xf.param = #xf.param<name = "transformer.h.5.mlp.c_fc.bias", role = bias, init = zeros>}, %arg97: tensor<768x3072xf32> {xf.param = #xf.param<name = "transformer.h.5.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg98: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.5.mlp.c_proj.bias", role = bias, init = zeros>}, %arg99: tensor<3072x768xf32> {xf.param = #xf.param<name = "transformer.h.5.mlp.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg100: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.6.ln_1.weight", role = norm_scale, init = ones>}, %arg101: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.6.ln_1.bias", role = bias, init = zeros>}, %arg102: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.6.attn.q_proj.bias", role = bias, init = zeros>}, %arg103: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.6.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg104: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.6.attn.k_proj.bias", role = bias, init = zeros>}, %arg105: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.6.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg106: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.6.attn.v_proj.bias", role = bias, init = zeros>}, %arg107: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.6.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg108: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.6.attn.c_proj.bias", role = bias, init = zeros>}, %arg109: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.6.attn.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg110: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.6.ln_2.weight", role = norm_scale, init = ones>}, %arg111: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.6.ln_2.bias", role = bias, init = zeros>}, %arg112: tensor<3072xf32> {xf.param = #xf.param<name = "transformer.h.6.mlp.c_fc.bias", role = bias, init = zeros>}, %arg113: tensor<768x3072xf32> {xf.param = #xf.param<name = "transformer.h.6.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg114: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.6.mlp.c_proj.bias", role = bias, init = zeros>}, %arg115: tensor<3072x768xf32> {xf.param = #xf.param<name = "transformer.h.6.mlp.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg116: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.7.ln_1.weight", role = norm_scale, init = ones>}, %arg117: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.7.ln_1.bias", role = bias, init = zeros>}, %arg118: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.7.attn.q_proj.bias", role = bias, init = zeros>}, %arg119: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.7.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg120: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.7.attn.k_proj.bias", role = bias, init = zeros>}, %arg121: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.7.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg122: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.7.attn.v_proj.bias", role = bias, init = zeros>}, %arg123: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.7.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg124: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.7.attn.c_proj.bias", role = bias, init = zeros>}, %arg125: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.7.attn.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg126: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.7.ln_2.weight", role = norm_scale, init = ones>}, %arg127: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.7.ln_2.bias", role = bias, init = zeros>}, %arg128: tensor<3072xf32> {xf.param = #xf.param<name = "transformer.h.7.mlp.c_fc.bias", role = bias, init = zeros>}, %arg129: tensor<768x3072xf32> {xf.param = #xf.param<name = "transformer.h.7.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg130: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.7.mlp.c_proj.bias", role = bias, init = zeros>}, %arg131: tensor<3072x768xf32> {xf.param = #xf.param<name = "transformer.h.7.mlp.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg132: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.8.ln_1.weight", role = norm_scale, init = ones>}, %arg133: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.8.ln_1.bias", role = bias, init = zeros>}, %arg134: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.8.attn.q_proj.bias", role = bias, init = zeros>}, %arg135: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.8.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg136: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.8.attn.k_proj.bias", role = bias, init = zeros>}, %arg137: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.8.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg138: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.8.attn.v_proj.bias", role = bias, init = zeros>}, %arg139: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.8.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg140: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.8.attn.c_proj.bias", role = bias, init = zeros>}, %arg141: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.8.attn.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg142: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.8.ln_2.weight", role = norm_scale, init = ones>}, %arg143: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.8.ln_2.bias", role = bias, init = zeros>}, %arg144: tensor<3072xf32> {xf.param = #xf.param<name = "transformer.h.8.mlp.c_fc.bias", role = bias, init = zeros>}, %arg145: tensor<768x3072xf32> {xf.param = #xf.param<name = "transformer.h.8.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg146: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.8.mlp.c_proj.bias", role = bias, init = zeros>}, %arg147: tensor<3072x768xf32> {xf.param = #xf.param<name = "transformer.h.8.mlp.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg148: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.9.ln_1.weight", role = norm_scale, init = ones>}, %arg149: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.9.ln_1.bias", role = bias, init = zeros>}, %arg150: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.9.attn.q_proj.bias", role = bias, init = zeros>}, %arg151: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.9.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg152: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.9.attn.k_proj.bias", role = bias, init = zeros>}, %arg153: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.9.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg154: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.9.attn.v_proj.bias", role = bias, init = zeros>}, %arg155: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.9.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg156: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.9.attn.c_proj.bias", role = bias, init = zeros>}, %arg157: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.9.attn.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg158: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.9.ln_2.weight", role = norm_scale, init = ones>}, %arg159: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.9.ln_2.bias", role = bias, init = zeros>}, %arg160: tensor<3072xf32> {xf.param = #xf.param<name = "transformer.h.9.mlp.c_fc.bias", role = bias, init = zeros>}, %arg161: tensor<768x3072xf32> {xf.param = #xf.param<name = "transformer.h.9.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg162: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.9.mlp.c_proj.bias", role = bias, init = zeros>}, %arg163: tensor<3072x768xf32> {xf.param = #xf.param<name = "transformer.h.9.mlp.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg164: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.10.ln_1.weight", role = norm_scale, init = ones>}, %arg165: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.10.ln_1.bias", role = bias, init = zeros>}, %arg166: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.10.attn.q_proj.bias", role = bias, init = zeros>}, %arg167: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.10.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg168: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.10.attn.k_proj.bias", role = bias, init = zeros>}, %arg169: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.10.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg170: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.10.attn.v_proj.bias", role = bias, init = zeros>}, %arg171: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.10.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg172: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.10.attn.c_proj.bias", role = bias, init = zeros>}, %arg173: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.10.attn.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg174: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.10.ln_2.weight", role = norm_scale, init = ones>}, %arg175: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.10.ln_2.bias", role = bias, init = zeros>}, %arg176: tensor<3072xf32> {xf.param = #xf.param<name = "transformer.h.10.mlp.c_fc.bias", role = bias, init = zeros>}, %arg177: tensor<768x3072xf32> {xf.param = #xf.param<name = "transformer.h.10.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg178: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.10.mlp.c_proj.bias", role = bias, init = zeros>}, %arg179: tensor<3072x768xf32> {xf.param = #xf.param<name = "transformer.h.10.mlp.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg180: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.11.ln_1.weight", role = norm_scale, init = ones>}, %arg181: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.11.ln_1.bias", role = bias, init = zeros>}, %arg182: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.11.attn.q_proj.bias", role = bias, init = zeros>}, %arg183: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.11.attn.q_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg184: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.11.attn.k_proj.bias", role = bias, init = zeros>}, %arg185: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.11.attn.k_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg186: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.11.attn.v_proj.bias", role = bias, init = zeros>}, %arg187: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.11.attn.v_proj.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg188: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.11.attn.c_proj.bias", role = bias, init = zeros>}, %arg189: tensor<768x768xf32> {xf.param = #xf.param<name = "transformer.h.11.attn.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg190: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.11.ln_2.weight", role = norm_scale, init = ones>}, %arg191: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.11.ln_2.bias", role = bias, init = zeros>}, %arg192: tensor<3072xf32> {xf.param = #xf.param<name = "transformer.h.11.mlp.c_fc.bias", role = bias, init = zeros>}, %arg193: tensor<768x3072xf32> {xf.param = #xf.param<name = "transformer.h.11.mlp.c_fc.weight", role = weight, init = normal, std = 2.000000e-02>}, %arg194: tensor<768xf32> {xf.param = #xf.param<name = "transformer.h.11.mlp.c_proj.bias", role = bias, init = zeros>}, %arg195: tensor<3072x768xf32> {xf.param = #xf.param<name = "transformer.h.11.mlp.c_proj.weight", role = weight, init = normal, std = 0.0040824829046386306>}, %arg196: tensor<768xf32> {xf.param = #xf.param<name = "transformer.ln_f.weight", role = norm_scale, init = ones>}, %arg197: tensor<768xf32> {xf.param = #xf.param<name = "transformer.ln_f.bias", role = bias, init = zeros>}) -> tensor<f32> {
    %0 = xf.iota dim = 1 : tensor<4x1024xi32>
    %1 = xf.embedding %arg3, %0 : tensor<1024x768xf32>, tensor<4x1024xi32> -> tensor<4x1024x768xf32>
    %2 = xf.embedding %arg2, %arg0 : tensor<50304x768xf32>, tensor<4x1024xi32> -> tensor<4x1024x768xf32>
    %3 = xf.add %2, %1 : tensor<4x1024x768xf32>
    %4 = xf.layernorm %3, %arg4, %arg5 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %5 = xf.matmul "bsh,ho->bso" %4, %arg7 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %6 = xf.bias_add %5, %arg6 : tensor<4x1024x768xf32>, tensor<768xf32>
    %7 = xf.reshape %6 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %8 = xf.matmul "bsh,ho->bso" %4, %arg9 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %9 = xf.bias_add %8, %arg8 : tensor<4x1024x768xf32>, tensor<768xf32>
    %10 = xf.reshape %9 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %11 = xf.matmul "bsh,ho->bso" %4, %arg11 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %12 = xf.bias_add %11, %arg10 : tensor<4x1024x768xf32>, tensor<768xf32>
    %13 = xf.reshape %12 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %14 = xf.attention %7, %10, %13 causal scale = 1.250000e-01 : tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>
    %15 = xf.reshape %14 : tensor<4x1024x12x64xf32> -> tensor<4x1024x768xf32>
    %16 = xf.matmul "bsh,ho->bso" %15, %arg13 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %17 = xf.bias_add %16, %arg12 : tensor<4x1024x768xf32>, tensor<768xf32>
    %18 = xf.add %3, %17 : tensor<4x1024x768xf32>
    %19 = xf.layernorm %18, %arg14, %arg15 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %20 = xf.matmul "bsh,ho->bso" %19, %arg17 : tensor<4x1024x768xf32>, tensor<768x3072xf32> -> tensor<4x1024x3072xf32>
    %21 = xf.bias_add %20, %arg16 : tensor<4x1024x3072xf32>, tensor<3072xf32>
    %22 = xf.gelu %21 : tensor<4x1024x3072xf32>
    %23 = xf.matmul "bsh,ho->bso" %22, %arg19 : tensor<4x1024x3072xf32>, tensor<3072x768xf32> -> tensor<4x1024x768xf32>
    %24 = xf.bias_add %23, %arg18 : tensor<4x1024x768xf32>, tensor<768xf32>
    %25 = xf.add %18, %24 : tensor<4x1024x768xf32>
    %26 = xf.layernorm %25, %arg20, %arg21 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %27 = xf.matmul "bsh,ho->bso" %26, %arg23 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %28 = xf.bias_add %27, %arg22 : tensor<4x1024x768xf32>, tensor<768xf32>
    %29 = xf.reshape %28 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %30 = xf.matmul "bsh,ho->bso" %26, %arg25 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %31 = xf.bias_add %30, %arg24 : tensor<4x1024x768xf32>, tensor<768xf32>
    %32 = xf.reshape %31 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %33 = xf.matmul "bsh,ho->bso" %26, %arg27 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %34 = xf.bias_add %33, %arg26 : tensor<4x1024x768xf32>, tensor<768xf32>
    %35 = xf.reshape %34 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %36 = xf.attention %29, %32, %35 causal scale = 1.250000e-01 : tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>
    %37 = xf.reshape %36 : tensor<4x1024x12x64xf32> -> tensor<4x1024x768xf32>
    %38 = xf.matmul "bsh,ho->bso" %37, %arg29 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %39 = xf.bias_add %38, %arg28 : tensor<4x1024x768xf32>, tensor<768xf32>
    %40 = xf.add %25, %39 : tensor<4x1024x768xf32>
    %41 = xf.layernorm %40, %arg30, %arg31 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %42 = xf.matmul "bsh,ho->bso" %41, %arg33 : tensor<4x1024x768xf32>, tensor<768x3072xf32> -> tensor<4x1024x3072xf32>
    %43 = xf.bias_add %42, %arg32 : tensor<4x1024x3072xf32>, tensor<3072xf32>
    %44 = xf.gelu %43 : tensor<4x1024x3072xf32>
    %45 = xf.matmul "bsh,ho->bso" %44, %arg35 : tensor<4x1024x3072xf32>, tensor<3072x768xf32> -> tensor<4x1024x768xf32>
    %46 = xf.bias_add %45, %arg34 : tensor<4x1024x768xf32>, tensor<768xf32>
    %47 = xf.add %40, %46 : tensor<4x1024x768xf32>
    %48 = xf.layernorm %47, %arg36, %arg37 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %49 = xf.matmul "bsh,ho->bso" %48, %arg39 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %50 = xf.bias_add %49, %arg38 : tensor<4x1024x768xf32>, tensor<768xf32>
    %51 = xf.reshape %50 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %52 = xf.matmul "bsh,ho->bso" %48, %arg41 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %53 = xf.bias_add %52, %arg40 : tensor<4x1024x768xf32>, tensor<768xf32>
    %54 = xf.reshape %53 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %55 = xf.matmul "bsh,ho->bso" %48, %arg43 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %56 = xf.bias_add %55, %arg42 : tensor<4x1024x768xf32>, tensor<768xf32>
    %57 = xf.reshape %56 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %58 = xf.attention %51, %54, %57 causal scale = 1.250000e-01 : tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>
    %59 = xf.reshape %58 : tensor<4x1024x12x64xf32> -> tensor<4x1024x768xf32>
    %60 = xf.matmul "bsh,ho->bso" %59, %arg45 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %61 = xf.bias_add %60, %arg44 : tensor<4x1024x768xf32>, tensor<768xf32>
    %62 = xf.add %47, %61 : tensor<4x1024x768xf32>
    %63 = xf.layernorm %62, %arg46, %arg47 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %64 = xf.matmul "bsh,ho->bso" %63, %arg49 : tensor<4x1024x768xf32>, tensor<768x3072xf32> -> tensor<4x1024x3072xf32>
    %65 = xf.bias_add %64, %arg48 : tensor<4x1024x3072xf32>, tensor<3072xf32>
    %66 = xf.gelu %65 : tensor<4x1024x3072xf32>
    %67 = xf.matmul "bsh,ho->bso" %66, %arg51 : tensor<4x1024x3072xf32>, tensor<3072x768xf32> -> tensor<4x1024x768xf32>
    %68 = xf.bias_add %67, %arg50 : tensor<4x1024x768xf32>, tensor<768xf32>
    %69 = xf.add %62, %68 : tensor<4x1024x768xf32>
    %70 = xf.layernorm %69, %arg52, %arg53 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %71 = xf.matmul "bsh,ho->bso" %70, %arg55 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %72 = xf.bias_add %71, %arg54 : tensor<4x1024x768xf32>, tensor<768xf32>
    %73 = xf.reshape %72 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %74 = xf.matmul "bsh,ho->bso" %70, %arg57 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %75 = xf.bias_add %74, %arg56 : tensor<4x1024x768xf32>, tensor<768xf32>
    %76 = xf.reshape %75 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %77 = xf.matmul "bsh,ho->bso" %70, %arg59 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %78 = xf.bias_add %77, %arg58 : tensor<4x1024x768xf32>, tensor<768xf32>
    %79 = xf.reshape %78 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %80 = xf.attention %73, %76, %79 causal scale = 1.250000e-01 : tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>
    %81 = xf.reshape %80 : tensor<4x1024x12x64xf32> -> tensor<4x1024x768xf32>
    %82 = xf.matmul "bsh,ho->bso" %81, %arg61 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %83 = xf.bias_add %82, %arg60 : tensor<4x1024x768xf32>, tensor<768xf32>
    %84 = xf.add %69, %83 : tensor<4x1024x768xf32>
    %85 = xf.layernorm %84, %arg62, %arg63 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %86 = xf.matmul "bsh,ho->bso" %85, %arg65 : tensor<4x1024x768xf32>, tensor<768x3072xf32> -> tensor<4x1024x3072xf32>
    %87 = xf.bias_add %86, %arg64 : tensor<4x1024x3072xf32>, tensor<3072xf32>
    %88 = xf.gelu %87 : tensor<4x1024x3072xf32>
    %89 = xf.matmul "bsh,ho->bso" %88, %arg67 : tensor<4x1024x3072xf32>, tensor<3072x768xf32> -> tensor<4x1024x768xf32>
    %90 = xf.bias_add %89, %arg66 : tensor<4x1024x768xf32>, tensor<768xf32>
    %91 = xf.add %84, %90 : tensor<4x1024x768xf32>
    %92 = xf.layernorm %91, %arg68, %arg69 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %93 = xf.matmul "bsh,ho->bso" %92, %arg71 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %94 = xf.bias_add %93, %arg70 : tensor<4x1024x768xf32>, tensor<768xf32>
    %95 = xf.reshape %94 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %96 = xf.matmul "bsh,ho->bso" %92, %arg73 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %97 = xf.bias_add %96, %arg72 : tensor<4x1024x768xf32>, tensor<768xf32>
    %98 = xf.reshape %97 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %99 = xf.matmul "bsh,ho->bso" %92, %arg75 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %100 = xf.bias_add %99, %arg74 : tensor<4x1024x768xf32>, tensor<768xf32>
    %101 = xf.reshape %100 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %102 = xf.attention %95, %98, %101 causal scale = 1.250000e-01 : tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>
    %103 = xf.reshape %102 : tensor<4x1024x12x64xf32> -> tensor<4x1024x768xf32>
    %104 = xf.matmul "bsh,ho->bso" %103, %arg77 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %105 = xf.bias_add %104, %arg76 : tensor<4x1024x768xf32>, tensor<768xf32>
    %106 = xf.add %91, %105 : tensor<4x1024x768xf32>
    %107 = xf.layernorm %106, %arg78, %arg79 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %108 = xf.matmul "bsh,ho->bso" %107, %arg81 : tensor<4x1024x768xf32>, tensor<768x3072xf32> -> tensor<4x1024x3072xf32>
    %109 = xf.bias_add %108, %arg80 : tensor<4x1024x3072xf32>, tensor<3072xf32>
    %110 = xf.gelu %109 : tensor<4x1024x3072xf32>
    %111 = xf.matmul "bsh,ho->bso" %110, %arg83 : tensor<4x1024x3072xf32>, tensor<3072x768xf32> -> tensor<4x1024x768xf32>
    %112 = xf.bias_add %111, %arg82 : tensor<4x1024x768xf32>, tensor<768xf32>
    %113 = xf.add %106, %112 : tensor<4x1024x768xf32>
    %114 = xf.layernorm %113, %arg84, %arg85 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %115 = xf.matmul "bsh,ho->bso" %114, %arg87 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %116 = xf.bias_add %115, %arg86 : tensor<4x1024x768xf32>, tensor<768xf32>
    %117 = xf.reshape %116 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %118 = xf.matmul "bsh,ho->bso" %114, %arg89 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %119 = xf.bias_add %118, %arg88 : tensor<4x1024x768xf32>, tensor<768xf32>
    %120 = xf.reshape %119 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %121 = xf.matmul "bsh,ho->bso" %114, %arg91 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %122 = xf.bias_add %121, %arg90 : tensor<4x1024x768xf32>, tensor<768xf32>
    %123 = xf.reshape %122 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %124 = xf.attention %117, %120, %123 causal scale = 1.250000e-01 : tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>
    %125 = xf.reshape %124 : tensor<4x1024x12x64xf32> -> tensor<4x1024x768xf32>
    %126 = xf.matmul "bsh,ho->bso" %125, %arg93 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %127 = xf.bias_add %126, %arg92 : tensor<4x1024x768xf32>, tensor<768xf32>
    %128 = xf.add %113, %127 : tensor<4x1024x768xf32>
    %129 = xf.layernorm %128, %arg94, %arg95 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %130 = xf.matmul "bsh,ho->bso" %129, %arg97 : tensor<4x1024x768xf32>, tensor<768x3072xf32> -> tensor<4x1024x3072xf32>
    %131 = xf.bias_add %130, %arg96 : tensor<4x1024x3072xf32>, tensor<3072xf32>
    %132 = xf.gelu %131 : tensor<4x1024x3072xf32>
    %133 = xf.matmul "bsh,ho->bso" %132, %arg99 : tensor<4x1024x3072xf32>, tensor<3072x768xf32> -> tensor<4x1024x768xf32>
    %134 = xf.bias_add %133, %arg98 : tensor<4x1024x768xf32>, tensor<768xf32>
    %135 = xf.add %128, %134 : tensor<4x1024x768xf32>
    %136 = xf.layernorm %135, %arg100, %arg101 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %137 = xf.matmul "bsh,ho->bso" %136, %arg103 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %138 = xf.bias_add %137, %arg102 : tensor<4x1024x768xf32>, tensor<768xf32>
    %139 = xf.reshape %138 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %140 = xf.matmul "bsh,ho->bso" %136, %arg105 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %141 = xf.bias_add %140, %arg104 : tensor<4x1024x768xf32>, tensor<768xf32>
    %142 = xf.reshape %141 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %143 = xf.matmul "bsh,ho->bso" %136, %arg107 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %144 = xf.bias_add %143, %arg106 : tensor<4x1024x768xf32>, tensor<768xf32>
    %145 = xf.reshape %144 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %146 = xf.attention %139, %142, %145 causal scale = 1.250000e-01 : tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>
    %147 = xf.reshape %146 : tensor<4x1024x12x64xf32> -> tensor<4x1024x768xf32>
    %148 = xf.matmul "bsh,ho->bso" %147, %arg109 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %149 = xf.bias_add %148, %arg108 : tensor<4x1024x768xf32>, tensor<768xf32>
    %150 = xf.add %135, %149 : tensor<4x1024x768xf32>
    %151 = xf.layernorm %150, %arg110, %arg111 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %152 = xf.matmul "bsh,ho->bso" %151, %arg113 : tensor<4x1024x768xf32>, tensor<768x3072xf32> -> tensor<4x1024x3072xf32>
    %153 = xf.bias_add %152, %arg112 : tensor<4x1024x3072xf32>, tensor<3072xf32>
    %154 = xf.gelu %153 : tensor<4x1024x3072xf32>
    %155 = xf.matmul "bsh,ho->bso" %154, %arg115 : tensor<4x1024x3072xf32>, tensor<3072x768xf32> -> tensor<4x1024x768xf32>
    %156 = xf.bias_add %155, %arg114 : tensor<4x1024x768xf32>, tensor<768xf32>
    %157 = xf.add %150, %156 : tensor<4x1024x768xf32>
    %158 = xf.layernorm %157, %arg116, %arg117 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %159 = xf.matmul "bsh,ho->bso" %158, %arg119 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %160 = xf.bias_add %159, %arg118 : tensor<4x1024x768xf32>, tensor<768xf32>
    %161 = xf.reshape %160 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %162 = xf.matmul "bsh,ho->bso" %158, %arg121 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %163 = xf.bias_add %162, %arg120 : tensor<4x1024x768xf32>, tensor<768xf32>
    %164 = xf.reshape %163 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %165 = xf.matmul "bsh,ho->bso" %158, %arg123 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %166 = xf.bias_add %165, %arg122 : tensor<4x1024x768xf32>, tensor<768xf32>
    %167 = xf.reshape %166 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %168 = xf.attention %161, %164, %167 causal scale = 1.250000e-01 : tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>
    %169 = xf.reshape %168 : tensor<4x1024x12x64xf32> -> tensor<4x1024x768xf32>
    %170 = xf.matmul "bsh,ho->bso" %169, %arg125 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %171 = xf.bias_add %170, %arg124 : tensor<4x1024x768xf32>, tensor<768xf32>
    %172 = xf.add %157, %171 : tensor<4x1024x768xf32>
    %173 = xf.layernorm %172, %arg126, %arg127 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %174 = xf.matmul "bsh,ho->bso" %173, %arg129 : tensor<4x1024x768xf32>, tensor<768x3072xf32> -> tensor<4x1024x3072xf32>
    %175 = xf.bias_add %174, %arg128 : tensor<4x1024x3072xf32>, tensor<3072xf32>
    %176 = xf.gelu %175 : tensor<4x1024x3072xf32>
    %177 = xf.matmul "bsh,ho->bso" %176, %arg131 : tensor<4x1024x3072xf32>, tensor<3072x768xf32> -> tensor<4x1024x768xf32>
    %178 = xf.bias_add %177, %arg130 : tensor<4x1024x768xf32>, tensor<768xf32>
    %179 = xf.add %172, %178 : tensor<4x1024x768xf32>
    %180 = xf.layernorm %179, %arg132, %arg133 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %181 = xf.matmul "bsh,ho->bso" %180, %arg135 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %182 = xf.bias_add %181, %arg134 : tensor<4x1024x768xf32>, tensor<768xf32>
    %183 = xf.reshape %182 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %184 = xf.matmul "bsh,ho->bso" %180, %arg137 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %185 = xf.bias_add %184, %arg136 : tensor<4x1024x768xf32>, tensor<768xf32>
    %186 = xf.reshape %185 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %187 = xf.matmul "bsh,ho->bso" %180, %arg139 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %188 = xf.bias_add %187, %arg138 : tensor<4x1024x768xf32>, tensor<768xf32>
    %189 = xf.reshape %188 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %190 = xf.attention %183, %186, %189 causal scale = 1.250000e-01 : tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>
    %191 = xf.reshape %190 : tensor<4x1024x12x64xf32> -> tensor<4x1024x768xf32>
    %192 = xf.matmul "bsh,ho->bso" %191, %arg141 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %193 = xf.bias_add %192, %arg140 : tensor<4x1024x768xf32>, tensor<768xf32>
    %194 = xf.add %179, %193 : tensor<4x1024x768xf32>
    %195 = xf.layernorm %194, %arg142, %arg143 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %196 = xf.matmul "bsh,ho->bso" %195, %arg145 : tensor<4x1024x768xf32>, tensor<768x3072xf32> -> tensor<4x1024x3072xf32>
    %197 = xf.bias_add %196, %arg144 : tensor<4x1024x3072xf32>, tensor<3072xf32>
    %198 = xf.gelu %197 : tensor<4x1024x3072xf32>
    %199 = xf.matmul "bsh,ho->bso" %198, %arg147 : tensor<4x1024x3072xf32>, tensor<3072x768xf32> -> tensor<4x1024x768xf32>
    %200 = xf.bias_add %199, %arg146 : tensor<4x1024x768xf32>, tensor<768xf32>
    %201 = xf.add %194, %200 : tensor<4x1024x768xf32>
    %202 = xf.layernorm %201, %arg148, %arg149 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %203 = xf.matmul "bsh,ho->bso" %202, %arg151 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %204 = xf.bias_add %203, %arg150 : tensor<4x1024x768xf32>, tensor<768xf32>
    %205 = xf.reshape %204 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %206 = xf.matmul "bsh,ho->bso" %202, %arg153 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %207 = xf.bias_add %206, %arg152 : tensor<4x1024x768xf32>, tensor<768xf32>
    %208 = xf.reshape %207 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %209 = xf.matmul "bsh,ho->bso" %202, %arg155 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %210 = xf.bias_add %209, %arg154 : tensor<4x1024x768xf32>, tensor<768xf32>
    %211 = xf.reshape %210 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %212 = xf.attention %205, %208, %211 causal scale = 1.250000e-01 : tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>
    %213 = xf.reshape %212 : tensor<4x1024x12x64xf32> -> tensor<4x1024x768xf32>
    %214 = xf.matmul "bsh,ho->bso" %213, %arg157 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %215 = xf.bias_add %214, %arg156 : tensor<4x1024x768xf32>, tensor<768xf32>
    %216 = xf.add %201, %215 : tensor<4x1024x768xf32>
    %217 = xf.layernorm %216, %arg158, %arg159 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %218 = xf.matmul "bsh,ho->bso" %217, %arg161 : tensor<4x1024x768xf32>, tensor<768x3072xf32> -> tensor<4x1024x3072xf32>
    %219 = xf.bias_add %218, %arg160 : tensor<4x1024x3072xf32>, tensor<3072xf32>
    %220 = xf.gelu %219 : tensor<4x1024x3072xf32>
    %221 = xf.matmul "bsh,ho->bso" %220, %arg163 : tensor<4x1024x3072xf32>, tensor<3072x768xf32> -> tensor<4x1024x768xf32>
    %222 = xf.bias_add %221, %arg162 : tensor<4x1024x768xf32>, tensor<768xf32>
    %223 = xf.add %216, %222 : tensor<4x1024x768xf32>
    %224 = xf.layernorm %223, %arg164, %arg165 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %225 = xf.matmul "bsh,ho->bso" %224, %arg167 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %226 = xf.bias_add %225, %arg166 : tensor<4x1024x768xf32>, tensor<768xf32>
    %227 = xf.reshape %226 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %228 = xf.matmul "bsh,ho->bso" %224, %arg169 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %229 = xf.bias_add %228, %arg168 : tensor<4x1024x768xf32>, tensor<768xf32>
    %230 = xf.reshape %229 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %231 = xf.matmul "bsh,ho->bso" %224, %arg171 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %232 = xf.bias_add %231, %arg170 : tensor<4x1024x768xf32>, tensor<768xf32>
    %233 = xf.reshape %232 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %234 = xf.attention %227, %230, %233 causal scale = 1.250000e-01 : tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>
    %235 = xf.reshape %234 : tensor<4x1024x12x64xf32> -> tensor<4x1024x768xf32>
    %236 = xf.matmul "bsh,ho->bso" %235, %arg173 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %237 = xf.bias_add %236, %arg172 : tensor<4x1024x768xf32>, tensor<768xf32>
    %238 = xf.add %223, %237 : tensor<4x1024x768xf32>
    %239 = xf.layernorm %238, %arg174, %arg175 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %240 = xf.matmul "bsh,ho->bso" %239, %arg177 : tensor<4x1024x768xf32>, tensor<768x3072xf32> -> tensor<4x1024x3072xf32>
    %241 = xf.bias_add %240, %arg176 : tensor<4x1024x3072xf32>, tensor<3072xf32>
    %242 = xf.gelu %241 : tensor<4x1024x3072xf32>
    %243 = xf.matmul "bsh,ho->bso" %242, %arg179 : tensor<4x1024x3072xf32>, tensor<3072x768xf32> -> tensor<4x1024x768xf32>
    %244 = xf.bias_add %243, %arg178 : tensor<4x1024x768xf32>, tensor<768xf32>
    %245 = xf.add %238, %244 : tensor<4x1024x768xf32>
    %246 = xf.layernorm %245, %arg180, %arg181 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %247 = xf.matmul "bsh,ho->bso" %246, %arg183 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %248 = xf.bias_add %247, %arg182 : tensor<4x1024x768xf32>, tensor<768xf32>
    %249 = xf.reshape %248 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %250 = xf.matmul "bsh,ho->bso" %246, %arg185 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %251 = xf.bias_add %250, %arg184 : tensor<4x1024x768xf32>, tensor<768xf32>
    %252 = xf.reshape %251 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %253 = xf.matmul "bsh,ho->bso" %246, %arg187 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %254 = xf.bias_add %253, %arg186 : tensor<4x1024x768xf32>, tensor<768xf32>
    %255 = xf.reshape %254 : tensor<4x1024x768xf32> -> tensor<4x1024x12x64xf32>
    %256 = xf.attention %249, %252, %255 causal scale = 1.250000e-01 : tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>, tensor<4x1024x12x64xf32>
    %257 = xf.reshape %256 : tensor<4x1024x12x64xf32> -> tensor<4x1024x768xf32>
    %258 = xf.matmul "bsh,ho->bso" %257, %arg189 : tensor<4x1024x768xf32>, tensor<768x768xf32> -> tensor<4x1024x768xf32>
    %259 = xf.bias_add %258, %arg188 : tensor<4x1024x768xf32>, tensor<768xf32>
    %260 = xf.add %245, %259 : tensor<4x1024x768xf32>
    %261 = xf.layernorm %260, %arg190, %arg191 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %262 = xf.matmul "bsh,ho->bso" %261, %arg193 : tensor<4x1024x768xf32>, tensor<768x3072xf32> -> tensor<4x1024x3072xf32>
    %263 = xf.bias_add %262, %arg192 : tensor<4x1024x3072xf32>, tensor<3072xf32>
    %264 = xf.gelu %263 : tensor<4x1024x3072xf32>
    %265 = xf.matmul "bsh,ho->bso" %264, %arg195 : tensor<4x1024x3072xf32>, tensor<3072x768xf32> -> tensor<4x1024x768xf32>
    %266 = xf.bias_add %265, %arg194 : tensor<4x1024x768xf32>, tensor<768xf32>
    %267 = xf.add %260, %266 : tensor<4x1024x768xf32>
    %268 = xf.layernorm %267, %arg196, %arg197 epsilon = 1.000000e-05 : tensor<4x1024x768xf32>, tensor<768xf32>, tensor<768xf32>
    %269 = xf.matmul "bsh,vh->bsv" %268, %arg2 : tensor<4x1024x768xf32>, tensor<50304x768xf32> -> tensor<4x1024x50304xf32>
    %270 = xf.cross_entropy %269, %arg1 ignore_index = -100 classes = 50257 : tensor<4x1024x50304xf32>, tensor<4x1024xi32> -> tensor<f32>
    return %270 : tensor<f32>
  }
}
