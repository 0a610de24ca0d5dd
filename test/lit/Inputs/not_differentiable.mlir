func.func @forward(%tokens: tensor<4x32xi32> {xf.input = "tokens"},
                   %targets: tensor<4x32xi32> {xf.input = "targets"},
                   %wte: tensor<64x8xf32> {xf.param = #xf.param<name = "wte", role = embedding, init = normal, std = 2.000000e-02>}) -> tensor<f32> {
  %e = xf.embedding %wte, %tokens : tensor<64x8xf32>, tensor<4x32xi32> -> tensor<4x32x8xf32>
  %g = xf.gelu_grad %e, %e : tensor<4x32x8xf32>
  %l = xf.linear_cross_entropy %g, %wte, %targets vocab_major ignore_index = -100 : tensor<4x32x8xf32>, tensor<64x8xf32>, tensor<4x32xi32> -> tensor<f32>
  return %l : tensor<f32>
}
