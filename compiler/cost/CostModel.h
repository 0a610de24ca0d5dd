//===- CostModel.h - communication, compute and memory cost ----*- C++ -*-===//
//
// One cost model for every sharding decision (propagation, the report, and
// later the planner). Collectives are priced as rings over the link their
// group spans: an all-reduce moves 2(n-1)/n of its bytes per device,
// all-gather and reduce-scatter (n-1)/n of the full (gathered) bytes,
// all-to-all (n-1)/n of its input; each step costs the link latency. Compute
// is FLOPs at the device's peak for the element type.
//
// Hardware descriptions are JSON files (compiler/cost/hardware/*.json):
//   {
//     "name": "8x H100 SXM, NVLink 4 in the node, 400 Gb/s InfiniBand between",
//     "devices_per_node": 8,
//     "memory_bytes": 85899345920,
//     "peak_flops": {"f32": 6.7e13, "bf16": 9.89e14, "f16": 9.89e14, "f64": 6.7e13},
//     "achievable_flops_fraction": 0.564,  // optional, measured share of peak
//     "links": [
//       {"name": "nvlink", "bandwidth": 4.5e11, "latency": 3e-6},   // within a node
//       {"name": "infiniband", "bandwidth": 5.0e10, "latency": 1e-5} // between nodes
//     ]
//   }
// bandwidth is bytes/s per device in one direction; latency seconds per ring
// step. A group whose ranks all sit in one node (node = rank /
// devices_per_node, ranks row-major over the mesh) uses links[0], any other
// group links[1] (or links[0] if there is only one).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_COST_COSTMODEL_H
#define SHARDC_COMPILER_COST_COSTMODEL_H

#include "compiler/sharding/Sharding.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LogicalResult.h"

#include <map>
#include <string>
#include <vector>

namespace shardc::cost {

struct Link {
  std::string name;
  double bandwidth = 0; ///< bytes/s per device, one direction
  double latency = 0;   ///< seconds per ring step
};

struct HardwareDesc {
  std::string name;
  int64_t devicesPerNode = 1;
  double memoryBytes = 0;
  /// The share of peak_flops a training step's kernels reach (a measured
  /// figure with its source; 1 when the file gives none): compute time is
  /// FLOPs / (peak x this).
  double achievableFraction = 1.0;
  std::map<std::string, double> peakFlops; ///< keyed "f32", "bf16", "f16", "f64"
  std::vector<Link> links;                 ///< [0] within a node, [1] between nodes
  /// Bytes/s one device moves to or from its host's memory (one direction:
  /// PCIe to the CPU), what activation offload's copies run at; 0 when the
  /// file gives none (offload is then not priced).
  double hostBandwidth = 0;
  /// Host memory per device (the node's system memory over its devices):
  /// the room offloaded activations have; 0 when the file gives none.
  double hostMemoryBytes = 0;

  /// Parses a description; on failure `error` says what is wrong (and where).
  static mlir::FailureOr<HardwareDesc> parse(llvm::StringRef json, std::string &error);
  static mlir::FailureOr<HardwareDesc> load(const std::string &path, std::string &error);
  /// The descriptions shipped in compiler/cost/hardware, by file stem
  /// ("h100-8x-nvlink-ib", "cpu-mpi"); also accepts a path to a .json file.
  static mlir::FailureOr<HardwareDesc> byName(const std::string &nameOrPath, std::string &error);
  /// Names of the shipped descriptions.
  static std::vector<std::string> shippedNames();
};

/// The element type an op's FLOPs run at (what computeTime is given): its
/// narrowest float operand's (a bf16 GEMM storing an f32 weight gradient, or
/// a loss gradient fed an f32 scalar, runs on bf16 tensor cores), else its
/// first result's.
mlir::Type pricingType(mlir::Operation *op);

/// Per-device bytes a ring collective moves for a tensor of `bytes` (the local
/// input of an all-reduce, reduce-scatter or all-to-all; the gathered output
/// of an all-gather) over a group of n.
double ringAllReduceBytes(double bytes, int64_t n);
double ringAllGatherBytes(double gatheredBytes, int64_t n);
double ringReduceScatterBytes(double inputBytes, int64_t n);
double allToAllBytes(double inputBytes, int64_t n);

class CostModel {
public:
  CostModel(sharding::Mesh mesh, HardwareDesc hw);

  const sharding::Mesh &mesh() const { return mesh_; }
  const HardwareDesc &hardware() const { return hw_; }

  /// The link a group over `axes` runs on.
  const Link &linkFor(llvm::ArrayRef<sharding::Axis> axes) const;
  /// Per-device bytes one resharding step moves, for a tensor whose global
  /// size is `globalBytes` (the step's `before` sharding gives the local size).
  double stepBytes(const sharding::CollectiveStep &step, double globalBytes) const;
  /// Seconds for one step (0 for AllSlice): its ring bytes over the link's
  /// bandwidth, plus its ring's link latencies (an all-reduce:
  /// allReduceOverhead).
  double stepTime(const sharding::CollectiveStep &step, double globalBytes) const;
  /// What an all-reduce of `localBytes` per device over `axes` takes beyond
  /// its ring bytes' bandwidth time: the ring's 2(n - 1) link latencies, or
  /// across nodes NCCL's tree where that is less (its log-depth latencies
  /// and the 2/n of the bytes it moves beyond the ring's).
  double allReduceOverhead(llvm::ArrayRef<sharding::Axis> axes, double localBytes) const;
  /// Seconds to reshard a tensor of `globalBytes` from one sharding to another.
  double reshardTime(const sharding::TensorSharding &from, const sharding::TensorSharding &to,
                     double globalBytes) const;
  /// Seconds for `flops` at peak for the element type (f32 peak if unknown).
  double computeTime(double flops, mlir::Type elementType) const;

private:
  /// The nodes a group over `axes` spans (more than one: it runs on the
  /// links between nodes). Computed once per mesh for every set of axes (by
  /// its bit mask: a group's ranks do not depend on the axes' order; at
  /// most 8 axes, 256 sets): the propagation prices millions of resharding
  /// steps on them.
  int64_t nodes(llvm::ArrayRef<sharding::Axis> axes) const;

  sharding::Mesh mesh_;
  HardwareDesc hw_;
  std::vector<int64_t> spans_; ///< nodes spanned, by axis-set mask
};

} // namespace shardc::cost

#endif // SHARDC_COMPILER_COST_COSTMODEL_H
