//===- Sharding.cpp - meshes, tensor shardings and resharding plans -------===//

#include "compiler/sharding/Sharding.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;
using namespace shardc;
using namespace shardc::sharding;

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

FailureOr<Mesh> Mesh::parse(llvm::StringRef spec, std::string &error) {
  std::optional<abi::Mesh> mesh = abi::Mesh::parse(std::string_view(spec.data(), spec.size()), error);
  if (!mesh)
    return failure();
  return Mesh(std::move(*mesh));
}

FailureOr<Mesh> Mesh::fromGrid(shard::GridOp grid) {
  Mesh mesh;
  mesh.symbol = grid.getSymName().str();
  auto shape = grid.getShape();
  auto names = grid->getAttrOfType<ArrayAttr>(kAxisNamesAttr);
  if (names && names.size() != shape.size())
    return grid.emitError() << "'" << kAxisNamesAttr << "' names " << names.size()
                            << " axes but the grid has " << shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (ShapedType::isDynamic(shape[i]) || shape[i] <= 0)
      return grid.emitError() << "grid axis " << i << " must have a static positive size";
    mesh.sizes.push_back(shape[i]);
    auto name = names ? dyn_cast<StringAttr>(names[i]) : StringAttr();
    if (names && !name)
      return grid.emitError() << "'" << kAxisNamesAttr << "' must hold strings";
    mesh.names.push_back(name ? name.str() : "a" + std::to_string(i));
  }
  if (!abi::withinDeviceLimit(mesh.sizes))
    return grid.emitError() << "the grid has more than " << abi::kMaxDevices
                            << " devices";
  return mesh;
}

FailureOr<Mesh> Mesh::fromModule(ModuleOp module, llvm::StringRef symbol) {
  shard::GridOp found;
  int count = 0;
  for (auto grid : module.getOps<shard::GridOp>()) {
    if (!symbol.empty() && grid.getSymName() != symbol)
      continue;
    found = grid;
    ++count;
  }
  if (count == 0)
    return module.emitError() << "no shard.grid" << (symbol.empty() ? "" : " @" + symbol.str())
                              << " in the module; give a mesh (--mesh dp=2,tp=2 or "
                                 "-xf-grid{mesh=...})";
  if (count > 1)
    return module.emitError() << "the module has " << count
                              << " shard.grid ops; name the one to use";
  return fromGrid(found);
}

shard::GridOp Mesh::materialize(ModuleOp module) const {
  for (auto grid : llvm::make_early_inc_range(module.getOps<shard::GridOp>()))
    if (grid.getSymName() == symbol)
      grid.erase();
  OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  auto grid = shard::GridOp::create(b, module.getLoc(), symbol, sizes);
  llvm::SmallVector<Attribute> nameAttrs;
  for (const std::string &n : names)
    nameAttrs.push_back(b.getStringAttr(n));
  grid->setAttr(kAxisNamesAttr, b.getArrayAttr(nameAttrs));
  return grid;
}

//===----------------------------------------------------------------------===//
// TensorSharding
//===----------------------------------------------------------------------===//

TensorSharding TensorSharding::replicated(int64_t rank) {
  TensorSharding s;
  s.dims.resize(rank);
  return s;
}

bool TensorSharding::isReplicated() const { return partial.empty() && !isSplit(); }

bool TensorSharding::isSplit() const {
  return llvm::any_of(dims, [](const AxisList &d) { return !d.empty(); });
}

AxisList TensorSharding::usedAxes() const {
  AxisList all(partial.begin(), partial.end());
  for (const AxisList &d : dims)
    all.append(d.begin(), d.end());
  llvm::sort(all);
  return all;
}

void TensorSharding::addPartial(llvm::ArrayRef<Axis> axes) {
  for (Axis a : axes)
    if (!llvm::is_contained(partial, a))
      partial.push_back(a);
  llvm::sort(partial);
}

FailureOr<llvm::SmallVector<int64_t>> TensorSharding::localShape(llvm::ArrayRef<int64_t> global,
                                                                 const Mesh &mesh,
                                                                 std::string *why) const {
  llvm::SmallVector<int64_t> local(global.begin(), global.end());
  for (size_t d = 0; d < dims.size() && d < local.size(); ++d) {
    int64_t n = mesh.size(dims[d]);
    if (local[d] % n != 0) {
      if (why)
        *why = "dimension " + std::to_string(d) + " of size " + std::to_string(local[d]) +
               " is not divisible by mesh axes " + mesh.axesName(dims[d]) + " (" +
               std::to_string(n) + "); pad it to " + std::to_string((local[d] + n - 1) / n * n);
      return failure();
    }
    local[d] /= n;
  }
  return local;
}

std::string TensorSharding::str(const Mesh &mesh) const {
  std::string s = "[";
  for (size_t d = 0; d < dims.size(); ++d) {
    if (d)
      s += ", ";
    if (dims[d].empty()) {
      s += "-";
      continue;
    }
    for (size_t i = 0; i < dims[d].size(); ++i)
      s += (i ? "+" : "") + mesh.axesName(AxisList{dims[d][i]});
  }
  s += "]";
  if (!partial.empty())
    s += " partial(" + mesh.axesName(partial) + ")";
  return s;
}

shard::GridAxesArrayAttr TensorSharding::splitAttr(MLIRContext *ctx) const {
  llvm::SmallVector<shard::GridAxesAttr> axes;
  for (const AxisList &d : dims)
    axes.push_back(shard::GridAxesAttr::get(ctx, d));
  // Upstream requires at least one entry, even for a 0-d tensor.
  if (axes.empty())
    axes.push_back(shard::GridAxesAttr::get(ctx, {}));
  return shard::GridAxesArrayAttr::get(ctx, axes);
}

TensorSharding TensorSharding::fromSplitAttr(shard::GridAxesArrayAttr attr, int64_t rank) {
  TensorSharding s = replicated(rank);
  if (!attr)
    return s;
  auto axes = attr.getAxes();
  for (int64_t d = 0; d < rank && d < static_cast<int64_t>(axes.size()); ++d)
    s.dims[d].assign(axes[d].asArrayRef().begin(), axes[d].asArrayRef().end());
  return s;
}

//===----------------------------------------------------------------------===//
// Resharding plans
//===----------------------------------------------------------------------===//

llvm::StringRef shardc::sharding::kindName(CollectiveStep::Kind kind) {
  switch (kind) {
  case CollectiveStep::AllReduce:
    return "all_reduce";
  case CollectiveStep::ReduceScatter:
    return "reduce_scatter";
  case CollectiveStep::AllGather:
    return "all_gather";
  case CollectiveStep::AllSlice:
    return "all_slice";
  case CollectiveStep::AllToAll:
    return "all_to_all";
  case CollectiveStep::MakePartial:
    return "make_partial";
  }
  return "?";
}

static bool isPrefix(llvm::ArrayRef<Axis> prefix, llvm::ArrayRef<Axis> of) {
  return prefix.size() <= of.size() && std::equal(prefix.begin(), prefix.end(), of.begin());
}

/// The axes `to` appends to `cur` (a prefix of it), up to the first one
/// `accept` refuses.
template <typename Accept>
static AxisList joiningAxes(const AxisList &cur, const AxisList &to, Accept accept) {
  AxisList take;
  if (!isPrefix(cur, to))
    return take;
  for (size_t i = cur.size(); i < to.size() && accept(to[i]); ++i)
    take.push_back(to[i]);
  return take;
}

llvm::SmallVector<CollectiveStep> shardc::sharding::planReshard(const TensorSharding &from,
                                                                const TensorSharding &to) {
  llvm::SmallVector<CollectiveStep> steps;
  TensorSharding cur = from;
  // 1. Pending sums: reduce-scatter into the dims `to` splits over them, all-reduce the rest.
  AxisList pending;
  for (Axis a : cur.partial)
    if (!llvm::is_contained(to.partial, a))
      pending.push_back(a);
  // Where the sums go to several dims, the later mesh axes first: the mesh
  // is row-major, so they are the ranks nearest each other (inside a node),
  // and the reduction over the earlier, farther axes then moves only their
  // shard (dp=64 x dq=4: over dq the whole gradient on NVLink, over dp a
  // quarter of it on InfiniBand, not the whole of it there).
  auto reduceScatters = [&]() {
    while (true) {
      int64_t best = -1;
      Axis bestAxis = -1;
      for (size_t e = 0; e < cur.dims.size(); ++e) {
        AxisList t = joiningAxes(cur.dims[e], to.dims[e],
                                 [&](Axis a) { return llvm::is_contained(pending, a); });
        if (!t.empty() && *llvm::max_element(t) > bestAxis) {
          best = static_cast<int64_t>(e);
          bestAxis = *llvm::max_element(t);
        }
      }
      if (best < 0)
        break;
      size_t d = static_cast<size_t>(best);
      AxisList take = joiningAxes(cur.dims[d], to.dims[d],
                                  [&](Axis a) { return llvm::is_contained(pending, a); });
      steps.push_back({CollectiveStep::ReduceScatter, take, static_cast<int64_t>(d), -1, cur});
      cur.dims[d].append(take.begin(), take.end());
      for (Axis a : take)
        llvm::erase(pending, a);
      cur.partial.clear();
      for (Axis a : from.partial)
        if (llvm::is_contained(pending, a) || llvm::is_contained(to.partial, a))
          cur.partial.push_back(a);
    }
  };
  // Axes joining a dim the value does not use yet (and that are not pending
  // sums) are cut locally before the reduction, so it moves 1/n of the
  // tensor: a weight gradient summed over dp and then split over tp is
  // sliced, then reduced (or reduce-scattered over dp, ZeRO's layout), not
  // reduced whole and sliced after.
  auto sliceUnused = [&]() {
    bool sliced = false;
    for (size_t d = 0; d < cur.dims.size(); ++d) {
      AxisList used = cur.usedAxes();
      AxisList take = joiningAxes(cur.dims[d], to.dims[d], [&](Axis a) {
        return !llvm::is_contained(used, a) && !llvm::is_contained(pending, a);
      });
      if (take.empty())
        continue;
      steps.push_back({CollectiveStep::AllSlice, take, static_cast<int64_t>(d), -1, cur});
      cur.dims[d].append(take.begin(), take.end());
      sliced = true;
    }
    return sliced;
  };
  if (!pending.empty()) {
    sliceUnused();
    reduceScatters();
    // A pending axis the target splits after the slices is then a
    // reduce-scatter.
    if (!pending.empty() && sliceUnused())
      reduceScatters();
    if (!pending.empty()) {
      steps.push_back({CollectiveStep::AllReduce, pending, -1, -1, cur});
      cur.partial.clear();
      for (Axis a : from.partial)
        if (llvm::is_contained(to.partial, a))
          cur.partial.push_back(a);
    }
  }
  // 2. An axis moving from the end of one dim to the next place of another is
  //    one all-to-all ((n-1)/n of the tensor instead of a gather of all of it).
  for (size_t d = 0; d < cur.dims.size(); ++d) {
    while (!cur.dims[d].empty() && !isPrefix(cur.dims[d], to.dims[d])) {
      Axis a = cur.dims[d].back();
      int64_t target = -1;
      for (size_t e = 0; e < cur.dims.size(); ++e)
        if (e != d && isPrefix(cur.dims[e], to.dims[e]) &&
            to.dims[e].size() > cur.dims[e].size() && to.dims[e][cur.dims[e].size()] == a)
          target = static_cast<int64_t>(e);
      if (target < 0)
        break;
      steps.push_back(
          {CollectiveStep::AllToAll, AxisList{a}, target, static_cast<int64_t>(d), cur});
      cur.dims[d].pop_back();
      cur.dims[target].push_back(a);
    }
  }
  // 3. Axes leaving a dim (everything after the common prefix) are gathered;
  //    where several dims gather, the earliest mesh axis first (the reverse
  //    of the reductions' order: the farther ranks exchange the smallest
  //    pieces).
  auto leaving = [&](size_t d) {
    size_t common = 0;
    while (common < cur.dims[d].size() && common < to.dims[d].size() &&
           cur.dims[d][common] == to.dims[d][common])
      ++common;
    return AxisList(cur.dims[d].begin() + common, cur.dims[d].end());
  };
  while (true) {
    int64_t best = -1;
    Axis bestAxis = 0;
    for (size_t e = 0; e < cur.dims.size(); ++e) {
      AxisList g = leaving(e);
      if (!g.empty() && (best < 0 || *llvm::min_element(g) < bestAxis)) {
        best = static_cast<int64_t>(e);
        bestAxis = *llvm::min_element(g);
      }
    }
    if (best < 0)
      break;
    auto d = static_cast<size_t>(best);
    AxisList gather = leaving(d);
    steps.push_back({CollectiveStep::AllGather, gather, static_cast<int64_t>(d), -1, cur});
    cur.dims[d].resize(cur.dims[d].size() - gather.size());
  }
  // 4. Axes joining a dim are local slices.
  for (size_t d = 0; d < cur.dims.size(); ++d) {
    if (cur.dims[d].size() == to.dims[d].size())
      continue;
    AxisList slice(to.dims[d].begin() + cur.dims[d].size(), to.dims[d].end());
    steps.push_back({CollectiveStep::AllSlice, slice, static_cast<int64_t>(d), -1, cur});
    cur.dims[d] = to.dims[d];
  }
  // 5. Pending sums `to` wants and `from` lacks are made locally.
  AxisList join;
  for (Axis a : to.partial)
    if (!llvm::is_contained(cur.partial, a))
      join.push_back(a);
  if (!join.empty())
    steps.push_back({CollectiveStep::MakePartial, join, -1, -1, cur});
  return steps;
}
