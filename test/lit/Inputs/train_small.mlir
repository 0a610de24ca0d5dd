func.func @forward(%tokens: tensor<2x4xi32> {xf.input = "tokens"},
                   %targets: tensor<2x4xi32> {xf.input = "targets"},
                   %wte: tensor<16x8xf32> {xf.param = #xf.param<name = "wte", role = embedding, init = normal, std = 2.000000e-02>},
                   %w: tensor<8x8xf32> {xf.param = #xf.param<name = "w", role = weight, init = normal, std = 2.000000e-02>},
                   %b: tensor<8xf32> {xf.param = #xf.param<name = "b", role = bias, init = zeros>},
                   %g: tensor<8xf32> {xf.param = #xf.param<name = "g", role = norm_scale, init = ones>},
                   %unused: tensor<8xf32> {xf.param = #xf.param<name = "unused", role = bias, init = zeros>}) -> tensor<f32> {
  %e = xf.embedding %wte, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %h = xf.matmul "bsh,hk->bsk" %e, %w : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %hb = xf.bias_add %h, %b : tensor<2x4x8xf32>, tensor<8xf32>
  %d = xf.dropout %hb rate = 1.000000e-01 key = 7 : tensor<2x4x8xf32>
  %n = xf.layernorm %d, %g, %b epsilon = 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %r = xf.add %n, %e : tensor<2x4x8xf32>
  %l = xf.linear_cross_entropy %r, %wte, %targets vocab_major ignore_index = -100 : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4xi32> -> tensor<f32>
  return %l : tensor<f32>
}
