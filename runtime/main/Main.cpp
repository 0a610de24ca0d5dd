//===- Main.cpp - main() of a compiled training step ----------------------===//
//
// The executable `shardc compile` links: every MPI rank decodes the embedded
// descriptor, initializes (or resumes) its blocks of the state, and per step
// fills its blocks of the inputs, calls `shardc_step` and reads the reports.
// Rank 0 prints and logs, as `shardc train` does.
//
// Errors every rank sees alike (command line, descriptor, data file,
// checkpoint manifest) are found before MPI starts: rank 0 prints them and
// every rank exits non-zero. After that an Error on any rank ends the whole
// job through Communicators::abort (MPI_Abort), since its peers may be
// waiting for it in a collective.
//
//===----------------------------------------------------------------------===//

#include "runtime/main/Context.h"
#include "runtime/main/Options.h"
#include "runtime/program/KernelRunner.h"
#include "runtime/program/StepLog.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/InitFrom.h"
#include "runtime/cpu/ComputeType.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/data/MaskedLM.h"
#include "runtime/data/TokenFile.h"
#include "runtime/rng/Philox.h"
#include "runtime/abi/StateNames.h"

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include <sys/resource.h>
#include <unistd.h>

using namespace shardc;
using namespace shardc::rt;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

/// This process's rank from the launcher's environment, before MPI is up:
/// only rank 0 prints the errors that every rank finds alike.
int64_t launcherRank() {
  for (const char *var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char *v = std::getenv(var))
      return std::atoll(v);
  return 0;
}

//===----------------------------------------------------------------------===//
// --describe
//===----------------------------------------------------------------------===//

/// "[50304/tp, 64]": the global shape with each split dim's axes.
std::string shardingWords(const BoundaryTensor &t, const MeshDesc &mesh) {
  std::string s = "[";
  for (size_t d = 0; d < t.globalShape.size(); ++d) {
    s += (d ? ", " : "") + std::to_string(t.globalShape[d]);
    const Axes &axes = t.sharding[d];
    if (axes.empty())
      continue;
    std::string names;
    for (size_t i = 0; i < axes.size(); ++i)
      names += (i ? "*" : "") + mesh.names[axes[i]];
    s += "/" + (axes.size() > 1 ? "(" + names + ")" : names);
  }
  return s + "]";
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / kMiB);
  return buf;
}

void describe(const Program &p) {
  std::printf("source:     %s\n", p.source.c_str());
  std::printf("strategy:   %s\n", p.strategy.empty() ? "(none)" : p.strategy.c_str());
  std::printf("precision:  %s, %lld micro-batch(es)\n", p.precision.c_str(),
              static_cast<long long>(p.microBatches));
  std::printf("mesh:       %s (%lld ranks: mpirun -np %lld)\n", p.mesh.str().c_str(),
              static_cast<long long>(p.mesh.numRanks()),
              static_cast<long long>(p.mesh.numRanks()));
  std::printf("arenas per rank:\n");
  for (const ArenaDesc &a : p.arenas) {
    std::string note;
    if (a.name == kHostArenaName)
      note = "; offloaded activations, host memory outside the peak";
    else if (a.name == "workspace" && p.activationBytes >= 0) {
      // The same split as `shardc explain`'s memory rows.
      int64_t unstaged = p.unstagedBytes >= 0
                             ? std::clamp(p.unstagedBytes, p.activationBytes, a.bytes)
                             : a.bytes;
      note = "; activations " + std::to_string(p.activationBytes) + ", kernel scratch " +
             std::to_string(unstaged - p.activationBytes) + ", collective staging " +
             std::to_string(a.bytes - unstaged);
      if (p.storedActivationBytes >= 0)
        note += "; of the activations " + std::to_string(p.storedActivationBytes) +
                " stored by the forward for the backward";
    }
    std::printf("  %-20s %14lld bytes (%s%s)\n", a.name.c_str(), static_cast<long long>(a.bytes),
                mib(a.bytes).c_str(), note.c_str());
  }
  std::printf("planned peak per rank: %lld bytes (%s)\n",
              static_cast<long long>(p.plannedPeakBytes), mib(p.plannedPeakBytes).c_str());
  // The kernels' scratch (planned inside the workspace, live during its
  // call) and the collectives' staging (live while the collective is in
  // flight).
  for (bool collectives : {false, true}) {
    int64_t calls = 0, sum = 0;
    const Call *largest = nullptr;
    for (const Call &c : p.calls)
      if (c.scratch > 0 && (c.comm >= 0) == collectives) {
        ++calls;
        sum += c.scratch;
        if (!largest || c.scratch > largest->scratch)
          largest = &c;
      }
    if (!largest)
      continue;
    // (The sum over the staged collectives is what a backend keeping a
    // buffer per call, as the CUDA backend did before the plan held them,
    // would hold.)
    std::string all = collectives ? ", " + std::to_string(sum) + " bytes in all (" + mib(sum) +
                                        ")"
                                  : "";
    std::printf("%s: %lld calls%s, largest %lld bytes (%s, %s)\n",
                collectives ? "collective staging (in the workspace, while in flight)"
                            : "kernel scratch (in the workspace, for its call's duration)",
                static_cast<long long>(calls), all.c_str(),
                static_cast<long long>(largest->scratch), mib(largest->scratch).c_str(),
                largest->op.c_str());
  }
  if (p.pipeline.axis >= 0) {
    const nlohmann::json &pl = p.pipeline.info;
    std::printf("pipeline:   %lld stages on mesh axis %d (%s), schedule %s, bubble %.4f\n",
                static_cast<long long>(p.pipeline.stages), p.pipeline.axis,
                p.mesh.names[p.pipeline.axis].c_str(), pl.value("schedule", "?").c_str(),
                pl.value("bubble", 0.0));
    if (pl.contains("stage_bytes") && pl.contains("stage_workspace"))
      for (size_t s = 0; s < pl.at("stage_bytes").size(); ++s)
        std::printf("  stage %zu: %lld bytes planned (%lld activations)\n", s,
                    static_cast<long long>(pl.at("stage_bytes")[s].get<int64_t>()),
                    static_cast<long long>(pl.at("stage_workspace")[s].get<int64_t>()));
  }
  for (const char *kind : {"state", "input"}) {
    std::printf("%s tensors (dtype, global shape/splitting axes, local shape):\n",
                std::string(kind) == "state" ? "state" : "input");
    for (const BoundaryTensor &t : p.tensors) {
      if (t.kind != kind)
        continue;
      std::string name = t.name;
      if (t.kind == "input")
        name += " (micro-batch " + std::to_string(t.microBatch) + ")";
      std::printf("  %-48s %-4s %-24s local %s%s\n", name.c_str(), dtype_name(t.local.dtype),
                  shardingWords(t, p.mesh).c_str(), shape_str(t.local.shape).c_str(),
                  t.stage >= 0 ? (" (stage " + std::to_string(t.stage) + ")").c_str() : "");
    }
  }
  std::string reports;
  for (const BoundaryTensor &t : p.tensors)
    if (t.kind == "report")
      reports += (reports.empty() ? "" : ", ") + t.name;
  std::printf("reports: %s\n", reports.c_str());
  if (!p.train.empty())
    std::printf("train: %s\n", p.train.dump().c_str());
}

//===----------------------------------------------------------------------===//
// State and inputs
//===----------------------------------------------------------------------===//

/// Stores float values as `dtype` (rounded once, as initParams does).
void storeFloats(const std::vector<float> &v, DType dtype, void *out) {
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dtype) {
    case DType::F32:
      static_cast<float *>(out)[i] = v[i];
      break;
    case DType::F64:
      static_cast<double *>(out)[i] = v[i];
      break;
    case DType::BF16:
      static_cast<uint16_t *>(out)[i] = cpu::f32_to_bf16(v[i]);
      break;
    case DType::F16:
      static_cast<uint16_t *>(out)[i] = cpu::f32_to_f16(v[i]);
      break;
    case DType::I32:
      static_cast<int32_t *>(out)[i] = static_cast<int32_t>(v[i]);
      break;
    }
  }
}

void fillConstant(void *out, DType dtype, int64_t n, double value) {
  if (dtype == DType::F64) {
    rng::init_constant(static_cast<double *>(out), n, value);
    return;
  }
  storeFloats(std::vector<float>(n, static_cast<float>(value)), dtype, out);
}

double readScalar(const void *p, DType dtype) {
  switch (dtype) {
  case DType::F32:
    return *static_cast<const float *>(p);
  case DType::F64:
    return *static_cast<const double *>(p);
  case DType::BF16:
    return cpu::bf16_to_f32(*static_cast<const uint16_t *>(p));
  case DType::F16:
    return cpu::f16_to_f32(*static_cast<const uint16_t *>(p));
  case DType::I32:
    return *static_cast<const int32_t *>(p);
  }
  return 0;
}

/// The initial state of this rank, as `shardc train` initializes the whole
/// one: parameters from --seed at the block's global indices, the loss scale
/// from the descriptor, everything else zero.
void initState(shardc_rt_ctx &ctx, int64_t rank, uint64_t seed) {
  const Program &p = ctx.program;
  for (const BoundaryTensor &t : p.tensors) {
    if (t.kind != "state" || !p.holds(t, rank))
      continue;
    void *out = ctx.address(t);
    const int64_t n = t.local.numel();
    // A parameter, or its bf16/f16 copy: the same values at the block's
    // global indices, rounded to the tensor's dtype (what the update's cast
    // of the master gives).
    if (abi::isParameterState(t.name)) {
      if (!t.param)
        throw Error("state '" + t.name + "' has no \"param\" entry (its initializer)");
      const ParamInit &init = *t.param;
      if (init.init == "normal") {
        std::vector<int64_t> offsets = t.blockOffsets(p.mesh, rank);
        if (t.local.dtype == DType::F64) {
          rng::init_normal_slice(static_cast<double *>(out), t.globalShape, offsets,
                                 t.local.shape, seed, init.name, 0.0, init.std);
        } else {
          std::vector<float> v(n);
          rng::init_normal_slice(v.data(), t.globalShape, offsets, t.local.shape, seed,
                                 init.name, 0.0, init.std);
          storeFloats(v, t.local.dtype, out);
        }
      } else if (init.init == "zeros" || init.init == "ones") {
        fillConstant(out, t.local.dtype, n, init.init == "ones" ? 1.0 : 0.0);
      } else {
        throw Error("parameter '" + init.name + "' has an unknown init '" + init.init + "'");
      }
    } else if (t.name == "loss_scale") {
      const nlohmann::json &v = p.train.contains("loss_scale") ? p.train.at("loss_scale")
                                                                : nlohmann::json(65536.0);
      if (!v.is_number())
        throw Error("the descriptor's train.loss_scale is not a number");
      fillConstant(out, t.local.dtype, n, v.get<double>());
    } else {
      std::memset(out, 0, static_cast<size_t>(t.local.bytes())); // moments, counters
    }
    ctx.toDevice(t);
  }
}

/// --init-from: every parameter (and bf16/f16 copy) block this rank holds,
/// from a safetensors file (ckpt::InitSource: Hugging Face GPT-2 or LLaMA,
/// or shardc's own), converted to the state's dtype once (a copy is its
/// master rounded, as the update writes it); the rest of the state stays as
/// initState left it (moments and counters zero). Every rank reads the
/// header and then only the blocks it holds.
void initFromFile(shardc_rt_ctx &ctx, int64_t rank, const std::string &path) {
  const Program &p = ctx.program;
  std::vector<ckpt::InitParam> wanted;
  std::set<std::string> names;
  for (const BoundaryTensor &t : p.tensors)
    if (t.kind == "state" && abi::isParameterState(t.name) && t.param &&
        names.insert(t.param->name).second)
      wanted.push_back({t.param->name, t.param->role == "embedding", t.globalShape});
  // Every rank checks every name and shape (the header), then reads only the
  // blocks it holds, converted to the state's dtype.
  ckpt::InitSource source(path, wanted);
  for (const BoundaryTensor &t : p.tensors) {
    if (t.kind != "state" || !abi::isParameterState(t.name) || !t.param || !p.holds(t, rank))
      continue;
    for (const ckpt::InitParam &w : wanted)
      if (w.name == t.param->name && w.shape != t.globalShape)
        throw Error(path + ": '" + t.param->name + "' has shape " + shape_str(w.shape) +
                    ", the state '" + t.name + "' " + shape_str(t.globalShape));
    std::vector<int64_t> offsets = t.blockOffsets(p.mesh, rank);
    HostTensor block = source.readBlock(t.param->name, offsets, t.local.shape);
    std::vector<double> wide(block.numel());
    cpu::toCompute(block.bytes.data(), block.dtype, block.numel(), wide.data());
    cpu::fromCompute(wide.data(), block.numel(), t.local.dtype, ctx.address(t));
    ctx.toDevice(t);
  }
}

/// The inputs of one micro-batch.
struct MicroBatchInputs {
  const BoundaryTensor *tokens = nullptr, *targets = nullptr;
  /// BERT's segment ids (all zero: one segment); its presence makes the
  /// step a masked LM (data::applyMaskedLM on the global batch).
  const BoundaryTensor *tokenTypes = nullptr;
  std::vector<const BoundaryTensor *> masks; ///< loss_mask: all ones
};

/// The step's inputs by micro-batch, checked once: tokens, targets and
/// token types of one global [B, T].
std::vector<MicroBatchInputs> stepInputs(const Program &p, int64_t &B, int64_t &T) {
  std::vector<MicroBatchInputs> mbs(std::max<int64_t>(p.microBatches, 1));
  for (const BoundaryTensor &t : p.tensors) {
    if (t.kind != "input")
      continue;
    if (t.microBatch < 0 || t.microBatch >= static_cast<int>(mbs.size()))
      throw Error("input '" + t.name + "' is of micro-batch " + std::to_string(t.microBatch) +
                  " but the step has " + std::to_string(mbs.size()));
    MicroBatchInputs &mb = mbs[t.microBatch];
    if (t.name == "tokens" || t.name == "targets" || t.name == "token_types") {
      if (t.local.dtype != DType::I32 || t.globalShape.size() != 2)
        throw Error("input '" + t.name + "' must be I32 [batch, seq], got " +
                    dtype_name(t.local.dtype) + " " + shape_str(t.globalShape));
      (t.name == "tokens" ? mb.tokens : t.name == "targets" ? mb.targets : mb.tokenTypes) = &t;
    } else if (t.name == "loss_mask") {
      mb.masks.push_back(&t);
    } else {
      throw Error("the step has an input '" + t.name + "' that the runtime cannot feed");
    }
  }
  for (size_t j = 0; j < mbs.size(); ++j) {
    if (!mbs[j].tokens)
      throw Error("the step has no 'tokens' input for micro-batch " + std::to_string(j));
    if (mbs[j].targets && mbs[j].targets->globalShape != mbs[j].tokens->globalShape)
      throw Error("inputs 'tokens' and 'targets' differ in global shape");
    if (mbs[j].tokenTypes && mbs[j].tokenTypes->globalShape != mbs[j].tokens->globalShape)
      throw Error("inputs 'tokens' and 'token_types' differ in global shape");
    if ((mbs[j].tokenTypes != nullptr) != (mbs[0].tokenTypes != nullptr))
      throw Error("only some micro-batches have a 'token_types' input");
    if (mbs[j].tokens->globalShape != mbs[0].tokens->globalShape)
      throw Error("the micro-batches' 'tokens' differ in global shape");
  }
  B = mbs[0].tokens->globalShape[0];
  T = mbs[0].tokens->globalShape[1];
  return mbs;
}

/// Fills this rank's blocks of the inputs of step at data `position`. A
/// masked LM (maskToken >= 0) masks the global batch first, as `shardc
/// train` does, so every rank's block is its share of the same batch.
void fillInputs(shardc_rt_ctx &ctx, int64_t rank, const std::vector<MicroBatchInputs> &mbs,
                const data::TokenFile &tokens, int64_t position, int64_t B, int64_t T,
                uint64_t seed, int32_t maskToken, std::vector<int32_t> &gTokens,
                std::vector<int32_t> &gTargets) {
  const MeshDesc &mesh = ctx.program.mesh;
  gTokens.resize(B * T);
  gTargets.resize(B * T);
  for (size_t j = 0; j < mbs.size(); ++j) {
    const int64_t at = position + static_cast<int64_t>(j) * B * T;
    tokens.batch(at, B, T, gTokens.data(), gTargets.data());
    if (maskToken >= 0)
      data::applyMaskedLM(gTokens.data(), gTargets.data(), B * T, at, seed, maskToken);
    if (const BoundaryTensor *tt = mbs[j].tokenTypes) { // one segment: type 0
      std::memset(ctx.address(*tt), 0, static_cast<size_t>(tt->local.bytes()));
      ctx.toDevice(*tt);
    }
    for (const BoundaryTensor *t : {mbs[j].tokens, mbs[j].targets}) {
      if (!t)
        continue;
      ckpt::copyIntersection(t == mbs[j].tokens ? gTokens.data() : gTargets.data(), {0, 0},
                             {B, T}, ctx.address(*t), t->blockOffsets(mesh, rank),
                             t->local.shape, 4);
    }
    // Rewritten every step: the planner may reuse an input's bytes.
    for (const BoundaryTensor *m : mbs[j].masks)
      fillConstant(ctx.address(*m), m->local.dtype, m->local.numel(), 1.0);
    for (const BoundaryTensor *t : {mbs[j].tokens, mbs[j].targets})
      if (t)
        ctx.toDevice(*t);
    for (const BoundaryTensor *m : mbs[j].masks)
      ctx.toDevice(*m);
  }
}

//===----------------------------------------------------------------------===//
// Reports, memory, logging
//===----------------------------------------------------------------------===//

struct Reports {
  double loss = NAN, lr = NAN, gradNorm = NAN;
  std::optional<double> lossScale;
  bool skipped = false;
  /// False on the ranks of a pipeline stage that does not hold the reports
  /// (they are sent to stage 0).
  bool held = true;
};

Reports readReports(const shardc_rt_ctx &ctx) {
  Reports r;
  if (const BoundaryTensor *loss = ctx.program.find("report", "loss"))
    r.held = ctx.program.holds(*loss, ctx.comm->rank());
  auto get = [&](const char *name) -> std::optional<double> {
    const BoundaryTensor *t = ctx.program.find("report", name);
    if (!t || !r.held)
      return std::nullopt;
    ctx.toHost(*t);
    return readScalar(ctx.address(*t), t->local.dtype);
  };
  r.loss = get("loss").value_or(NAN);
  r.lr = get("lr").value_or(NAN);
  r.gradNorm = get("grad_norm").value_or(NAN);
  r.lossScale = get("loss_scale");
  r.skipped = get("skipped").value_or(0.0) != 0.0;
  return r;
}

/// Resident set size now, MiB (/proc/self/statm; the peak where absent).
double rssMiB() {
  long pages = 0, resident = 0;
  if (FILE *f = std::fopen("/proc/self/statm", "r")) {
    int n = std::fscanf(f, "%ld %ld", &pages, &resident);
    std::fclose(f);
    if (n == 2)
      return resident * static_cast<double>(sysconf(_SC_PAGESIZE)) / kMiB;
  }
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

double peakRssMiB() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0; // KiB on Linux
}

/// Whether rank 0 draws a progress bar. Open MPI hands every rank's stdout
/// to a pseudo-terminal even when mpirun's own output is a file, so under it
/// isatty says nothing and the bar stays off.
bool showProgress() {
  return isatty(STDOUT_FILENO) && !std::getenv("OMPI_COMM_WORLD_SIZE");
}


std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

//===----------------------------------------------------------------------===//
// The run
//===----------------------------------------------------------------------===//

/// SHARDC_FAULT_KILL=RANK:STEP, a test hook: that rank dies by SIGKILL just
/// before that step (1-based), as a crashed node would.
struct FaultKill {
  int64_t rank = -1, step = -1;
};

FaultKill faultKillFromEnv() {
  FaultKill f;
  const char *v = std::getenv("SHARDC_FAULT_KILL");
  if (!v || !*v)
    return f;
  long long r = -1, s = -1;
  char tail = 0;
  if (std::sscanf(v, "%lld:%lld%c", &r, &s, &tail) != 2 || r < 0 || s < 1)
    throw Error(std::string("SHARDC_FAULT_KILL must be RANK:STEP (a test hook), got '") + v +
                "'");
  f.rank = r;
  f.step = s;
  return f;
}

/// What the run starts from, decided before MPI (alike on every rank).
struct Plan {
  StepOptions opts;
  std::vector<MicroBatchInputs> inputs;
  int64_t B = 0, T = 0;
  uint64_t seed = kDefaultSeed;
  /// A masked LM's mask id (-1: not a masked LM).
  int32_t maskToken = -1;
  int64_t firstStep = 0, position = 0;
  std::string resumeDir; ///< the step directory, when resuming
  ckpt::Manifest manifest;
  FaultKill fault;
  /// --log-file, opened by rank 0 before MPI starts (a bad path is an error
  /// every rank can exit on).
  std::shared_ptr<std::ofstream> log;
};

/// A masked LM's mask id: --mask-token, else the token table's last row
/// (`shardc train`'s default: a padding row when the vocabulary is padded;
/// the token table is the embedding with the most rows), checked against the
/// table; -1 for a step without token types.
int32_t maskTokenOf(const Program &program, const std::vector<MicroBatchInputs> &inputs,
                    const StepOptions &opts) {
  if (!inputs.front().tokenTypes) {
    if (opts.maskToken)
      throw Error("option '--mask-token' is for masked-LM steps (BERT), and this step has "
                       "no 'token_types' input");
    return -1;
  }
  const BoundaryTensor *table = nullptr;
  for (const BoundaryTensor &t : program.tensors)
    if (t.kind == "state" && t.param && t.param->role == "embedding" &&
        t.name.rfind("param:", 0) == 0 && t.globalShape.size() == 2 &&
        (!table || t.globalShape[0] > table->globalShape[0]))
      table = &t;
  if (!table)
    throw Error("the masked-LM step has no token embedding (a parameter of role embedding) "
                "to take the mask id from");
  const int64_t rows = table->globalShape[0];
  const int64_t id = opts.maskToken.value_or(rows - 1);
  if (id >= rows)
    throw Error("option '--mask-token' " + std::to_string(id) + " is outside the token " +
                     "table '" + table->param->name + "' of " + std::to_string(rows) + " rows");
  return static_cast<int32_t>(id);
}

Plan plan(const Program &program, const StepOptions &opts, const data::TokenFile &tokens) {
  Plan pl;
  pl.opts = opts;
  pl.inputs = stepInputs(program, pl.B, pl.T);
  pl.maskToken = maskTokenOf(program, pl.inputs, opts);
  if (tokens.size() < pl.B * pl.T + 1)
    throw Error(tokens.path() + " (--data) holds " + std::to_string(tokens.size()) +
                " tokens, but one global batch of " + std::to_string(pl.B) + " x " +
                std::to_string(pl.T) + " needs " + std::to_string(pl.B * pl.T + 1) +
                " (B*T + 1)");
  pl.fault = faultKillFromEnv();
  pl.seed = opts.seed.value_or(kDefaultSeed);
  pl.position = opts.position.value_or(0);
  if (opts.resume) {
    pl.resumeDir = ckpt::latestCheckpoint(opts.checkpointDir);
    pl.manifest = ckpt::readManifest(pl.resumeDir);
    ckpt::checkCompatible(pl.resumeDir, pl.manifest, program);
    if (opts.seed && *opts.seed != pl.manifest.seed)
      throw Error("--seed " + std::to_string(*opts.seed) + " differs from the seed " +
                  std::to_string(pl.manifest.seed) + " of the checkpoint '" + pl.resumeDir +
                  "' (the run would not continue the same way); leave --seed out");
    if (pl.manifest.step >= opts.steps)
      throw Error("the checkpoint '" + pl.resumeDir + "' has done " +
                  std::to_string(pl.manifest.step) + " steps: --steps " +
                  std::to_string(opts.steps) + " (the total) leaves nothing to do");
    pl.seed = pl.manifest.seed;
    pl.firstStep = pl.manifest.step;
    pl.position = pl.manifest.nextPosition;
  } else if (!opts.checkpointDir.empty()) {
    std::string existing;
    try {
      existing = ckpt::latestCheckpoint(opts.checkpointDir);
    } catch (const Error &) {
    }
    if (!existing.empty())
      throw Error("'" + opts.checkpointDir + "' already holds checkpoints (" + existing +
                  "); pass --resume to continue from it, or use another --checkpoint-dir");
  }
  // Positions only grow (TokenFile::batch wraps them around the data) and
  // checkpoints record them: every one the run reaches stays within what a
  // manifest may hold, so it neither overflows nor is refused on resume.
  const int64_t stepTokens = static_cast<int64_t>(pl.inputs.size()) * pl.B * pl.T;
  const int64_t steps = opts.steps - pl.firstStep;
  if (stepTokens > 0 && steps > (ckpt::kMaxManifestCount - pl.position) / stepTokens)
    throw Error("--steps " + std::to_string(opts.steps) + ": " + std::to_string(steps) +
                " steps of " + std::to_string(stepTokens) + " tokens from data position " +
                std::to_string(pl.position) +
                (opts.resume ? " (\"next_position\" of " + pl.resumeDir + "/manifest.json)"
                             : std::string(" (--position)")) +
                " pass data position 2^53, the most a checkpoint records");
  if (!opts.logFile.empty() && launcherRank() == 0) {
    pl.log = std::make_shared<std::ofstream>(
        opts.logFile, opts.resume ? std::ios::app : std::ios::trunc);
    if (!*pl.log)
      throw Error("cannot write '" + opts.logFile + "' (--log-file)");
  }
  return pl;
}

/// Saves this rank's state at `stepsDone`; collective (barriers between the
/// phases, so rank 0 commits only after every rank wrote).
void saveCheckpoint(shardc_rt_ctx &ctx, const Plan &pl, int64_t stepsDone, int64_t position) {
  const Program &p = ctx.program;
  Communicators &comm = *ctx.comm;
  ckpt::Manifest m;
  m.mesh = p.mesh;
  m.source = p.source;
  m.strategy = p.strategy;
  m.precision = p.precision;
  m.model = p.model;
  m.step = stepsDone;
  m.nextPosition = position;
  m.seed = pl.seed;
  m.tensors = ckpt::stateTensors(p);
  std::vector<ckpt::BlockView> blocks;
  for (const BoundaryTensor &t : p.tensors) {
    if (t.kind != "state" || !p.holds(t, comm.rank()))
      continue;
    ctx.toHost(t);
    blocks.push_back({t.name, ctx.address(t)});
    if (t.name == "loss_scale")
      m.lossScale = readScalar(ctx.address(t), t.local.dtype);
  }
  const std::string &dir = pl.opts.checkpointDir;
  if (comm.rank() == 0)
    ckpt::beginCheckpoint(dir, stepsDone);
  comm.barrier();
  ckpt::writeRankBlocks(dir, m, comm.rank(), blocks);
  comm.barrier();
  if (comm.rank() == 0) {
    std::string saved = ckpt::commitCheckpoint(dir, m);
    std::printf("%scheckpoint: %s\n", showProgress() ? "\r\033[K" : "", saved.c_str());
    std::fflush(stdout);
  }
  comm.barrier();
}

/// Loads this rank's blocks of the state from the checkpoint being resumed.
void loadState(shardc_rt_ctx &ctx, const Plan &pl) {
  const Program &p = ctx.program;
  const int64_t rank = ctx.comm->rank();
  std::vector<ckpt::BlockTarget> targets;
  // A bf16/f16 weight copy the checkpoint does not hold (a ZeRO-1/2 step
  // makes it from the master instead of storing it): its master's block,
  // rounded as the update rounds it.
  std::vector<std::pair<const BoundaryTensor *, std::vector<float>>> copies;
  for (const BoundaryTensor &t : p.tensors) {
    if (t.kind != "state" || !p.holds(t, rank))
      continue;
    std::string_view master = abi::lowPrecisionCopyOf(t.name);
    if (!master.empty() && !pl.manifest.find(t.name)) {
      copies.push_back({&t, std::vector<float>(static_cast<size_t>(t.local.numel()))});
      targets.push_back({"param:" + std::string(master), t.blockOffsets(p.mesh, rank),
                         t.local.shape, copies.back().second.data()});
      continue;
    }
    targets.push_back({t.name, t.blockOffsets(p.mesh, rank), t.local.shape, ctx.address(t)});
  }
  // On the saved mesh a rank reads its own file; elsewhere the overlaps.
  bool sameMesh = pl.manifest.mesh.sizes == p.mesh.sizes;
  ckpt::loadBlocks(pl.resumeDir, pl.manifest, targets, sameMesh ? rank : -1);
  for (auto &[t, master] : copies)
    storeFloats(master, t->local.dtype, ctx.address(*t));
  for (const BoundaryTensor &t : p.tensors)
    if (t.kind == "state" && p.holds(t, rank))
      ctx.toDevice(t);
}

/// --profile: per op, the seconds per step in kernels and collectives, and
/// the step time against their sum (what the runtime itself costs: input
/// copies, dispatch, report reads). Rank 0 prints its own numbers.
void printProfile(const Backend &runner, Communicators &comm, double stepSecs,
                  int64_t steps) {
  if (comm.rank() != 0 || steps < 1)
    return;
  double kernels = 0, collectives = 0;
  std::printf("profile (rank 0, %lld steps after the first), ms per step:\n",
              static_cast<long long>(steps));
  for (const auto &[name, secs] : runner.kernelSeconds()) {
    kernels += secs;
    std::printf("  %-32s %10.3f\n", name.c_str(), secs * 1e3 / steps);
  }
  for (const auto &[name, secs] : runner.collectiveSeconds()) {
    collectives += secs;
    std::printf("  %-32s %10.3f\n", name.c_str(), secs * 1e3 / steps);
  }
  double step = stepSecs / steps, sum = (kernels + collectives) / steps;
  std::printf("step %.3f ms = kernels %.3f + collectives %.3f + runtime overhead %.3f ms "
              "(%.2f%%)\n",
              step * 1e3, kernels / steps * 1e3, collectives / steps * 1e3, (step - sum) * 1e3,
              step > 0 ? 100.0 * (step - sum) / step : 0.0);
}

/// The validation loss of the current parameters: the mean over
/// --eval-batches batches from the start of the validation file, each run by
/// shardc_eval (the step's forward, no dropout, no update).
double evaluate(shardc_rt_ctx &ctx, const Plan &pl, const data::TokenFile &val, int64_t step,
                std::vector<int32_t> &gTokens, std::vector<int32_t> &gTargets) {
  const BoundaryTensor *report = ctx.program.find("eval_report", "loss");
  const int64_t k = static_cast<int64_t>(pl.inputs.size());
  double sum = 0;
  for (int64_t b = 0; b < pl.opts.evalBatches; ++b) {
    fillInputs(ctx, ctx.comm->rank(), pl.inputs, val, b * k * pl.B * pl.T, pl.B, pl.T, pl.seed,
               pl.maskToken, gTokens, gTargets);
    ctx.run(/*eval=*/true, StepContext{pl.seed, static_cast<uint64_t>(step), /*training=*/false});
    ctx.toHost(*report);
    sum += readScalar(ctx.address(*report), report->local.dtype);
  }
  return sum / static_cast<double>(pl.opts.evalBatches);
}

void train(shardc_rt_ctx &ctx, const Plan &pl, const data::TokenFile &tokens,
           const data::TokenFile *val) {
  const Program &p = ctx.program;
  Communicators &comm = *ctx.comm;
  const int64_t rank = comm.rank();
  const bool lead = rank == 0;
  const StepOptions &o = pl.opts;

  if (pl.resumeDir.empty()) {
    initState(ctx, rank, pl.seed);
    if (!o.initFrom.empty()) {
      initFromFile(ctx, rank, o.initFrom);
      if (lead)
        std::printf("initialized the parameters from %s\n", o.initFrom.c_str());
    }
  } else
    loadState(ctx, pl);
  // No rank starts (or begins a checkpoint) while another may still fail to
  // load its state.
  comm.barrier();

  std::ofstream *log = lead && pl.log && pl.log->is_open() ? pl.log.get() : nullptr;
  const int64_t k = static_cast<int64_t>(pl.inputs.size());
  const int64_t stepTokens = k * pl.B * pl.T;
  const double plannedMiB = p.plannedPeakBytes / kMiB;
  // The planned activations: the workspace arena (what recomputation shrinks).
  double activationMiB = 0, hostMiB = 0;
  for (const ArenaDesc &a : p.arenas) {
    if (a.name == "workspace")
      activationMiB = a.bytes / kMiB;
    if (a.name == kHostArenaName)
      hostMiB = a.bytes / kMiB; // offloaded activations, outside the device peak
  }
  const bool tty = lead && showProgress();
  if (lead) {
    std::printf("training steps %lld..%lld: %lld micro-batch(es) x %lld x %lld tokens, %s, "
                "mesh %s (%s), seed %llu\n",
                static_cast<long long>(pl.firstStep + 1), static_cast<long long>(o.steps),
                static_cast<long long>(k), static_cast<long long>(pl.B),
                static_cast<long long>(pl.T), p.precision.c_str(), p.mesh.str().c_str(),
                p.strategy.empty() ? "no preset" : p.strategy.c_str(),
                static_cast<unsigned long long>(pl.seed));
    std::printf("planned memory per rank: %.1f MiB, of which activations (workspace) %.1f MiB",
                plannedMiB, activationMiB);
    if (hostMiB > 0)
      std::printf("; offloaded activations (host) %.1f MiB", hostMiB);
    std::printf("\n");
    if (!pl.resumeDir.empty())
      std::printf("resumed from %s (saved on mesh %s), data position %lld\n",
                  pl.resumeDir.c_str(), pl.manifest.mesh.str().c_str(),
                  static_cast<long long>(pl.position));
    std::fflush(stdout);
  }

  // MFU: model FLOPs per token over the mesh's peak (StepLog.h), when the
  // device's peak is known (--peak-tflops, or a GPU of StepLog's table).
  double parameters = 0;
  for (const BoundaryTensor &t : p.tensors)
    if (t.kind == "state" && t.name.rfind("param:", 0) == 0)
      parameters += static_cast<double>(num_elements(t.globalShape));
  const double tokenFlops =
      flopsPerToken(parameters, p.model.value("layers", int64_t{0}),
                    p.model.value("hidden", int64_t{0}), pl.T);
  std::optional<double> peakFlops =
      o.peakTflops ? std::optional<double>(*o.peakTflops * 1e12)
                   : knownPeakFlops(ctx.backend->describe(), p.precision);
  if (lead && peakFlops)
    std::printf("MFU against %.4g TFLOP/s per device x %lld, %.4g GFLOP per token\n",
                *peakFlops / 1e12, static_cast<long long>(p.mesh.numRanks()), tokenFlops / 1e9);

  ctx.backend->setTiming(o.profile);
  double profiledSecs = 0; // step time of the profiled steps (all but the first)
  std::vector<int32_t> gTokens, gTargets;
  std::vector<double> losses;
  double firstLoss = NAN, lastLoss = NAN, totalSecs = 0;
  int64_t position = pl.position;
  for (int64_t i = pl.firstStep; i < o.steps; ++i) {
    if (pl.fault.rank == rank && pl.fault.step == i + 1)
      std::raise(SIGKILL);
    auto start = std::chrono::steady_clock::now();
    fillInputs(ctx, rank, pl.inputs, tokens, position, pl.B, pl.T, pl.seed, pl.maskToken,
               gTokens, gTargets);
    ctx.run(/*eval=*/false, StepContext{pl.seed, static_cast<uint64_t>(i), /*training=*/true});
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    totalSecs += secs;
    // The first step warms caches and allocators up: profile the others.
    if (o.profile && i == pl.firstStep)
      ctx.backend->resetTiming();
    else
      profiledSecs += secs;
    position += stepTokens;
    Reports r = readReports(ctx);
    if (r.held && !std::isfinite(r.loss) && !r.skipped)
      throw Error(format("the loss is %g at step %lld; training diverged (try a lower lr or "
                         "fp32 precision)",
                         r.loss, static_cast<long long>(i + 1)));
    if (std::isnan(firstLoss))
      firstLoss = r.loss;
    lastLoss = r.loss;
    if (!r.skipped)
      losses.push_back(r.loss);

    if (lead) {
      StepRecord rec = stepRecord(i + 1, r.loss, r.lr, r.gradNorm, r.skipped, r.lossScale,
                                  static_cast<double>(stepTokens), secs, totalSecs,
                                  i + 1 - pl.firstStep, o.steps - (i + 1));
      rec.mfu = modelFlopsUtilization(rec.tokensPerS, tokenFlops, peakFlops, p.mesh.numRanks());
      rec.rssMib = rssMiB();
      rec.plannedMib = plannedMiB;
      rec.plannedActivationsMib = activationMiB;
      if (hostMiB > 0)
        rec.plannedHostMib = hostMiB;
      std::string line = format("step %5lld/%lld | loss %.4f | lr %.2e | grad norm %.4f",
                                static_cast<long long>(i + 1), static_cast<long long>(o.steps),
                                r.loss, r.lr, r.gradNorm);
      if (r.lossScale)
        line += format(" | scale %g", *r.lossScale);
      if (r.skipped)
        line += " | skipped (inf/NaN gradients)";
      line += format(" | %.0f tok/s | %.1f ms", rec.tokensPerS, rec.stepMs);
      if (rec.mfu)
        line += format(" | mfu %.2f%%", *rec.mfu * 100);
      line += format(" | rss %.0f MiB | eta %s", *rec.rssMib, formatDuration(rec.etaS).c_str());
      if (tty)
        std::printf("\r\033[K%s\n%s %lld/%lld", line.c_str(),
                    progressBar(i + 1, o.steps).c_str(), static_cast<long long>(i + 1),
                    static_cast<long long>(o.steps));
      else
        std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      if (log) {
        *log << stepJson(rec).dump() << "\n";
        log->flush();
      }
    }
    bool last = i + 1 == o.steps;
    if (val && (last || (o.evalEvery > 0 && (i + 1) % o.evalEvery == 0))) {
      double valLoss = evaluate(ctx, pl, *val, i, gTokens, gTargets);
      if (lead) {
        std::printf("%seval after step %lld | val loss %.4f (%lld batch(es) of %s)\n",
                    tty ? "\r\033[K" : "", static_cast<long long>(i + 1), valLoss,
                    static_cast<long long>(o.evalBatches), pl.opts.valData.c_str());
        std::fflush(stdout);
        if (log) {
          *log << nlohmann::json{{"step", i + 1}, {"val_loss", valLoss}}.dump() << "\n";
          log->flush();
        }
      }
    }
    if (!o.checkpointDir.empty() &&
        (last || (o.checkpointEvery > 0 && (i + 1) % o.checkpointEvery == 0)))
      saveCheckpoint(ctx, pl, i + 1, position);
  }
  if (tty)
    std::printf("\r\033[K");

  // Peak RSS of every rank, gathered over the whole mesh.
  Axes all;
  for (size_t a = 0; a < p.mesh.sizes.size(); ++a)
    all.push_back(static_cast<int>(a));
  double peak = peakRssMiB();
  std::vector<double> peaks(comm.numRanks());
  comm.allgather(all, &peak, peaks.data(), sizeof(double));
  // A device backend's memory beyond the plan, the most on any rank.
  const int64_t outside = ctx.backend->bytesOutsidePlan();
  std::vector<int64_t> outsides(comm.numRanks());
  comm.allgather(all, &outside, outsides.data(), sizeof(int64_t));
  const int64_t maxOutside = *std::max_element(outsides.begin(), outsides.end());
  if (o.profile)
    printProfile(*ctx.backend, comm, profiledSecs, o.steps - pl.firstStep - 1);
  if (!lead)
    return;
  size_t window = std::min<size_t>(10, losses.size());
  double tail = 0;
  for (size_t i = losses.size() - window; i < losses.size(); ++i)
    tail += losses[i] / static_cast<double>(window);
  int64_t ran = o.steps - pl.firstStep;
  std::printf("done: loss %.4f -> %.4f (mean of the last %zu steps %.4f) in %.1f s (%.0f tok/s)\n",
              firstLoss, lastLoss, window, window ? tail : lastLoss, totalSecs,
              stepTokens * ran / totalSecs);
  std::string list;
  double maxPeak = 0;
  for (size_t i = 0; i < peaks.size(); ++i) {
    maxPeak = std::max(maxPeak, peaks[i]);
    if (peaks.size() <= 16)
      list += format("%s%.0f", i ? ", " : "", peaks[i]);
  }
  // The host arena (offloaded activations) is host memory on every backend:
  // part of a CPU rank's RSS, not of a GPU's planned peak.
  std::printf("memory per rank: planned %.1f MiB (arenas)%s, peak RSS %s MiB%s\n", plannedMiB,
              hostMiB > 0 ? format(" + %.1f MiB offloaded activations (host)", hostMiB).c_str()
                          : "",
              peaks.size() <= 16 ? list.c_str() : format("max %.0f", maxPeak).c_str(),
              peaks.size() <= 16 ? " (ranks 0..)" : "");
  if (maxOutside >= 0)
    std::printf("device memory outside the plan: %.1f MiB per rank at most (library "
                "workspaces, collective staging, calls planned without scratch)\n",
                maxOutside / kMiB);
  std::fflush(stdout);
}

/// MPI up, communicators, context, the run. Returns the exit status.
int runOnRanks(Program program, const Plan &pl, const data::TokenFile &tokens,
               const std::optional<data::TokenFile> &val) {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "error: MPI_Init_thread failed\n");
    return 1;
  }
  int worldRank = 0, worldSize = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  std::unique_ptr<Communicators> comm;
  try {
    comm = makeMpiCommunicators(program.mesh, KernelRunner::axesSetsNeeded(program));
  } catch (const std::exception &e) {
    if (worldSize != program.mesh.numRanks()) {
      // Every rank sees it: one message, a clean exit.
      if (worldRank == 0)
        std::fprintf(stderr, "error: %s\n", e.what());
      MPI_Finalize();
      return 1;
    }
    std::fprintf(stderr, "error: rank %d: %s\n", worldRank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  try {
    Communicators *c = comm.get();
    auto ctx = std::make_unique<shardc_rt_ctx>(
        std::move(program), c, [&](const Program &prog) -> std::unique_ptr<Backend> {
          if (pl.opts.device == "cpu")
            return makeCpuBackend(prog, c);
          CudaOptions co;
          co.comm = pl.opts.comm;
          co.graphs = !pl.opts.noGraph && !pl.opts.profile;
          return makeCudaBackend(prog, c, co);
        });
    if (c->rank() == 0 && pl.opts.device != "cpu") {
      std::printf("device: %s\n", ctx->backend->describe().c_str());
      std::fflush(stdout);
    }
    train(*ctx, pl, tokens, val ? &*val : nullptr);
    ctx.reset();
    comm->barrier();
  } catch (const std::exception &e) {
    comm->abort(e.what());
  }
  comm.reset();
  MPI_Finalize();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const bool lead = launcherRank() == 0;
  const std::string argv0 = argc > 0 ? argv[0] : "step";
  StepOptions opts;
  try {
    opts = parseStepOptions(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError &e) {
    if (lead)
      std::fprintf(stderr, "%s: error: %s (see --help)\n", argv0.c_str(), e.what());
    return 2;
  }
  if (opts.help) {
    if (lead)
      std::printf("%s", stepUsage(argv0).c_str());
    return 0;
  }
  try {
    Program program = parseProgram(shardc_program_json);
    if (opts.describe) {
      if (lead)
        describe(program);
      return 0;
    }
    data::TokenFile tokens = data::TokenFile::open(opts.data);
    Plan pl = plan(program, opts, tokens);
    std::optional<data::TokenFile> val;
    if (!opts.valData.empty()) {
      if (!program.find("eval_report", "loss"))
        throw Error("--val-data: this program has no evaluation entry (it was not compiled "
                    "by `shardc compile`, which adds one with -xf-extract-eval)");
      val = data::TokenFile::open(opts.valData);
      if (val->size() < pl.B * pl.T + 1)
        throw Error(opts.valData + " (--val-data) holds " + std::to_string(val->size()) +
                    " tokens, but one global batch of " + std::to_string(pl.B) + " x " +
                    std::to_string(pl.T) + " needs " + std::to_string(pl.B * pl.T + 1) +
                    " (B*T + 1)");
    }
    return runOnRanks(std::move(program), pl, tokens, val);
  } catch (const std::exception &e) {
    if (lead)
      std::fprintf(stderr, "%s: error: %s\n", argv0.c_str(), e.what());
    return 1;
  }
}
