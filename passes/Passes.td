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

def XfFuseQKV : Pass<"xf-fuse-qkv", "mlir::func::FuncOp"> {
  let summary = "one GEMM for the Q, K and V projections of an attention";
  let description = [{
    Runs on the model's forward, before autodiff (which then derives one
    GEMM for dx and one for dW of the three projections as well). Where
    `xf.attention`'s q, k and v are each `reshape(bias_add?(matmul(x, W)))`
    of the same `x`, with `[in, out]` weights, one equation, all three biased
    or none, and no other reader, the three become one GEMM against the
    weights concatenated in Megatron's grouped layout
    `[in, kv_heads, group + 2, head_dim]` (for each kv head its `group`
    query heads, its key and its value; `group` = heads / kv_heads) and one
    `xf.packed_attention` that reads q, k and v in place. Parameters keep
    their own names and shapes: the concatenation is of the weights (and of
    their low-precision copies), per step, and its VJP (`xf.split`) hands
    each weight its gradient. A tensor-parallel split of the heads splits
    the kv heads of the packed layout, so each rank's block holds whole
    (query, key, value) groups.

    Left apart: rotary embeddings between the projection and attention
    (LLaMA), and, with `heads-divisible-by=n`, attentions whose kv heads `n`
    does not divide (their query rows may still be split over that axis,
    which the packed form cannot do).

    ```mlir
    %q = xf.matmul "bsh,ho->bso" %x, %wq ...   // and %k, %v; bias_add, reshape
    %o = xf.attention %q4, %k4, %v4 causal scale = 2.500000e-01 : ...
    // becomes
    %w = xf.concat %wq4, %wk4, %wv4 dim = 2 : ... -> tensor<64x4x3x16xf32>
    %qkv = xf.matmul "bsh,ho->bso" %x, %wflat : tensor<4x32x64xf32>, tensor<64x192xf32> -> tensor<4x32x192xf32>
    %o = xf.packed_attention %qkv5 causal scale = 2.500000e-01 : tensor<4x32x4x3x16xf32> -> tensor<4x32x4x16xf32>
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", "\"forward\"", "the model function; empty: every function">,
    Option<"headsDivisibleBy", "heads-divisible-by", "int64_t", "1",
           "fuse only attentions whose kv heads this divides">,
  ];
  let dependentDialects = ["::shardc::xf::XfDialect"];
}

def XfFuseOptimizer : Pass<"xf-fuse-optimizer", "mlir::func::FuncOp"> {
  let summary = "one multi-tensor optimizer call: the gradient norm's sums and the AdamW updates";
  let description = [{
    Runs on the partitioned (rank-local) training step, before scheduling and
    memory planning, and turns the optimizer's hundreds of small ops into a
    few:

    - the global gradient norm's sum of squares: the tree of `xf.add`,
      `xf.scale`, `shard.all_reduce` (sum) and `xf.transfer` ops over the
      per-parameter `xf.sum_squares` becomes one `xf.multi_sum_squares` per
      (stage, reduction axes) and one scalar all-reduce per set of axes (the
      sum is linear: every leaf's path is a sum over some mesh axes times a
      coefficient, and leaves with the same path are summed first);
    - the per-parameter `xf.adamw` ops that share their step scalars become
      one `xf.multi_adamw` per stage, which also writes the bf16/f16 weight
      copies (the `xf.cast` of each new master it replaces). Ops between
      the first and the last update that read an update's result (a ZeRO
      gather of the new weights) move after it.

    The arithmetic is unchanged but for the summation order of the norm
    (accumulated in double, rounded once).

    ```mlir
    %s0 = xf.sum_squares %g0 : tensor<64x64xf32>
    %s1 = xf.sum_squares %g1 : tensor<64xf32>
    %s = xf.add %s0, %s1 : tensor<f32>
    %n, %gs, %inf = xf.clip_grad_norm %s max_norm = 1.000000e+00
    %p0n, %m0n, %v0n = xf.adamw %p0, %g0, %m0, %v0, %lr, %gs, %step ... weight_decay = 1.000000e-01 : tensor<64x64xf32>
    %p1n, %m1n, %v1n = xf.adamw %p1, %g1, %m1, %v1, %lr, %gs, %step ... weight_decay = 0.000000e+00 : tensor<64xf32>
    %c0 = xf.cast %p0n : tensor<64x64xf32> -> tensor<64x64xbf16>
    // becomes
    %s = xf.multi_sum_squares %g0, %g1 : tensor<64x64xf32>, tensor<64xf32>
    %n, %gs, %inf = xf.clip_grad_norm %s max_norm = 1.000000e+00
    %p:2, %m:2, %v:2, %c0 = xf.multi_adamw params(%p0, %p1) grads(%g0, %g1) m(%m0, %m1) v(%v0, %v1) lr %lr grad_scale %gs step %step ... weight_decay = 1.000000e-01 decay = [1, 0] copies = [0] : tensor<64x64xf32>, tensor<64xf32> -> tensor<64x64xbf16>
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the step; empty: every function">,
  ];
  let dependentDialects = ["::shardc::xf::XfDialect", "::mlir::shard::ShardDialect"];
}

def XfFuseEpilogues : Pass<"xf-fuse-epilogues", "mlir::func::FuncOp"> {
  let summary = "GEMM epilogues chosen at compile time: bias, bias + GELU, dGELU, bias gradient";
  let description = [{
    Runs on the (partitioned) rank-local step and its eval function. A GEMM
    whose one reader is an elementwise op becomes one op with the epilogue,
    which the CUDA backend runs as one cuBLASLt call (Bias, BiasGeluAux,
    DGelu, BGrad epilogues) and the CPU in one pass; the product is rounded
    once, after the epilogue:

    - `bias_add(matmul(x, w), b)` -> `xf.matmul_bias`; with a `gelu` of the
      sum -> `xf.matmul_bias_gelu`, whose second result is the
      pre-activation (what the backward's `gelu_grad` reads);
    - `gelu_grad(matmul(dy, w), pre)` -> `xf.matmul_dgelu`;
    - `matmul(x, dy)` and `reduce_sum(dy)` over the dims the matmul
      contracts -> `xf.matmul_bgrad` (the weight and bias gradients in one
      pass over `dy`);
    - a widening `cast` that is a bf16/f16 matmul's one reader (a weight
      gradient going to its f32 master) -> the matmul stores f32; a
      reduce_sum's widening folds into the fused bias gradient;
    - `add(x, cast(y))` where the cast widens bf16/f16 `y` to `x`'s type ->
      `add(x, y)` with mixed operands (the add widens `y` exactly as the cast
      did): the bf16 branch joins the f32 residual stream without a widened
      copy;
    - `add(r, dx)` where `dx` is a `layernorm_grad` / `rmsnorm_grad` input
      gradient read only by the add -> the norm's gradient with `plus r`:
      the residual stream's gradient is added as `dx` is written.

    A collective between a GEMM and its epilogue keeps them apart.

    ```mlir
    %y = xf.matmul "bsh,ho->bso" %x, %w : tensor<2x4x8xbf16>, tensor<8x16xbf16> -> tensor<2x4x16xbf16>
    %z = xf.bias_add %y, %b : tensor<2x4x16xbf16>, tensor<16xbf16>
    %a = xf.gelu %z : tensor<2x4x16xbf16>
    // becomes
    %a, %z = xf.matmul_bias_gelu "bsh,ho->bso" %x, %w, %b : tensor<2x4x8xbf16>, tensor<8x16xbf16>, tensor<16xbf16> -> tensor<2x4x16xbf16>, tensor<2x4x16xbf16>
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", "\"\"", "the function; empty: every function">,
  ];
  let dependentDialects = ["::shardc::xf::XfDialect"];
}

//===----------------------------------------------------------------------===//
// Training step synthesis (passes/train)
//===----------------------------------------------------------------------===//

def XfMixedPrecision : Pass<"xf-mixed-precision", "mlir::func::FuncOp"> {
  let summary = "runs a model in bf16 or fp16 with f32 master weights (autocast)";
  let description = [{
    In the model function, every f32 `xf.matmul`, `xf.attention` and
    `xf.linear_cross_entropy` gets its operands cast to the compute type
    (GEMMs accumulate in f32 inside the kernel). With `activations=compute`
    (the default) the values between those ops stay in the compute type too:

    - matmul and attention results are stored in the compute type, except
      logits that reach a cross-entropy (they stay f32 for the loss);
    - an elementwise op or view whose inputs are in the compute type (bias
      add, GELU, SwiGLU, softmax, rope, dropout, scale, reshape, transpose,
      an add of two such values) runs on it; an f32 operand it also reads (a
      bias) is cast;
    - the residual stream stays f32: an add of a compute-type value and an
      f32 value (the residual add) reads the former widened to f32, and so
      does every other op (norms' inputs, losses, reductions, the return);
    - a layernorm/rmsnorm whose every reader takes its result in the
      compute type stores it so (computed in f32, rounded once).

    This is PyTorch autocast's policy (linear/SDPA outputs in bf16, GELU on
    bf16, layer_norm and losses in f32, the residual promoted to f32).
    `residual=compute` stores the residual stream in the compute type as well
    (Megatron-LM's default, without fp32_residual_connection): the first add
    that meets a compute-type branch narrows the stream, and norms read and
    write the compute type (statistics in f32 in the kernel; their scale and
    shift cast, so they get weight copies too). Losses stay f32. With
    `activations=f32` only the GEMM/attention operands are cast, matmuls keep
    an f32 result and attention's is cast back. Parameters stay f32: they are
    the master weights, cast once per use site (-xf-adamw then turns those
    casts into weight copies). Run before -xf-autodiff, whose VJP rules give
    every gradient the type of its value. Each value is cast once, right
    after its definition, however many ops read it.

    ```mlir
    %h = xf.layernorm %x, %g, %b epsilon = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %y = xf.matmul "bsh,hk->bsk" %h, %w : tensor<2x8x16xf32>, tensor<16x32xf32> -> tensor<2x8x32xf32>
    // becomes
    %h = xf.layernorm %x, %g, %b epsilon = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
    %wb = xf.cast %w : tensor<16x32xf32> -> tensor<16x32xbf16>
    %y = xf.matmul "bsh,hk->bsk" %h, %wb : tensor<2x8x16xbf16>, tensor<16x32xbf16> -> tensor<2x8x32xbf16>
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", "\"forward\"", "the model function; empty: every function">,
    Option<"compute", "compute", "std::string", "\"bf16\"", "compute type: bf16 or f16">,
    Option<"activations", "activations", "std::string", "\"compute\"",
           "values between ops: compute (stored in the compute type, autocast's policy) or f32 (only GEMM operands cast)">,
    Option<"residual", "residual", "std::string", "\"f32\"",
           "the residual stream (adds, norms' inputs) with activations=compute: f32 (autocast) or compute (Megatron-LM's bf16 residual)">,
  ];
  let dependentDialects = ["::shardc::xf::XfDialect"];
}

def XfAutodiff : Pass<"xf-autodiff", "mlir::ModuleOp"> {
  let summary = "builds the gradient function of a forward + loss model (reverse mode)";
  let description = [{
    From `@<function>(inputs..., params...) -> loss` builds a new function
    `@<output>(inputs of micro-batch 0, ..., inputs of micro-batch k-1,
    params..., [loss_scale]) -> (loss, d loss / d param...)`: for each
    micro-batch a copy of the forward, then its backward, built by walking the
    forward in reverse and asking each op's VJPOpInterface for the gradients
    of its operands. Gradients of a value used several times are summed with
    xf.add; a parameter that does not reach the loss gets a zero gradient.
    The reported loss and the gradients are means over the micro-batches.

    Micro-batch j's dropout ops get key + j * 2^32, so every micro-batch
    draws its own masks. With `loss-scale`, a scalar f32 argument
    (`xf.state = "loss_scale"`) seeds the backward instead of 1: gradients
    come out multiplied by it (fp16 dynamic loss scaling; -xf-adamw divides
    it out).

    Results carry `xf.report = "loss"` and `xf.grad = "<parameter name>"`;
    parameter arguments get `xf.state = "param:<name>"`, inputs
    `xf.micro_batch = j`. The forward function is kept. Errors: a function
    that does not return one scalar loss, an op on the path from the
    parameters to the loss without a VJP rule.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"forward\"", "the forward + loss function">,
    Option<"output", "output", "std::string", "\"train_step\"", "name of the function to create">,
    Option<"microBatches", "micro-batches", "int64_t", "1", "gradient accumulation steps">,
    Option<"lossScale", "loss-scale", "bool", "false", "add a loss-scale argument that seeds the backward">,
  ];
  let dependentDialects = ["::shardc::xf::XfDialect", "::mlir::func::FuncDialect"];
}

def XfPipeline : Pass<"xf-pipeline", "mlir::func::FuncOp"> {
  let summary = "pipeline parallelism: stages, point-to-point transfers and a static schedule";
  let description = [{
    Runs on the partitioned training step (after -xf-partition; the mesh has
    the pipeline axis `axis`, which no tensor is split over). Cuts the step
    into `stages x virtual-stages` chunks of consecutive layers (balanced by
    the ops' FLOPs, or at the layer indices `cuts`); chunk c runs on stage
    c mod stages. Every op gets the stage of its chunk (`xf.stage`): forward
    ops the latest chunk of their operands, backward ops the chunk of the
    forward values (and parameters) they read, the optimizer the chunk of
    its parameter; a value read on another stage crosses in an xf.transfer.
    The tied embedding's two gradient contributions meet on the stage that
    holds the table; reports are sent to stage 0. The ops are then ordered
    by the schedule (`gpipe`, `1f1b` or `interleaved`, over the step's
    micro-batches), which is recorded in `xf.pipeline` with its time slots
    and bubble fraction. With `schedule-stages` P' > stages, each stage runs
    the units in the order a stage of a P'-stage pipeline does (stage s <
    stages/2 as stage s, stage stages-1-k as stage P'-1-k): a step compiled
    with a long pipeline's first, middle and last stages whose every stage
    holds what that stage holds in the long one (the planner's reduced
    compiles).
  }];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the training step; empty: every function">,
    Option<"axis", "axis", "std::string", "\"pp\"", "the pipeline mesh axis">,
    Option<"schedule", "schedule", "std::string", "\"1f1b\"", "gpipe | 1f1b | interleaved">,
    Option<"virtualStages", "virtual-stages", "int64_t", "1",
           "chunks per stage (interleaved 1F1B)">,
    Option<"cuts", "cuts", "std::string", "\"\"",
           "layer indices where chunks 1.. start (default: balanced by FLOPs)">,
    Option<"scheduleStages", "schedule-stages", "int64_t", "0",
           "order each stage as the stage it stands for in a pipeline this long (0: the axis's "
           "stages): the first half as its first stages, the rest as its last">,
  ];
  let statistics = [
    Statistic<"numTransfers", "transfers", "point-to-point transfers between stages">
  ];
}

def XfRecompute : Pass<"xf-recompute", "mlir::func::FuncOp"> {
  let summary = "activation recomputation: the backward replays each layer's forward";
  let description = [{
    Runs on the training step (after -xf-autodiff and -xf-adamw, before
    sharding). Forward ops are grouped by micro-batch and layer (the index in
    their parameters' names; ops without parameters inherit their operands'
    layer; the embedding, final norm and loss belong to no layer). For each
    group whose values the backward reads, the group's forward is cloned just
    before the first backward op that reads one of them, and the backward
    reads the clones: the stored values die at their last forward use, which
    is what -xf-plan-memory then sees.

    `policy=full` keeps only what enters a layer (its input on the residual
    stream and the weights: Megatron's full recomputation); `policy=selective`
    also keeps the GEMM and attention outputs and replays the ops between
    them (norms, activations, dropout, bias and residual adds, reshapes,
    casts). (Megatron's selective recomputation of the attention core is what
    xf.attention already does: its backward recomputes the scores from q, k,
    v and the output.) `every=k` recomputes only layers whose index is a
    multiple of k. The clones are the same ops on the same inputs, dropout
    with its key, so the step's results are bit-identical.

    A recomputing step is marked xf.regather_for_backward: -xf-partition then
    gathers again in the backward what the forward gathered (sequence
    parallelism's norm outputs, the keys and values of attention split by
    query rows) instead of keeping the gathered copy across the activation
    peak. `regather=1` marks the step so with any policy, `none` included:
    Megatron-LM's sequence parallelism, which stores the norm output's
    sequence shard and all-gathers it again for the weight gradient, without
    recomputing anything.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the training step; empty: every function">,
    Option<"policy", "policy", "std::string", "\"full\"", "none | selective | full">,
    Option<"every", "every", "int64_t", "1", "recompute layers whose index is a multiple of this">,
    Option<"regather", "regather", "bool", "false", "gather again in the backward what the forward gathered, whatever the policy (xf.regather_for_backward)">,
  ];
  let statistics = [
    Statistic<"recomputedOps", "recomputed-ops", "forward ops cloned into the backward">,
    Statistic<"recomputedLayers", "recomputed-layers", "(micro-batch, layer) groups replayed">
  ];
}

def XfAdamW : Pass<"xf-adamw", "mlir::func::FuncOp"> {
  let summary = "appends global-norm clipping, the LR schedule and AdamW to a gradient function";
  let description = [{
    Turns the output of -xf-autodiff into a complete training step. The
    function gains the optimizer state as arguments (per parameter the Adam
    moments `xf.state = "adam_m:<name>"` / `"adam_v:<name>"`, the update
    counter `"step"` as tensor<i32>, and with a loss-scale argument the clean
    step counter `"good_steps"`) and returns, instead of the gradients:
    the loss, the gradient norm and the learning rate (`xf.report`), with
    loss scaling also the scale used and whether the step was skipped, then
    the next value of every state argument (same `xf.state`). The options
    travel with the step as its `xf.optimizer` dictionary (for the runtime's
    logs and the initial loss scale), never as edits after lowering.

    The update is torch.optim.AdamW after torch.nn.utils.clip_grad_norm_:
    weight decay only on parameters with role weight or embedding (not
    biases, not norm scales); learning rate from xf.lr_schedule (linear
    warm-up, cosine to min-lr at decay-steps). Defaults follow the Megatron-LM
    GPT recipe. With loss scaling, a step whose gradients hold an inf or NaN
    leaves parameters, moments and the counter unchanged and halves the
    scale; `loss-scale-window` clean steps double it.

    Low-precision copies (`low-precision-copies`, on by default): a
    parameter the step reads only through casts to bf16 or f16 (the weights
    of the GEMMs after -xf-mixed-precision; not a tied embedding, whose lookup
    reads f32) gets a state argument
    `"param_bf16:<name>"` that replaces those casts, and the update returns
    the cast of the new master into it. The next step's GEMMs read bf16
    weights with no cast per use, and the fp32 master is read by its update
    only, so ZeRO presets keep it split like the moments. Values are
    unchanged: the copy is the same rounding of the same master.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the gradient function; empty: every function">,
    Option<"lr", "lr", "double", "1.5e-4", "peak learning rate">,
    Option<"minLr", "min-lr", "double", "1.0e-5", "learning-rate floor of the cosine decay">,
    Option<"warmup", "warmup", "int64_t", "0", "linear warm-up steps">,
    Option<"decaySteps", "decay-steps", "int64_t", "0", "step at which the cosine reaches min-lr">,
    Option<"weightDecay", "weight-decay", "double", "0.01", "decoupled weight decay">,
    Option<"beta1", "beta1", "double", "0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", "0.95", "Adam beta2">,
    Option<"epsilon", "epsilon", "double", "1.0e-8", "Adam epsilon">,
    Option<"clipGrad", "clip-grad", "double", "1.0", "max global gradient norm (0: no clipping)">,
    Option<"lowPrecisionCopies", "low-precision-copies", "bool", "true",
           "keep a bf16/f16 copy of each weight the step casts, written by the update">,
    Option<"lossScaleWindow", "loss-scale-window", "int64_t", "2000", "clean steps before the loss scale doubles">,
    Option<"initialLossScale", "initial-loss-scale", "double", "65536.0",
           "with a loss-scale argument: the scale the runtime starts from">,
  ];
  let dependentDialects = ["::shardc::xf::XfDialect", "::mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// Sharding (passes/sharding)
//===----------------------------------------------------------------------===//

def XfGrid : Pass<"xf-grid", "mlir::ModuleOp"> {
  let summary = "creates the device mesh (shard.grid with axis names) from --mesh";
  let description = [{
    The one place a mesh string is parsed: `mesh=dp=2,tp=4` becomes
    `shard.grid @mesh(shape = 2x4) {xf.axis_names = ["dp", "tp"]}` at the top
    of the module. Every later pass (-xf-propagate-sharding, -xf-partition,
    -xf-pipeline, lowering) reads the grid. A grid of the same symbol with
    other axes is an error; the same grid again is a no-op.

    ```mlir
    // -xf-grid{mesh=dp=2,tp=2}
    shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
    ```
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", "\"\"", "mesh axes, e.g. dp=2,tp=4">,
    Option<"symbol", "symbol", "std::string", "\"mesh\"", "the grid's symbol">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect", "::shardc::xf::XfDialect"];
}

def XfPropagateSharding : Pass<"xf-propagate-sharding", "mlir::func::FuncOp"> {
  let summary = "assigns a sharding over a device mesh to every value, choosing by cost";
  let description = [{
    Reads the module's mesh (the `shard.grid` -xf-grid created), applies
    the `strategy` preset (a set of annotations: dp, zero1, zero2, zero3,
    fsdp, tp, sp, mics, joined with `+`) and any `shard.shard` annotations
    already in the function, then propagates through every op's sharding
    rule (ShardingRuleOpInterface) until every value of `function` has a
    sharding. Ops whose known operands and results agree are decided first;
    an op whose inputs conflict is decided by the cost model (collective
    time on the hardware description plus compute time), never by
    traversal order.

    The result is fully annotated IR: every tensor argument and op result
    is followed by a `shard.shard` giving its sharding (`xf.partial` lists
    the axes of a pending sum), and every xf op carries its decision as
    `xf.factor_axes` (the mesh axes of each factor of its rule).

    ```mlir
    // -xf-grid{mesh=tp=2} -xf-propagate-sharding  with W annotated [-, tp]:
    %0 = xf.matmul "bsh,ho->bso" %x, %w {xf.factor_axes = [[], [], [], [1]]} ...
    %1 = shard.shard %0 to %sharding_s_s_tp : tensor<4x32x64xf32>
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the function to shard; empty: every function">,
    Option<"strategy", "strategy", "std::string", "\"\"",
           "preset annotations: dp, zero1, zero2, zero3, fsdp, tp, sp, mics, joined with +">,
    Option<"hardware", "hardware", "std::string", "\"h100-8x-nvlink-ib\"",
           "hardware description: a shipped name or a .json path">,
    Option<"memoryBudget", "memory-budget", "double", "0",
           "bytes per device; when the estimate exceeds it, sharded activations are preferred (0: the hardware's memory)">,
    Option<"lowPrecisionReductions", "low-precision-reductions", "bool", "false",
           "reduce pending sums in the precision they are computed in: a widening cast (bf16/f16 to f32) does not carry a pending sum, so gradients are reduced before their widening to the f32 master and tensor-parallel sums before the f32 residual (Megatron's --grad-reduce-in-bf16, FSDP's reduce_dtype)">,
    Option<"attentionRows", "attention-rows", "std::string", "\"auto\"",
           "splitting attention's query rows over mesh axes nothing else splits them on (the way to split attention over tp when its heads do not divide it): auto (propagate with and without, keep the cheaper modelled step), split (offer it always), whole (never)">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect", "::shardc::xf::XfDialect"];
}

def XfPartition : Pass<"xf-partition", "mlir::func::FuncOp"> {
  let summary = "rewrites a sharded function to per-rank local shapes with collectives";
  let description = [{
    Consumes the annotations of -xf-propagate-sharding. Every xf op becomes
    its local shard (local types, `xf.factor_axes` kept for ops that need
    their shard's offset); every place where a value's sharding differs from
    what its consumer needs gets the collectives of planReshard:
    `shard.reduce_scatter` where a pending sum meets a split consumer,
    `shard.all_reduce` where it meets a replicated one, `shard.all_gather`
    for axes that leave a dimension and `shard.all_slice` (no communication)
    for axes that join one. Pending sums stay pending through linear ops.
    A reshard of a value is made once per target sharding, except for
    `annotate_for_users` annotations, which are made again before each use
    (ZeRO-3 gathers a parameter before its forward use and again before its
    backward use). Arguments and results get local types and an
    `xf.sharding` attribute; state results are resharded to their
    argument's sharding, other results to replicated.

    ```mlir
    // before (tp=2):
    %1 = shard.shard %0 to %s_rep {xf.partial = array<i16: 0>} : tensor<4x32x64xf32>
    %2 = xf.bias_add %1, %b {xf.factor_axes = [[], [], []]} : ...
    // after:
    %1 = shard.all_reduce %0 on @mesh grid_axes = [0] : tensor<4x32x64xf32> -> tensor<4x32x64xf32>
    %2 = xf.bias_add %1, %b {xf.factor_axes = [[], [], []]} : ...
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the function to partition; empty: every function">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect", "::shardc::xf::XfDialect"];
}

def XfReportSharding : Pass<"xf-report-sharding", "mlir::func::FuncOp"> {
  let summary = "prints every value's sharding and the collectives a step performs";
  let description = [{
    On annotated IR (after -xf-propagate-sharding): prints each value's
    sharding, then partitions a copy of the module and prints a table of the
    collectives (kind, mesh axes, count, bytes per device per step, modelled
    time on `hardware`) with totals per mesh axis, the modelled compute time
    and the memory per device of arguments (parameters, optimizer state).
    With `pipeline-axis`, the copy is cut into stages (-xf-pipeline) and the
    report adds the schedule (one row per stage, a column per time slot),
    its bubble fraction and the bytes sent across each stage boundary.
    The IR is left unchanged.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the function to report on; empty: every function">,
    Option<"hardware", "hardware", "std::string", "\"h100-8x-nvlink-ib\"",
           "hardware description: a shipped name or a .json path">,
    Option<"output", "output", "std::string", "\"-\"", "where to write the report (- for stdout)">,
    Option<"json", "json", "bool", "false", "write JSON instead of text">,
    Option<"pipelineAxis", "pipeline-axis", "std::string", "\"\"",
           "cut the partitioned copy into pipeline stages along this axis (-xf-pipeline)">,
    Option<"schedule", "schedule", "std::string", "\"1f1b\"", "pipeline schedule">,
    Option<"virtualStages", "virtual-stages", "int64_t", "1", "pipeline chunks per stage">,
    Option<"cuts", "cuts", "std::string", "\"\"", "pipeline cut points (layer indices)">,
    Option<"scheduleStages", "schedule-stages", "int64_t", "0",
           "order each pipeline stage as the stage it stands for in a pipeline this long "
           "(-xf-pipeline schedule-stages; 0: the mesh's)">,
    Option<"offloadActivations", "offload-activations", "bool", "false",
           "plan memory with -xf-offload-activations (the host arena)">,
    Option<"offloadMinBytes", "offload-min-bytes", "int64_t", "65536",
           "-xf-offload-activations' min-bytes">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "26214400",
           "gradient all-reduce buckets (as -rt-bucket-all-reduces; 0: one per tensor): ring "
           "latencies once per bucket">,
  ];
}

//===----------------------------------------------------------------------===//
// Memory planning and lowering (passes/memory, passes/lowering)
//===----------------------------------------------------------------------===//

def XfExtractEval : Pass<"xf-extract-eval", "mlir::ModuleOp"> {
  let summary = "clones a training step keeping only what its loss depends on";
  let description = [{
    Adds `@output`: the step `@function` with only its `loss` report as result
    and every op the loss does not depend on removed (backward, optimizer,
    their collectives). On a partitioned step the result is the forward with
    the step's shardings and collectives, so a compiled program evaluates
    validation loss on the parameters exactly where the step keeps them.
    Arguments stay as they are (unused ones included).

    ```mlir
    func.func @train_step(...) -> (tensor<f32> {xf.report = "loss"}, tensor<f32> {xf.report = "lr"}, ...)
    // adds
    func.func @eval_step(...) -> (tensor<f32> {xf.report = "loss"})
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the training step">,
    Option<"output", "output", "std::string", "\"eval_step\"", "the function to add">,
  ];
}

def XfSchedule : Pass<"xf-schedule", "mlir::func::FuncOp"> {
  let summary = "issues collectives as early as their inputs allow (before memory planning)";
  let description = [{
    Reorders the partitioned step: a collective of a computed value moves
    right after the value's definition (each gradient reduction starts as
    soon as the gradient exists); a collective of a step argument (a ZeRO-3 /
    FSDP parameter gather) moves up to the first use of the previous such
    gather, one layer of prefetch. Runs before -xf-plan-memory, which then
    sees the new lifetimes; -rt-bucket-all-reduces and
    -rt-schedule-collectives finish the job on buffers.

    ```mlir
    %g = xf.matmul ...                 // a gradient
    ... backward of the layers below ...
    %s = shard.all_reduce %g ...       // was here, just before the optimizer
    // becomes
    %g = xf.matmul ...
    %s = shard.all_reduce %g ...
    ... backward of the layers below ...
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the step to reorder; empty: every function">,
  ];
}

def XfOffloadActivations : Pass<"xf-offload-activations", "mlir::func::FuncOp"> {
  let summary = "kept activations to the host arena, prefetched one layer ahead of the backward";
  let description = [{
    Runs on the rank-local training step before -xf-plan-memory (after
    sharding, -xf-recompute and -xf-schedule). Every activation the backward
    reads (a forward value depending on the data inputs, at least `min-bytes`
    large) gets an `xf.offload` after its last forward use and an `xf.reload`
    that the backward reads instead. Values are grouped by micro-batch and
    layer (as -xf-recompute groups them) and the groups ordered by when the
    backward first needs them; a group's reloads go before the first
    backward read of the group needed just before it (the layer above), so
    the copy back overlaps that layer's backward. The group needed first
    (the last layer) stays on the device. -xf-plan-memory places the
    offloaded copies in the `host` arena; lowering makes both copies
    asynchronous (rt.copy_start / rt.wait on a copy stream). Values are not
    changed: the step's results are bit-identical.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the training step; empty: every function">,
    Option<"minBytes", "min-bytes", "int64_t", "65536", "offload only activations of at least this many bytes">,
  ];
  let statistics = [
    Statistic<"offloadedValues", "offloaded-values", "activations offloaded">,
    Statistic<"offloadedBytes", "offloaded-bytes", "bytes of the offloaded activations per step">
  ];
}

def XfPlanMemory : Pass<"xf-plan-memory", "mlir::ModuleOp"> {
  let summary = "plans static per-rank arenas: liveness-based offsets, contiguous state";
  let description = [{
    Gives every tensor of a (partitioned) step function a place in one of five
    per-rank arenas: `params` (the parameters, one contiguous buffer),
    `grads` (the gradients the optimizer reads, one contiguous buffer),
    `optimizer` (Adam moments, counters, loss scale), `inputs` (token ids)
    and `workspace` (everything else). Workspace offsets come from liveness:
    a value's bytes are free again after its last use and later values reuse
    them (first fit, 64-byte aligned). A state result (the new parameter or
    moment) is written into its argument's buffer when the argument is dead
    by then or read only by the op that writes it (AdamW updates in place).
    Any other result is written over a workspace operand that dies at its op
    when the op table (runtime/abi/OpTable.h) lets the kernel run in place
    for that operand and result (same element type and size): bias adds,
    activations, norms, residual adds and reshapes of dying values reuse
    their input's bytes, which is also what lets the CUDA backend fuse a
    GEMM with its bias and GELU epilogue.

    A kernel that needs scratch memory while it runs (the fused linear
    cross-entropy's logit chunks, a loss's gathered statistics, the norm
    gradients' partial sums, the attention backward's row statistics, a
    GEMM operand laid out for cuBLASLt: runtime/program/KernelScratch.h,
    the most any backend uses) gets it in the workspace, beside its operands
    and results, for the duration of the op: `rt.scratch = array<i64:
    offset, bytes>`. Lowering hands it to the kernel as one more buffer, so
    the planned peak includes the kernels' memory.

    A collective that copies through staging (an all-gather on an axis that
    is not the outermost, a reduce-scatter packing its input by member, an
    all-to-all, an input overlapping the output: KernelScratch.h
    collectiveStaging) gets it as `rt.scratch` too, held from its input's
    producer to its output's first reader (looking through reshapes placed
    in place, which are no calls): the widest window -rt-schedule-collectives
    can move its start and wait over, so the staging does not pin them. It
    goes back early after the first op that writes the input's bytes (the
    wait cannot pass that op anyway). An argument input has no producer: its
    collective's staging starts at the collective.

    Arguments get `rt.buffer = array<i64: arena, offset>`, ops
    `rt.buffers = [array<i64: arena, offset>, ...]` (one per result) and the
    function `rt.arena_bytes` (per arena) and `rt.planned_bytes` (their sum:
    the planned peak per rank).

    ```mlir
    %3 = xf.gelu %2 {rt.buffers = [array<i64: 4, 8192>]} : tensor<2x32x128xf32>
    ```
  }];
  let statistics = [
    Statistic<"inPlaceResults", "in-place-results",
              "results written over a dying operand's buffer (op table in-place pairs)">,
    Statistic<"scratchCalls", "scratch-calls", "ops given scratch memory for their kernel">,
    Statistic<"stagedCalls", "staged-collectives", "collectives given staging memory">
  ];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the function to plan">,
    Option<"evalFunction", "eval-function", "std::string", "\"\"",
           "also plan this function (-xf-extract-eval): it reads the step's arguments in "
           "place and shares the workspace">,
    Option<"placements", "placements", "bool", "true",
           "write each buffer's and scratch's place (rt.buffer, rt.buffers, rt.scratch: "
           "what -xf-lower-to-rt reads); false: only the sizes (the step report, the "
           "planner)">,
  ];
}

def XfLowerToRt : Pass<"xf-lower-to-rt", "mlir::ModuleOp"> {
  let summary = "lowers a planned xf + shard step to rt (DialectConversion)";
  let description = [{
    Turns the planned function into `func.func @shardc_step()` on buffers:
    arguments and results become `rt.view`s at their planned places, xf ops
    `rt.kernel` calls, shard collectives `rt.collective`s, and state results
    the plan could not place in their argument's buffer an `rt.copy`. The
    step's boundary (state, inputs, reports with their global shapes and
    shardings), the mesh and the arenas go to the module's `rt.program`
    attribute (JSON), which -rt-to-llvm completes into the program
    descriptor (runtime/program/Program.h); the step's `xf.optimizer`
    (-xf-adamw) becomes its `train` entry. Other functions (the forward the
    step was synthesized from) are erased: the module becomes the program.

    ```mlir
    %y = xf.gelu %x {rt.buffers = [array<i64: 4, 8192>]} : tensor<2x32x128xf32>
    // becomes
    %y = rt.view arena 4 offset 8192 : memref<2x32x128xf32>
    rt.kernel "xf.gelu" ins(%x : memref<2x32x128xf32>) outs(%y : memref<2x32x128xf32>) {attrs = {}}
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the planned function">,
    Option<"source", "source", "std::string", "\"\"", "model name recorded in the descriptor">,
    Option<"strategy", "strategy", "std::string", "\"\"", "strategy recorded in the descriptor">,
    Option<"evalFunction", "eval-function", "std::string", "\"\"",
           "also lower this planned function (-xf-extract-eval) to @shardc_eval; its loss is "
           "the descriptor's eval_report">,
  ];
  let dependentDialects = ["::shardc::rt_dialect::RtDialect"];
}

def XfBucketReduceScatters : Pass<"xf-bucket-reduce-scatters", "mlir::func::FuncOp"> {
  let summary = "merges ZeRO's gradient reduce-scatters into buckets";
  let description = [{
    Runs on the partitioned (rank-local) step. Sum reduce-scatters over the
    same mesh axes, of one element type and pipeline stage, whose results
    only the optimizer reads (AdamW, the gradient norm, through widening
    casts) and whose scattered blocks are contiguous (no dim of size above
    one before the scattered one) become one reduce-scatter of the inputs
    side by side: each gradient viewed as [n, size / n] (n the group's
    ranks), concatenated along the second dim, scattered along the first,
    and split back. A bucket closes at `bucket-bytes` of inputs, before
    anything else reads a member, and at the end. Bit-identical to the
    separate reductions (DeepSpeed's reduce buckets). `bucket-bytes=0`
    disables it.

    ```mlir
    %a = shard.reduce_scatter %ga on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
    %b = shard.reduce_scatter %gb on @mesh grid_axes = [0] scatter_axis = 0 : tensor<32xf32> -> tensor<16xf32>
    // becomes
    %ra = xf.reshape %ga : tensor<8x16xf32> -> tensor<2x64xf32>
    %rb = xf.reshape %gb : tensor<32xf32> -> tensor<2x16xf32>
    %c = xf.concat %ra, %rb dim = 1 : tensor<2x64xf32>, tensor<2x16xf32> -> tensor<2x80xf32>
    %s = shard.reduce_scatter %c on @mesh grid_axes = [0] scatter_axis = 0 : tensor<2x80xf32> -> tensor<1x80xf32>
    %pa, %pb = xf.split %s dim = 1 : tensor<1x80xf32> -> tensor<1x64xf32>, tensor<1x16xf32>
    %a = xf.reshape %pa : tensor<1x64xf32> -> tensor<4x16xf32>
    %b = xf.reshape %pb : tensor<1x16xf32> -> tensor<16xf32>
    ```
  }];
  let dependentDialects = ["::shardc::xf::XfDialect", "::mlir::shard::ShardDialect"];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the step; empty: every function">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "25 * 1024 * 1024",
           "largest bucket in input bytes (0: no buckets)">,
  ];
}

def XfBucketAllGathers : Pass<"xf-bucket-all-gathers", "mlir::func::FuncOp"> {
  let summary = "merges ZeRO-1/2's whole-step parameter gathers into buckets";
  let description = [{
    Runs on the partitioned (rank-local) step. Whole-step all-gathers
    (`xf.gather_once`: ZeRO-1/2's gathers of the updated parameters) of step
    arguments over the same mesh axes, of one element type, pipeline stage
    and group size, whose blocks are contiguous (no dim of size above one
    before the gathered one), become one all-gather of the blocks side by
    side: each viewed as [1, size], concatenated along the second dim,
    gathered along the first ([n, total], n the group's ranks), split back
    along the second and reshaped. In the order the step reads them, a
    bucket closes at `bucket-bytes` of gathered bytes; its gather runs where
    its first member did. Bit-identical to the separate gathers (DeepSpeed's
    and Megatron's distributed optimizer's parameter buckets).
    `bucket-bytes=0` disables it.

    ```mlir
    %a = shard.all_gather %pa on @mesh grid_axes = [0] gather_axis = 0 {xf.gather_once} : tensor<4x16xf32> -> tensor<8x16xf32>
    %b = shard.all_gather %pb on @mesh grid_axes = [0] gather_axis = 0 {xf.gather_once} : tensor<16xf32> -> tensor<32xf32>
    // becomes
    %ra = xf.reshape %pa : tensor<4x16xf32> -> tensor<1x64xf32>
    %rb = xf.reshape %pb : tensor<16xf32> -> tensor<1x16xf32>
    %c = xf.concat %ra, %rb dim = 1 : tensor<1x64xf32>, tensor<1x16xf32> -> tensor<1x80xf32>
    %g = shard.all_gather %c on @mesh grid_axes = [0] gather_axis = 0 {xf.gather_once} : tensor<1x80xf32> -> tensor<2x80xf32>
    %ga, %gb = xf.split %g dim = 1 : tensor<2x80xf32> -> tensor<2x64xf32>, tensor<2x16xf32>
    %a = xf.reshape %ga : tensor<2x64xf32> -> tensor<8x16xf32>
    %b = xf.reshape %gb : tensor<2x16xf32> -> tensor<32xf32>
    ```
  }];
  let dependentDialects = ["::shardc::xf::XfDialect", "::mlir::shard::ShardDialect"];
  let options = [
    Option<"function", "function", "std::string", "\"train_step\"", "the step; empty: every function">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "25 * 1024 * 1024",
           "largest bucket in gathered bytes (0: no buckets)">,
  ];
}

def RtBucketAllReduces : Pass<"rt-bucket-all-reduces", "mlir::func::FuncOp"> {
  let summary = "merges consecutive gradient all-reduces into buckets";
  let description = [{
    Sum all-reduces over the same mesh axes whose outputs follow each other in
    the grads arena (-xf-plan-memory places the reduced gradients there, in
    order) become copies of each input into its output place plus one
    in-place all-reduce of the whole range, issued when the bucket reaches
    `bucket-bytes` or before any op touches a member. Bit-identical to the
    separate reductions. `bucket-bytes=0` disables it.

    ```mlir
    rt.collective "shard.all_reduce" axes [0] ins(%a : memref<64xf32>) outs(%ga : memref<64xf32>) {attrs = {reduction = "sum"}}
    rt.collective "shard.all_reduce" axes [0] ins(%b : memref<32xf32>) outs(%gb : memref<32xf32>) {attrs = {reduction = "sum"}}
    // becomes
    rt.copy %a to %ga : memref<64xf32>
    rt.copy %b to %gb : memref<32xf32>
    rt.collective "shard.all_reduce" axes [0] ins(%g : memref<96xf32>) outs(%g : memref<96xf32>) {attrs = {reduction = "sum"}}
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "25 * 1024 * 1024",
           "largest bucket in bytes (0: no buckets)">,
  ];
}

def RtScheduleCollectives : Pass<"rt-schedule-collectives", "mlir::func::FuncOp"> {
  let summary = "splits collectives into start/wait and moves them apart for overlap";
  let description = [{
    Every `rt.collective` becomes `rt.collective_start` + `rt.wait`. The start
    moves up past every op that neither writes its input nor touches its
    output (issued as early as its input allows), the wait moves down past
    every op that does not need the collective's buffers (waited on as late
    as its users allow); compute in between overlaps the communication.
    Conflicts are byte ranges of the planned arenas. With `overlap=false`
    the pair stays where the collective was.

    ```mlir
    %e = rt.collective_start "shard.all_gather" axes [0] ins(%w : memref<32x64xf32>) outs(%wf : memref<64x64xf32>) {attrs = {gather_axis = 0 : index}}
    rt.kernel "xf.layernorm" ...   // independent compute
    rt.wait %e
    rt.kernel "xf.matmul" ins(%x, %wf : ...) ...
    ```
  }];
  let options = [
    Option<"overlap", "overlap", "bool", "true", "move starts up and waits down">,
  ];
}

def RtToLLVM : Pass<"rt-to-llvm", "mlir::ModuleOp"> {
  let summary = "lowers rt to calls of the runtime's C ABI in the LLVM dialect";
  let description = [{
    `@shardc_step()` becomes `llvm.func @shardc_step(%ctx: !llvm.ptr)`:
    each arena's base is fetched once (`shardc_rt_arena`), views are byte
    offsets from it, `rt.kernel` becomes `shardc_rt_kernel(ctx, call,
    buffers)` with the call's index in the descriptor's call table,
    `rt.collective` becomes `shardc_rt_collective(ctx, call, comm, in, out)`
    with one communicator per distinct set of mesh axes (`rt.collective_start`
    `shardc_rt_collective_start`, returning the handle `rt.wait` passes to
    `shardc_rt_wait`), and `rt.copy` `shardc_rt_copy`. The completed descriptor is the constant string
    `@shardc_program_json`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // SHARDC_PASSES_TD
