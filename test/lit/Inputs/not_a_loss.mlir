func.func @forward(%tokens: tensor<4x32xi32> {xf.input = "tokens"},
                   %wte: tensor<64x8xf32> {xf.param = #xf.param<name = "wte", role = embedding, init = normal, std = 2.000000e-02>}) -> tensor<4x32x8xf32> {
  %e = xf.embedding %wte, %tokens : tensor<64x8xf32>, tensor<4x32xi32> -> tensor<4x32x8xf32>
  return %e : tensor<4x32x8xf32>
}
