//===- XfInterfaces.h - xf op interfaces ------------------------*- C++ -*-===//
#ifndef SHARDC_DIALECTS_XF_XFINTERFACES_H
#define SHARDC_DIALECTS_XF_XFINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"
#include "dialects/xf/ShardingRule.h"

#include "dialects/xf/XfInterfaces.h.inc"

#endif // SHARDC_DIALECTS_XF_XFINTERFACES_H
