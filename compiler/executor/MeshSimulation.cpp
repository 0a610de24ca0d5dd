//===- MeshSimulation.cpp - the executor's simulated device mesh ----------===//

#include "compiler/executor/MeshSimulation.h"

#include "compiler/executor/Executor.h"
#include "dialects/xf/XfInterfaces.h"
#include "dialects/xf/XfOps.h"
#include "runtime/cpu/ComputeType.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstring>
#include <map>

using namespace mlir;
using namespace shardc;
using namespace shardc::exec;
using sharding::Axis;
using sharding::AxisList;
using sharding::Mesh;
using sharding::TensorSharding;

//===----------------------------------------------------------------------===//
// Blocks of tensors
//===----------------------------------------------------------------------===//

namespace {

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    s[d - 1] = s[d] * shape[d];
  return s;
}

/// Copies the block of shape `block` at `srcOff` in src to `dstOff` in dst
/// (same dtype), one contiguous innermost run at a time.
void copyBlock(const HostTensor &src, const std::vector<int64_t> &srcOff, HostTensor &dst,
               const std::vector<int64_t> &dstOff, const std::vector<int64_t> &block) {
  int64_t es = rt::dtype_size(src.dtype);
  size_t rank = block.size();
  if (rt::num_elements(block) == 0)
    return;
  if (rank == 0) {
    std::memcpy(dst.bytes.data(), src.bytes.data(), es);
    return;
  }
  std::vector<int64_t> ss = rowMajorStrides(src.shape), ds = rowMajorStrides(dst.shape);
  std::vector<int64_t> idx(rank - 1, 0);
  int64_t outer = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    outer *= block[d];
  int64_t run = block[rank - 1] * es;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t s = srcOff[rank - 1], t = dstOff[rank - 1];
    for (size_t d = 0; d + 1 < rank; ++d) {
      s += (idx[d] + srcOff[d]) * ss[d];
      t += (idx[d] + dstOff[d]) * ds[d];
    }
    std::memcpy(dst.bytes.data() + t * es, src.bytes.data() + s * es, run);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < block[d])
        break;
      idx[d] = 0;
    }
  }
}

/// The block of `shape` at `offset` of t.
HostTensor sliceBlock(const HostTensor &t, const std::vector<int64_t> &offset,
                      const std::vector<int64_t> &shape) {
  HostTensor out(t.dtype, shape);
  copyBlock(t, offset, out, std::vector<int64_t>(shape.size(), 0), shape);
  return out;
}

/// A printable element of a tensor (for mismatch reports).
std::string elementString(const HostTensor &t, int64_t i) {
  return std::to_string(cpu::scalarValue(t.bytes.data() + i * rt::dtype_size(t.dtype), t.dtype));
}

std::string coordsString(const Mesh &mesh, int64_t rank) {
  std::vector<int64_t> c = mesh.coords(rank);
  std::string s;
  for (int a = 0; a < mesh.rank(); ++a)
    s += (a ? "," : "") + mesh.names[a] + "=" + std::to_string(c[a]);
  return "rank " + std::to_string(rank) + " (" + s + ")";
}

/// The sharding of a boundary value; fails on axes outside the mesh or used
/// twice.
FailureOr<TensorSharding> boundarySharding(shard::GridAxesArrayAttr attr, int64_t rank,
                                           const Mesh &mesh) {
  TensorSharding s = TensorSharding::fromSplitAttr(attr, rank);
  std::vector<bool> used(mesh.rank(), false);
  for (const AxisList &axes : s.dims)
    for (Axis a : axes) {
      if (a < 0 || a >= mesh.rank() || used[a])
        return failure();
      used[a] = true;
    }
  return s;
}

/// Offsets of a rank's block of a tensor with `local` shape and sharding s.
std::vector<int64_t> blockOffsets(const TensorSharding &s, const std::vector<int64_t> &local,
                                  const Mesh &mesh, int64_t rank) {
  std::vector<int64_t> coords = mesh.coords(rank), off(local.size(), 0);
  for (size_t d = 0; d < local.size(); ++d)
    off[d] = mesh.shardIndex(s.dims[d], coords) * local[d];
  return off;
}

} // namespace

//===----------------------------------------------------------------------===//
// MeshSimulation
//===----------------------------------------------------------------------===//

FailureOr<std::optional<MeshSimulation>> MeshSimulation::forFunction(func::FuncOp func,
                                                                     bool emitErrors) {
  auto ref = func->getAttrOfType<FlatSymbolRefAttr>(sharding::kGridAttr);
  if (!func->hasAttr(sharding::kGridAttr))
    return std::optional<MeshSimulation>();
  auto fail = [&](const llvm::Twine &msg) -> FailureOr<std::optional<MeshSimulation>> {
    if (emitErrors)
      func.emitError() << msg;
    return failure();
  };
  if (!ref)
    return fail("'" + sharding::kGridAttr + "' must be a symbol reference to a shard.grid");
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(func, ref);
  if (!grid)
    return fail("'" + sharding::kGridAttr + "' names @" + ref.getValue() +
                ", which is not a shard.grid of the module");
  std::optional<Mesh> mesh;
  {
    // Mesh::fromGrid emits its own errors; keep them quiet when asked to.
    std::optional<ScopedDiagnosticHandler> quiet;
    if (!emitErrors)
      quiet.emplace(func.getContext(), [](Diagnostic &) { return success(); });
    FailureOr<Mesh> m = Mesh::fromGrid(grid);
    if (failed(m))
      return failure();
    mesh = std::move(*m);
  }
  return std::optional<MeshSimulation>(MeshSimulation(func, std::move(*mesh)));
}

LogicalResult MeshSimulation::distributeArgument(unsigned i, HostTensor global,
                                                 std::vector<HostTensor> &perRank) const {
  BlockArgument arg = func_.getArgument(i);
  auto spec = tensorSpec(arg.getType());
  if (failed(spec))
    return func_.emitError() << argumentName(func_, i) << " has type " << arg.getType()
                             << "; the executor needs static tensors of f32, f64, bf16, f16 "
                                "or i32";
  const std::vector<int64_t> &local = spec->second;
  auto attr = func_.getArgAttrOfType<shard::GridAxesArrayAttr>(i, sharding::kShardingAttr);
  FailureOr<TensorSharding> s = boundarySharding(attr, local.size(), mesh_);
  if (failed(s))
    return func_.emitError() << argumentName(func_, i) << ": '" << sharding::kShardingAttr
                             << "' names an axis outside the mesh " << mesh_.str()
                             << " or an axis twice";
  std::vector<int64_t> expected = local;
  for (size_t d = 0; d < local.size(); ++d)
    expected[d] *= mesh_.size(s->dims[d]);
  if (global.dtype != spec->first || global.shape != expected)
    return func_.emitError() << argumentName(func_, i) << " is " << arg.getType()
                             << " per rank, split " << s->str(mesh_) << " over the mesh "
                             << mesh_.str() << ", so its global value is "
                             << rt::dtype_name(spec->first) << " " << rt::shape_str(expected)
                             << "; was given " << rt::dtype_name(global.dtype) << " "
                             << rt::shape_str(global.shape);
  int64_t n = numRanks();
  perRank.assign(n, HostTensor());
  if (!s->isSplit()) {
    for (int64_t r = 0; r + 1 < n; ++r)
      perRank[r] = global;
    perRank[n - 1] = std::move(global);
    return success();
  }
  for (int64_t r = 0; r < n; ++r)
    perRank[r] = sliceBlock(global, blockOffsets(*s, local, mesh_, r), local);
  return success();
}

LogicalResult MeshSimulation::assembleResult(func::ReturnOp ret, unsigned i,
                                             llvm::ArrayRef<const HostTensor *> perRank,
                                             HostTensor &global) const {
  auto spec = tensorSpec(ret.getOperand(i).getType());
  if (failed(spec))
    return ret.emitError() << "reference executor: " << resultName(func_, i) << " has type "
                           << ret.getOperand(i).getType() << ", which the executor cannot hold";
  const std::vector<int64_t> &local = spec->second;
  auto attr = func_.getResultAttrOfType<shard::GridAxesArrayAttr>(i, sharding::kShardingAttr);
  FailureOr<TensorSharding> s = boundarySharding(attr, local.size(), mesh_);
  if (failed(s))
    return ret.emitError() << "reference executor: " << resultName(func_, i) << ": '"
                           << sharding::kShardingAttr << "' names an axis outside the mesh "
                           << mesh_.str() << " or an axis twice";
  std::vector<int64_t> globalShape = local;
  for (size_t d = 0; d < local.size(); ++d)
    globalShape[d] *= mesh_.size(s->dims[d]);
  global = HostTensor(spec->first, globalShape);

  // The first rank holding a block writes it; every other holder must agree.
  std::map<std::vector<int64_t>, int64_t> owner;
  for (int64_t r = 0; r < numRanks(); ++r) {
    const HostTensor &t = *perRank[r];
    if (t.dtype != spec->first || t.shape != local)
      return ret.emitError() << "reference executor: " << resultName(func_, i) << " on "
                             << coordsString(mesh_, r) << " is " << rt::dtype_name(t.dtype) << " "
                             << rt::shape_str(t.shape) << ", not its type "
                             << ret.getOperand(i).getType();
    std::vector<int64_t> off = blockOffsets(*s, local, mesh_, r);
    auto [it, first] = owner.emplace(off, r);
    if (first) {
      copyBlock(t, std::vector<int64_t>(local.size(), 0), global, off, local);
      continue;
    }
    const HostTensor &ref = *perRank[it->second];
    if (t.bytes == ref.bytes)
      continue;
    int64_t es = rt::dtype_size(t.dtype), e = 0;
    while (e < t.numel() &&
           std::memcmp(t.bytes.data() + e * es, ref.bytes.data() + e * es, es) == 0)
      ++e;
    AxisList used = s->usedAxes(), replicated;
    for (int a = 0; a < mesh_.rank(); ++a)
      if (!llvm::is_contained(used, a))
        replicated.push_back(static_cast<Axis>(a));
    return ret.emitError() << "reference executor: " << resultName(func_, i)
                           << " is replicated over mesh axes " << mesh_.axesName(replicated)
                           << " (xf.sharding " << s->str(mesh_) << ") but "
                           << coordsString(mesh_, it->second) << " and " << coordsString(mesh_, r)
                           << " hold different values (first at local element " << e << ": "
                           << elementString(ref, e) << " vs " << elementString(t, e) << ")";
  }
  return success();
}
