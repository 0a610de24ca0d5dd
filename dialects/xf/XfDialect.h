//===- XfDialect.h - xf dialect ---------------------------------*- C++ -*-===//
#ifndef SHARDC_DIALECTS_XF_XFDIALECT_H
#define SHARDC_DIALECTS_XF_XFDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/xf/XfDialect.h.inc"
#include "dialects/xf/XfEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/xf/XfAttrs.h.inc"

#endif // SHARDC_DIALECTS_XF_XFDIALECT_H
