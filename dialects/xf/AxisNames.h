//===- AxisNames.h - what a mesh axis name and size may be -------*- C++ -*-===//
//
// One definition for the xf verifier (xf.axis_names on shard.grid) and for
// `--mesh` parsing (sharding::Mesh::parse).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_DIALECTS_XF_AXISNAMES_H
#define SHARDC_DIALECTS_XF_AXISNAMES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace shardc::xf {

/// Largest number of devices a grid may have (2^24): sizes beyond it are
/// typos or overflow, never a machine.
inline constexpr int64_t kMaxDevices = int64_t(1) << 24;

/// An axis name is an identifier: [A-Za-z_][A-Za-z0-9_]*.
inline bool isAxisName(llvm::StringRef s) {
  if (s.empty() || !(llvm::isAlpha(s[0]) || s[0] == '_'))
    return false;
  return llvm::all_of(s, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

/// Every size positive and their product at most kMaxDevices (checked
/// without overflow).
inline bool withinDeviceLimit(llvm::ArrayRef<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s <= 0 || s > kMaxDevices / n)
      return false;
    n *= s;
  }
  return true;
}

} // namespace shardc::xf

#endif // SHARDC_DIALECTS_XF_AXISNAMES_H
