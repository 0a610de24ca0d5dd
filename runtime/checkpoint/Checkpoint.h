//===- Checkpoint.h - sharded training checkpoints --------------*- C++ -*-===//
//
// A compiled step's state (parameters, Adam moments, counters, loss scale)
// saved per rank and resumed on the same or on a different mesh:
//
//   DIR/step-000010/rank-00003.safetensors  every state tensor of rank 3,
//                                           by its state name, local block
//   DIR/step-000010/manifest.json           mesh, strategy, source, precision,
//                                           steps done, next data position,
//                                           seed, per-tensor global shape,
//                                           dtype and sharding
//   DIR/latest                              "step-000010"
//
// Every tensor in a rank file carries a CRC32C checksum (Safetensors.h), so
// a damaged byte is an error naming the file and the tensor, not a silently
// different model. Resuming validates every manifest field (types, ranges,
// the mesh against "ranks", the precision against the program) first.
//
// Saving is three phases so that the caller can put a barrier between them
// (this library has no MPI): rank 0 begins (step-000010.tmp/), every rank
// writes its file, rank 0 commits (manifest, rename of the directory, then
// `latest`). Every file goes through a temporary name and a rename, so a crash
// leaves either a complete step directory or none.
//
// Loading copies, for every state tensor, the parts of the saved blocks that
// overlap the rank's block (an N-d box intersection), so a checkpoint resumes
// on any mesh and sharding; with the same mesh and shardings a rank reads only
// its own file.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CHECKPOINT_CHECKPOINT_H
#define SHARDC_RUNTIME_CHECKPOINT_CHECKPOINT_H

#include "runtime/program/Program.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardc::ckpt {

/// The manifest version written. Version 2 rank files carry a checksum per
/// tensor, required on read; version 1 checkpoints (which have none) load.
constexpr int kManifestVersion = 2;
/// The most ranks a checkpoint's mesh may have.
constexpr int64_t kMaxRanks = int64_t(1) << 24;
/// Bound of the step count and the data position a manifest records: 2^53,
/// the integers every JSON reader (double-based ones too) reads exactly, and
/// far beyond any run's tokens. Positions wrap around the data file
/// (data::TokenFile::batch), so a run never needs a larger one.
constexpr int64_t kMaxManifestCount = int64_t(1) << 53;

/// A state tensor as the checkpoint records it: its place on the mesh.
struct TensorMeta {
  std::string name; ///< the state name: "param:<n>", "adam_m:<n>", "step", ...
  rt::DType dtype = rt::DType::F32;
  std::vector<int64_t> globalShape;
  std::vector<rt::Axes> sharding; ///< per dim, the mesh axes splitting it
  /// A pipelined step's state: held only by the ranks whose coordinate on
  /// mesh axis `stageAxis` is `stage` (both -1: by every rank).
  int stage = -1, stageAxis = -1;

  /// Whether `rank` of `mesh` holds a block of the tensor.
  bool heldBy(const rt::MeshDesc &mesh, int64_t rank) const {
    return stage < 0 || stageAxis < 0 || mesh.coords(rank)[stageAxis] == stage;
  }
  /// The per-rank block shape on `mesh`.
  std::vector<int64_t> localShape(const rt::MeshDesc &mesh) const;
  /// Where `rank`'s block starts in the global tensor, per dim.
  std::vector<int64_t> blockOffsets(const rt::MeshDesc &mesh, int64_t rank) const;
};

/// The state tensors of a program (its `kind: "state"` boundary tensors).
std::vector<TensorMeta> stateTensors(const rt::Program &program);

/// manifest.json of one checkpoint.
struct Manifest {
  int version = kManifestVersion;
  rt::MeshDesc mesh;
  std::string source, strategy, precision;
  int64_t step = 0;         ///< optimizer steps done
  int64_t nextPosition = 0; ///< data position of the next step (unwrapped)
  uint64_t seed = 0;
  std::optional<double> lossScale; ///< the "loss_scale" state (fp16)
  /// The step's model shape (the descriptor's "model": family, layers,
  /// hidden, heads, vocab), for `shardc export`'s config.json; may be empty.
  nlohmann::json model = nlohmann::json::object();
  std::vector<TensorMeta> tensors;

  const TensorMeta *find(const std::string &name) const;
};

/// "step-000010".
std::string stepDirName(int64_t step);
/// "rank-00003.safetensors".
std::string rankFileName(int64_t rank);

//===----------------------------------------------------------------------===//
// Saving
//===----------------------------------------------------------------------===//

/// One tensor of a rank's state: its name and its local block's bytes (the
/// shape and dtype come from the manifest).
struct BlockView {
  std::string name;
  const void *data = nullptr;
};

/// Phase 1, rank 0: creates DIR/step-NNNNNN.tmp (removing a stale one left by
/// a crash). Throws Error if DIR/step-NNNNNN already exists: a complete
/// checkpoint is never overwritten.
void beginCheckpoint(const std::string &dir, int64_t step);

/// Phase 2, every rank: writes its blocks (one per manifest tensor, by name)
/// to DIR/step-NNNNNN.tmp/rank-RRRRR.safetensors.
void writeRankBlocks(const std::string &dir, const Manifest &manifest, int64_t rank,
                     const std::vector<BlockView> &blocks);

/// Phase 3, rank 0, after every rank wrote: checks that every rank's file is
/// there, writes manifest.json, renames the directory to step-NNNNNN and
/// replaces DIR/latest. Returns the step directory.
std::string commitCheckpoint(const std::string &dir, const Manifest &manifest);

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

/// The step directory to resume from in `dir`: the highest complete
/// step-NNNNNN (what `latest` names after a clean save). Throws Error if
/// there is none or `latest` names a step that is not complete.
std::string latestCheckpoint(const std::string &dir);

/// Reads and checks STEPDIR/manifest.json: every field present with its type,
/// every integer in range (no float or out-of-range value is converted), the
/// precision one a program can have, "ranks" the product of the mesh sizes
/// (at most kMaxRanks), step and next_position in [0, kMaxManifestCount], and
/// every tensor's shape and sharding consistent with the mesh. Throws Error
/// naming the file and the field.
Manifest readManifest(const std::string &stepDir);

/// Checks that a checkpoint can resume `program`: the same source, the same
/// precision and the same state tensors (names, global shapes, dtypes).
/// Shardings and the mesh may differ. Throws Error naming the manifest and the
/// first mismatch.
void checkCompatible(const std::string &stepDir, const Manifest &manifest,
                     const rt::Program &program);

/// One tensor a rank wants filled: `data` is the block of `shape` at
/// `offsets` in the global tensor `name`.
struct BlockTarget {
  std::string name;
  std::vector<int64_t> offsets, shape;
  void *data = nullptr;
};

/// Fills every target from the saved blocks overlapping it. Of the saved
/// ranks holding the same block (replicas), `preferredRank` is read if it is
/// one, so a rank of the same mesh reads only its own file. Every file read
/// is validated whole (names, shapes, dtypes); missing files and targets
/// outside their tensor throw Error naming the file.
void loadBlocks(const std::string &stepDir, const Manifest &manifest,
                const std::vector<BlockTarget> &targets, int64_t preferredRank = -1);

//===----------------------------------------------------------------------===//
// Export
//===----------------------------------------------------------------------===//

/// Writes the full parameters (the `param:*` state, assembled from every
/// rank) of a checkpoint as one safetensors file named as Hugging Face GPT-2
/// and, for a GPT-2 step whose manifest records its model, a Hugging Face
/// `config.json` in the same directory (GPT2LMHeadModel; vocab_size the
/// model's true vocabulary). A GPT-2 or LLaMA step's padded vocabulary
/// (the model's `vocab` below the token table's / LM head's rows) is written
/// without its padding rows — the loss gives them no probability and no
/// token reads them — so the tables have the true vocabulary's rows:
/// `attn.q_proj/k_proj/v_proj.{weight,bias}` become the fused
/// `attn.c_attn.{weight,bias}` (weights [in, out] concatenated on dim 1,
/// biases on dim 0); every other name is kept. `checkpoint` is a checkpoint
/// directory (its latest step) or one step directory. Metadata: format,
/// step, mesh, source.
void consolidateCheckpoint(const std::string &checkpoint, const std::string &outFile);

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Copies the intersection of two row-major boxes of the same global tensor:
/// `src` (block of srcShape at srcOffsets) into `dst` (block of dstShape at
/// dstOffsets); `elementBytes` per element. Does nothing if they are disjoint.
void copyIntersection(const void *src, const std::vector<int64_t> &srcOffsets,
                      const std::vector<int64_t> &srcShape, void *dst,
                      const std::vector<int64_t> &dstOffsets,
                      const std::vector<int64_t> &dstShape, int64_t elementBytes);

} // namespace shardc::ckpt

#endif // SHARDC_RUNTIME_CHECKPOINT_CHECKPOINT_H
