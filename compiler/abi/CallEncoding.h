//===- CallEncoding.h - an xf or shard op as a runtime call -----*- C++ -*-===//
//
// The one encoder from an MLIR op to the runtime's call description, by the
// op table (runtime/abi/OpTable.h). Lowering (-xf-lower-to-rt) uses it to
// build rt.kernel / rt.collective; the reference executor uses it to run each
// op through the runtime's own kernel runner. So the compiled step, the
// executor and the table never disagree on an op's attributes or placement.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_ABI_CALLENCODING_H
#define SHARDC_COMPILER_ABI_CALLENCODING_H

#include "compiler/sharding/Sharding.h"
#include "runtime/abi/OpTable.h"
#include "runtime/program/Program.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

namespace shardc::abi {

/// Maps an MLIR element type onto the runtime's dtypes; fails for others.
mlir::FailureOr<rt::DType> dtypeOf(mlir::Type elementType);
/// The runtime type of a statically shaped ranked tensor type.
mlir::FailureOr<std::pair<rt::DType, std::vector<int64_t>>> tensorSpec(mlir::Type type);

/// "argument #3 (param 'wte')", "result #0 (report 'loss')": how errors name
/// a function's arguments and results.
std::string argumentName(mlir::func::FuncOp func, unsigned i);
std::string resultName(mlir::func::FuncOp func, unsigned i);

/// The op table entry of `op`; emits an error naming the op (prefixed with
/// `who`) when the runtime has none.
mlir::FailureOr<const OpSpec *> specOf(mlir::Operation *op, llvm::StringRef who);

/// `op`'s attributes in the table's encoding (f64 floats, i64 integers, unit,
/// dense i64 arrays, strings, dense i16 mesh axes, the reduction kind as a
/// string); the collectives' grid_axes are left out (they become the
/// communicator). Emits an error at `op` for a missing required attribute or
/// one of another kind.
mlir::FailureOr<mlir::DictionaryAttr> encodeCallAttrs(mlir::Operation *op, const OpSpec &spec,
                                                      llvm::StringRef who);

/// Where a rank's block of each operand and result dim lies in a partitioned
/// op (`xf.factor_axes`): per buffer, per dim, the mesh axes splitting it;
/// and the axes of the op's normalized (token) factors, which the
/// cross-entropy ops share their mean over. Null arrays for an op without
/// xf.factor_axes.
struct CallAxes {
  mlir::ArrayAttr operandAxes, resultAxes;
  llvm::SmallVector<int16_t> tokenAxes;
};
mlir::FailureOr<CallAxes> encodeCallAxes(mlir::Operation *op, const sharding::Mesh *mesh,
                                         llvm::StringRef who);

/// The complete call of `op` as the runtime's program holds it (op name,
/// operand and result types, attributes, axes, token_axes); emits an error
/// and fails for an op the runtime cannot run.
mlir::FailureOr<rt::Call> encodeCall(mlir::Operation *op, const sharding::Mesh *mesh,
                                     llvm::StringRef who);

} // namespace shardc::abi

#endif // SHARDC_COMPILER_ABI_CALLENCODING_H
