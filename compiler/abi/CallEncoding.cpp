//===- CallEncoding.cpp - an xf or shard op as a runtime call -------------===//

#include "compiler/abi/CallEncoding.h"

#include "compiler/executor/Executor.h"
#include "compiler/executor/MeshSimulation.h"
#include "dialects/rt/RtDialect.h"
#include "dialects/xf/XfInterfaces.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;

namespace shardc::abi {

FailureOr<const OpSpec *> specOf(Operation *op, StringRef who) {
  const OpSpec *spec = findOp(op->getName().getStringRef());
  if (!spec)
    return op->emitError() << who << ": the runtime has no kernel for '" << op->getName()
                           << "' (runtime/abi/OpTable.cpp lists the ops it runs)";
  return spec;
}

FailureOr<DictionaryAttr> encodeCallAttrs(Operation *op, const OpSpec &spec, StringRef who) {
  // Bring each attribute to the table's encoding (f64 floats, i64 integers,
  // the reduction kind as a string); what it then is, the rt dialect's
  // check of calls decides.
  Builder b(op->getContext());
  NamedAttrList attrs;
  for (const AttrSpec &a : spec.attrs) {
    if (spec.collective && StringRef(a.name) == "grid_axes")
      continue; // the communicator: rt.collective's `axes`
    Attribute v = op->getAttr(a.name);
    if (!v)
      continue;
    if (auto f = dyn_cast<FloatAttr>(v); f && a.kind == AttrKind::F64)
      v = b.getF64FloatAttr(f.getValueAsDouble());
    else if (auto i = dyn_cast<IntegerAttr>(v); i && a.kind == AttrKind::I64)
      v = b.getI64IntegerAttr(i.getValue().getSExtValue());
    else if (auto red = dyn_cast<shard::ReductionKindAttr>(v))
      v = b.getStringAttr(shard::stringifyReductionKind(red.getValue()));
    attrs.append(a.name, v);
  }
  DictionaryAttr dict = attrs.getDictionary(op->getContext());
  if (failed(rt_dialect::verifyCallAttributes(op, spec, dict)))
    return op->emitError() << who << ": the op's attributes do not match the op table";
  return dict;
}

FailureOr<CallAxes> encodeCallAxes(Operation *op, const sharding::Mesh *mesh, StringRef who) {
  CallAxes axes;
  if (!op->hasAttr(sharding::kFactorAxesAttr))
    return axes;
  Builder b(op->getContext());
  // The verifier has checked xf.factor_axes against the rule and the grid;
  // OpPlacement's errors still end as a diagnostic, never as an exception.
  SmallVector<Attribute> ins, res;
  try {
    exec::OpPlacement place(op, mesh, 0);
    auto dimsOf = [&](Value v, bool result, unsigned i) {
      SmallVector<Attribute> dims;
      for (unsigned d = 0; d < cast<ShapedType>(v.getType()).getRank(); ++d) {
        exec::OpPlacement::Dim dim = result ? place.resultDim(i, d) : place.operandDim(i, d);
        dims.push_back(b.getDenseI16ArrayAttr(dim.axes));
      }
      return b.getArrayAttr(dims);
    };
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      ins.push_back(dimsOf(v, false, i));
    for (auto [i, v] : llvm::enumerate(op->getResults()))
      res.push_back(dimsOf(v, true, i));
  } catch (const rt::Error &e) {
    return op->emitError() << who << ": " << e.what();
  }
  axes.operandAxes = b.getArrayAttr(ins);
  axes.resultAxes = b.getArrayAttr(res);
  if (auto rule = dyn_cast<xf::ShardingRuleOpInterface>(op)) {
    xf::OpShardingRule r = rule.getShardingRule();
    auto factorAxes = op->getAttrOfType<ArrayAttr>(sharding::kFactorAxesAttr);
    for (size_t f = 0; f < r.factors.size() && f < factorAxes.size(); ++f)
      if (auto a = dyn_cast<DenseI16ArrayAttr>(factorAxes[f]); a && r.factors[f].normalized)
        axes.tokenAxes.append(a.asArrayRef().begin(), a.asArrayRef().end());
  }
  return axes;
}

namespace {

nlohmann::json attrJson(Attribute a) {
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  if (auto i = dyn_cast<IntegerAttr>(a))
    return i.getValue().getSExtValue();
  if (isa<UnitAttr>(a))
    return true;
  if (auto s = dyn_cast<StringAttr>(a))
    return s.str();
  if (auto arr = dyn_cast<DenseI64ArrayAttr>(a))
    return std::vector<int64_t>(arr.asArrayRef().begin(), arr.asArrayRef().end());
  if (auto arr = dyn_cast<DenseI16ArrayAttr>(a))
    return std::vector<int>(arr.asArrayRef().begin(), arr.asArrayRef().end());
  if (auto arr = dyn_cast<ArrayAttr>(a)) {
    nlohmann::json j = nlohmann::json::array();
    for (Attribute e : arr)
      j.push_back(attrJson(e));
    return j;
  }
  return nullptr; // not produced by encodeCallAttrs / encodeCallAxes
}

/// Per buffer, per dim axes as the runtime's Call holds them.
std::vector<std::vector<rt::Axes>> axesOf(ArrayAttr perBuffer) {
  std::vector<std::vector<rt::Axes>> out;
  if (!perBuffer)
    return out;
  for (Attribute dims : perBuffer) {
    std::vector<rt::Axes> &buffer = out.emplace_back();
    for (Attribute d : cast<ArrayAttr>(dims)) {
      auto a = cast<DenseI16ArrayAttr>(d).asArrayRef();
      buffer.emplace_back(a.begin(), a.end());
    }
  }
  return out;
}

} // namespace

FailureOr<rt::Call> encodeCall(Operation *op, const sharding::Mesh *mesh, StringRef who) {
  FailureOr<const OpSpec *> spec = specOf(op, who);
  if (failed(spec))
    return failure();
  FailureOr<DictionaryAttr> attrs = encodeCallAttrs(op, **spec, who);
  FailureOr<CallAxes> axes = encodeCallAxes(op, mesh, who);
  if (failed(attrs) || failed(axes))
    return failure();
  rt::Call call;
  call.op = (*spec)->name;
  auto typeOf = [&](Type t) -> FailureOr<rt::TensorType> {
    auto s = exec::tensorSpec(t);
    if (failed(s))
      return op->emitError() << who << ": type " << t
                             << " is not a static tensor of f32, f64, bf16, f16 or i32";
    return rt::TensorType{s->first, s->second};
  };
  for (Value v : op->getOperands()) {
    FailureOr<rt::TensorType> t = typeOf(v.getType());
    if (failed(t))
      return failure();
    call.operands.push_back(*t);
  }
  for (Value v : op->getResults()) {
    FailureOr<rt::TensorType> t = typeOf(v.getType());
    if (failed(t))
      return failure();
    call.results.push_back(*t);
  }
  for (NamedAttribute a : *attrs)
    call.attrs[a.getName().str()] = attrJson(a.getValue());
  if (!axes->tokenAxes.empty())
    call.attrs["token_axes"] = std::vector<int>(axes->tokenAxes.begin(), axes->tokenAxes.end());
  call.operandAxes = axesOf(axes->operandAxes);
  call.resultAxes = axesOf(axes->resultAxes);
  return call;
}


} // namespace shardc::abi
