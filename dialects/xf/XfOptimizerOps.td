//===- XfOptimizerOps.td - xf optimizer ops ----------------*- tablegen -*-===//
//
// Ops that -xf-adamw emits. Optimizer state (Adam moments, the update counter,
// the loss scale) is explicit function arguments and results, so sharding can
// split it like any other value (ZeRO). Scalars are 0-d tensors: f32 for
// rates and norms, i32 for counters. Included from XfOps.td.
//
//===----------------------------------------------------------------------===//

def Xf_Counter : 0DTensorOf<[I32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI32Type())">;
def Xf_F32Scalar : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;

def Xf_SumSquaresOp : Xf_Op<"sum_squares"> {
  let summary = "sum of the squares of all elements, as an f32 scalar (accumulated in double)";
  let description = [{
    ```mlir
    %s = xf.sum_squares %grad : tensor<768x768xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$x);
  let results = (outs Xf_F32Scalar:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let builders = [OpBuilder<(ins "::mlir::Value":$x), [{
    build($_builder, $_state, ::mlir::RankedTensorType::get({}, $_builder.getF32Type()), x);
  }]>];
}

def Xf_ClipGradNormOp : Xf_Op<"clip_grad_norm"> {
  let summary = "global gradient norm, clipping coefficient and overflow flag";
  let description = [{
    From the total sum of squares of the (loss-scaled) gradients:
    `norm = sqrt(sumsq) / loss_scale` (loss_scale 1 when absent),
    `coef = min(1, max_norm / (norm + 1e-6))` (1 when max_norm is 0), and
    `found_inf = 1` if sumsq is not finite (an inf or NaN in any gradient),
    else 0. The gradients are to be multiplied by `grad_scale = coef /
    loss_scale` (0 on overflow). This is torch.nn.utils.clip_grad_norm_.

    ```mlir
    %norm, %gscale, %inf = xf.clip_grad_norm %sumsq loss_scale %s max_norm = 1.000000e+00
    ```
  }];
  let arguments = (ins Xf_F32Scalar:$sumsq, Optional<Xf_F32Scalar>:$loss_scale, F64Attr:$max_norm);
  let results = (outs Xf_F32Scalar:$norm, Xf_F32Scalar:$grad_scale, Xf_F32Scalar:$found_inf);
  let assemblyFormat = "$sumsq (`loss_scale` $loss_scale^)? `max_norm` `=` $max_norm attr-dict";
}

def Xf_LrScheduleOp : Xf_Op<"lr_schedule"> {
  let summary = "learning rate: linear warm-up, then single-cycle cosine decay to a floor";
  let description = [{
    For `step` completed updates (0-based): `lr * (step + 1) / warmup` while
    `step < warmup`, then `min_lr + (lr - min_lr) * (1 + cos(pi r)) / 2` with
    `r = (step - warmup) / (decay_steps - warmup)` clamped to [0, 1].

    ```mlir
    %lr = xf.lr_schedule %step lr = 1.500000e-04 min_lr = 1.000000e-05 warmup = 100 decay_steps = 1000
    ```
  }];
  let arguments = (ins Xf_Counter:$step, F64Attr:$lr, F64Attr:$min_lr, I64Attr:$warmup,
                       I64Attr:$decay_steps);
  let results = (outs Xf_F32Scalar:$result);
  let assemblyFormat = [{
    $step `lr` `=` $lr `min_lr` `=` $min_lr `warmup` `=` $warmup `decay_steps` `=` $decay_steps attr-dict
  }];
  let hasVerifier = 1;
}

def Xf_AdamWOp : Xf_Op<"adamw", [AllTypesMatch<["param", "grad", "m", "v",
                                                "new_param", "new_m", "new_v"]>]> {
  let summary = "one AdamW update of one parameter (torch.optim.AdamW semantics)";
  let description = [{
    `g = grad_scale * grad`; decoupled weight decay `p *= 1 - lr * weight_decay`;
    `m = beta1 m + (1 - beta1) g`, `v = beta2 v + (1 - beta2) g^2`;
    `p -= lr * m_hat / (sqrt(v_hat) + epsilon)` with bias corrections for
    update number `step + 1`. When `skip` is given and non-zero the operands
    are returned unchanged (fp16 overflow). Elementwise, so it shards like its
    operands (ZeRO-1 splits `m` and `v`).

    ```mlir
    %p2, %m2, %v2 = xf.adamw %p, %g, %m, %v, %lr, %gscale, %step skip %inf beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<768xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$param, Xf_FloatTensor:$grad, Xf_FloatTensor:$m,
                       Xf_FloatTensor:$v, Xf_F32Scalar:$lr, Xf_F32Scalar:$grad_scale,
                       Xf_Counter:$step, Optional<Xf_F32Scalar>:$skip,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$epsilon, F64Attr:$weight_decay);
  let results = (outs Xf_FloatTensor:$new_param, Xf_FloatTensor:$new_m, Xf_FloatTensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `,` $lr `,` $grad_scale `,` $step (`skip` $skip^)?
    `beta1` `=` $beta1 `beta2` `=` $beta2 `epsilon` `=` $epsilon `weight_decay` `=` $weight_decay
    attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

def Xf_CountStepOp : Xf_Op<"count_step"> {
  let summary = "advances the update counter unless the step was skipped";
  let description = [{
    `step + 1`, or `step` when `skip` is given and non-zero.

    ```mlir
    %next = xf.count_step %step skip %inf
    ```
  }];
  let arguments = (ins Xf_Counter:$step, Optional<Xf_F32Scalar>:$skip);
  let results = (outs Xf_Counter:$result);
  let assemblyFormat = "$step (`skip` $skip^)? attr-dict";
  let builders = [OpBuilder<(ins "::mlir::Value":$step, "::mlir::Value":$skip), [{
    build($_builder, $_state, step.getType(), step, skip);
  }]>];
}

def Xf_LossScaleUpdateOp : Xf_Op<"loss_scale_update"> {
  let summary = "dynamic loss scaling: halve on overflow, double after a clean window";
  let description = [{
    On `found_inf != 0`: `scale / factor` and `good = 0`. Otherwise `good + 1`,
    and when that reaches `window` the scale is multiplied by `factor` and
    `good` resets to 0 (apex/Megatron DynamicGradScaler with hysteresis 1).
    The scale never drops below `min_scale`.

    ```mlir
    %s2, %g2 = xf.loss_scale_update %s, %good, %inf window = 2000 factor = 2.000000e+00 min_scale = 1.000000e+00
    ```
  }];
  let arguments = (ins Xf_F32Scalar:$scale, Xf_Counter:$good, Xf_F32Scalar:$found_inf,
                       I64Attr:$window, F64Attr:$factor, F64Attr:$min_scale);
  let results = (outs Xf_F32Scalar:$new_scale, Xf_Counter:$new_good);
  let assemblyFormat = [{
    $scale `,` $good `,` $found_inf `window` `=` $window `factor` `=` $factor `min_scale` `=` $min_scale attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Multi-tensor optimizer ops (-xf-fuse-optimizer, after partitioning)
//===----------------------------------------------------------------------===//

def Xf_MultiSumSquaresOp : Xf_Op<"multi_sum_squares"> {
  let summary = "sum of the squares of every element of every operand, as one f32 scalar";
  let description = [{
    The sums of `xf.sum_squares` over all operands, accumulated in double and
    rounded once. -xf-fuse-optimizer builds it from the gradient norm's
    per-parameter sums on the rank-local tensors of a partitioned step; it
    has no sharding of its own.

    ```mlir
    %s = xf.multi_sum_squares %g0, %g1 : tensor<768x768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Variadic<Xf_FloatTensor>:$xs);
  let results = (outs Xf_F32Scalar:$result);
  let assemblyFormat = "$xs attr-dict `:` type($xs)";
  let hasVerifier = 1;
}

def Xf_MultiAdamWOp : Xf_Op<"multi_adamw", [AttrSizedOperandSegments,
                                             AttrSizedResultSegments]> {
  let summary = "AdamW over many parameters in one op, writing their bf16/f16 copies";
  let description = [{
    `xf.adamw` on each (param, grad, m, v) of the four lists (one length,
    each tensor's four of one type), with the same step scalars; parameter
    `i` decays by `weight_decay` where `decay[i]` is 1, not at all where it
    is 0. For each parameter index in `copies` (increasing) one more result
    holds the new parameter rounded to bf16/f16, as `xf.cast` of it would
    (the weight copy GEMMs read; on a skipped step the unchanged parameter
    rounded). A gradient may be a narrower float than its parameter (bf16/f16
    for f32: a gradient reduced in bf16, widened as it is read; its types are
    then listed after `grads`). -xf-fuse-optimizer builds it from the
    per-parameter updates of a partitioned step.

    ```mlir
    %p:2, %m:2, %v:2, %c = xf.multi_adamw params(%p0, %p1) grads(%g0, %g1) m(%m0, %m1) v(%v0, %v1) lr %lr grad_scale %gs step %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 1.000000e-01 decay = [1, 0] copies = [0] : tensor<64x64xf32>, tensor<64xf32> -> tensor<64x64xbf16>
    ```
  }];
  let arguments = (ins Variadic<Xf_FloatTensor>:$params, Variadic<Xf_FloatTensor>:$grads,
                       Variadic<Xf_FloatTensor>:$m, Variadic<Xf_FloatTensor>:$v,
                       Xf_F32Scalar:$lr, Xf_F32Scalar:$grad_scale, Xf_Counter:$step,
                       Optional<Xf_F32Scalar>:$skip,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$epsilon, F64Attr:$weight_decay,
                       DenseI64ArrayAttr:$decay, DenseI64ArrayAttr:$copies);
  let results = (outs Variadic<Xf_FloatTensor>:$new_params, Variadic<Xf_FloatTensor>:$new_m,
                      Variadic<Xf_FloatTensor>:$new_v, Variadic<Xf_FloatTensor>:$new_copies);
  let assemblyFormat = [{
    `params` `(` $params `)` `grads` `(` $grads `)` `m` `(` $m `)` `v` `(` $v `)`
    `lr` $lr `grad_scale` $grad_scale `step` $step (`skip` $skip^)?
    `beta1` `=` $beta1 `beta2` `=` $beta2 `epsilon` `=` $epsilon `weight_decay` `=` $weight_decay
    `decay` `=` $decay `copies` `=` $copies attr-dict `:` type($params)
    custom<ParamTypes>(ref(type($params)), type($grads), type($m), type($v), type($new_params),
                       type($new_m), type($new_v))
    (`->` type($new_copies)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Activation offload
//===----------------------------------------------------------------------===//

def Xf_OffloadOp : Xf_Op<"offload", [AllTypesMatch<["input", "result"]>]> {
  let summary = "a copy of a kept activation in host memory";
  let description = [{
    The value unchanged, held in the host arena (-xf-offload-activations
    inserts it after a forward value's last forward use; -xf-plan-memory
    places its result in the `host` arena, -xf-lower-to-rt turns it into an
    asynchronous copy on the copy stream). Only `xf.reload` reads it.

    ```mlir
    %h = xf.offload %x : tensor<2x64x128xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Xf_ReloadOp : Xf_Op<"reload", [AllTypesMatch<["input", "result"]>]> {
  let summary = "an offloaded activation copied back for the backward";
  let description = [{
    The value of an `xf.offload` copied back into the workspace, placed one
    layer ahead of the backward ops that read it (the prefetch).

    ```mlir
    %x2 = xf.reload %h : tensor<2x64x128xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pipeline parallelism
//===----------------------------------------------------------------------===//

def Xf_TransferOp : Xf_Op<"transfer", [AllTypesMatch<["input", "result"]>]> {
  let summary = "moves a value from one pipeline stage to another";
  let description = [{
    Point-to-point send/receive between two stages of a pipeline (-xf-pipeline):
    the ranks whose coordinate on the pipeline axis `grid_axes` is `from` send
    their local `input`, the ranks at `to` with the same other coordinates
    receive it as `result`; no other rank takes part. The op exists only in
    a partitioned step (one with `xf.grid`) whose ops carry `xf.stage`.

    ```mlir
    %y = xf.transfer %x from 0 to 1 grid_axes = [0] : tensor<2x64x128xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input, I64Attr:$from, I64Attr:$to,
                       DenseI16ArrayAttr:$grid_axes);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input `from` $from `to` $to `grid_axes` `=` $grid_axes attr-dict `:` type($input)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$input, "int64_t":$from, "int64_t":$to,
                                 "int16_t":$axis), [{
    build($_builder, $_state, input.getType(), input, from, to,
          $_builder.getDenseI16ArrayAttr({axis}));
  }]>];
}

