//===- RtDialect.cpp - the rt dialect -------------------------------------===//

#include "dialects/rt/RtDialect.h"

using namespace mlir;
using namespace shardc::rt_dialect;

#include "dialects/rt/RtDialect.cpp.inc"

void RtDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/rt/RtOps.cpp.inc"
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

LogicalResult CollectiveOp::verify() {
  static constexpr llvm::StringLiteral kinds[] = {"shard.all_gather", "shard.all_reduce",
                                                  "shard.reduce_scatter", "shard.all_slice",
                                                  "shard.all_to_all"};
  if (!llvm::is_contained(kinds, getKind()))
    return emitOpError("unknown collective '") << getKind() << "'";
  if (getAxes().empty())
    return emitOpError("a collective needs at least one mesh axis");
  if (getInput().getType().getElementType() != getOutput().getType().getElementType())
    return emitOpError("input and output element types differ");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/rt/RtOps.cpp.inc"
