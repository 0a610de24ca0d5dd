//===- XfGradOps.td - xf backward ops ----------------------*- tablegen -*-===//
//
// Ops that -xf-autodiff emits for the backward pass. Each is the
// vector-Jacobian product of one forward op (named in its summary) and takes
// the result gradient first, then the forward values it needs. They have no
// VJP rule themselves (shardc does not take second derivatives): a model that
// uses one in its forward gets a "not differentiable" error from -xf-autodiff.
// Included from XfOps.td.
//
//===----------------------------------------------------------------------===//

def Xf_FillOp : Xf_DiffOp<"fill"> {
  let summary = "a tensor with every element equal to a constant";
  let description = [{
    ```mlir
    %one = xf.fill 1.000000e+00 : tensor<f32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

def Xf_ScaleOp : Xf_DiffOp<"scale", [SameOperandsAndResultType]> {
  let summary = "multiplies every element by a constant";
  let description = [{
    ```mlir
    %half = xf.scale %x factor = 5.000000e-01 : tensor<f32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$x, F64Attr:$factor);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$x `factor` `=` $factor attr-dict `:` type($result)";
  let builders = [OpBuilder<(ins "::mlir::Value":$x, "double":$factor), [{
    build($_builder, $_state, x.getType(), x, $_builder.getF64FloatAttr(factor));
  }]>];
}

def Xf_ReduceSumOp : Xf_Op<"reduce_sum"> {
  let summary = "sums over the listed dimensions (bias gradients)";
  let description = [{
    The result has the operand's dimensions without `dims` (sorted, unique).
    Accumulates in double on the CPU.

    ```mlir
    %db = xf.reduce_sum %dy dims = [0, 1] : tensor<4x64x384xf32> -> tensor<384xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$x, DenseI64ArrayAttr:$dims);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$x `dims` `=` $dims attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def Xf_GeluGradOp : Xf_Op<"gelu_grad", [AllTypesMatch<["dy", "x", "dx"]>]> {
  let summary = "VJP of xf.gelu: dy * gelu'(x)";
  let arguments = (ins Xf_FloatTensor:$dy, Xf_FloatTensor:$x);
  let results = (outs Xf_FloatTensor:$dx);
  let assemblyFormat = "$dy `,` $x attr-dict `:` type($dx)";
}

def Xf_SwigluGradOp : Xf_Op<"swiglu_grad",
    [AllTypesMatch<["dy", "gate", "up", "dgate", "dup"]>]> {
  let summary = "VJP of xf.swiglu: (dgate, dup)";
  let arguments = (ins Xf_FloatTensor:$dy, Xf_FloatTensor:$gate, Xf_FloatTensor:$up);
  let results = (outs Xf_FloatTensor:$dgate, Xf_FloatTensor:$dup);
  let assemblyFormat = "$dy `,` $gate `,` $up attr-dict `:` type($dy)";
}

def Xf_SoftmaxGradOp : Xf_Op<"softmax_grad", [AllTypesMatch<["dy", "y", "dx"]>]> {
  let summary = "VJP of xf.softmax from its result y: y * (dy - sum(dy * y))";
  let arguments = (ins Xf_FloatTensor:$dy, Xf_FloatTensor:$y);
  let results = (outs Xf_FloatTensor:$dx);
  let assemblyFormat = "$dy `,` $y attr-dict `:` type($dx)";
}

def Xf_LayerNormGradOp : Xf_Op<"layernorm_grad",
    [AllTypesMatch<["x", "dx"]>, AllTypesMatch<["gamma", "dgamma", "dbeta"]>]> {
  let summary = "VJP of xf.layernorm: (dx, dgamma, dbeta); statistics recomputed from x";
  let description = [{
    `dy` has the shape of `x` and the type of the layernorm's result (written
    after `dy` only where it differs from `x`'s); `dx` has the type of `x`.
    With `plus %r` (the type of `x`), `dx` is that gradient plus `%r`: the
    residual stream's gradient added in the same pass (`-xf-fuse-epilogues`
    folds an `xf.add` of the two into it).
  }];
  let arguments = (ins Xf_FloatTensor:$dy, Xf_FloatTensor:$x, Xf_FloatTensor:$gamma,
                       Optional<Xf_FloatTensor>:$dresidual, F64Attr:$epsilon);
  let results = (outs Xf_FloatTensor:$dx, Xf_FloatTensor:$dgamma, Xf_FloatTensor:$dbeta);
  let assemblyFormat = [{
    $dy `,` $x `,` $gamma (`plus` $dresidual^ `:` type($dresidual))? `epsilon` `=` $epsilon
    attr-dict `:` type($x) `,` type($gamma) `` custom<GradientType>(ref(type($x)), type($dy))
  }];
  let hasVerifier = 1;
}

def Xf_RmsNormGradOp : Xf_Op<"rmsnorm_grad",
    [AllTypesMatch<["x", "dx"]>, AllTypesMatch<["gamma", "dgamma"]>]> {
  let summary = "VJP of xf.rmsnorm: (dx, dgamma); rstd recomputed from x";
  let description = [{
    `dy` as in xf.layernorm_grad: the shape of `x`, the type of the result;
    `plus %r` as there.
  }];
  let arguments = (ins Xf_FloatTensor:$dy, Xf_FloatTensor:$x, Xf_FloatTensor:$gamma,
                       Optional<Xf_FloatTensor>:$dresidual, F64Attr:$epsilon);
  let results = (outs Xf_FloatTensor:$dx, Xf_FloatTensor:$dgamma);
  let assemblyFormat = [{
    $dy `,` $x `,` $gamma (`plus` $dresidual^ `:` type($dresidual))? `epsilon` `=` $epsilon
    attr-dict `:` type($x) `,` type($gamma) `` custom<GradientType>(ref(type($x)), type($dy))
  }];
  let hasVerifier = 1;
}

def Xf_AttentionGradOp : Xf_Op<"attention_grad",
    [AllTypesMatch<["dout", "q", "out", "dq"]>, AllTypesMatch<["k", "v", "dk", "dv"]>]> {
  let summary = "VJP of xf.attention: (dq, dk, dv); probabilities recomputed from q, k";
  let description = [{
    `out` is the forward result. dk and dv sum over the query heads that share
    a kv head.
  }];
  let arguments = (ins Xf_FloatTensor:$dout, Xf_FloatTensor:$q, Xf_FloatTensor:$k,
                       Xf_FloatTensor:$v, Xf_FloatTensor:$out, UnitAttr:$causal, F64Attr:$scale);
  let results = (outs Xf_FloatTensor:$dq, Xf_FloatTensor:$dk, Xf_FloatTensor:$dv);
  let assemblyFormat = [{
    $dout `,` $q `,` $k `,` $v `,` $out (`causal` $causal^)? `scale` `=` $scale attr-dict
    `:` type($q) `,` type($k)
  }];
}

def Xf_PackedAttentionGradOp : Xf_Op<"packed_attention_grad",
    [AllTypesMatch<["qkv", "dqkv"]>, AllTypesMatch<["dout", "out"]>]> {
  let summary = "VJP of xf.packed_attention: dq, dk, dv packed like q, k, v";
  let description = [{
    `out` is the forward result; `dqkv` holds xf.attention_grad's dq, dk and
    dv in the slots of `qkv`.
  }];
  let arguments = (ins Xf_FloatTensor:$dout, Xf_FloatTensor:$qkv, Xf_FloatTensor:$out,
                       UnitAttr:$causal, F64Attr:$scale);
  let results = (outs Xf_FloatTensor:$dqkv);
  let assemblyFormat = [{
    $dout `,` $qkv `,` $out (`causal` $causal^)? `scale` `=` $scale attr-dict
    `:` type($dout) `,` type($qkv)
  }];
  let hasVerifier = 1;
}

def Xf_EmbeddingGradOp : Xf_Op<"embedding_grad"> {
  let summary = "VJP of xf.embedding for the table: scatter-add of dy rows by id";
  let arguments = (ins Xf_FloatTensor:$dy, Xf_IdTensor:$ids);
  let results = (outs Xf_FloatTensor:$dtable);
  let assemblyFormat = "$dy `,` $ids attr-dict `:` type($dy) `,` type($ids) `->` type($dtable)";
  let hasVerifier = 1;
}

def Xf_CrossEntropyGradOp : Xf_Op<"cross_entropy_grad", [AllTypesMatch<["logits", "dlogits"]>]> {
  let summary = "VJP of xf.cross_entropy: dloss / count * (softmax - onehot)";
  let arguments = (ins Xf_Scalar:$dloss, Xf_FloatTensor:$logits, Xf_IdTensor:$targets,
                       Optional<Xf_FloatTensor>:$mask, I64Attr:$ignore_index,
                       OptionalAttr<I64Attr>:$classes);
  let results = (outs Xf_FloatTensor:$dlogits);
  let assemblyFormat = [{
    $dloss `,` $logits `,` $targets (`mask` $mask^)? `ignore_index` `=` $ignore_index
    (`classes` `=` $classes^)? attr-dict
    `:` type($dloss) `,` type($logits) `,` type($targets) (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
}

def Xf_LinearCrossEntropyGradOp : Xf_Op<"linear_cross_entropy_grad",
    [AllTypesMatch<["x", "dx"]>, AllTypesMatch<["weight", "dweight"]>]> {
  let summary = "VJP of xf.linear_cross_entropy: (dx, dweight), logits recomputed in chunks";
  let arguments = (ins Xf_Scalar:$dloss, Xf_FloatTensor:$x, Xf_FloatTensor:$weight,
                       Xf_IdTensor:$targets, Optional<Xf_FloatTensor>:$mask,
                       UnitAttr:$vocab_major, I64Attr:$ignore_index,
                       OptionalAttr<I64Attr>:$classes);
  let results = (outs Xf_FloatTensor:$dx, Xf_FloatTensor:$dweight);
  let assemblyFormat = [{
    $dloss `,` $x `,` $weight `,` $targets (`mask` $mask^)? (`vocab_major` $vocab_major^)?
    `ignore_index` `=` $ignore_index (`classes` `=` $classes^)? attr-dict
    `:` type($dloss) `,` type($x) `,` type($weight) `,` type($targets) (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// GEMM epilogues (-xf-fuse-epilogues, after partitioning)
//===----------------------------------------------------------------------===//
//
// A matmul and the elementwise op that reads its result, as one kernel call:
// the product is never stored on its own (cuBLASLt's epilogues on the GPU;
// one pass over the tile on the CPU). The product is computed in f32 and
// each result rounded once into its type. They exist on the rank-local step
// only and split nothing.

def Xf_MatmulBiasOp : Xf_Op<"matmul_bias"> {
  let summary = "xf.matmul then xf.bias_add of its result";
  let description = [{
    ```mlir
    %y = xf.matmul_bias "bsh,ho->bso" %x, %w, %b : tensor<4x64x128xbf16>, tensor<128x384xbf16>, tensor<384xbf16> -> tensor<4x64x384xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$equation, Xf_FloatTensor:$lhs, Xf_FloatTensor:$rhs,
                       Xf_FloatTensor:$bias);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = [{
    $equation $lhs `,` $rhs `,` $bias attr-dict `:` type($lhs) `,` type($rhs) `,` type($bias) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Xf_MatmulBiasGeluOp : Xf_Op<"matmul_bias_gelu"> {
  let summary = "xf.matmul, xf.bias_add, xf.gelu; also returns the pre-activation";
  let description = [{
    `pre = lhs @ rhs + bias`, `result = gelu(pre)` (tanh approximation); the
    backward's xf.gelu_grad reads `pre`.

    ```mlir
    %y, %pre = xf.matmul_bias_gelu "bsh,ho->bso" %x, %w, %b : tensor<4x64x128xbf16>, tensor<128x512xbf16>, tensor<512xbf16> -> tensor<4x64x512xbf16>, tensor<4x64x512xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$equation, Xf_FloatTensor:$lhs, Xf_FloatTensor:$rhs,
                       Xf_FloatTensor:$bias);
  let results = (outs Xf_FloatTensor:$result, Xf_FloatTensor:$pre);
  let assemblyFormat = [{
    $equation $lhs `,` $rhs `,` $bias attr-dict `:` type($lhs) `,` type($rhs) `,` type($bias) `->` type($result) `,` type($pre)
  }];
  let hasVerifier = 1;
}

def Xf_MatmulDGeluOp : Xf_Op<"matmul_dgelu"> {
  let summary = "xf.matmul then xf.gelu_grad with its result as the incoming gradient";
  let description = [{
    `result = (lhs @ rhs) * gelu'(pre)`: the GEMM that forms the gradient of
    a GELU's output, with the GELU's backward applied to it.

    ```mlir
    %dpre = xf.matmul_dgelu "bso,ho->bsh" %dy, %w, %pre : tensor<4x64x128xbf16>, tensor<512x128xbf16>, tensor<4x64x512xbf16> -> tensor<4x64x512xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$equation, Xf_FloatTensor:$lhs, Xf_FloatTensor:$rhs,
                       Xf_FloatTensor:$pre);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = [{
    $equation $lhs `,` $rhs `,` $pre attr-dict `:` type($lhs) `,` type($rhs) `,` type($pre) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Xf_MatmulBGradOp : Xf_Op<"matmul_bgrad"> {
  let summary = "xf.matmul and the sums of rhs over the contracted dimensions (a bias gradient)";
  let description = [{
    A weight gradient `dW = x^T dy` and, in the same pass over `dy`, the
    gradient of the bias added to `dy`'s forward value: `dbias` sums `rhs`
    over its contracted dimensions (shape: `rhs`'s other dimensions, in
    order).

    ```mlir
    %dw, %db = xf.matmul_bgrad "bsh,bso->ho" %x, %dy : tensor<4x64x128xbf16>, tensor<4x64x384xbf16> -> tensor<128x384xf32>, tensor<384xf32>
    ```
  }];
  let arguments = (ins StrAttr:$equation, Xf_FloatTensor:$lhs, Xf_FloatTensor:$rhs);
  let results = (outs Xf_FloatTensor:$result, Xf_FloatTensor:$dbias);
  let assemblyFormat = [{
    $equation $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result) `,` type($dbias)
  }];
  let hasVerifier = 1;
}
