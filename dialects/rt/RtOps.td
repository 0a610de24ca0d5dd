//===- RtOps.td - the rt dialect ---------------------------*- tablegen -*-===//
//
// The runtime level: buffers are views into the per-rank arenas planned by
// -xf-plan-memory, kernels and collectives are calls on them. Every op maps
// onto one entry point of the runtime's C ABI (runtime/abi/shardc_rt.h), and
// -rt-to-llvm turns each into that call.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RT_OPS_TD
#define SHARDC_RT_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Rt_Dialect : Dialect {
  let name = "rt";
  let useDefaultTypePrinterParser = 1;
  let cppNamespace = "::shardc::rt_dialect";
  let summary = "Buffers in planned arenas, kernel calls and collectives";
  let description = [{
    The executable's step as the runtime sees it: a function without
    arguments whose buffers are `rt.view`s of fixed arenas (parameters,
    gradients, optimizer state, inputs, workspace), with `rt.kernel` calls
    (one per xf op), `rt.collective` calls on the communicator of a set of
    mesh axes, and `rt.copy`.

    ```mlir
    %x = rt.view arena 4 offset 0 : memref<2x32x64xf32>
    %g = rt.view arena 0 offset 1024 : memref<64xf32>
    %b = rt.view arena 0 offset 1280 : memref<64xf32>
    %y = rt.view arena 4 offset 16384 : memref<2x32x64xf32>
    rt.kernel "xf.layernorm" ins(%x, %g, %b : memref<2x32x64xf32>, memref<64xf32>, memref<64xf32>) outs(%y : memref<2x32x64xf32>) {attrs = {epsilon = 1.0e-05 : f64}}
    ```
  }];
}

class Rt_Op<string mnemonic, list<Trait> traits = []> : Op<Rt_Dialect, mnemonic, traits>;

def Rt_EventType : TypeDef<Rt_Dialect, "Event"> {
  let mnemonic = "event";
  let summary = "a collective or copy in flight";
  let description = [{
    Produced by `rt.collective_start` (the communication stream) or
    `rt.copy_start` (the copy stream), consumed by the one `rt.wait` after
    which the output is complete and the input may be written.
  }];
}

def Rt_ViewOp : Rt_Op<"view", [Pure]> {
  let summary = "a buffer at a fixed byte offset of an arena";
  let description = [{
    `arena` indexes the program's arenas; the view's bytes
    `[offset, offset + size)` must lie inside it (checked when the program
    descriptor is built).

    ```mlir
    %w = rt.view arena 0 offset 4096 : memref<64x32xf32>
    ```
  }];
  let arguments = (ins I32Attr:$arena, I64Attr:$offset);
  let results = (outs AnyStaticShapeMemRef:$buffer);
  let assemblyFormat = "`arena` $arena `offset` $offset attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Rt_KernelOp : Rt_Op<"kernel", [AttrSizedOperandSegments]> {
  let summary = "a call of one kernel of the runtime's library";
  let description = [{
    Runs `callee` (the xf op it was lowered from) reading `ins` and writing
    `outs`. `attrs` are the op's attributes; `operand_axes`/`result_axes`
    (per buffer, per dim: the mesh axes splitting it) tell kernels whose
    values depend on global indices where the rank's block lies. `scratch`
    (a memref of i8, from -xf-plan-memory's `rt.scratch`) is the planned
    memory the kernel may use while it runs (runtime/program/
    KernelScratch.h); it is passed after the results.

    ```mlir
    rt.kernel "xf.gelu" ins(%x : memref<2x32x128xf32>) outs(%y : memref<2x32x128xf32>) {attrs = {}}
    rt.kernel "xf.layernorm_grad" ins(...) outs(...) scratch(%s : memref<65536xi8>) {attrs = {...}}
    ```
  }];
  let arguments = (ins StrAttr:$callee, Variadic<AnyStaticShapeMemRef>:$ins,
                   Variadic<AnyStaticShapeMemRef>:$outs,
                   Optional<AnyStaticShapeMemRef>:$scratch, DictionaryAttr:$attrs,
                   OptionalAttr<ArrayAttr>:$operand_axes, OptionalAttr<ArrayAttr>:$result_axes);
  let assemblyFormat = [{
    $callee (`ins` `(` $ins^ `:` type($ins) `)`)? (`outs` `(` $outs^ `:` type($outs) `)`)?
    (`scratch` `(` $scratch^ `:` type($scratch) `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

def Rt_CollectiveOp : Rt_Op<"collective"> {
  let summary = "a collective on the communicator of a set of mesh axes";
  let description = [{
    `kind` is the shard collective it was lowered from (all_gather,
    all_reduce, reduce_scatter, all_slice, all_to_all); the group is the
    ranks that differ only in `axes`, ordered by their block index.

    `scratch` (a memref of i8, from -xf-plan-memory's `rt.scratch`) is the
    planned staging the backend copies through (runtime/program/
    KernelScratch.h collectiveStaging); without it the backend stages in
    memory of its own.

    ```mlir
    rt.collective "shard.all_reduce" axes [1] ins(%p : memref<2x32x64xf32>) outs(%s : memref<2x32x64xf32>) {attrs = {reduction = "sum"}}
    rt.collective "shard.all_gather" axes [0] ins(%x : memref<2x8x64xf32>) outs(%y : memref<2x16x64xf32>) scratch(%s : memref<8192xi8>) {attrs = {gather_axis = 1 : i64}}
    ```
  }];
  let arguments = (ins StrAttr:$kind, DenseI16ArrayAttr:$axes, AnyStaticShapeMemRef:$input,
                   AnyStaticShapeMemRef:$output, Optional<AnyStaticShapeMemRef>:$scratch,
                   DictionaryAttr:$attrs);
  let assemblyFormat = [{
    $kind `axes` $axes `ins` `(` $input `:` type($input) `)` `outs` `(` $output `:` type($output) `)`
    (`scratch` `(` $scratch^ `:` type($scratch) `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

def Rt_CollectiveStartOp : Rt_Op<"collective_start"> {
  let summary = "starts a collective on the communication stream";
  let description = [{
    As `rt.collective`, but returns at once: until the matching `rt.wait`
    the input must not be written and the output and scratch neither read nor written
    (-rt-schedule-collectives only moves the pair where that holds).

    ```mlir
    %e = rt.collective_start "shard.all_reduce" axes [0] ins(%g : memref<64xf32>) outs(%s : memref<64xf32>) {attrs = {reduction = "sum"}}
    rt.kernel "xf.gelu" ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {attrs = {}}
    rt.wait %e
    ```
  }];
  let arguments = (ins StrAttr:$kind, DenseI16ArrayAttr:$axes, AnyStaticShapeMemRef:$input,
                   AnyStaticShapeMemRef:$output, Optional<AnyStaticShapeMemRef>:$scratch,
                   DictionaryAttr:$attrs);
  let results = (outs Rt_EventType:$event);
  let assemblyFormat = [{
    $kind `axes` $axes `ins` `(` $input `:` type($input) `)` `outs` `(` $output `:` type($output) `)`
    (`scratch` `(` $scratch^ `:` type($scratch) `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

def Rt_CopyStartOp : Rt_Op<"copy_start", [AllTypesMatch<["source", "target"]>]> {
  let summary = "starts a copy on the copy stream (activation offload)";
  let description = [{
    Copies `source` into `target` asynchronously: between the workspace and
    the host arena (-xf-offload-activations' `xf.offload` / `xf.reload`), on
    a GPU a copy stream of its own, ordered after everything issued before
    it. Until the matching `rt.wait` the source must not be written and the
    target neither read nor written (-rt-schedule-collectives moves the pair
    only where that holds).

    ```mlir
    %e = rt.copy_start %x to %h : memref<2x64x128xf32>
    rt.wait %e
    ```
  }];
  let arguments = (ins AnyStaticShapeMemRef:$source, AnyStaticShapeMemRef:$target);
  let results = (outs Rt_EventType:$event);
  let assemblyFormat = "$source `to` $target attr-dict `:` type($source)";
  let hasVerifier = 1;
}

def Rt_WaitOp : Rt_Op<"wait"> {
  let summary = "waits for a collective or copy started by rt.collective_start / rt.copy_start";
  let description = [{
    ```mlir
    rt.wait %e
    ```
  }];
  let arguments = (ins Rt_EventType:$event);
  let assemblyFormat = "$event attr-dict";
  let hasVerifier = 1;
}

def Rt_CopyOp : Rt_Op<"copy", [AllTypesMatch<["source", "target"]>]> {
  let summary = "copies one buffer into another of the same type";
  let description = [{
    Writes a state result back to its argument's buffer when the memory plan
    could not place it there directly.

    ```mlir
    rt.copy %new to %old : memref<64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeMemRef:$source, AnyStaticShapeMemRef:$target);
  let assemblyFormat = "$source `to` $target attr-dict `:` type($source)";
}

#endif // SHARDC_RT_OPS_TD
