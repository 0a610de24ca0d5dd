//===- ArgAttrs.h - set attributes on many function arguments at once -*- C++ -*-===//
//
// func.func keeps its arguments' attributes as one array of dictionaries:
// `setArgAttr` on one argument rebuilds (and uniques) the whole array, so a
// pass that marks every argument of a training step that way is quadratic in
// its arguments (GPT-2 1.5B: ~2,400 parameters, moments and copies). Passes
// that annotate many arguments collect the attributes here and set the array
// once. The same for results (a step returns every next-step state).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_ARGATTRS_H
#define SHARDC_PASSES_ARGATTRS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OperationSupport.h"

#include "llvm/ADT/SmallVector.h"

namespace shardc {

/// The argument (or, with `results`, the result) attributes of `func`,
/// edited in memory; `commit` writes them back as one array. Nothing else may
/// change `func`'s arguments or results or their attributes between
/// construction and commit.
class ArgAttrEditor {
public:
  explicit ArgAttrEditor(mlir::func::FuncOp func, bool results = false)
      : func_(func), results_(results) {
    unsigned n = results ? func.getNumResults() : func.getNumArguments();
    lists_.reserve(n);
    for (unsigned i = 0; i < n; ++i)
      lists_.emplace_back(results ? func.getResultAttrDict(i) : func.getArgAttrDict(i));
  }
  void set(unsigned arg, llvm::StringRef name, mlir::Attribute value) {
    lists_[arg].set(mlir::StringAttr::get(func_.getContext(), name), value);
    changed_ = true;
  }
  void commit() {
    if (!changed_)
      return;
    llvm::SmallVector<mlir::DictionaryAttr> dicts;
    dicts.reserve(lists_.size());
    for (mlir::NamedAttrList &l : lists_)
      dicts.push_back(l.getDictionary(func_.getContext()));
    if (results_)
      func_.setAllResultAttrs(dicts);
    else
      func_.setAllArgAttrs(dicts);
    changed_ = false;
  }

private:
  mlir::func::FuncOp func_;
  bool results_ = false;
  llvm::SmallVector<mlir::NamedAttrList> lists_;
  bool changed_ = false;
};

} // namespace shardc

#endif // SHARDC_PASSES_ARGATTRS_H
