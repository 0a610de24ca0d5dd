//===- ExamplePasses.td - an out-of-tree shardc pass -------*- tablegen -*-===//
//
// Copy: one `def` per pass. mlir-tblgen -gen-pass-decls turns it into the
// pass's base class (ExampleSplitFactorBase, with the options as members),
// its options struct, createExampleSplitFactor() and registerExamplePasses().
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_EXAMPLE_PASSES_TD
#define SHARDC_EXAMPLE_PASSES_TD

include "mlir/Pass/PassBase.td"

def ExampleSplitFactor : Pass<"example-split-factor", "mlir::ModuleOp"> {
  let summary = "picks, for every op with a sharding rule, the factor to split over one mesh axis";
  let description = [{
    A template for a sharding pass written out of tree. For every op that
    implements `ShardingRuleOpInterface` (every xf model op), reads the op's
    factors and picks the first one that may be split over the mesh axis
    `axis` of the module's `shard.grid`: its size divisible by the axis size,
    not Replicated, the major-most factor of every dimension it appears in.
    Parallel factors come first (data parallelism: the batch of a matmul is
    its first factor); a Reduction factor is the fallback, and then the op's
    results become partial sums. The choice is recorded as

    ```mlir
    {example.split = {factor = 0 : i64, kind = "parallel", size = 8 : i64}}
    ```

    with a remark on the op, and each function gets a summary remark. (A real
    sharding pass would record `xf.factor_axes` and the other `xf.*` decision
    attributes that -xf-partition consumes; see passes/sharding.)
  }];
  let options = [
    Option<"axis", "axis", "std::string", "\"dp\"",
           "the mesh axis (a name in the grid's xf.axis_names) to split over">,
  ];
}

#endif // SHARDC_EXAMPLE_PASSES_TD
