//===- Einsum.h - einsum equations of xf.matmul -----------------*- C++ -*-===//
//
// Parses and classifies `lhs,rhs->out` equations. The classification (batch,
// free, contracted letters) is shared by the verifier, the reference executor
// (which maps every equation onto one batched GEMM) and the sharding rules.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_DIALECTS_XF_EINSUM_H
#define SHARDC_DIALECTS_XF_EINSUM_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace shardc::xf {

/// A parsed two-operand einsum equation.
struct Einsum {
  std::string lhs, rhs, out;
  std::string batch;      ///< in lhs, rhs and out (in out order)
  std::string lhsFree;    ///< in lhs and out only (M letters, in out order)
  std::string rhsFree;    ///< in rhs and out only (N letters, in out order)
  std::string contracted; ///< in lhs and rhs, not in out (K letters, lhs order)

  /// Parses `eq`; on failure returns nullopt and sets `error`.
  static std::optional<Einsum> parse(llvm::StringRef eq, std::string &error);

  /// Checks operand ranks and sizes against the equation and computes the
  /// result shape. On failure returns nullopt and sets `error`.
  std::optional<llvm::SmallVector<int64_t>>
  inferShape(llvm::ArrayRef<int64_t> lhsShape, llvm::ArrayRef<int64_t> rhsShape,
             std::string &error) const;
};

} // namespace shardc::xf

#endif // SHARDC_DIALECTS_XF_EINSUM_H
