//===- CostModel.cpp - communication, compute and memory cost -------------===//

#include "compiler/cost/CostModel.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#ifndef SHARDC_HARDWARE_DIR
#define SHARDC_HARDWARE_DIR "compiler/cost/hardware"
#endif

using namespace mlir;
using namespace shardc::cost;
using shardc::sharding::Axis;
using shardc::sharding::CollectiveStep;
using shardc::sharding::Mesh;
using shardc::sharding::TensorSharding;

//===----------------------------------------------------------------------===//
// JSON mapping
//===----------------------------------------------------------------------===//

namespace shardc::cost {

// Found by ADL from llvm::json::fromJSON(std::vector<Link>).
static bool fromJSON(const llvm::json::Value &v, Link &link, llvm::json::Path p) {
  llvm::json::ObjectMapper o(v, p);
  if (!(o && o.map("name", link.name) && o.map("bandwidth", link.bandwidth) &&
        o.map("latency", link.latency)))
    return false;
  if (!(link.bandwidth > 0)) {
    p.field("bandwidth").report("must be positive (bytes/s per device, one direction)");
    return false;
  }
  if (!(link.latency >= 0)) {
    p.field("latency").report("must be non-negative (seconds per ring step)");
    return false;
  }
  return true;
}

static bool fromJSON(const llvm::json::Value &v, HardwareDesc &hw, llvm::json::Path p) {
  llvm::json::ObjectMapper o(v, p);
  // Unknown fields ("source", "notes", ...) are ignored.
  if (!(o && o.map("name", hw.name) && o.map("devices_per_node", hw.devicesPerNode) &&
        o.map("memory_bytes", hw.memoryBytes) && o.map("peak_flops", hw.peakFlops) &&
        o.map("links", hw.links) &&
        o.mapOptional("achievable_flops_fraction", hw.achievableFraction) &&
        o.mapOptional("host_bandwidth", hw.hostBandwidth) &&
        o.mapOptional("host_memory_bytes", hw.hostMemoryBytes)))
    return false;
  if (!(hw.hostMemoryBytes >= 0)) {
    p.field("host_memory_bytes").report("must be non-negative (bytes per device)");
    return false;
  }
  if (!(hw.hostBandwidth >= 0)) {
    p.field("host_bandwidth").report("must be non-negative (bytes/s per device, one direction)");
    return false;
  }
  if (!(hw.achievableFraction > 0 && hw.achievableFraction <= 1)) {
    p.field("achievable_flops_fraction").report("must be in (0, 1]");
    return false;
  }
  if (hw.devicesPerNode < 1) {
    p.field("devices_per_node").report("must be >= 1");
    return false;
  }
  if (!(hw.memoryBytes > 0)) {
    p.field("memory_bytes").report("must be positive");
    return false;
  }
  auto f32 = hw.peakFlops.find("f32");
  if (f32 == hw.peakFlops.end()) {
    p.field("peak_flops").field("f32").report("missing value (the f32 peak is required)");
    return false;
  }
  for (const auto &[key, value] : hw.peakFlops) {
    if (!(value > 0)) {
      // Path segments keep a pointer to the key: it lives in hw.peakFlops.
      p.field("peak_flops").field(key).report("must be positive (FLOP/s)");
      return false;
    }
  }
  if (hw.links.empty()) {
    p.field("links").report("must list at least one link ([0] within a node, [1] between)");
    return false;
  }
  return true;
}

} // namespace shardc::cost

static FailureOr<HardwareDesc> parseNamed(llvm::StringRef json, llvm::StringRef source,
                                          std::string &error) {
  std::string prefix = source.empty() ? "" : source.str() + ": ";
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(json);
  if (!value) {
    error = prefix + "malformed JSON " + llvm::toString(value.takeError());
    return failure();
  }
  llvm::json::Path::Root root("hardware");
  HardwareDesc hw;
  if (!fromJSON(*value, hw, root)) {
    error = prefix + "bad hardware description: " + llvm::toString(root.getError());
    return failure();
  }
  return hw;
}

FailureOr<HardwareDesc> HardwareDesc::parse(llvm::StringRef json, std::string &error) {
  return parseNamed(json, "", error);
}

FailureOr<HardwareDesc> HardwareDesc::load(const std::string &path, std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = "cannot read hardware description '" + path + "': " + buffer.getError().message();
    return failure();
  }
  return parseNamed((*buffer)->getBuffer(), path, error);
}

/// The directory of the shipped descriptions: $SHARDC_HARDWARE_DIR if set (an
/// installed or relocated tree), else the source tree's compiler/cost/hardware.
static std::string hardwareDir() {
  if (const char *env = std::getenv("SHARDC_HARDWARE_DIR"); env && *env)
    return env;
  return SHARDC_HARDWARE_DIR;
}

std::vector<std::string> HardwareDesc::shippedNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(hardwareDir(), ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef path = it->path();
    if (llvm::sys::path::extension(path) == ".json")
      names.push_back(llvm::sys::path::stem(path).str());
  }
  llvm::sort(names);
  return names;
}

FailureOr<HardwareDesc> HardwareDesc::byName(const std::string &nameOrPath, std::string &error) {
  llvm::StringRef name(nameOrPath);
  bool isPath = name.ends_with(".json") || name.contains('/') || name.contains('\\');
  if (isPath)
    return load(nameOrPath, error);
  llvm::SmallString<256> path(hardwareDir());
  llvm::sys::path::append(path, name + ".json");
  if (!llvm::sys::fs::exists(path)) {
    error = "unknown hardware '" + nameOrPath + "': known are ";
    std::vector<std::string> known = shippedNames();
    error += known.empty() ? "none (no descriptions in " + hardwareDir() + ")"
                           : llvm::join(known, ", ");
    error += "; or give a path to a .json file";
    return failure();
  }
  return load(path.str().str(), error);
}

//===----------------------------------------------------------------------===//
// Ring formulas
//===----------------------------------------------------------------------===//

double shardc::cost::ringAllReduceBytes(double bytes, int64_t n) {
  return n <= 1 ? 0.0 : 2.0 * static_cast<double>(n - 1) / static_cast<double>(n) * bytes;
}

double shardc::cost::ringAllGatherBytes(double gatheredBytes, int64_t n) {
  return n <= 1 ? 0.0 : static_cast<double>(n - 1) / static_cast<double>(n) * gatheredBytes;
}

double shardc::cost::ringReduceScatterBytes(double inputBytes, int64_t n) {
  return n <= 1 ? 0.0 : static_cast<double>(n - 1) / static_cast<double>(n) * inputBytes;
}

double shardc::cost::allToAllBytes(double inputBytes, int64_t n) {
  return n <= 1 ? 0.0 : static_cast<double>(n - 1) / static_cast<double>(n) * inputBytes;
}

//===----------------------------------------------------------------------===//
// CostModel
//===----------------------------------------------------------------------===//

/// The nodes a group over `axes` spans (the group of rank 0; every group
/// of the same axes spans as many).
static int64_t nodesSpanned(const Mesh &mesh, const HardwareDesc &hw, llvm::ArrayRef<Axis> axes) {
  int64_t perNode = std::max<int64_t>(hw.devicesPerNode, 1);
  llvm::SmallDenseSet<int64_t, 16> nodes;
  for (int64_t r : mesh.group(axes, 0))
    nodes.insert(r / perNode);
  return static_cast<int64_t>(nodes.size());
}

CostModel::CostModel(Mesh mesh, HardwareDesc hw) : mesh_(std::move(mesh)), hw_(std::move(hw)) {
  assert(!hw_.links.empty() && "a hardware description has at least one link");
  int rank = mesh_.numAxes();
  if (rank > 8)
    return; // not cached (a parsed mesh has at most 8 axes)
  spans_.resize(size_t(1) << rank);
  for (size_t mask = 0; mask < spans_.size(); ++mask) {
    sharding::AxisList axes;
    for (int a = 0; a < rank; ++a)
      if (mask & (size_t(1) << a))
        axes.push_back(static_cast<Axis>(a));
    spans_[mask] = nodesSpanned(mesh_, hw_, axes);
  }
}

int64_t CostModel::nodes(llvm::ArrayRef<Axis> axes) const {
  size_t mask = 0;
  for (Axis a : axes) {
    if (spans_.empty() || a < 0 || a >= mesh_.numAxes())
      return nodesSpanned(mesh_, hw_, axes);
    mask |= size_t(1) << a;
  }
  return spans_[mask];
}

const Link &CostModel::linkFor(llvm::ArrayRef<Axis> axes) const {
  return nodes(axes) > 1 ? hw_.links.back() : hw_.links.front();
}

/// A step's input bytes on one device (its `before` sharding's share).
static double localBytes(const Mesh &mesh, const CollectiveStep &step, double globalBytes) {
  int64_t splits = 1;
  for (const shardc::sharding::AxisList &d : step.before.dims)
    splits *= mesh.size(d);
  return globalBytes / static_cast<double>(splits);
}

double CostModel::stepBytes(const CollectiveStep &step, double globalBytes) const {
  double local = localBytes(mesh_, step, globalBytes);
  int64_t n = mesh_.size(step.axes);
  switch (step.kind) {
  case CollectiveStep::AllReduce:
    return ringAllReduceBytes(local, n);
  case CollectiveStep::ReduceScatter:
    return ringReduceScatterBytes(local, n);
  case CollectiveStep::AllGather:
    return ringAllGatherBytes(local * static_cast<double>(n), n);
  case CollectiveStep::AllToAll:
    return allToAllBytes(local, n);
  case CollectiveStep::AllSlice:
  case CollectiveStep::MakePartial:
    return 0.0;
  }
  return 0.0;
}

double CostModel::stepTime(const CollectiveStep &step, double globalBytes) const {
  if (step.kind == CollectiveStep::AllSlice || step.kind == CollectiveStep::MakePartial)
    return 0.0;
  int64_t n = mesh_.size(step.axes);
  if (n <= 1)
    return 0.0;
  const Link &link = linkFor(step.axes);
  double bandwidthTime = stepBytes(step, globalBytes) / link.bandwidth;
  if (step.kind == CollectiveStep::AllReduce)
    return bandwidthTime + allReduceOverhead(step.axes, localBytes(mesh_, step, globalBytes));
  return bandwidthTime + static_cast<double>(n - 1) * link.latency;
}

double CostModel::allReduceOverhead(llvm::ArrayRef<Axis> axes, double localBytes) const {
  int64_t n = mesh_.size(axes);
  if (n <= 1)
    return 0.0;
  const Link &link = linkFor(axes);
  double ring = 2.0 * static_cast<double>(n - 1) * link.latency;
  // Across nodes NCCL also runs an all-reduce as a tree (a double binary
  // tree over the nodes, a chain inside each) and takes it where its tuning
  // model says it is faster: a reduction up and a broadcast down move 2x the
  // local bytes per device at 0.92 of the ring's bus bandwidth (NCCL's
  // tuning.cc), over log2(nodes) hops between nodes plus the chain inside
  // one (a scalar over 64 nodes: 2 * 6 link latencies, not the ring's 126).
  int64_t k = nodes(axes);
  if (k <= 1)
    return ring;
  double depth =
      std::ceil(std::log2(static_cast<double>(k))) + static_cast<double>(n / k - 1);
  constexpr double kTreeBandwidth = 0.92; // of the ring's
  double ringBytes = ringAllReduceBytes(localBytes, n);
  double tree = (2.0 * localBytes / kTreeBandwidth - ringBytes) / link.bandwidth +
                2.0 * depth * link.latency;
  return std::min(ring, tree);
}

double CostModel::reshardTime(const TensorSharding &from, const TensorSharding &to,
                              double globalBytes) const {
  double t = 0.0;
  for (const CollectiveStep &step : sharding::planReshard(from, to))
    t += stepTime(step, globalBytes);
  return t;
}

Type shardc::cost::pricingType(Operation *op) {
  FloatType narrowest;
  for (Value v : op->getOperands())
    if (auto f = dyn_cast<FloatType>(getElementTypeOrSelf(v.getType())))
      if (!narrowest || f.getWidth() < narrowest.getWidth())
        narrowest = f;
  if (narrowest)
    return narrowest;
  return op->getNumResults() ? getElementTypeOrSelf(op->getResult(0).getType()) : Type();
}

double CostModel::computeTime(double flops, Type elementType) const {
  llvm::StringRef key = "f32";
  if (elementType) {
    if (elementType.isBF16())
      key = "bf16";
    else if (elementType.isF16())
      key = "f16";
    else if (elementType.isF64())
      key = "f64";
  }
  auto it = hw_.peakFlops.find(key.str());
  if (it == hw_.peakFlops.end())
    it = hw_.peakFlops.find("f32");
  if (it == hw_.peakFlops.end() || !(it->second > 0))
    return 0.0;
  return flops / (it->second * hw_.achievableFraction);
}
