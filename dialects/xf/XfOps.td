//===- XfOps.td - xf operations ----------------------------*- tablegen -*-===//
//
// Every op works on statically shaped ranked tensors. Float ops accept f16,
// bf16, f32 and f64 (f64 is for gradient checks); token ids are i32. Each op
// has a verifier that names the offending operand and dimension.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_XF_OPS_TD
#define SHARDC_XF_OPS_TD

include "dialects/xf/XfBase.td"
include "dialects/xf/XfInterfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

class Xf_Op<string mnemonic, list<Trait> traits = []>
    : Op<Xf_Dialect, mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<Xf_ShardingRuleOpInterface>])>;

/// A differentiable op: its VJP rule is in XfVJP.cpp.
class Xf_DiffOp<string mnemonic, list<Trait> traits = []>
    : Xf_Op<mnemonic, !listconcat(traits, [DeclareOpInterfaceMethods<Xf_VJPOpInterface>])>;

def Xf_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32, F64]>;
def Xf_IdTensor : StaticShapeTensorOf<[I32]>;
def Xf_Scalar : 0DTensorOf<[F32, F64]>;

//===----------------------------------------------------------------------===//
// Embedding and index ops
//===----------------------------------------------------------------------===//

def Xf_EmbeddingOp : Xf_DiffOp<"embedding"> {
  let summary = "row lookup in an embedding table";
  let description = [{
    `result[i..., :] = table[ids[i...], :]`. The table is `[vocab, hidden]`; the
    result has the shape of `ids` followed by `hidden`. An id outside
    `[0, vocab)` is a runtime error.

    ```mlir
    %x = xf.embedding %wte, %tokens : tensor<50304x768xf32>, tensor<4x1024xi32> -> tensor<4x1024x768xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$table, Xf_IdTensor:$ids);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$table `,` $ids attr-dict `:` type($table) `,` type($ids) `->` type($result)";
  let hasVerifier = 1;
}

def Xf_IotaOp : Xf_DiffOp<"iota"> {
  let summary = "indices along one dimension (position ids)";
  let description = [{
    `result[i_0, ..., i_n] = i_dim`. Used for position ids.

    ```mlir
    %pos = xf.iota dim = 1 : tensor<4x1024xi32>
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs Xf_IdTensor:$result);
  let assemblyFormat = "`dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and elementwise ops
//===----------------------------------------------------------------------===//

def Xf_MatmulOp : Xf_DiffOp<"matmul"> {
  let summary = "einsum-style matrix multiplication with batch dimensions";
  let description = [{
    Contracts two tensors as described by an einsum equation of lower-case
    letters, `lhs,rhs->result`. A letter in both operands and the result is a
    batch dimension, a letter in both operands but not the result is
    contracted, a letter in one operand and the result is a free (M or N)
    dimension. A letter may appear once per operand; every letter of an
    operand must reach the result or be contracted. The result element type
    equals the operands', or is f32 for f16/bf16 operands (fp32 accumulation).

    ```mlir
    // x @ W with HF Conv1D layout [in, out]
    %y = xf.matmul "bsh,hk->bsk" %x, %w : tensor<4x64x128xf32>, tensor<128x384xf32> -> tensor<4x64x384xf32>
    // x @ E^T with a tied [vocab, hidden] embedding
    %l = xf.matmul "bsh,vh->bsv" %x, %wte : tensor<4x64x128xf32>, tensor<512x128xf32> -> tensor<4x64x512xf32>
    ```
  }];
  let arguments = (ins StrAttr:$equation, Xf_FloatTensor:$lhs, Xf_FloatTensor:$rhs);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$equation $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def Xf_AddOp : Xf_DiffOp<"add"> {
  let summary = "elementwise addition (residual connections)";
  let description = [{
    One shape. The operands share the result's element type, or one of them
    is a narrower float that the op widens as it reads it (exactly: what
    `xf.cast` to the result's type would give), so that a bf16 branch is
    added to an f32 residual stream without a separate widening cast
    (`-xf-fuse-epilogues` folds such casts):

    ```mlir
    %r = xf.add %x, %y : tensor<4x64x128xf32>
    %s = xf.add %x, %b : tensor<4x64x128xf32>, tensor<4x64x128xbf16> -> tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$lhs, Xf_FloatTensor:$rhs);
  let results = (outs Xf_FloatTensor:$result);
  let hasVerifier = 1;
  let hasCustomAssemblyFormat = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs), [{
    build($_builder, $_state, lhs.getType(), lhs, rhs);
  }]>];
}

def Xf_BiasAddOp : Xf_DiffOp<"bias_add", [AllTypesMatch<["x", "result"]>]> {
  let summary = "adds a bias vector along the last dimension";
  let description = [{
    `result[..., j] = x[..., j] + bias[j]`.

    ```mlir
    %y = xf.bias_add %x, %b : tensor<4x64x384xf32>, tensor<384xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$x, Xf_FloatTensor:$bias);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$x `,` $bias attr-dict `:` type($x) `,` type($bias)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$bias), [{
    build($_builder, $_state, x.getType(), x, bias);
  }]>];
}

def Xf_GeluOp : Xf_DiffOp<"gelu", [SameOperandsAndResultType]> {
  let summary = "GELU, tanh approximation (GPT-2, BERT)";
  let description = [{
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.

    ```mlir
    %y = xf.gelu %x : tensor<4x64x512xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$x);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($result)";
}

def Xf_SwigluOp : Xf_DiffOp<"swiglu", [SameOperandsAndResultType]> {
  let summary = "SwiGLU gate: silu(gate) * up (LLaMA MLP)";
  let description = [{
    ```mlir
    %h = xf.swiglu %gate, %up : tensor<4x64x344xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$gate, Xf_FloatTensor:$up);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

def Xf_SoftmaxOp : Xf_DiffOp<"softmax", [SameOperandsAndResultType]> {
  let summary = "softmax over the last dimension";
  let description = [{
    ```mlir
    %p = xf.softmax %x : tensor<4x8x64x64xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$x);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Xf_LayerNormOp : Xf_DiffOp<"layernorm"> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * gamma + beta` with the biased variance
    of the last dimension (torch.nn.LayerNorm). Computed in f32 (f64 for
    f64); the result has the shape of `x` and may be stored in another float
    type, rounded once from the computed value (an f32 residual stream
    normalized into a bf16 GEMM input, as -xf-mixed-precision makes it). The
    result type is written after `->` only where it differs from `x`'s.

    ```mlir
    %y = xf.layernorm %x, %g, %b epsilon = 1.000000e-05 : tensor<4x64x128xf32>, tensor<128xf32>, tensor<128xf32>
    %h = xf.layernorm %x, %g, %b epsilon = 1.000000e-05 : tensor<4x64x128xf32>, tensor<128xf32>, tensor<128xf32> -> tensor<4x64x128xbf16>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$x, Xf_FloatTensor:$gamma, Xf_FloatTensor:$beta,
                       F64Attr:$epsilon);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $gamma `,` $beta `epsilon` `=` $epsilon attr-dict `:` type($x) `,` type($gamma) `,` type($beta)
    `` custom<StorageType>(ref(type($x)), type($result))
  }];
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$gamma,
                                 "::mlir::Value":$beta, "double":$epsilon), [{
    build($_builder, $_state, x.getType(), x, gamma, beta, $_builder.getF64FloatAttr(epsilon));
  }]>];
}

def Xf_RmsNormOp : Xf_DiffOp<"rmsnorm"> {
  let summary = "RMS normalization over the last dimension (LLaMA)";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * gamma`. As xf.layernorm, the result may
    be stored in another float type than `x` (`-> type`).

    ```mlir
    %y = xf.rmsnorm %x, %g epsilon = 1.000000e-05 : tensor<4x64x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$x, Xf_FloatTensor:$gamma, F64Attr:$epsilon);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $gamma `epsilon` `=` $epsilon attr-dict `:` type($x) `,` type($gamma)
    `` custom<StorageType>(ref(type($x)), type($result))
  }];
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$gamma, "double":$epsilon), [{
    build($_builder, $_state, x.getType(), x, gamma, $_builder.getF64FloatAttr(epsilon));
  }]>];
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Xf_AttentionOp : Xf_DiffOp<"attention", [AllTypesMatch<["q", "result"]>]> {
  let summary = "multi-head scaled dot-product attention with grouped-query heads";
  let description = [{
    Operands use the `[batch, seq, heads, head_dim]` layout, so a reshape of a
    `[batch, seq, heads*head_dim]` projection is free. `k` and `v` have
    `kv_heads` heads, which must divide the query heads; query head `h` reads
    kv head `h / (heads / kv_heads)`. `causal` masks keys after the query
    (GPT, LLaMA); without it attention is bidirectional (BERT). The scores are
    `scale * q.k`; the result has the shape of `q`.

    ```mlir
    %o = xf.attention %q, %k, %v causal scale = 1.250000e-01 : tensor<4x64x8x64xf32>, tensor<4x64x2x64xf32>, tensor<4x64x2x64xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$q, Xf_FloatTensor:$k, Xf_FloatTensor:$v,
                       UnitAttr:$causal, F64Attr:$scale);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`causal` $causal^)? `scale` `=` $scale attr-dict `:` type($q) `,` type($k) `,` type($v)
  }];
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$q, "::mlir::Value":$k, "::mlir::Value":$v,
                                 "bool":$causal, "double":$scale), [{
    build($_builder, $_state, q.getType(), q, k, v,
          causal ? $_builder.getUnitAttr() : ::mlir::UnitAttr(), $_builder.getF64FloatAttr(scale));
  }]>];
}

def Xf_PackedAttentionOp : Xf_DiffOp<"packed_attention"> {
  let summary = "xf.attention reading q, k and v from one packed projection";
  let description = [{
    `qkv` is `[batch, seq, kv_heads, group + 2, head_dim]` (Megatron's grouped
    layout; `[batch, seq, heads, 3, head_dim]` without grouped-query heads):
    slot `j < group` of kv head `g` is query head `g * group + j`, slot
    `group` its key and slot `group + 1` its value. The result is
    `[batch, seq, kv_heads * group, head_dim]` and equals `xf.attention` of
    the three slices. -xf-fuse-qkv builds it so that Q, K and V come out of
    one GEMM and the kernels read them in place. The sequence is never split
    (the keys live in the same tensor as the queries).

    ```mlir
    %o = xf.packed_attention %qkv causal scale = 1.250000e-01 : tensor<4x64x8x3x64xf32> -> tensor<4x64x8x64xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$qkv, UnitAttr:$causal, F64Attr:$scale);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = [{
    $qkv (`causal` $causal^)? `scale` `=` $scale attr-dict `:` type($qkv) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Xf_ConcatOp : Xf_DiffOp<"concat"> {
  let summary = "concatenation along one dimension";
  let description = [{
    The operands agree in rank, element type and every dimension but `dim`;
    the result's `dim` is the sum of theirs.

    ```mlir
    %w = xf.concat %a, %b dim = 2 : tensor<64x4x1x16xf32>, tensor<64x4x2x16xf32> -> tensor<64x4x3x16xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$xs, I64Attr:$dim);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$xs `dim` `=` $dim attr-dict `:` type($xs) `->` type($result)";
  let hasVerifier = 1;
}

def Xf_SplitOp : Xf_Op<"split"> {
  let summary = "consecutive slices along one dimension (the inverse of xf.concat)";
  let description = [{
    Result `i` is the slice of `x` along `dim` that starts after results
    `0..i-1`; the results' sizes in `dim` sum to the operand's. The VJP of
    `xf.concat`.

    ```mlir
    %a, %b = xf.split %w dim = 2 : tensor<64x4x3x16xf32> -> tensor<64x4x1x16xf32>, tensor<64x4x2x16xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$x, I64Attr:$dim);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = "$x `dim` `=` $dim attr-dict `:` type($x) `->` type($results)";
  let hasVerifier = 1;
}

def Xf_RopeOp : Xf_DiffOp<"rope", [SameOperandsAndResultType]> {
  let summary = "rotary position embedding (rotate-half convention)";
  let description = [{
    On `[batch, seq, heads, head_dim]`, for `i < head_dim/2` with
    `f_i = theta^(-2i/head_dim)` and angle `a = s * f_i`:
    `out[i] = x[i] cos a - x[i + d/2] sin a`,
    `out[i + d/2] = x[i + d/2] cos a + x[i] sin a` (GPT-NeoX / HF LLaMA).

    ```mlir
    %qr = xf.rope %q theta = 1.000000e+04 : tensor<4x64x8x64xf32>
    ```

    With `inverse` the rotation is by `-a` (the transpose of the forward
    rotation): the VJP of rope is the inverse rope of the gradient.
  }];
  let arguments = (ins Xf_FloatTensor:$x, F64Attr:$theta, UnitAttr:$inverse);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$x `theta` `=` $theta (`inverse` $inverse^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Xf_DropoutOp : Xf_DiffOp<"dropout", [SameOperandsAndResultType]> {
  let summary = "dropout with a counter-based mask";
  let description = [{
    Zeroes each element with probability `rate` and scales the rest by
    `1/(1-rate)` when training; identity in evaluation. The mask of element
    `i` is a function of (seed, step, `key`, global index of `i`) only, so a
    sharded run drops exactly the elements the unsharded run drops. `key`
    must be unique per dropout op in a function.

    ```mlir
    %y = xf.dropout %x rate = 1.000000e-01 key = 3 : tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$x, F64Attr:$rate, I64Attr:$key);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$x `rate` `=` $rate `key` `=` $key attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape and type ops
//===----------------------------------------------------------------------===//

def Xf_ReshapeOp : Xf_DiffOp<"reshape"> {
  let summary = "row-major reshape with the same number of elements";
  let description = [{
    ```mlir
    %q4 = xf.reshape %q : tensor<4x64x512xf32> -> tensor<4x64x8x64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$x);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def Xf_TransposeOp : Xf_DiffOp<"transpose"> {
  let summary = "permutes dimensions";
  let description = [{
    Result dimension `i` is operand dimension `permutation[i]`.

    ```mlir
    %t = xf.transpose %x [0, 2, 1, 3] : tensor<4x64x8x32xf32> -> tensor<4x8x64x32xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$x, DenseI64ArrayAttr:$permutation);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$x $permutation attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def Xf_CastOp : Xf_DiffOp<"cast"> {
  let summary = "converts between float element types (round to nearest even)";
  let description = [{
    ```mlir
    %h = xf.cast %x : tensor<4x64x128xf32> -> tensor<4x64x128xbf16>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$x);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Xf_CrossEntropyOp : Xf_DiffOp<"cross_entropy"> {
  let summary = "mean token cross-entropy of logits against target ids";
  let description = [{
    `logits` is `[tokens..., vocab]`, `targets` is `[tokens...]`. The loss is
    the mean of `logsumexp(logits) - logits[target]` over the counted tokens:
    a token counts if its target is not `ignore_index` and, when `mask` is
    given (same shape as `targets`, float), its mask is non-zero. The result
    is a scalar in f32 (f64 for f64 logits); softmax statistics are kept in
    fp32 or wider whatever the logits' type.

    `classes`, when given, is the model's true vocabulary size: the logit
    columns at index `classes` and above are padding (a vocabulary padded to
    a multiple of 64 or 128 for the GEMMs) that never receives probability
    mass — they are left out of the log-sum-exp and get a zero gradient — and
    every counted target must be below it. Without it every column is a
    class.

    ```mlir
    %loss = xf.cross_entropy %logits, %targets ignore_index = -100 : tensor<4x64x512xf32>, tensor<4x64xi32> -> tensor<f32>
    %mlm = xf.cross_entropy %logits, %targets mask %m ignore_index = -100 : tensor<4x64x512xf32>, tensor<4x64xi32>, tensor<4x64xf32> -> tensor<f32>
    %padded = xf.cross_entropy %logits, %targets ignore_index = -100 classes = 500 : tensor<4x64x512xf32>, tensor<4x64xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$logits, Xf_IdTensor:$targets,
                       Optional<Xf_FloatTensor>:$mask, I64Attr:$ignore_index,
                       OptionalAttr<I64Attr>:$classes);
  let results = (outs Xf_Scalar:$loss);
  let assemblyFormat = [{
    $logits `,` $targets (`mask` $mask^)? `ignore_index` `=` $ignore_index
    (`classes` `=` $classes^)? attr-dict
    `:` type($logits) `,` type($targets) (`,` type($mask)^)? `->` type($loss)
  }];
  let hasVerifier = 1;
}

def Xf_LinearCrossEntropyOp : Xf_DiffOp<"linear_cross_entropy"> {
  let summary = "fused logit GEMM and cross-entropy";
  let description = [{
    Equal to `cross_entropy(x @ W, targets)` without materializing the
    `tokens x vocab` logits. `x` is `[tokens..., hidden]`; `weight` is
    `[vocab, hidden]` when `vocab_major` is set (a tied embedding) and
    `[hidden, vocab]` otherwise. `mask`, `ignore_index` and `classes` are as
    in `xf.cross_entropy` (with `classes`, only the weight's first `classes`
    vocabulary rows/columns are multiplied).

    ```mlir
    %loss = xf.linear_cross_entropy %x, %wte, %targets vocab_major ignore_index = -100 : tensor<4x64x128xf32>, tensor<512x128xf32>, tensor<4x64xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$x, Xf_FloatTensor:$weight, Xf_IdTensor:$targets,
                       Optional<Xf_FloatTensor>:$mask, UnitAttr:$vocab_major,
                       I64Attr:$ignore_index, OptionalAttr<I64Attr>:$classes);
  let results = (outs Xf_Scalar:$loss);
  let assemblyFormat = [{
    $x `,` $weight `,` $targets (`mask` $mask^)? (`vocab_major` $vocab_major^)?
    `ignore_index` `=` $ignore_index (`classes` `=` $classes^)? attr-dict
    `:` type($x) `,` type($weight) `,` type($targets) (`,` type($mask)^)? `->` type($loss)
  }];
  let hasVerifier = 1;
}

include "dialects/xf/XfGradOps.td"
include "dialects/xf/XfOptimizerOps.td"

#endif // SHARDC_XF_OPS_TD
