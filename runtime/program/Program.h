//===- Program.h - the compiled step's descriptor, decoded ------*- C++ -*-===//
//
// `shardc compile` embeds a JSON descriptor (`shardc_program_json`, see
// runtime/abi/shardc_rt.h) in every executable. It says everything the
// runtime needs that is not code:
//
//   {
//     "version": 2, "op_table": "3f0c...",  // runtime/abi/OpTable.h
//     "source": "gpt2-tiny.mlir", "strategy": "zero1+tp",
//     "precision": "fp32", "micro_batches": 1,
//     "mesh": {"names": ["dp", "tp"], "sizes": [2, 2]},
//     "arenas": [{"name": "params", "bytes": 123}, ...],
//     "planned_peak_bytes": 456,          // sum of the arenas of one rank
//     "train": {"lr": 6e-4, ...},          // the -xf-adamw options (for logs)
//     "tensors": [                         // the step's boundary
//       {"kind": "state", "name": "param:transformer.wte.weight",
//        "param": {"name": "transformer.wte.weight", "role": "embedding",
//                  "init": "normal", "std": 0.02},
//        "dtype": "F32", "shape": [25152, 64], "global_shape": [50304, 64],
//        "sharding": [[1], []], "arena": 0, "offset": 0},
//       {"kind": "input", "name": "tokens", "micro_batch": 0, ...},
//       {"kind": "report", "name": "loss", ...}],
//     "calls": [                           // indexed by shardc_rt_kernel's `call`
//       {"op": "xf.layernorm",
//        "operands": [{"dtype": "F32", "shape": [4, 32, 64]}, ...],
//        "results": [...],
//        "attrs": {"epsilon": 1e-5},
//        "operand_axes": [[[], [], []], ...], "result_axes": [...]},
//       {"op": "shard.all_reduce", ..., "attrs": {"grid_axes": [1],
//        "reduction": "sum"}, "comm": 0}],
//     "comms": [{"axes": [1]}, ...]
//   }
//
// Conventions:
//  - Ranks are numbered row-major over the mesh coordinates (last axis
//    fastest). A dim split over axes [a, b] is cut into size(a)*size(b)
//    contiguous blocks, block index = coord(a)*size(b) + coord(b). A
//    collective's group on `axes` is the ranks sharing every other
//    coordinate, ordered by that block index (MPI_Comm_split key).
//  - "sharding" of a boundary tensor: per dim, the mesh axes splitting it.
//    "shape" is the local (per-rank) shape, "global_shape" the unsharded one.
//  - "op" names an entry of the op table (runtime/abi/OpTable.h), which
//    fixes its operand and result counts and its "attrs": by their ODS
//    names, typed by the table (f64 and i64 as numbers, unit attributes as
//    true, strings and the shard reduction kind as strings, i64 arrays and
//    mesh axes as arrays); the decoder rejects any other attribute.
//  - "operand_axes"/"result_axes" are present only for ops whose values
//    depend on where the rank's block lies in the global op (embedding,
//    iota, dropout, rope, the cross-entropy ops, embedding_grad): per operand
//    (result), per dim, the mesh axes splitting that dim. A rank's block then
//    starts at shardIndex(axes) * local and the global size is local *
//    size(axes).
//  - The cross-entropy ops carry attrs["token_axes"]: the mesh axes their
//    token dims are split over. Each rank's loss is its share of the mean
//    over that group (the counted tokens are exchanged), as in the executor.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_PROGRAM_PROGRAM_H
#define SHARDC_RUNTIME_PROGRAM_PROGRAM_H

#include "runtime/HostTensor.h"
#include "runtime/abi/Mesh.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardc::rt {

/// Mesh axis indices, major first.
using Axes = std::vector<int>;

/// The device mesh: the one MLIR-free type the compiler's sharding::Mesh
/// also derives from (runtime/abi/Mesh.h), so both number ranks, blocks and
/// groups with the same code.
using MeshDesc = abi::Mesh;

struct TensorType {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numel() const { return num_elements(shape); }
  int64_t bytes() const { return numel() * dtype_size(dtype); }
};

/// How a parameter is initialized (the `#xf.param` attribute).
struct ParamInit {
  std::string name, role, init; ///< init: normal | zeros | ones
  double std = 0;
};

/// A tensor on the step's boundary, living at a fixed place in an arena.
struct BoundaryTensor {
  std::string kind; ///< state | input | report
  /// state: its xf.state ("param:<n>", "adam_m:<n>", "adam_v:<n>", "step",
  /// "loss_scale", "good_steps"); input: tokens | targets | token_types |
  /// loss_mask; report: loss | lr | grad_norm | loss_scale | skipped.
  std::string name;
  int microBatch = 0;             ///< inputs
  std::optional<ParamInit> param; ///< state "param:*"
  TensorType local;
  std::vector<int64_t> globalShape;
  std::vector<Axes> sharding; ///< per dim
  int arena = 0;
  int64_t offset = 0;
  /// Pipelined steps: the stage whose ranks hold it (-1: every rank).
  int stage = -1;

  /// Where this rank's block starts in the global tensor, per dim.
  std::vector<int64_t> blockOffsets(const MeshDesc &mesh, int64_t rank) const;
};

/// One entry of the call table: a kernel or a collective.
struct Call {
  std::string op; ///< "xf.layernorm", "shard.all_gather", ...
  std::vector<TensorType> operands, results;
  nlohmann::json attrs = nlohmann::json::object();
  /// Per operand (result), per dim: the splitting mesh axes; empty when the
  /// op needs no placement.
  std::vector<std::vector<Axes>> operandAxes, resultAxes;
  int comm = -1; ///< collectives: index into Program::comms
  /// Pipelined steps: the stage whose ranks run it (-1: every rank). A
  /// transfer (xf.transfer) runs on its `from` and `to` stages.
  int stage = -1;
  /// Kernels: the bytes of planned scratch memory (KernelScratch.h) the
  /// call's kernel gets as one more buffer after its results; 0: none.
  int64_t scratch = 0;
};

/// A pipelined step (-xf-pipeline): its ops and state are split into stages
/// along one mesh axis; a rank runs the calls and holds the tensors of the
/// stage its coordinate on that axis names.
struct PipelineDesc {
  int axis = -1; ///< -1: not pipelined
  int64_t stages = 1;
  /// The compiler's description (schedule, micro-batches, virtual stages,
  /// layers per stage, time slots, bubble), for --describe and logs.
  nlohmann::json info = nlohmann::json::object();
};

struct CommDesc {
  Axes axes;
};

struct ArenaDesc {
  std::string name;
  int64_t bytes = 0;
};

/// The arena of offloaded activations (-xf-offload-activations): host memory
/// on every backend (pinned on a GPU), not part of the device's planned peak.
inline constexpr const char *kHostArenaName = "host";

struct Program {
  int version = 2;
  /// The op table's fingerprint the step was compiled against.
  std::string opTable;
  std::string source, strategy, precision;
  int64_t microBatches = 1;
  MeshDesc mesh;
  std::vector<ArenaDesc> arenas;
  int64_t plannedPeakBytes = 0;
  /// Of the workspace arena, the activations' own peak; the rest is what the
  /// kernels' scratch adds (-1: not recorded).
  int64_t activationBytes = -1;
  /// Of the workspace arena, the peak without the collectives' staging (the
  /// rest is what the staging adds; -1: not recorded).
  int64_t unstagedBytes = -1;
  /// Of the activations, what the forward stores for the backward (held
  /// across the first backward op; -1: not recorded, e.g. a pipeline).
  int64_t storedActivationBytes = -1;
  nlohmann::json train = nlohmann::json::object();
  /// The model's `xf.model` (family, layers, hidden, heads, vocab), if any.
  nlohmann::json model = nlohmann::json::object();
  std::vector<BoundaryTensor> tensors;
  std::vector<Call> calls;
  std::vector<CommDesc> comms;
  PipelineDesc pipeline;

  /// The pipeline stage of `rank` (0 for a step without a pipeline).
  int stageOf(int64_t rank) const {
    return pipeline.axis < 0 ? 0 : static_cast<int>(mesh.coords(rank)[pipeline.axis]);
  }
  /// Whether `rank` runs call `c` / holds boundary tensor `t`.
  bool runs(const Call &c, int64_t rank) const;
  bool holds(const BoundaryTensor &t, int64_t rank) const {
    return t.stage < 0 || t.stage == stageOf(rank);
  }

  /// The boundary tensor of a kind and name (and micro-batch); null if none.
  const BoundaryTensor *find(const std::string &kind, const std::string &name,
                             int microBatch = 0) const;
};

/// Parses and checks a descriptor; throws Error naming what is wrong.
Program parseProgram(const std::string &json);

/// The descriptor as JSON again (what `--describe` prints, minus the calls
/// when `withCalls` is false).
nlohmann::json programToJson(const Program &program, bool withCalls);

} // namespace shardc::rt

#endif // SHARDC_RUNTIME_PROGRAM_PROGRAM_H
