//===- ArgAttrs.h - set attributes on many function arguments at once -*- C++ -*-===//
//
// func.func keeps its arguments' attributes as one array of dictionaries:
// `setArgAttr` on one argument rebuilds (and uniques) the whole array, so a
// pass that marks every argument of a training step that way is quadratic in
// its arguments (GPT-2 1.5B: ~2,400 parameters, moments and copies). Passes
// that annotate many arguments collect the attributes here and set the array
// once.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_ARGATTRS_H
#define SHARDC_PASSES_ARGATTRS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OperationSupport.h"

#include "llvm/ADT/SmallVector.h"

namespace shardc {

/// The argument attributes of `func`, edited in memory; `commit` writes them
/// back as one array. Nothing else may change `func`'s arguments or their
/// attributes between construction and commit.
class ArgAttrEditor {
public:
  explicit ArgAttrEditor(mlir::func::FuncOp func) : func_(func) {
    lists_.reserve(func.getNumArguments());
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      lists_.emplace_back(func.getArgAttrDict(i));
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
    func_.setAllArgAttrs(dicts);
    changed_ = false;
  }

private:
  mlir::func::FuncOp func_;
  llvm::SmallVector<mlir::NamedAttrList> lists_;
  bool changed_ = false;
};

} // namespace shardc

#endif // SHARDC_PASSES_ARGATTRS_H
