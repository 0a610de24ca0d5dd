//===- RtDialect.cpp - the rt dialect -------------------------------------===//

#include "dialects/rt/RtDialect.h"

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

LogicalResult KernelOp::verify() {
  if (getOuts().empty())
    return emitOpError("a kernel writes at least one buffer");
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
  return success();
}

/// What rt.collective and rt.collective_start check alike.
template <class Op> static LogicalResult verifyCollective(Op op) {
  static constexpr llvm::StringLiteral kinds[] = {"shard.all_gather", "shard.all_reduce",
                                                  "shard.reduce_scatter", "shard.all_slice",
                                                  "shard.all_to_all"};
  if (!llvm::is_contained(kinds, op.getKind()))
    return op.emitOpError("unknown collective '") << op.getKind() << "'";
  if (op.getAxes().empty())
    return op.emitOpError("a collective needs at least one mesh axis");
  if (op.getInput().getType().getElementType() != op.getOutput().getType().getElementType())
    return op.emitOpError("input and output element types differ");
  return success();
}

LogicalResult CollectiveOp::verify() { return verifyCollective(*this); }

LogicalResult CollectiveStartOp::verify() {
  if (failed(verifyCollective(*this)))
    return failure();
  if (!getEvent().hasOneUse() || !isa<WaitOp>(*getEvent().getUsers().begin()))
    return emitOpError("the event must be waited on exactly once (one rt.wait)");
  return success();
}

LogicalResult WaitOp::verify() {
  Operation *start = getEvent().getDefiningOp();
  if (!start || !isa<CollectiveStartOp>(start))
    return emitOpError("waits on an event that no rt.collective_start produced");
  if (start->getBlock() == (*this)->getBlock() && !start->isBeforeInBlock(*this))
    return emitOpError("waits before its collective starts");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/rt/RtOps.cpp.inc"
