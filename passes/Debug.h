//===- Debug.h - per-pass debug output that works in release builds -*- C++ -*-===//
//
// Debian's LLVM is a release build: LLVM_DEBUG compiles to nothing and there
// is no -debug-only. shardc's passes print their traces through this switch
// instead, keyed by the pass flag (each pass's DEBUG_TYPE):
//
//   SHARDC_DEBUG=xf-partition,xf-schedule shardc-opt ...     (or "all")
//   shardc-opt --shardc-debug=xf-propagate-sharding ...
//
// Besides the pass's own lines, every enabled pass gets a summary after it
// runs (instrument(): ops before and after, by dialect, and its time).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_DEBUG_H
#define SHARDC_PASSES_DEBUG_H

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace shardc::debug {

/// Whether the debug output of `type` (a pass flag) is on.
bool enabled(llvm::StringRef type);
/// Turns on a comma-separated list of pass flags ("all" for every pass), in
/// addition to $SHARDC_DEBUG.
void enable(llvm::StringRef list);
/// stderr, after a "[type] " prefix.
llvm::raw_ostream &stream(llvm::StringRef type);
/// Adds the per-pass summary for enabled passes to `pm`.
void instrument(mlir::PassManager &pm);

} // namespace shardc::debug

/// SHARDC_DEBUG(DBGS() << "..."): the statement runs only when the pass's
/// DEBUG_TYPE is enabled.
#define SHARDC_DEBUG(X)                                                                  \
  do {                                                                                   \
    if (::shardc::debug::enabled(DEBUG_TYPE)) {                                          \
      X;                                                                                 \
    }                                                                                    \
  } while (false)
#define DBGS() ::shardc::debug::stream(DEBUG_TYPE)

#endif // SHARDC_PASSES_DEBUG_H
