//===- ShardingIR.cpp - op rules meet tensor shardings --------------------===//

#include "passes/sharding/ShardingIR.h"

#include "dialects/xf/XfDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace shardc;
using namespace shardc::sharding;

std::optional<OpDecision> sharding::readDecision(Operation *op, size_t numFactors) {
  auto attr = op->getAttrOfType<ArrayAttr>(kFactorAxesAttr);
  if (!attr || attr.size() != numFactors)
    return std::nullopt;
  OpDecision d;
  for (Attribute a : attr) {
    auto axes = dyn_cast<DenseI16ArrayAttr>(a);
    if (!axes)
      return std::nullopt;
    d.factorAxes.emplace_back(axes.asArrayRef().begin(), axes.asArrayRef().end());
  }
  if (auto p = op->getAttrOfType<DenseI16ArrayAttr>(kLinearPartialAttr))
    d.linearPartial.assign(p.asArrayRef().begin(), p.asArrayRef().end());
  if (auto g = op->getAttrOfType<IntegerAttr>(kLinearGroupAttr))
    d.linearGroup = static_cast<int>(g.getInt());
  return d;
}

void sharding::writeDecision(Operation *op, const OpDecision &d) {
  Builder b(op->getContext());
  SmallVector<Attribute> axes;
  for (const AxisList &a : d.factorAxes)
    axes.push_back(b.getDenseI16ArrayAttr(a));
  op->setAttr(kFactorAxesAttr, b.getArrayAttr(axes));
  if (d.linearPartial.empty()) {
    op->removeAttr(kLinearPartialAttr);
    op->removeAttr(kLinearGroupAttr);
  } else {
    op->setAttr(kLinearPartialAttr, b.getDenseI16ArrayAttr(d.linearPartial));
    op->setAttr(kLinearGroupAttr, b.getI64IntegerAttr(d.linearGroup));
  }
}

static TensorSharding project(const xf::TensorFactors &tensor, const OpDecision &d) {
  TensorSharding s = TensorSharding::replicated(tensor.size());
  for (size_t dim = 0; dim < tensor.size(); ++dim)
    for (int f : tensor[dim])
      s.dims[dim].append(d.factorAxes[f].begin(), d.factorAxes[f].end());
  return s;
}

static bool inGroup(const xf::OpShardingRule &rule, int group, int operand) {
  return group >= 0 && group < static_cast<int>(rule.linearGroups.size()) &&
         llvm::is_contained(rule.linearGroups[group], operand);
}

TensorSharding sharding::operandSharding(const xf::OpShardingRule &rule, int i,
                                         const OpDecision &d) {
  TensorSharding s = project(rule.operands[i], d);
  if (inGroup(rule, d.linearGroup, i))
    s.addPartial(d.linearPartial);
  return s;
}

TensorSharding sharding::resultSharding(const xf::OpShardingRule &rule, int i,
                                        const OpDecision &d) {
  const xf::TensorFactors &tensor = rule.results[i];
  TensorSharding s = project(tensor, d);
  for (size_t f = 0; f < rule.factors.size(); ++f) {
    if (d.factorAxes[f].empty() || rule.factors[f].kind == xf::FactorKind::Replicated)
      continue;
    bool present = llvm::any_of(tensor, [&](const xf::DimFactors &dim) {
      return llvm::is_contained(dim, static_cast<int>(f));
    });
    if (present)
      continue;
    if (rule.factors[f].logSumExp && !llvm::is_contained(rule.lseSumResults, i))
      continue;
    s.addPartial(d.factorAxes[f]);
  }
  s.addPartial(d.linearPartial);
  return s;
}

bool sharding::proposeFactors(const xf::OpShardingRule &rule, const xf::TensorFactors &tensor,
                              const TensorSharding &sharding, const Mesh &mesh,
                              SmallVectorImpl<std::optional<AxisList>> &proposal,
                              bool perDim) {
  if (static_cast<int64_t>(tensor.size()) != sharding.rank())
    return false;
  for (size_t dim = 0; dim < tensor.size(); ++dim) {
    const AxisList &axes = sharding.dims[dim];
    if (tensor[dim].empty()) {
      if (!axes.empty() && !perDim)
        return false;
      continue;
    }
    int major = tensor[dim].front();
    if (!axes.empty() && rule.factors[major].size % mesh.size(axes) != 0) {
      if (!perDim)
        return false;
      continue;
    }
    proposal[major] = axes;
    for (size_t k = 1; k < tensor[dim].size(); ++k)
      proposal[tensor[dim][k]] = AxisList{};
  }
  return true;
}

bool sharding::isValidDecision(const xf::OpShardingRule &rule, const OpDecision &d,
                               const Mesh &mesh, std::string *why) {
  auto outOfRange = [&](ArrayRef<Axis> axes) {
    return llvm::any_of(axes, [&](Axis a) { return a < 0 || a >= mesh.rank(); });
  };
  if (d.factorAxes.size() != rule.factors.size() || outOfRange(d.linearPartial) ||
      llvm::any_of(d.factorAxes, [&](const AxisList &a) { return outOfRange(a); })) {
    if (why)
      *why = "a mesh axis is out of range (the mesh " + mesh.str() + " has " +
             std::to_string(mesh.rank()) + " axes)";
    return false;
  }
  AxisList used(d.linearPartial.begin(), d.linearPartial.end());
  for (size_t f = 0; f < rule.factors.size(); ++f) {
    const AxisList &axes = d.factorAxes[f];
    if (axes.empty())
      continue;
    if (rule.factors[f].kind == xf::FactorKind::Replicated) {
      if (why)
        *why = "factor " + std::to_string(f) + " must stay whole";
      return false;
    }
    if (rule.factors[f].size % mesh.size(axes) != 0) {
      if (why)
        *why = "factor " + std::to_string(f) + " of size " + std::to_string(rule.factors[f].size) +
               " is not divisible by " + mesh.axesName(axes) + " (" +
               std::to_string(mesh.size(axes)) + ")";
      return false;
    }
    for (Axis a : axes) {
      if (llvm::is_contained(used, a)) {
        if (why)
          *why = "mesh axis " + mesh.names[a] + " splits two factors";
        return false;
      }
      used.push_back(a);
    }
  }
  // Only the major factor of a dim may be split.
  auto checkTensor = [&](const xf::TensorFactors &tensor) {
    for (const xf::DimFactors &dim : tensor)
      for (size_t k = 1; k < dim.size(); ++k)
        if (!d.factorAxes[dim[k]].empty())
          return false;
    return true;
  };
  for (const auto &t : rule.operands)
    if (!checkTensor(t)) {
      if (why)
        *why = "a minor factor of a merged dimension is split";
      return false;
    }
  for (const auto &t : rule.results)
    if (!checkTensor(t)) {
      if (why)
        *why = "a minor factor of a merged dimension is split";
      return false;
    }
  return true;
}

Value sharding::annotatedValue(Value v) {
  while (auto ann = v.getDefiningOp<shard::ShardOp>()) {
    if (ann.getAnnotateForUsers())
      break;
    v = ann.getSrc();
  }
  return v;
}

shard::ShardOp sharding::resultAnnotation(Value value) {
  for (Operation *user : value.getUsers())
    if (auto s = dyn_cast<shard::ShardOp>(user))
      if (!s.getAnnotateForUsers() && s.getSrc() == value)
        return s;
  return {};
}

TensorSharding sharding::annotationSharding(shard::ShardOp op) {
  auto type = cast<RankedTensorType>(op.getResult().getType());
  TensorSharding s;
  if (auto def = op.getSharding().getDefiningOp<shard::ShardingOp>())
    s = TensorSharding::fromSplitAttr(def.getSplitAxes(), type.getRank());
  else
    s = TensorSharding::replicated(type.getRank());
  if (auto p = op->getAttrOfType<DenseI16ArrayAttr>(kPartialAttr))
    s.addPartial(p.asArrayRef());
  return s;
}

ReturnTargets::ReturnTargets(func::FuncOp func) : func_(func) {
  llvm::StringMap<int> byState, byParam;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (auto st = func.getArgAttrOfType<StringAttr>(i, xf::XfDialect::kStateAttrName))
      byState.try_emplace(st.getValue(), i);
    if (auto p = func.getArgAttrOfType<xf::ParamAttr>(i, xf::XfDialect::kParamAttrName))
      byParam.try_emplace(p.getName(), i);
  }
  for (unsigned k = 0; k < func.getNumResults(); ++k) {
    int arg = -1;
    if (auto st = func.getResultAttrOfType<StringAttr>(k, xf::XfDialect::kStateAttrName))
      arg = byState.count(st.getValue()) ? byState.lookup(st.getValue()) : -1;
    else if (auto g = func.getResultAttrOfType<StringAttr>(k, xf::XfDialect::kGradAttrName))
      arg = byParam.count(g.getValue()) ? byParam.lookup(g.getValue()) : -1;
    argOf_.push_back(arg);
  }
}

std::optional<TensorSharding>
ReturnTargets::target(unsigned index,
                      llvm::function_ref<const TensorSharding *(Value)> argSharding) const {
  auto type = dyn_cast<RankedTensorType>(func_.getFunctionType().getResult(index));
  if (!type)
    return std::nullopt;
  if (argOf_[index] < 0)
    return TensorSharding::replicated(type.getRank());
  if (const TensorSharding *s = argSharding(func_.getArgument(argOf_[index])))
    return s->withoutPartial();
  return std::nullopt;
}

LogicalResult sharding::verifyShardingOps(func::FuncOp func, const Mesh &mesh) {
  bool ok = true;
  func.walk([&](shard::ShardingOp op) {
    for (shard::GridAxesAttr dim : op.getSplitAxes().getAxes())
      for (Axis a : dim.asArrayRef())
        if (a < 0 || a >= mesh.rank()) {
          op.emitError() << "split axis " << a << " is not an axis of the mesh " << mesh.str()
                         << " (" << mesh.rank() << " axes)";
          ok = false;
          return;
        }
  });
  return success(ok);
}

FailureOr<cost::HardwareDesc> sharding::loadHardware(Operation *where, llvm::StringRef name) {
  std::string error;
  FailureOr<cost::HardwareDesc> hw = cost::HardwareDesc::byName(name.str(), error);
  if (failed(hw))
    where->emitError() << error;
  return hw;
}

double sharding::tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  unsigned bits = t.getElementType().getIntOrFloatBitWidth();
  return static_cast<double>(t.getNumElements()) * (bits / 8.0);
}
