//===- RtDialect.h - the rt dialect -----------------------------*- C++ -*-===//
#ifndef SHARDC_DIALECTS_RT_RTDIALECT_H
#define SHARDC_DIALECTS_RT_RTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/rt/RtDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/rt/RtTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/rt/RtOps.h.inc"

namespace shardc::abi {
struct OpSpec;
}

namespace shardc::rt_dialect {
/// Checks a call's attributes against its op table entry (runtime/abi):
/// every attribute one of the op's and in the table's encoding (f64 floats,
/// i64 integers, unit, dense i64 arrays, strings, dense i16 mesh axes), the
/// required ones present. Errors are emitted at `op`. rt.kernel and
/// rt.collective verify with it; lowering checks what it encodes with it.
mlir::LogicalResult verifyCallAttributes(mlir::Operation *op, const shardc::abi::OpSpec &spec,
                                         mlir::DictionaryAttr attrs);
} // namespace shardc::rt_dialect

#endif // SHARDC_DIALECTS_RT_RTDIALECT_H
