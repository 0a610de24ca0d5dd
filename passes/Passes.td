//===- Passes.td - shardc passes ---------------------------*- tablegen -*-===//
#ifndef SHARDC_PASSES_TD
#define SHARDC_PASSES_TD

include "mlir/Pass/PassBase.td"

def XfFuseLinearCrossEntropy : Pass<"xf-fuse-linear-cross-entropy", "mlir::func::FuncOp"> {
  let summary = "fuses a logit matmul feeding cross_entropy into xf.linear_cross_entropy";
  let description = [{
    Rewrites `cross_entropy(matmul(x, W), targets)` into one
    `xf.linear_cross_entropy`, which never materializes the tokens x vocab
    logits. The matmul must contract only the hidden dimension of `x` with one
    dimension of a rank-2 `W` (either layout), keep every other dimension of
    `x` in order, put the vocabulary last, and have no other user.

    Before:
    ```mlir
    %l = xf.matmul "bsh,vh->bsv" %x, %wte : tensor<4x64x128xf32>, tensor<512x128xf32> -> tensor<4x64x512xf32>
    %loss = xf.cross_entropy %l, %t ignore_index = -100 : tensor<4x64x512xf32>, tensor<4x64xi32> -> tensor<f32>
    ```
    After:
    ```mlir
    %loss = xf.linear_cross_entropy %x, %wte, %t vocab_major ignore_index = -100 : tensor<4x64x128xf32>, tensor<512x128xf32>, tensor<4x64xi32> -> tensor<f32>
    ```
  }];
  let dependentDialects = ["::shardc::xf::XfDialect"];
}

#endif // SHARDC_PASSES_TD
