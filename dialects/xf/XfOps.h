//===- XfOps.h - xf operations ----------------------------------*- C++ -*-===//
#ifndef SHARDC_DIALECTS_XF_XFOPS_H
#define SHARDC_DIALECTS_XF_XFOPS_H

#include "dialects/xf/XfDialect.h"
#include "dialects/xf/XfInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/xf/XfOps.h.inc"

#endif // SHARDC_DIALECTS_XF_XFOPS_H
