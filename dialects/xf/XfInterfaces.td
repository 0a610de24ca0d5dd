//===- XfInterfaces.td - xf op interfaces ------------------*- tablegen -*-===//
#ifndef SHARDC_XF_INTERFACES_TD
#define SHARDC_XF_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Xf_VJPOpInterface : OpInterface<"VJPOpInterface"> {
  let cppNamespace = "::shardc::xf";
  let description = [{
    The reverse-mode derivative rule of an op: given the gradients of the
    loss with respect to the op's results (the cotangents), build the ops that
    compute the gradients with respect to its operands (the vector-Jacobian
    product). `-xf-autodiff` calls it on every op between the parameters and
    the loss, so an op that implements it can be trained through; the rule
    lives beside the op's definition (XfVJP.cpp), not in the pass.

    Forward values the rule needs (activations) are the op's own operands and
    results; nothing is recomputed by the pass.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the operand gradients at the builder's insertion point.
        `resultGrads` has one entry per result; a null entry means that result
        does not reach the loss (its gradient is zero), and at least one entry
        is non-null. `operandGrads` receives one entry per operand, each of
        that operand's type, or null for operands without a gradient (integer
        ids, masks). Returns failure (after emitting an error) if the op
        cannot be differentiated in this configuration.
      }],
      "::mlir::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

def Xf_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::shardc::xf";
  let description = [{
    How the op may be split over a device mesh, as factors (ShardingRule.h):
    which dimensions of its operands and results are the same loop, which are
    summed, which must stay whole. `-xf-propagate-sharding` and
    `-xf-partition` read only this; adding an op means adding its rule
    (XfShardingRules.cpp), nothing in the passes. The rule is computed from
    the op's own types and attributes, so on partitioned IR it describes the
    local op.
  }];
  let methods = [
    InterfaceMethod<"Returns the op's sharding rule.",
      "::shardc::xf::OpShardingRule", "getShardingRule", (ins)>
  ];
  // After the op's own verifier (the rule is computed from verified types):
  // `xf.factor_axes` must fit the rule and the grid.
  let verify = [{ return ::shardc::xf::verifyShardingDecision($_op); }];
  let verifyWithRegions = 1;
}

#endif // SHARDC_XF_INTERFACES_TD
