//===- KernelRunner.cpp - the calls of a compiled step --------------------===//
//
// Mirrors compiler/executor/Executor.cpp (execLocal, runFloatOp, runGradOp,
// runScalarOp, runLayoutOp, runCrossEntropy) and MeshSimulation's
// collectives on raw buffers; keep the two in step.
//
//===----------------------------------------------------------------------===//

#include "runtime/program/KernelRunner.h"
#include "runtime/program/KernelScratch.h"

#include "runtime/comm/Comm.h"
#include "runtime/cpu/ComputeType.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/RowMath.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>

namespace shardc::rt {

namespace {

using Decoded = DecodedCall;

[[noreturn]] void fail(const Decoded &d, const std::string &what) { failCall(d, what); }

//===----------------------------------------------------------------------===//
// Storage and compute types
//===----------------------------------------------------------------------===//

using cpu::computeDType;
using cpu::fromCompute;
using cpu::scalarValue;
using cpu::toCompute;

/// A read-only view of a float buffer in compute type C; copies only when the
/// storage type differs (as the executor's In).
template <class C> class In {
public:
  In(const void *p, const TensorType &t) {
    if (t.dtype == computeDType<C>()) {
      ptr_ = static_cast<const C *>(p);
    } else {
      tmp_.resize(t.numel());
      toCompute(p, t.dtype, t.numel(), tmp_.data());
      ptr_ = tmp_.data();
    }
  }
  const C *get() const { return ptr_; }

private:
  const C *ptr_;
  std::vector<C> tmp_;
};

/// A result buffer written in compute type C, rounded into its storage by
/// done() (as the executor's Out).
template <class C> class Out {
public:
  Out(void *p, const TensorType &t) : p_(p), t_(t) {
    if (t.dtype != computeDType<C>())
      tmp_.resize(t.numel());
  }
  C *get() { return tmp_.empty() ? static_cast<C *>(p_) : tmp_.data(); }
  void done() {
    if (!tmp_.empty())
      fromCompute(tmp_.data(), t_.numel(), t_.dtype, p_);
  }

private:
  void *p_;
  const TensorType &t_;
  std::vector<C> tmp_;
};

//===----------------------------------------------------------------------===//
// Blocks of raw tensors (MeshSimulation's slicePart and concat)
//===----------------------------------------------------------------------===//

/// dst (contiguous) = the `index`-th of `parts` equal blocks of src along dim.
void slicePart(const uint8_t *src, uint8_t *dst, const std::vector<int64_t> &shape, int64_t dim,
               int64_t index, int64_t parts, int64_t elemBytes) {
  Split3 s(shape, dim, elemBytes);
  int64_t part = s.dimSize / parts, run = part * s.inner;
  for (int64_t o = 0; o < s.outer; ++o)
    std::memcpy(dst + o * run, src + (o * s.dimSize + index * part) * s.inner, run);
}

/// The inverse: writes src (contiguous) as the `index`-th of `parts` blocks of
/// dst (of `shape`) along dim.
void placePart(const uint8_t *src, uint8_t *dst, const std::vector<int64_t> &shape, int64_t dim,
               int64_t index, int64_t parts, int64_t elemBytes) {
  Split3 s(shape, dim, elemBytes);
  int64_t part = s.dimSize / parts, run = part * s.inner;
  for (int64_t o = 0; o < s.outer; ++o)
    std::memcpy(dst + (o * s.dimSize + index * part) * s.inner, src + o * run, run);
}

template <class A> A loadAs(const uint8_t *p, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::F32:
    return static_cast<A>(reinterpret_cast<const float *>(p)[i]);
  case DType::F64:
    return static_cast<A>(reinterpret_cast<const double *>(p)[i]);
  case DType::BF16:
    return static_cast<A>(cpu::bf16_to_f32(reinterpret_cast<const uint16_t *>(p)[i]));
  case DType::F16:
    return static_cast<A>(cpu::f16_to_f32(reinterpret_cast<const uint16_t *>(p)[i]));
  case DType::I32:
    return static_cast<A>(reinterpret_cast<const int32_t *>(p)[i]);
  }
  return A(0);
}

/// Element-wise reduction of `members` blocks of n elements (contiguous, in
/// group order) accumulated in A and rounded once into `out`, as
/// MeshSimulation's reduceAs.
template <class A>
void reduceBlocksAs(const uint8_t *blocks, int64_t members, int64_t n, DType dtype,
                    Reduction kind, void *out) {
  int64_t blockBytes = n * dtype_size(dtype);
  std::vector<A> acc(n);
  for (int64_t i = 0; i < n; ++i)
    acc[i] = loadAs<A>(blocks, dtype, i);
  for (int64_t j = 1; j < members; ++j) {
    const uint8_t *b = blocks + j * blockBytes;
    for (int64_t i = 0; i < n; ++i) {
      A next = loadAs<A>(b, dtype, i);
      switch (kind) {
      case Reduction::Sum:
        acc[i] += next;
        break;
      case Reduction::Max:
        acc[i] = next > acc[i] || next != next ? next : acc[i];
        break;
      case Reduction::Min:
        acc[i] = next < acc[i] || next != next ? next : acc[i];
        break;
      }
    }
  }
  switch (dtype) {
  case DType::I32:
    for (int64_t i = 0; i < n; ++i)
      static_cast<int32_t *>(out)[i] = static_cast<int32_t>(acc[i]);
    break;
  default:
    fromCompute(acc.data(), n, dtype, out);
  }
}

} // namespace

void reduceBlocks(const uint8_t *blocks, int64_t members, int64_t n, DType dtype, Reduction kind,
                  void *out) {
  if (dtype == DType::I32)
    reduceBlocksAs<int64_t>(blocks, members, n, dtype, kind, out);
  else if (dtype == DType::F64)
    reduceBlocksAs<double>(blocks, members, n, dtype, kind, out);
  else
    reduceBlocksAs<float>(blocks, members, n, dtype, kind, out);
}


//===----------------------------------------------------------------------===//
// KernelRunner
//===----------------------------------------------------------------------===//

KernelRunner::KernelRunner(const Program &program, int64_t rank, Communicators *comm)
    : program_(program), rank_(rank), comm_(comm) {
  if (rank < 0 || rank >= program.mesh.numRanks())
    throw Error("rank " + std::to_string(rank) + " is outside the mesh " + program.mesh.str());
  if (comm && (comm->rank() != rank || comm->numRanks() != program.mesh.numRanks()))
    throw Error("the communicators are for rank " + std::to_string(comm->rank()) + " of " +
                std::to_string(comm->numRanks()) + ", not rank " + std::to_string(rank) +
                " of the mesh " + program.mesh.str());
  std::vector<int64_t> coords = program.mesh.coords(rank);
  for (size_t i = 0; i < program.calls.size(); ++i) {
    auto d = decodeCall(program, i, coords);
    if (isCrossEntropyKind(d->kind) &&
        (program.mesh.size(d->block.axes) > 1 || program.mesh.size(d->tokenAxes) > 1) && !comm)
      fail(*d, "a split loss needs communicators");
    calls_.push_back(std::move(d));
  }
}

KernelRunner::~KernelRunner() = default;

void KernelRunner::resetTiming() {
  kernelSeconds_.clear();
  collectiveSeconds_.clear();
}

std::vector<Axes> KernelRunner::axesSetsNeeded(const Program &program) {
  std::vector<Axes> sets;
  auto add = [&](const Axes &axes) {
    for (int a : axes)
      if (a < 0 || a >= static_cast<int>(program.mesh.sizes.size()))
        return; // the runner's constructor reports it
    if (program.mesh.size(axes) > 1 && std::find(sets.begin(), sets.end(), axes) == sets.end())
      sets.push_back(axes);
  };
  for (const CommDesc &c : program.comms)
    add(c.axes);
  // The loss groups: the vocabulary dim's axes and the token axes.
  for (const Call &c : program.calls) {
    bool linear = c.op == "xf.linear_cross_entropy" || c.op == "xf.linear_cross_entropy_grad";
    bool plain = c.op == "xf.cross_entropy" || c.op == "xf.cross_entropy_grad";
    if (!linear && !plain)
      continue;
    size_t operand = (c.op.size() > 5 && c.op.compare(c.op.size() - 5, 5, "_grad") == 0) +
                     (linear ? 1 : 0);
    if (operand >= c.operands.size())
      continue; // the runner's constructor reports it
    size_t dim = c.operands[operand].shape.empty() ? 0 : c.operands[operand].shape.size() - 1;
    if (linear)
      dim = c.attrs.value("vocab_major", false) ? 0 : 1;
    if (operand < c.operandAxes.size() && dim < c.operandAxes[operand].size())
      add(c.operandAxes[operand][dim]);
    auto tokens = c.attrs.find("token_axes");
    if (tokens != c.attrs.end() && tokens->is_array()) {
      Axes axes;
      for (const nlohmann::json &a : *tokens)
        if (a.is_number_integer())
          axes.push_back(a.get<int>());
      add(axes);
    }
  }
  return sets;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

void KernelRunner::kernel(int call, void **buffers, const StepContext &ctx) {
  if (call < 0 || call >= numCalls())
    throw Error("kernel call " + std::to_string(call) + " is outside the call table (" +
                std::to_string(numCalls()) + " calls)");
  const Decoded &d = *calls_[call];
  if (isCollectiveKind(d.kind))
    fail(d, "is a collective; the step must run it with shardc_rt_collective");
  auto start = std::chrono::steady_clock::now();
  // Collectives in flight advance between kernels.
  if (comm_ && std::any_of(inFlight_.begin(), inFlight_.end(),
                           [](const auto &f) { return f->active; }))
    comm_->progress();

  // Operands sharing a result's buffer in a kernel that is not correct in
  // place are read from a copy. A call with planned scratch has it after
  // its results.
  size_t numOperands = d.operands.size(), numResults = d.results.size();
  ptrs_.assign(buffers, buffers + numOperands + numResults + (d.scratch > 0 ? 1 : 0));
  void **ptrs = ptrs_.data();
  if (scratch_.size() < numOperands)
    scratch_.resize(numOperands);
  for (size_t i : operandsToCopy(d, ptrs)) {
    const auto *a = static_cast<const uint8_t *>(ptrs[i]);
    scratch_[i].assign(a, a + d.operands[i].bytes());
    ptrs[i] = scratch_[i].data();
  }

  try {
    runKernel(d, ptrs, ctx);
  } catch (const Error &e) {
    fail(d, e.what());
  }
  if (timing_)
    kernelSeconds_[d.op] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void KernelRunner::runKernel(const Decoded &d, void **buf, const StepContext &ctx) {
  void **res = buf + d.operands.size();
  switch (d.kind) {
  case OpKind::Iota:
    cpu::iota(static_cast<int32_t *>(res[0]), d.results[0].shape, d.dim, d.block.offset);
    return;
  case OpKind::Reshape:
  case OpKind::Offload:
  case OpKind::Reload:
    if (res[0] != buf[0])
      std::memmove(res[0], buf[0], d.operands[0].bytes());
    return;
  case OpKind::Concat:
  case OpKind::Split: {
    // Strided copies: per index of the dims before `dim`, each part's run
    // of bytes at its offset in the joined tensor's run.
    const bool concat = d.kind == OpKind::Concat;
    const std::vector<TensorType> &parts = concat ? d.operands : d.results;
    const TensorType &whole = concat ? d.results[0] : d.operands[0];
    auto *joined = static_cast<uint8_t *>(concat ? res[0] : buf[0]);
    const Split3 w(whole.shape, d.dim, dtype_size(whole.dtype));
    const int64_t wholeRun = w.dimSize * w.inner;
    int64_t at = 0; // the part's offset in a run of the joined tensor
    for (size_t i = 0; i < parts.size(); ++i) {
      auto *p = static_cast<uint8_t *>(concat ? buf[i] : res[i]);
      const int64_t run = parts[i].shape[d.dim] * w.inner;
      for (int64_t o = 0; o < w.outer; ++o) {
        uint8_t *inWhole = joined + o * wholeRun + at;
        if (concat)
          std::memcpy(inWhole, p + o * run, run);
        else
          std::memcpy(p + o * run, inWhole, run);
      }
      at += run;
    }
    return;
  }
  case OpKind::Transpose: {
    const std::vector<int64_t> &shape = d.operands[0].shape;
    switch (d.operands[0].dtype) {
    case DType::F64:
      cpu::transpose(static_cast<const double *>(buf[0]), static_cast<double *>(res[0]), shape,
                     d.permutation);
      break;
    case DType::F32:
      cpu::transpose(static_cast<const float *>(buf[0]), static_cast<float *>(res[0]), shape,
                     d.permutation);
      break;
    case DType::I32:
      cpu::transpose(static_cast<const int32_t *>(buf[0]), static_cast<int32_t *>(res[0]), shape,
                     d.permutation);
      break;
    default:
      cpu::transpose(static_cast<const uint16_t *>(buf[0]), static_cast<uint16_t *>(res[0]),
                     shape, d.permutation);
    }
    return;
  }
  case OpKind::LrSchedule:
    *static_cast<float *>(res[0]) = static_cast<float>(
        cpu::lr_schedule(static_cast<int64_t>(scalarValue(buf[0], d.operands[0].dtype)), d.lr,
                         d.minLr, d.warmup, d.decaySteps));
    return;
  case OpKind::ClipGradNorm: {
    double sumsq = scalarValue(buf[0], d.operands[0].dtype);
    double scale = d.operands.size() > 1 ? scalarValue(buf[1], d.operands[1].dtype) : 1.0;
    double norm = std::sqrt(sumsq) / scale;
    double coef = d.maxNorm > 0.0 ? std::min(1.0, d.maxNorm / (norm + 1e-6)) : 1.0;
    bool inf = !std::isfinite(sumsq);
    *static_cast<float *>(res[0]) = static_cast<float>(norm);
    *static_cast<float *>(res[1]) = static_cast<float>(inf ? 0.0 : coef / scale);
    *static_cast<float *>(res[2]) = static_cast<float>(inf ? 1.0 : 0.0);
    return;
  }
  case OpKind::CountStep: {
    bool skip = d.operands.size() > 1 && scalarValue(buf[1], d.operands[1].dtype) != 0.0;
    *static_cast<int32_t *>(res[0]) = static_cast<int32_t>(
        static_cast<int64_t>(scalarValue(buf[0], d.operands[0].dtype)) + (skip ? 0 : 1));
    return;
  }
  case OpKind::LossScaleUpdate: {
    double scale = scalarValue(buf[0], d.operands[0].dtype);
    int64_t good = static_cast<int64_t>(scalarValue(buf[1], d.operands[1].dtype));
    if (scalarValue(buf[2], d.operands[2].dtype) != 0.0) {
      scale = std::max(scale / d.factor, d.minScale);
      good = 0;
    } else if (++good >= d.window) {
      scale *= d.factor;
      good = 0;
    }
    *static_cast<float *>(res[0]) = static_cast<float>(scale);
    *static_cast<int32_t *>(res[1]) = static_cast<int32_t>(good);
    return;
  }
  case OpKind::CrossEntropy:
  case OpKind::LinearCrossEntropy:
  case OpKind::CrossEntropyGrad:
  case OpKind::LinearCrossEntropyGrad:
    if (d.f64)
      runCrossEntropyAs<double>(d, buf);
    else
      runCrossEntropyAs<float>(d, buf);
    return;
  default:
    if (d.f64)
      runFloat<double>(d, buf, ctx);
    else
      runFloat<float>(d, buf, ctx);
  }
}

template <class C>
void KernelRunner::runFloat(const Decoded &d, void **buf, const StepContext &ctx) {
  const std::vector<TensorType> &ins = d.operands, &outs = d.results;
  void **res = buf + ins.size();
  auto in = [&](size_t i) { return In<C>(buf[i], ins[i]); };
  auto out = [&](size_t i) { return Out<C>(res[i], outs[i]); };
  int64_t n0 = ins.empty() ? 0 : ins[0].numel();

  switch (d.kind) {
  case OpKind::Matmul:
  case OpKind::MatmulBias:
  case OpKind::MatmulBiasGelu:
  case OpKind::MatmulDGelu:
  case OpKind::MatmulBGrad: {
    In<C> lhs = in(0), rhs = in(1);
    const Equation &e = d.eq;
    const std::string &B = e.batch, &M = e.lhsFree, &N = e.rhsFree, &K = e.contracted;
    // An operand in [B, M, K] / [B, K, M] ([B, K, N] / [B, N, K]) is used in
    // place; any other order is transposed once.
    auto permuted = [&](const C *data, const std::string &have, const std::string &want,
                        std::vector<C> &scratch) -> const C * {
      if (have == want)
        return data;
      std::vector<int64_t> shape, perm;
      int64_t size = 1;
      for (char ch : have) {
        shape.push_back(d.letter[ch - 'a']);
        size *= d.letter[ch - 'a'];
      }
      for (char ch : want)
        perm.push_back(static_cast<int64_t>(have.find(ch)));
      scratch.resize(size);
      cpu::transpose(data, scratch.data(), shape, perm);
      return scratch.data();
    };
    std::vector<C> lhsScratch, rhsScratch, outScratch;
    const C *a = permuted(lhs.get(), e.lhs, d.transA ? B + K + M : B + M + K, lhsScratch);
    const C *b = permuted(rhs.get(), e.rhs, d.transB ? B + N + K : B + K + N, rhsScratch);
    Out<C> o = out(0);
    std::string natural = B + M + N;
    C *c = o.get();
    if (natural != e.out) {
      outScratch.resize(d.batch * d.m * d.n);
      c = outScratch.data();
    }
    cpu::gemm_batched<C>(d.batch, d.transA, d.transB, d.m, d.n, d.k, C(1), a,
                         d.transA ? d.m : d.k, d.m * d.k, b, d.transB ? d.k : d.n, d.k * d.n,
                         C(0), c, d.n, d.m * d.n);
    if (natural != e.out) {
      std::vector<int64_t> naturalShape, perm;
      for (char ch : natural)
        naturalShape.push_back(d.letter[ch - 'a']);
      for (char ch : e.out)
        perm.push_back(static_cast<int64_t>(natural.find(ch)));
      cpu::transpose(c, o.get(), naturalShape, perm);
    }
    // The epilogue, on the product in the compute type; each result is
    // rounded once.
    const int64_t size = outs[0].numel(), cols = lastDim(outs[0]);
    const int64_t rows = cols ? size / cols : 0;
    switch (d.kind) {
    case OpKind::MatmulBias: {
      In<C> bias = in(2);
      cpu::bias_add(o.get(), bias.get(), o.get(), rows, cols);
      break;
    }
    case OpKind::MatmulBiasGelu: {
      In<C> bias = in(2);
      Out<C> pre = out(1);
      cpu::bias_add(o.get(), bias.get(), pre.get(), rows, cols);
      cpu::gelu_tanh(pre.get(), o.get(), size);
      pre.done();
      break;
    }
    case OpKind::MatmulDGelu: {
      In<C> pre = in(2);
      cpu::gelu_tanh_backward(o.get(), pre.get(), o.get(), size);
      break;
    }
    case OpKind::MatmulBGrad: {
      Out<C> dbias = out(1);
      cpu::reduce_sum(rhs.get(), dbias.get(), ins[1].shape, d.dims);
      dbias.done();
      break;
    }
    default:
      break;
    }
    o.done();
    return;
  }
  case OpKind::Embedding: {
    In<C> table = in(0);
    Out<C> o = out(0);
    cpu::embedding_block(table.get(), static_cast<const int32_t *>(buf[1]), o.get(),
                         ins[1].numel(), d.block.global, d.block.offset, d.block.local,
                         ins[0].shape[1]);
    o.done();
    return;
  }
  case OpKind::Add: {
    In<C> a = in(0), b = in(1);
    Out<C> o = out(0);
    cpu::add(a.get(), b.get(), o.get(), n0);
    o.done();
    return;
  }
  case OpKind::BiasAdd: {
    In<C> x = in(0), bias = in(1);
    Out<C> o = out(0);
    int64_t cols = lastDim(ins[0]);
    cpu::bias_add(x.get(), bias.get(), o.get(), cols ? n0 / cols : 0, cols);
    o.done();
    return;
  }
  case OpKind::Gelu: {
    In<C> x = in(0);
    Out<C> o = out(0);
    cpu::gelu_tanh(x.get(), o.get(), n0);
    o.done();
    return;
  }
  case OpKind::Swiglu: {
    In<C> g = in(0), u = in(1);
    Out<C> o = out(0);
    cpu::swiglu(g.get(), u.get(), o.get(), n0);
    o.done();
    return;
  }
  case OpKind::Softmax: {
    In<C> x = in(0);
    Out<C> o = out(0);
    int64_t cols = lastDim(ins[0]);
    cpu::softmax_lastdim(x.get(), o.get(), cols ? n0 / cols : 0, cols);
    o.done();
    return;
  }
  case OpKind::LayerNorm: {
    In<C> x = in(0), g = in(1), b = in(2);
    Out<C> o = out(0);
    int64_t cols = lastDim(ins[0]);
    cpu::layernorm_forward<C>(x.get(), g.get(), b.get(), o.get(), nullptr, nullptr,
                              cols ? n0 / cols : 0, cols, d.epsilon);
    o.done();
    return;
  }
  case OpKind::RmsNorm: {
    In<C> x = in(0), g = in(1);
    Out<C> o = out(0);
    int64_t cols = lastDim(ins[0]);
    cpu::rmsnorm_forward<C>(x.get(), g.get(), o.get(), nullptr, cols ? n0 / cols : 0, cols,
                            d.epsilon);
    o.done();
    return;
  }
  case OpKind::Attention: {
    In<C> q = in(0), k = in(1), v = in(2);
    Out<C> o = out(0);
    const auto &qs = ins[0].shape;
    cpu::attention_forward<C>(q.get(), k.get(), v.get(), o.get(), nullptr, qs[0], qs[1], qs[2],
                              ins[1].shape[2], qs[3], d.causal, d.scale, ins[1].shape[1],
                              d.block.offset);
    o.done();
    return;
  }
  case OpKind::PackedAttention: {
    // q, k and v read in place from qkv [B, S, Hkv, G + 2, D].
    In<C> qkv = in(0);
    Out<C> o = out(0);
    const auto &s = ins[0].shape;
    const int64_t Hkv = s[2], G = s[3] - 2, D = s[4];
    cpu::attention_forward<C>(qkv.get(), qkv.get(), qkv.get(), o.get(), nullptr, s[0], s[1],
                              Hkv * G, Hkv, D, d.causal, d.scale, 0, 0,
                              cpu::AttentionLayout::packedQkv(Hkv, G, D));
    o.done();
    return;
  }
  case OpKind::Rope: {
    In<C> x = in(0);
    Out<C> o = out(0);
    const auto &s = ins[0].shape;
    // Positions of a sequence shard start at its offset.
    if (d.inverse)
      cpu::rope_backward<C>(x.get(), o.get(), s[0], s[1], s[2], s[3], d.theta, d.block.offset);
    else
      cpu::rope<C>(x.get(), o.get(), s[0], s[1], s[2], s[3], d.theta, d.block.offset);
    o.done();
    return;
  }
  case OpKind::Dropout: {
    In<C> x = in(0);
    Out<C> o = out(0);
    double rate = ctx.training ? d.rate : 0.0;
    cpu::dropout_block<C>(x.get(), o.get(), outs[0].shape, d.dropOffset, d.dropGlobal, rate,
                          ctx.seed, ctx.step, static_cast<uint64_t>(d.key));
    o.done();
    return;
  }
  case OpKind::Cast: {
    In<C> x = in(0);
    Out<C> o = out(0);
    const C *src = x.get();
    C *dst = o.get();
    if (src != dst)
      for (int64_t i = 0; i < n0; ++i)
        dst[i] = src[i];
    o.done();
    return;
  }
  case OpKind::Fill: {
    Out<C> o = out(0);
    std::fill(o.get(), o.get() + outs[0].numel(), static_cast<C>(d.value));
    o.done();
    return;
  }
  case OpKind::Scale: {
    In<C> x = in(0);
    Out<C> o = out(0);
    cpu::scale(x.get(), o.get(), n0, d.factor);
    o.done();
    return;
  }
  case OpKind::ReduceSum: {
    In<C> x = in(0);
    Out<C> o = out(0);
    cpu::reduce_sum(x.get(), o.get(), ins[0].shape, d.dims);
    o.done();
    return;
  }
  case OpKind::GeluGrad: {
    In<C> dy = in(0), x = in(1);
    Out<C> dx = out(0);
    cpu::gelu_tanh_backward(dy.get(), x.get(), dx.get(), n0);
    dx.done();
    return;
  }
  case OpKind::SwigluGrad: {
    In<C> dy = in(0), g = in(1), u = in(2);
    Out<C> dg = out(0), du = out(1);
    cpu::swiglu_backward(dy.get(), g.get(), u.get(), dg.get(), du.get(), n0);
    dg.done();
    du.done();
    return;
  }
  case OpKind::SoftmaxGrad: {
    In<C> dy = in(0), y = in(1);
    Out<C> dx = out(0);
    int64_t cols = lastDim(ins[0]);
    cpu::softmax_lastdim_backward(dy.get(), y.get(), dx.get(), cols ? n0 / cols : 0, cols);
    dx.done();
    return;
  }
  case OpKind::LayerNormGrad:
  case OpKind::RmsNormGrad: {
    // With a 4th operand dx = the norm's gradient + that residual gradient,
    // rounded once; dx may be written over it (in place), so it is read first.
    std::vector<C> dres;
    if (ins.size() == 4) {
      In<C> r = in(3);
      dres.assign(r.get(), r.get() + ins[3].numel());
    }
    In<C> dy = in(0), x = in(1), g = in(2);
    Out<C> dx = out(0), dg = out(1);
    if (d.kind == OpKind::LayerNormGrad) {
      Out<C> db = out(2);
      cpu::layernorm_backward(dy.get(), x.get(), g.get(), dx.get(), dg.get(), db.get(),
                              rowsOf(ins[1]), lastDim(ins[1]), d.epsilon);
      db.done();
    } else {
      cpu::rmsnorm_backward(dy.get(), x.get(), g.get(), dx.get(), dg.get(), rowsOf(ins[1]),
                            lastDim(ins[1]), d.epsilon);
    }
    C *p = dx.get();
    for (size_t i = 0; i < dres.size(); ++i)
      p[i] += dres[i];
    dx.done();
    dg.done();
    return;
  }
  case OpKind::AttentionGrad: {
    In<C> dout = in(0), q = in(1), k = in(2), v = in(3), o = in(4);
    Out<C> dq = out(0), dk = out(1), dv = out(2);
    const auto &qs = ins[1].shape;
    cpu::attention_backward(dout.get(), q.get(), k.get(), v.get(), o.get(), dq.get(), dk.get(),
                            dv.get(), qs[0], qs[1], qs[2], ins[2].shape[2], qs[3], d.causal,
                            d.scale, ins[2].shape[1], d.block.offset);
    dq.done();
    dk.done();
    dv.done();
    return;
  }
  case OpKind::PackedAttentionGrad: {
    // dq, dk and dv written into their slots of dqkv, as qkv holds q, k, v.
    In<C> dout = in(0), qkv = in(1), o = in(2);
    Out<C> dqkv = out(0);
    const auto &s = ins[1].shape;
    const int64_t Hkv = s[2], G = s[3] - 2, D = s[4];
    cpu::attention_backward(dout.get(), qkv.get(), qkv.get(), qkv.get(), o.get(), dqkv.get(),
                            dqkv.get(), dqkv.get(), s[0], s[1], Hkv * G, Hkv, D, d.causal,
                            d.scale, 0, 0, cpu::AttentionLayout::packedQkv(Hkv, G, D));
    dqkv.done();
    return;
  }
  case OpKind::EmbeddingGrad: {
    In<C> dy = in(0);
    Out<C> dt = out(0);
    cpu::embedding_backward_block(dy.get(), static_cast<const int32_t *>(buf[1]), dt.get(),
                                  ins[1].numel(), d.block.global, d.block.offset, d.block.local,
                                  outs[0].shape[1]);
    dt.done();
    return;
  }
  case OpKind::SumSquares:
  case OpKind::MultiSumSquares: {
    // Every tensor's sum in double (xf.sum_squares: one), rounded once.
    double total = 0.0;
    for (size_t i = 0; i < ins.size(); ++i)
      total += cpu::sum_squares(in(i).get(), ins[i].numel());
    *static_cast<float *>(res[0]) = static_cast<float>(total);
    return;
  }
  case OpKind::AdamW:
  case OpKind::MultiAdamW: {
    // n tensors (xf.adamw: one): the parameter and the moments are copied
    // into the results (a no-op in place) and updated there; a copy result
    // gets the new parameter rounded to its type, as xf.cast would.
    const size_t n = d.kind == OpKind::AdamW ? 1 : static_cast<size_t>(d.lists), s = 4 * n;
    const bool skip = ins.size() > s + 3 && scalarValue(buf[s + 3], ins[s + 3].dtype) != 0.0;
    const double lr = scalarValue(buf[s], ins[s].dtype);
    const double gradScale = scalarValue(buf[s + 1], ins[s + 1].dtype);
    const int64_t t = static_cast<int64_t>(scalarValue(buf[s + 2], ins[s + 2].dtype)) + 1;
    size_t copy = 0;
    for (size_t k = 0; k < n; ++k) {
      Out<C> p = out(k), m = out(n + k), v = out(2 * n + k);
      const int64_t size = ins[k].numel();
      for (auto [src, dst] :
           {std::pair<size_t, Out<C> *>{k, &p}, {2 * n + k, &m}, {3 * n + k, &v}}) {
        In<C> from = in(src);
        C *to = dst->get();
        if (from.get() != to)
          std::copy(from.get(), from.get() + size, to);
      }
      if (!skip) {
        double decay = d.kind == OpKind::AdamW || d.decay[k] ? d.weightDecay : 0.0;
        cpu::adamw(p.get(), in(n + k).get(), m.get(), v.get(), size, lr, d.beta1, d.beta2,
                   d.epsilon, decay, t, gradScale);
      }
      if (copy < d.copies.size() && d.copies[copy] == static_cast<int64_t>(k)) {
        const size_t r = 3 * n + copy++;
        fromCompute(p.get(), size, outs[r].dtype, res[r]);
      }
      p.done();
      m.done();
      v.done();
    }
    return;
  }
  default:
    throw Error("the runtime does not support this op");
  }
}

//===----------------------------------------------------------------------===//
// Cross-entropy, whole or vocabulary-parallel
//===----------------------------------------------------------------------===//

template <class C> void KernelRunner::runCrossEntropyAs(const Decoded &d, void **buf) {
  bool grad = d.kind == OpKind::CrossEntropyGrad || d.kind == OpKind::LinearCrossEntropyGrad;
  bool linear = d.kind == OpKind::LinearCrossEntropy || d.kind == OpKind::LinearCrossEntropyGrad;
  const std::vector<TensorType> &ins = d.operands;
  void **res = buf + ins.size();
  const MeshDesc &mesh = program_.mesh;
  // The planned scratch (KernelScratch.h) holds the logit chunks.
  C *chunk = d.scratch > 0 ? static_cast<C *>(buf[ins.size() + d.results.size()]) : nullptr;

  size_t i = 0;
  double dloss = 0.0;
  if (grad) {
    dloss = scalarValue(buf[0], ins[0].dtype);
    ++i;
  }
  int64_t rows = rowsOf(ins[i]), hidden = 0;
  std::optional<In<C>> logits, x, w, mask;
  if (linear) {
    hidden = lastDim(ins[i]);
    x.emplace(buf[i], ins[i]);
    ++i;
    w.emplace(buf[i], ins[i]);
    ++i;
  } else {
    logits.emplace(buf[i], ins[i]);
    ++i;
  }
  const auto *targets = static_cast<const int32_t *>(buf[i++]);
  if (ins.size() > i)
    mask.emplace(buf[i], ins[i]);
  const C *maskPtr = mask ? mask->get() : nullptr;
  const Block &b = d.block;
  int64_t members = mesh.size(b.axes);
  // The block's class columns (a padded vocabulary's padding is no class).
  const int64_t cols = classColumns(b, d.classes);

  // 1. Statistics of this rank's block; 2. combined over the vocabulary group
  // in group order (a whole vocabulary is a group of one, combined as well).
  bool needStats = !grad || members > 1;
  std::vector<double> stats, gathered, combined;
  if (needStats) {
    stats.assign(3 * rows, 0.0);
    double *mx = stats.data(), *se = mx + rows, *tg = se + rows;
    if (linear)
      cpu::linear_cross_entropy_block_stats<C>(x->get(), w->get(), d.vocabMajor, targets,
                                               maskPtr, rows, hidden, d.classes, b.offset,
                                               cols, d.ignoreIndex, mx, se, tg, b.local, chunk);
    else
      cpu::cross_entropy_block_stats<C>(logits->get(), targets, maskPtr, rows, d.classes,
                                        b.offset, cols, d.ignoreIndex, mx, se, tg, b.local);
    const double *all = stats.data();
    if (members > 1) {
      gathered.resize(members * 3 * rows);
      comm_->allgather(b.axes, stats.data(), gathered.data(), 3 * rows * sizeof(double));
      all = gathered.data();
    }
    std::vector<const double *> mxs, ses, tgs;
    for (int64_t m = 0; m < members; ++m) {
      const double *s = all + m * 3 * rows;
      mxs.push_back(s);
      ses.push_back(s + rows);
      tgs.push_back(s + 2 * rows);
    }
    combined.assign(3 * rows, 0.0);
    cpu::cross_entropy_combine_stats(members, mxs.data(), ses.data(), tgs.data(), rows,
                                     combined.data(), combined.data() + rows,
                                     combined.data() + 2 * rows);
  }

  // 3. This rank's share of its token group's mean: count / group count (the
  //    local kernels divide by the local count).
  double share = 1.0;
  int64_t tokenMembers = mesh.size(d.tokenAxes);
  if (tokenMembers > 1) {
    int64_t counted = 0;
    for (int64_t r = 0; r < rows; ++r)
      counted += cpu::isCounted(targets, maskPtr, r, d.ignoreIndex) ? 1 : 0;
    std::vector<int64_t> counts(tokenMembers);
    comm_->allgather(d.tokenAxes, &counted, counts.data(), sizeof(int64_t));
    int64_t total = 0;
    for (int64_t c : counts)
      total += c;
    share = total > 0 ? static_cast<double>(counted) / static_cast<double>(total) : 0.0;
    dloss *= share; // the backward is linear in dloss
  }

  // 4. The loss, or this rank's block of the gradients.
  const double *cmx = needStats ? combined.data() : nullptr;
  const double *cse = needStats ? combined.data() + rows : nullptr;
  if (!grad) {
    double loss = cpu::cross_entropy_from_stats<C>(cmx, cse, combined.data() + 2 * rows, targets,
                                                   maskPtr, rows, d.ignoreIndex, nullptr);
    Out<C> o(res[0], d.results[0]);
    o.get()[0] = static_cast<C>(loss * share);
    o.done();
    return;
  }
  if (linear) {
    Out<C> dx(res[0], d.results[0]), dw(res[1], d.results[1]);
    cpu::linear_cross_entropy_block_backward<C>(dloss, x->get(), w->get(), d.vocabMajor, targets,
                                                maskPtr, cmx, cse, dx.get(), dw.get(), rows,
                                                hidden, d.classes, b.offset, cols,
                                                d.ignoreIndex, b.local, chunk);
    dx.done();
    dw.done();
  } else {
    Out<C> dl(res[0], d.results[0]);
    cpu::cross_entropy_block_backward<C>(dloss, logits->get(), targets, maskPtr, cmx, cse,
                                         dl.get(), rows, d.classes, b.offset, cols,
                                         d.ignoreIndex, b.local);
    dl.done();
  }
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// A collective between start and wait: what it needs to finish, and the
/// buffers it stages through (the planned scratch's regions, else its own;
/// several may be in flight at once).
struct KernelRunner::InFlight {
  const Decoded *d = nullptr;
  Axes axes;
  const uint8_t *in = nullptr;
  uint8_t *out = nullptr;
  int64_t n = 1;
  Communicators::Request request = 0;
  /// Gathered blocks (all-gather), blocks by member (reduce-scatter,
  /// all-to-all: what is sent), received blocks (all-to-all; the
  /// reductions' exchange rounds).
  uint8_t *blocks = nullptr, *received = nullptr;
  /// What a reduce-scatter sends: its input, or its blocks by member.
  const uint8_t *send = nullptr;
  /// The runner's own staging where the plan gives none.
  std::vector<uint8_t> ownBlocks, ownReceived, ownCopy;
  /// All-reduce: member j reduces bytes [offsets[j], +counts[j]).
  /// Reduce-scatter: member j gets part j of counts[j] bytes at offsets[j]
  /// of `send`.
  std::vector<int64_t> counts, offsets;
  /// The reductions exchange in rounds of at most `piece` bytes per member
  /// (kExchangeBytes in all), so what the runner receives into is bounded
  /// whatever the collective's size; round 0 is issued at the start, round
  /// r + 1 before round r is summed (two receive buffers).
  int64_t piece = 0, rounds = 0, roundBytes = 0;
  bool active = false;
};

namespace {
/// What a reduction receives per round (from all members), at most: the
/// runner's own memory per collective in flight, outside the plan.
constexpr int64_t kExchangeBytes = int64_t(1) << 20;
} // namespace

/// Issues exchange round `r` of a reduction in flight: from every member
/// its piece r of this rank's chunk, into receive buffer r % 2 (member j's
/// at j x the piece).
void KernelRunner::exchangeRound(InFlight &f, int64_t r) {
  const int64_t n = f.n, me = program_.mesh.shardIndex(f.axes, program_.mesh.coords(rank_));
  auto pieceOf = [&](int64_t count) {
    return std::clamp<int64_t>(count - r * f.piece, 0, f.piece);
  };
  std::vector<int64_t> sendBytes(n), sendOffsets(n), recvBytes(n), recvOffsets(n);
  for (int64_t j = 0; j < n; ++j) {
    sendBytes[j] = pieceOf(f.counts[j]);
    sendOffsets[j] = f.offsets[j] + r * f.piece;
    recvBytes[j] = pieceOf(f.counts[me]);
    recvOffsets[j] = j * recvBytes[j];
  }
  f.request = comm_->ialltoallv(f.axes, f.send, sendBytes, sendOffsets,
                                f.received + (r % 2) * f.roundBytes, recvBytes, recvOffsets);
}

/// Sizes a reduction's rounds for chunks of at most `chunk` bytes and
/// issues round 0.
void KernelRunner::startRounds(InFlight &f, int64_t chunk, int64_t elemBytes) {
  f.piece = std::max<int64_t>(elemBytes, kExchangeBytes / f.n / elemBytes * elemBytes);
  f.rounds = (chunk + f.piece - 1) / f.piece;
  f.roundBytes = f.n * std::min(f.piece, std::max<int64_t>(chunk, 1));
  f.ownReceived.resize(static_cast<size_t>((f.rounds > 1 ? 2 : 1) * f.roundBytes));
  f.received = f.ownReceived.data();
  if (f.rounds > 0)
    exchangeRound(f, 0);
}

/// Completes a reduction's rounds: each sums the members' pieces in group
/// order into `out` (this rank's chunk of `chunk` bytes).
void KernelRunner::finishRounds(InFlight &f, int64_t chunk, uint8_t *out) {
  const Decoded &d = *f.d;
  const DType dtype = d.operands[0].dtype;
  const int64_t es = dtype_size(dtype);
  for (int64_t r = 0; r < f.rounds; ++r) {
    if (f.request)
      comm_->wait(f.request);
    f.request = 0;
    // The next round flies while this one is summed. (In place, round r + 1
    // reads pieces r + 1 of the input; the sum writes piece r of this rank's
    // chunk.)
    if (r + 1 < f.rounds)
      exchangeRound(f, r + 1);
    int64_t bytes = std::clamp<int64_t>(chunk - r * f.piece, 0, f.piece);
    if (bytes > 0)
      reduceBlocks(f.received + (r % 2) * f.roundBytes, f.n, bytes / es, dtype, d.reduction,
                   out + r * f.piece);
  }
  if (f.request)
    comm_->wait(f.request);
  f.request = 0;
}

void KernelRunner::collective(int call, int comm, const void *in, void *out, void *scratch) {
  collectiveWait(collectiveStart(call, comm, in, out, scratch));
}

int KernelRunner::collectiveStart(int call, int comm, const void *in, void *out,
                                  void *scratch) {
  size_t slot = 0;
  while (slot < inFlight_.size() && inFlight_[slot]->active)
    ++slot;
  if (slot == inFlight_.size())
    inFlight_.push_back(std::make_unique<InFlight>());
  InFlight &f = *inFlight_[slot];
  auto start = std::chrono::steady_clock::now();
  beginCollective(f, call, comm, in, out, scratch);
  if (timing_)
    collectiveSeconds_[f.d->op] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<int>(slot);
}

void KernelRunner::collectiveWait(int handle) {
  if (handle < 0 || handle >= static_cast<int>(inFlight_.size()) || !inFlight_[handle]->active)
    throw Error("wait on collective handle " + std::to_string(handle) +
                ", which is not in flight");
  InFlight &f = *inFlight_[handle];
  auto start = std::chrono::steady_clock::now();
  try {
    finishCollective(f);
  } catch (const Error &e) {
    f.active = false;
    fail(*f.d, e.what());
  }
  f.active = false;
  if (timing_)
    collectiveSeconds_[f.d->op] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void KernelRunner::beginCollective(InFlight &f, int call, int comm, const void *inPtr,
                                   void *outPtr, void *scratchPtr) {
  if (call < 0 || call >= numCalls())
    throw Error("collective call " + std::to_string(call) + " is outside the call table (" +
                std::to_string(numCalls()) + " calls)");
  const Decoded &d = *calls_[call];
  if (!isCollectiveKind(d.kind))
    fail(d, "is not a collective; the step must run it with shardc_rt_kernel");
  if (comm < 0 || comm >= static_cast<int>(program_.comms.size()))
    fail(d, "communicator " + std::to_string(comm) + " is outside the descriptor's " +
                std::to_string(program_.comms.size()) + " communicators");
  const Axes &axes = program_.comms[comm].axes;
  if (d.gridAxes && *d.gridAxes != axes)
    fail(d, "runs on mesh axes " + axesString(*d.gridAxes) + " but communicator " +
                std::to_string(comm) + " is on " + axesString(axes));
  if (!comm_ && program_.mesh.size(axes) > 1)
    fail(d, "needs communicators");
  f.d = &d;
  f.axes = axes;
  f.n = program_.mesh.size(axes);
  f.request = 0;
  f.in = static_cast<const uint8_t *>(inPtr);
  f.out = static_cast<uint8_t *>(outPtr);
  f.blocks = f.received = nullptr;
  f.active = true;
  try {
    const TensorType &inT = d.operands[0], &outT = d.results[0];
    const int64_t n = f.n, es = dtype_size(inT.dtype), bytes = inT.bytes();
    checkCollectiveShapes(d, n);
    // MPI needs distinct send and receive buffers, and the slices must not
    // read what they wrote: an input overlapping the output is copied (an
    // all-reduce exchanges into scratch before it writes: in place is fine).
    const scratch::PlannedStaging staging = scratch::plannedStaging(d, n, f.in, f.out, scratchPtr);
    const scratch::CollectiveStaging &st = staging.layout;
    uint8_t *planned = staging.base;
    // A region of the planned staging, else the runner's own vector.
    auto region = [&](int64_t offset, std::vector<uint8_t> &own, int64_t size) {
      if (planned && offset >= 0)
        return planned + offset;
      own.resize(static_cast<size_t>(std::max<int64_t>(size, 1)));
      return own.data();
    };
    if (st.inputCopy >= 0) {
      uint8_t *copy = region(st.inputCopy, f.ownCopy, bytes);
      std::memcpy(copy, f.in, static_cast<size_t>(bytes));
      f.in = copy;
    }
    // The sent blocks: packs of the input by member along d.axis (straight
    // from the input where the parts are contiguous already).
    auto sendBlocks = [&]() -> const uint8_t * {
      if (st.blocks < 0 && Split3(inT.shape, d.axis, es).outer == 1)
        return f.in;
      f.blocks = region(st.blocks, f.ownBlocks, bytes);
      for (int64_t j = 0; j < n; ++j)
        slicePart(f.in, f.blocks + j * (bytes / n), inT.shape, d.axis, j, n, es);
      return f.blocks;
    };
    switch (d.kind) {
    case OpKind::AllGather: {
      std::vector<int64_t> shape = inT.shape;
      shape[d.axis] *= n;
      if (n == 1) {
        std::memmove(f.out, f.in, bytes);
        return;
      }
      if (Split3(shape, d.axis, es).outer == 1) { // the members' blocks land in place
        f.request = comm_->iallgather(axes, f.in, f.out, bytes);
        return;
      }
      f.blocks = region(st.blocks, f.ownBlocks, n * bytes);
      f.request = comm_->iallgather(axes, f.in, f.blocks, bytes);
      return;
    }
    case OpKind::AllReduce: {
      if (n == 1)
        return;
      // Reduce-scatter then all-gather (a ring's 2(n-1)/n of the bytes):
      // member j receives every member's chunk j (in rounds), sums it in
      // group order (bit-identical to summing whole blocks) and the reduced
      // chunks are gathered in place.
      const int64_t numel = inT.numel();
      f.counts.assign(n, 0);
      f.offsets.assign(n, 0);
      for (int64_t j = 0, at = 0; j < n; ++j) {
        int64_t elems = numel / n + (j < numel % n ? 1 : 0);
        f.counts[j] = elems * es;
        f.offsets[j] = at * es;
        at += elems;
      }
      f.send = f.in;
      startRounds(f, f.counts[0], es);
      return;
    }
    case OpKind::ReduceScatter: {
      f.send = sendBlocks();
      if (n > 1) {
        f.counts.assign(n, bytes / n);
        f.offsets.resize(n);
        for (int64_t j = 0; j < n; ++j)
          f.offsets[j] = j * (bytes / n);
        startRounds(f, bytes / n, es);
      }
      return;
    }
    case OpKind::AllSlice: {
      int64_t index = program_.mesh.shardIndex(axes, program_.mesh.coords(rank_));
      slicePart(f.in, f.out, inT.shape, d.axis, index, n, es);
      return;
    }
    case OpKind::Transfer: {
      // The sending stage's ranks send, the receiving stage's receive.
      int64_t me = program_.mesh.shardIndex(axes, program_.mesh.coords(rank_));
      int64_t to = me == d.axis ? d.axis2 : -1, from = me == d.axis2 ? d.axis : -1;
      if (to >= 0 || from >= 0)
        f.request = comm_->isendrecv(axes, f.in, to, f.out, from, bytes, d.index % 32767);
      return;
    }
    default: { // AllToAll
      const uint8_t *send = sendBlocks();
      f.received = region(st.received, f.ownReceived, bytes);
      if (n > 1)
        f.request = comm_->ialltoall(axes, send, f.received, bytes / n);
      else
        std::memcpy(f.received, send, static_cast<size_t>(bytes));
      return;
    }
    }
  } catch (const Error &e) {
    f.active = false;
    fail(d, e.what());
  }
}

void KernelRunner::finishCollective(InFlight &f) {
  const Decoded &d = *f.d;
  if (f.request)
    comm_->wait(f.request);
  f.request = 0;
  const TensorType &inT = d.operands[0], &outT = d.results[0];
  const int64_t n = f.n, es = dtype_size(inT.dtype), bytes = inT.bytes();
  switch (d.kind) {
  case OpKind::AllGather: {
    std::vector<int64_t> shape = inT.shape;
    shape[d.axis] *= n;
    if (n > 1 && Split3(shape, d.axis, es).outer != 1)
      for (int64_t j = 0; j < n; ++j)
        placePart(f.blocks + j * bytes, f.out, shape, d.axis, j, n, es);
    return;
  }
  case OpKind::AllReduce: {
    if (n == 1) {
      // Load and store once, as MeshSimulation's reduce of one member.
      reduceBlocks(f.in, 1, inT.numel(), inT.dtype, d.reduction, f.out);
      return;
    }
    int64_t me = program_.mesh.shardIndex(f.axes, program_.mesh.coords(rank_));
    finishRounds(f, f.counts[me], f.out + f.offsets[me]);
    comm_->allgatherv(f.axes, f.out, f.counts, f.offsets);
    return;
  }
  case OpKind::ReduceScatter:
    if (n == 1)
      reduceBlocks(f.send, 1, outT.numel(), inT.dtype, d.reduction, f.out);
    else
      finishRounds(f, outT.bytes(), f.out);
    return;
  case OpKind::AllSlice:
  case OpKind::Transfer:
    return;
  default: { // AllToAll
    std::vector<int64_t> piece = inT.shape;
    piece[d.axis] /= n;
    std::vector<int64_t> shape = piece;
    shape[d.axis2] *= n;
    for (int64_t j = 0; j < n; ++j)
      placePart(f.received + j * (bytes / n), f.out, shape, d.axis2, j, n, es);
    return;
  }
  }
}

} // namespace shardc::rt
