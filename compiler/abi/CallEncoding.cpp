//===- CallEncoding.cpp - an xf or shard op as a runtime call -------------===//

#include "compiler/abi/CallEncoding.h"

#include "dialects/xf/XfDialect.h"
#include "dialects/rt/RtDialect.h"
#include "dialects/xf/XfInterfaces.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace shardc;

//===----------------------------------------------------------------------===//
// Types and names
//===----------------------------------------------------------------------===//

FailureOr<rt::DType> shardc::abi::dtypeOf(Type t) {
  if (t.isF32())
    return rt::DType::F32;
  if (t.isF64())
    return rt::DType::F64;
  if (t.isBF16())
    return rt::DType::BF16;
  if (t.isF16())
    return rt::DType::F16;
  if (t.isInteger(32))
    return rt::DType::I32;
  return failure();
}

FailureOr<std::pair<rt::DType, std::vector<int64_t>>> shardc::abi::tensorSpec(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return failure();
  FailureOr<rt::DType> dt = dtypeOf(t.getElementType());
  if (failed(dt))
    return failure();
  return std::make_pair(*dt, std::vector<int64_t>(t.getShape().begin(), t.getShape().end()));
}


std::string shardc::abi::argumentName(func::FuncOp func, unsigned i) {
  std::string s = "argument #" + std::to_string(i);
  if (auto p = func.getArgAttrOfType<xf::ParamAttr>(i, xf::XfDialect::kParamAttrName))
    return s + " (param '" + p.getName().str() + "')";
  if (auto in = func.getArgAttrOfType<StringAttr>(i, xf::XfDialect::kInputAttrName))
    return s + " (input '" + in.str() + "')";
  if (auto st = func.getArgAttrOfType<StringAttr>(i, xf::XfDialect::kStateAttrName))
    return s + " (state '" + st.str() + "')";
  return s;
}

std::string shardc::abi::resultName(func::FuncOp func, unsigned i) {
  std::string s = "result #" + std::to_string(i);
  for (auto [attr, kind] : {std::pair{xf::XfDialect::kReportAttrName, "report"},
                            {xf::XfDialect::kStateAttrName, "state"},
                            {xf::XfDialect::kGradAttrName, "grad"}})
    if (auto a = func.getResultAttrOfType<StringAttr>(i, attr))
      return s + " (" + kind + " '" + a.str() + "')";
  return s;
}

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
  // what it cannot see still ends as a diagnostic.
  auto fail = [&](const llvm::Twine &why) {
    return op->emitError() << who << ": '" << sharding::kFactorAxesAttr << "' " << why;
  };
  auto attr = op->getAttrOfType<ArrayAttr>(sharding::kFactorAxesAttr);
  auto iface = dyn_cast<xf::ShardingRuleOpInterface>(op);
  if (!attr)
    return fail("must be an array of array<i16>");
  if (!iface)
    return fail("is on an op without a sharding rule");
  xf::OpShardingRule rule = iface.getShardingRule();
  if (attr.size() != rule.factors.size())
    return fail("has " + llvm::Twine(attr.size()) + " entries but the op's sharding rule has " +
                llvm::Twine(rule.factors.size()) + " factors");
  SmallVector<ArrayRef<int16_t>> factorAxes;
  for (auto [f, entry] : llvm::enumerate(attr)) {
    auto list = dyn_cast<DenseI16ArrayAttr>(entry);
    if (!list)
      return fail("must be an array of array<i16>");
    for (int16_t a : list.asArrayRef()) {
      if (!mesh)
        return fail("splits factor " + llvm::Twine(f) +
                    " outside a partitioned function (no xf.grid)");
      if (a < 0 || a >= mesh->rank())
        return fail("names grid axis " + llvm::Twine(a) + " outside the mesh " + mesh->str());
    }
    factorAxes.push_back(list.asArrayRef());
  }
  // A dim is split over the axes of its major factor (the first); a minor
  // factor may not be split.
  SmallVector<Attribute> ins, res;
  auto dimsOf = [&](Value v, ArrayRef<xf::TensorFactors> tensors, unsigned i,
                    bool result) -> FailureOr<Attribute> {
    SmallVector<Attribute> dims;
    for (unsigned d = 0; d < cast<ShapedType>(v.getType()).getRank(); ++d) {
      if (i >= tensors.size() || d >= tensors[i].size())
        return fail("cannot be placed: the op's sharding rule does not describe dim " +
                    llvm::Twine(d) + " of " + (result ? "result #" : "operand #") +
                    llvm::Twine(i));
      const xf::DimFactors &factors = tensors[i][d];
      for (size_t k = 1; k < factors.size(); ++k)
        if (!factorAxes[factors[k]].empty())
          return fail("splits factor " + llvm::Twine(factors[k]) +
                      ", which is not the major factor of its dim");
      dims.push_back(b.getDenseI16ArrayAttr(factors.empty() ? ArrayRef<int16_t>()
                                                            : factorAxes[factors[0]]));
    }
    return b.getArrayAttr(dims);
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    FailureOr<Attribute> dims = dimsOf(v, rule.operands, i, false);
    if (failed(dims))
      return failure();
    ins.push_back(*dims);
  }
  for (auto [i, v] : llvm::enumerate(op->getResults())) {
    FailureOr<Attribute> dims = dimsOf(v, rule.results, i, true);
    if (failed(dims))
      return failure();
    res.push_back(*dims);
  }
  axes.operandAxes = b.getArrayAttr(ins);
  axes.resultAxes = b.getArrayAttr(res);
  for (size_t f = 0; f < rule.factors.size(); ++f)
    if (rule.factors[f].normalized)
      axes.tokenAxes.append(factorAxes[f].begin(), factorAxes[f].end());
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
    auto s = tensorSpec(t);
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
