//===- BufferAccess.h - which bytes an rt op reads and writes ---*- C++ -*-===//
//
// The schedule passes move rt ops past each other only where no byte one of
// them writes is touched by the other. Buffers are rt.view ranges of an arena,
// so the check is interval overlap.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SCHEDULE_BUFFERACCESS_H
#define SHARDC_PASSES_SCHEDULE_BUFFERACCESS_H

#include "dialects/rt/RtDialect.h"
#include "passes/memory/MemoryPlan.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace shardc::schedule {

/// Bytes [begin, end) of one arena.
struct Range {
  int32_t arena;
  int64_t begin, end;
  bool overlaps(const Range &o) const {
    return arena == o.arena && begin < o.end && o.begin < end;
  }
};

/// The range of a buffer defined by rt.view; std::nullopt for anything else.
inline std::optional<Range> rangeOf(mlir::Value v) {
  auto view = v.getDefiningOp<rt_dialect::ViewOp>();
  if (!view)
    return std::nullopt;
  int64_t begin = static_cast<int64_t>(view.getOffset());
  return Range{static_cast<int32_t>(view.getArena()), begin,
               begin + memory::byteSize(view.getType())};
}

/// What an op reads and writes. A collective or copy in flight (its start,
/// its wait, or the blocking op) reads its input and writes its output. `known` is
/// false for ops the schedule must not move anything past.
struct Access {
  llvm::SmallVector<Range, 4> reads, writes;
  bool known = true;

  bool conflicts(const Access &o) const {
    if (!known || !o.known)
      return true;
    for (const Range &w : writes) {
      for (const Range &r : o.reads)
        if (w.overlaps(r))
          return true;
      for (const Range &x : o.writes)
        if (w.overlaps(x))
          return true;
    }
    for (const Range &r : reads)
      for (const Range &x : o.writes)
        if (r.overlaps(x))
          return true;
    return false;
  }
};

inline Access accessOf(mlir::Operation *op) {
  Access a;
  auto add = [&](llvm::SmallVectorImpl<Range> &list, mlir::Value v) {
    if (auto r = rangeOf(v))
      list.push_back(*r);
    else
      a.known = false;
  };
  if (auto k = llvm::dyn_cast<rt_dialect::KernelOp>(op)) {
    for (mlir::Value v : k.getIns())
      add(a.reads, v);
    for (mlir::Value v : k.getOuts())
      add(a.writes, v);
    if (mlir::Value scratch = k.getScratch()) // written while the kernel runs
      add(a.writes, scratch);
  } else if (auto c = llvm::dyn_cast<rt_dialect::CollectiveOp>(op)) {
    add(a.reads, c.getInput());
    add(a.writes, c.getOutput());
    if (mlir::Value scratch = c.getScratch()) // staged through while in flight
      add(a.writes, scratch);
  } else if (auto s = llvm::dyn_cast<rt_dialect::CollectiveStartOp>(op)) {
    add(a.reads, s.getInput());
    add(a.writes, s.getOutput());
    if (mlir::Value scratch = s.getScratch())
      add(a.writes, scratch);
  } else if (auto s = llvm::dyn_cast<rt_dialect::CopyStartOp>(op)) {
    add(a.reads, s.getSource());
    add(a.writes, s.getTarget());
  } else if (auto w = llvm::dyn_cast<rt_dialect::WaitOp>(op)) {
    mlir::Operation *s = w.getEvent().getDefiningOp();
    if (!s || !llvm::isa<rt_dialect::CollectiveStartOp, rt_dialect::CopyStartOp>(s))
      a.known = false;
    else
      return accessOf(s);
  } else if (auto c = llvm::dyn_cast<rt_dialect::CopyOp>(op)) {
    add(a.reads, c.getSource());
    add(a.writes, c.getTarget());
  } else if (!llvm::isa<rt_dialect::ViewOp>(op)) {
    a.known = false; // the terminator, or anything unknown
  }
  return a;
}

} // namespace shardc::schedule

#endif // SHARDC_PASSES_SCHEDULE_BUFFERACCESS_H
