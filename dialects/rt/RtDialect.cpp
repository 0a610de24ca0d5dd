//===- RtDialect.cpp - the rt dialect -------------------------------------===//

#include "dialects/rt/RtDialect.h"
#include "runtime/abi/OpTable.h"

using namespace mlir;
using namespace shardc::rt_dialect;

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include "dialects/rt/RtDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/rt/RtTypes.cpp.inc"

void RtDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/rt/RtOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/rt/RtTypes.cpp.inc"
      >();
}

LogicalResult ViewOp::verify() {
  // I32Attr/I64Attr getters are unsigned: read the signed values.
  int64_t arena = static_cast<int32_t>(getArena()), offset = static_cast<int64_t>(getOffset());
  if (arena < 0)
    return emitOpError("arena index must be non-negative, got ") << arena;
  if (offset < 0)
    return emitOpError("offset must be non-negative, got ") << offset;
  if (!getBuffer().getType().getLayout().isIdentity())
    return emitOpError("views are contiguous row-major buffers (identity layout)");
  return success();
}

LogicalResult shardc::rt_dialect::verifyCallAttributes(Operation *op,
                                                      const shardc::abi::OpSpec &spec,
                                                      DictionaryAttr attrs) {
  using shardc::abi::AttrKind;
  for (NamedAttribute n : attrs) {
    const shardc::abi::AttrSpec *a = shardc::abi::findAttr(spec, n.getName().getValue());
    if (!a)
      return op->emitOpError() << "attribute '" << n.getName().getValue() << "' is not one of "
                               << spec.name << "'s (runtime/abi/OpTable.cpp)";
    Attribute v = n.getValue();
    bool ok = false;
    switch (a->kind) {
    case AttrKind::F64:
      ok = isa<FloatAttr>(v) && cast<FloatAttr>(v).getType().isF64();
      break;
    case AttrKind::I64:
      ok = isa<IntegerAttr>(v) && !cast<IntegerAttr>(v).getType().isInteger(1);
      break;
    case AttrKind::Unit:
      ok = isa<UnitAttr>(v);
      break;
    case AttrKind::I64Array:
      ok = isa<DenseI64ArrayAttr>(v);
      break;
    case AttrKind::String:
    case AttrKind::Reduction:
      ok = isa<StringAttr>(v);
      break;
    case AttrKind::Axes:
      ok = isa<DenseI16ArrayAttr>(v);
      break;
    }
    if (!ok)
      return op->emitOpError() << "attribute '" << a->name << "' must be "
                               << shardc::abi::attrKindName(a->kind) << ", not " << v;
  }
  for (const shardc::abi::AttrSpec &a : spec.attrs)
    if (a.required && !attrs.get(a.name))
      return op->emitOpError() << "attribute '" << a.name << "' ("
                               << shardc::abi::attrKindName(a.kind) << ") is missing";
  return success();
}

/// A planned scratch (rt.kernel, rt.collective, rt.collective_start): a
/// non-empty 1-d memref of i8.
static LogicalResult verifyScratch(Operation *op, Value scratch) {
  if (!scratch)
    return success();
  auto t = cast<MemRefType>(scratch.getType());
  if (t.getRank() != 1 || !t.getElementType().isInteger(8) || t.getDimSize(0) <= 0)
    return op->emitOpError("scratch must be a non-empty 1-d memref of i8, not ") << t;
  return success();
}

LogicalResult KernelOp::verify() {
  const shardc::abi::OpSpec *spec = shardc::abi::findOp(getCallee());
  if (!spec || spec->collective)
    return emitOpError("the runtime has no kernel '") << getCallee() << "'";
  if (shardc::abi::listLength(*spec, getIns().size(), getOuts().size()) < 0)
    return emitOpError() << getCallee() << " " << shardc::abi::arityText(*spec) << ", not "
                         << getIns().size() << " operands and " << getOuts().size()
                         << " results";
  if (failed(verifyCallAttributes(*this, *spec, getAttrs())))
    return failure();
  auto checkAxes = [&](std::optional<ArrayAttr> axes, ValueRange buffers,
                       StringRef what) -> LogicalResult {
    if (!axes)
      return success();
    if (axes->size() != buffers.size())
      return emitOpError() << what << " has " << axes->size() << " entries for "
                           << buffers.size() << " buffers";
    for (auto [entry, buffer] : llvm::zip(*axes, buffers)) {
      auto dims = dyn_cast<ArrayAttr>(entry);
      if (!dims || static_cast<int64_t>(dims.size()) !=
                       cast<MemRefType>(buffer.getType()).getRank())
        return emitOpError() << what << ": every entry lists the axes of each dim of its buffer";
    }
    return success();
  };
  if (failed(checkAxes(getOperandAxes(), getIns(), "operand_axes")) ||
      failed(checkAxes(getResultAxes(), getOuts(), "result_axes")))
    return failure();
  return verifyScratch(*this, getScratch());
}

/// What rt.collective and rt.collective_start check alike.
template <class Op> static LogicalResult verifyCollective(Op op) {
  const shardc::abi::OpSpec *spec = shardc::abi::findOp(op.getKind());
  if (!spec || !spec->collective)
    return op.emitOpError("unknown collective '") << op.getKind() << "'";
  if (failed(verifyCallAttributes(op, *spec, op.getAttrs())))
    return failure();
  if (op.getAxes().empty())
    return op.emitOpError("a collective needs at least one mesh axis");
  if (op.getInput().getType().getElementType() != op.getOutput().getType().getElementType())
    return op.emitOpError("input and output element types differ");
  return verifyScratch(op, op.getScratch());
}

LogicalResult CollectiveOp::verify() { return verifyCollective(*this); }

LogicalResult CollectiveStartOp::verify() {
  if (failed(verifyCollective(*this)))
    return failure();
  if (!getEvent().hasOneUse() || !isa<WaitOp>(*getEvent().getUsers().begin()))
    return emitOpError("the event must be waited on exactly once (one rt.wait)");
  return success();
}

LogicalResult CopyStartOp::verify() {
  if (!getEvent().hasOneUse() || !isa<WaitOp>(*getEvent().getUsers().begin()))
    return emitOpError("the event must be waited on exactly once (one rt.wait)");
  return success();
}

LogicalResult WaitOp::verify() {
  Operation *start = getEvent().getDefiningOp();
  if (!start || !isa<CollectiveStartOp, CopyStartOp>(start))
    return emitOpError("waits on an event that no rt.collective_start or rt.copy_start "
                       "produced");
  if (start->getBlock() == (*this)->getBlock() && !start->isBeforeInBlock(*this))
    return emitOpError("waits before its collective starts");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/rt/RtOps.cpp.inc"
