func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = xf.gelu %x : tensor<2x8xf32>
  return %0 : tensor<2x8xf32
}
