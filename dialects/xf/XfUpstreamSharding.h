//===- XfUpstreamSharding.h - upstream ShardingInterface for xf --*- C++ -*-===//
//
// External models of upstream MLIR's `mlir::shard::ShardingInterface` for the
// xf ops, derived from each op's own ShardingRuleOpInterface rule (one source
// of truth), so upstream `sharding-propagation` and `shard-partition` run on xf
// IR. Registered by shardc-opt only; shardc's own pipelines do not use them.
// See XfUpstreamSharding.cpp for the mapping and what is covered.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_DIALECTS_XF_XFUPSTREAMSHARDING_H
#define SHARDC_DIALECTS_XF_XFUPSTREAMSHARDING_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace shardc::xf {

/// Attaches a ShardingInterface model to every xf op with a sharding rule
/// (when the xf dialect is loaded into a context built from `registry`).
void registerXfUpstreamShardingModels(mlir::DialectRegistry &registry);

} // namespace shardc::xf

#endif // SHARDC_DIALECTS_XF_XFUPSTREAMSHARDING_H
