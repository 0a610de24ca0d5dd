func.func @forward(%tokens: tensor<2x8xi32> {xf.input = "tokens"},
    %wte: tensor<64x16xf32> {xf.param = #xf.param<name = "wte", role = embedding, init = normal, std = 0.02>},
    %w: tensor<32x64xf32> {xf.param = #xf.param<name = "w", role = weight, init = normal, std = 0.02>}) -> tensor<2x8x64xf32> {
  %x = xf.embedding %wte, %tokens : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
  %y = xf.matmul "bsh,hk->bsk" %x, %w : tensor<2x8x16xf32>, tensor<32x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}
