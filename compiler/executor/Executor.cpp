//===- Executor.cpp - reference executor for xf functions -----------------===//

#include "compiler/executor/Executor.h"

#include "compiler/executor/MeshSimulation.h"
#include "dialects/xf/Einsum.h"
#include "dialects/xf/XfOps.h"
#include "runtime/cpu/ComputeType.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/RowMath.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <type_traits>

using namespace mlir;
using namespace shardc;
using namespace shardc::exec;
namespace xf = shardc::xf;

FailureOr<DType> shardc::exec::dtypeOf(Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF64())
    return DType::F64;
  if (t.isBF16())
    return DType::BF16;
  if (t.isF16())
    return DType::F16;
  if (t.isInteger(32))
    return DType::I32;
  return failure();
}

FailureOr<std::pair<DType, std::vector<int64_t>>> shardc::exec::tensorSpec(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return failure();
  FailureOr<DType> dt = dtypeOf(t.getElementType());
  if (failed(dt))
    return failure();
  return std::make_pair(*dt, std::vector<int64_t>(t.getShape().begin(), t.getShape().end()));
}

//===----------------------------------------------------------------------===//
// Conversion between storage and compute types
//===----------------------------------------------------------------------===//

namespace {

using cpu::computeDType;

/// A HostTensor's bytes in compute type C (runtime/cpu/ComputeType.h).
template <class C> void toCompute(const HostTensor &t, C *out) {
  cpu::toCompute(t.bytes.data(), t.dtype, t.numel(), out);
}

/// Stores compute-type values into a float tensor, rounding to its dtype.
template <class C> void fromCompute(const C *in, HostTensor &t) {
  cpu::fromCompute(in, t.numel(), t.dtype, t.bytes.data());
}

/// A read-only view of a float tensor in compute type C; copies only when the
/// storage type differs (bf16/f16, or mixed f32/f64).
template <class C> class In {
public:
  explicit In(const HostTensor &t) {
    if (t.dtype == computeDType<C>()) {
      ptr_ = t.data<C>();
    } else {
      tmp_.resize(t.numel());
      toCompute(t, tmp_.data());
      ptr_ = tmp_.data();
    }
  }
  const C *get() const { return ptr_; }

private:
  const C *ptr_;
  std::vector<C> tmp_;
};

/// A result tensor written in compute type C and rounded to its dtype by take().
template <class C> class Out {
public:
  Out(DType dtype, std::vector<int64_t> shape) : t_(dtype, std::move(shape)) {
    if (dtype != computeDType<C>())
      tmp_.resize(t_.numel());
  }
  C *get() { return tmp_.empty() ? t_.data<C>() : tmp_.data(); }
  HostTensor take() {
    if (!tmp_.empty())
      fromCompute(tmp_.data(), t_);
    return std::move(t_);
  }

private:
  HostTensor t_;
  std::vector<C> tmp_;
};

/// The (dtype, shape) of an op's result; verified IR guarantees it exists.
std::pair<DType, std::vector<int64_t>> resultSpec(Operation *op, unsigned i = 0) {
  return *tensorSpec(op->getResult(i).getType());
}

int64_t lastDim(const HostTensor &t) { return t.shape.empty() ? 1 : t.shape.back(); }

} // namespace

//===----------------------------------------------------------------------===//
// Matmul: every einsum equation becomes one batched GEMM
//===----------------------------------------------------------------------===//

namespace {

/// Size of each letter and the product of the sizes of a group of letters.
struct LetterSizes {
  int64_t size[26] = {};
  int64_t product(const std::string &letters) const {
    int64_t p = 1;
    for (char c : letters)
      p *= size[c - 'a'];
    return p;
  }
};

/// Brings `t` (letters `have`) into letter order `want` if it is not already;
/// returns the data pointer of the operand in the wanted order.
template <class C>
const C *permuted(const C *data, const std::string &have, const std::string &want,
                  const LetterSizes &sizes, std::vector<C> &scratch) {
  if (have == want)
    return data;
  std::vector<int64_t> shape, perm;
  for (char c : have)
    shape.push_back(sizes.size[c - 'a']);
  for (char c : want)
    perm.push_back(static_cast<int64_t>(have.find(c)));
  scratch.resize(sizes.product(have));
  cpu::transpose(data, scratch.data(), shape, perm);
  return scratch.data();
}

template <class C>
HostTensor runMatmul(xf::MatmulOp op, const HostTensor &lhsT, const HostTensor &rhsT) {
  std::string error;
  xf::Einsum e = *xf::Einsum::parse(op.getEquation(), error);
  LetterSizes sz;
  for (size_t i = 0; i < e.lhs.size(); ++i)
    sz.size[e.lhs[i] - 'a'] = lhsT.shape[i];
  for (size_t i = 0; i < e.rhs.size(); ++i)
    sz.size[e.rhs[i] - 'a'] = rhsT.shape[i];
  In<C> lhsIn(lhsT), rhsIn(rhsT);

  // Use an operand in place when it is [B, M, K] or [B, K, M] (and [B, K, N]
  // or [B, N, K]); otherwise transpose it once into [B, M, K] / [B, K, N].
  const std::string &B = e.batch, &M = e.lhsFree, &N = e.rhsFree, &K = e.contracted;
  bool transA = e.lhs == B + K + M && e.lhs != B + M + K;
  bool transB = e.rhs == B + N + K && e.rhs != B + K + N;
  std::vector<C> lhsScratch, rhsScratch, outScratch;
  const C *a = permuted(lhsIn.get(), e.lhs, transA ? B + K + M : B + M + K, sz, lhsScratch);
  const C *b = permuted(rhsIn.get(), e.rhs, transB ? B + N + K : B + K + N, sz, rhsScratch);

  int64_t batch = sz.product(B), m = sz.product(M), n = sz.product(N), k = sz.product(K);
  auto [dtype, shape] = resultSpec(op);
  Out<C> out(dtype, shape);
  std::string natural = B + M + N;
  C *c = out.get();
  if (natural != e.out) {
    outScratch.resize(batch * m * n);
    c = outScratch.data();
  }
  cpu::gemm_batched<C>(batch, transA, transB, m, n, k, C(1), a, transA ? m : k, m * k, b,
                       transB ? k : n, k * n, C(0), c, n, m * n);
  if (natural != e.out) {
    std::vector<int64_t> naturalShape, perm;
    for (char ch : natural)
      naturalShape.push_back(sz.size[ch - 'a']);
    for (char ch : e.out)
      perm.push_back(static_cast<int64_t>(natural.find(ch)));
    cpu::transpose(c, out.get(), naturalShape, perm);
  }
  return out.take();
}

//===----------------------------------------------------------------------===//
// Float ops, computed in C (double for f64 tensors, float otherwise)
//===----------------------------------------------------------------------===//

using Results = std::vector<HostTensor>;

/// One result, moved (a braced list would copy the bytes).
Results one(HostTensor &&t) {
  Results r;
  r.push_back(std::move(t));
  return r;
}

} // namespace

double shardc::exec::scalarValue(const HostTensor &t) {
  if (t.numel() != 1)
    throw rt::Error("expected a single value, got a tensor of shape " + rt::shape_str(t.shape));
  return cpu::scalarValue(t.bytes.data(), t.dtype);
}

namespace {

template <class C>
Results runGradOp(Operation *op, llvm::ArrayRef<const HostTensor *> in,
                  const OpPlacement &place);

/// Forward float ops. `place` locates a partitioned op's shard in the global
/// op (offsets 0 for a whole op).
template <class C>
Results runFloatOp(Operation *op, llvm::ArrayRef<const HostTensor *> in,
                   const RunOptions &options, const OpPlacement &place) {
  auto [dtype, shape] = resultSpec(op);
  return llvm::TypeSwitch<Operation *, Results>(op)
      .Case([&](xf::MatmulOp mm) { return one(runMatmul<C>(mm, *in[0], *in[1])); })
      .Case([&](xf::EmbeddingOp) {
        In<C> table(*in[0]);
        Out<C> out(dtype, shape);
        // A vocabulary-parallel shard holds the table rows [offset, offset + local).
        OpPlacement::Dim rows = place.operandDim(0, 0);
        cpu::embedding_block(table.get(), in[1]->data<int32_t>(), out.get(), in[1]->numel(),
                             rows.global, rows.offset, rows.local, in[0]->shape[1]);
        return one(out.take());
      })
      .Case([&](xf::AddOp) {
        In<C> a(*in[0]), b(*in[1]);
        Out<C> out(dtype, shape);
        cpu::add(a.get(), b.get(), out.get(), in[0]->numel());
        return one(out.take());
      })
      .Case([&](xf::BiasAddOp) {
        In<C> x(*in[0]), bias(*in[1]);
        Out<C> out(dtype, shape);
        int64_t cols = lastDim(*in[0]);
        cpu::bias_add(x.get(), bias.get(), out.get(), in[0]->numel() / cols, cols);
        return one(out.take());
      })
      .Case([&](xf::GeluOp) {
        In<C> x(*in[0]);
        Out<C> out(dtype, shape);
        cpu::gelu_tanh(x.get(), out.get(), in[0]->numel());
        return one(out.take());
      })
      .Case([&](xf::SwigluOp) {
        In<C> g(*in[0]), u(*in[1]);
        Out<C> out(dtype, shape);
        cpu::swiglu(g.get(), u.get(), out.get(), in[0]->numel());
        return one(out.take());
      })
      .Case([&](xf::SoftmaxOp) {
        In<C> x(*in[0]);
        Out<C> out(dtype, shape);
        int64_t cols = lastDim(*in[0]);
        cpu::softmax_lastdim(x.get(), out.get(), in[0]->numel() / cols, cols);
        return one(out.take());
      })
      .Case([&](xf::LayerNormOp ln) {
        In<C> x(*in[0]), g(*in[1]), b(*in[2]);
        Out<C> out(dtype, shape);
        int64_t cols = lastDim(*in[0]);
        cpu::layernorm_forward<C>(x.get(), g.get(), b.get(), out.get(), nullptr, nullptr,
                                  in[0]->numel() / cols, cols,
                                  ln.getEpsilon().convertToDouble());
        return one(out.take());
      })
      .Case([&](xf::RmsNormOp rn) {
        In<C> x(*in[0]), g(*in[1]);
        Out<C> out(dtype, shape);
        int64_t cols = lastDim(*in[0]);
        cpu::rmsnorm_forward<C>(x.get(), g.get(), out.get(), nullptr, in[0]->numel() / cols,
                                cols, rn.getEpsilon().convertToDouble());
        return one(out.take());
      })
      .Case([&](xf::AttentionOp at) {
        In<C> q(*in[0]), k(*in[1]), v(*in[2]);
        Out<C> out(dtype, shape);
        const auto &qs = in[0]->shape;
        cpu::attention_forward<C>(q.get(), k.get(), v.get(), out.get(), nullptr, qs[0], qs[1],
                                  qs[2], in[1]->shape[2], qs[3], at.getCausal(),
                                  at.getScale().convertToDouble());
        return one(out.take());
      })
      .Case([&](xf::RopeOp rp) {
        In<C> x(*in[0]);
        Out<C> out(dtype, shape);
        const auto &s = in[0]->shape;
        // Positions of a sequence shard start at its offset.
        int64_t position = place.resultDim(0, 1).offset;
        if (rp.getInverse())
          cpu::rope_backward<C>(x.get(), out.get(), s[0], s[1], s[2], s[3],
                                rp.getTheta().convertToDouble(), position);
        else
          cpu::rope<C>(x.get(), out.get(), s[0], s[1], s[2], s[3],
                       rp.getTheta().convertToDouble(), position);
        return one(out.take());
      })
      .Case([&](xf::DropoutOp dr) {
        In<C> x(*in[0]);
        Out<C> out(dtype, shape);
        double rate = options.training ? dr.getRate().convertToDouble() : 0.0;
        // The mask follows the element's index in the global tensor.
        std::vector<int64_t> offset, global;
        for (size_t d = 0; d < shape.size(); ++d) {
          OpPlacement::Dim p = place.resultDim(0, d);
          offset.push_back(p.offset);
          global.push_back(p.global);
        }
        cpu::dropout_block<C>(x.get(), out.get(), shape, offset, global, rate, options.seed,
                              options.step, static_cast<uint64_t>(dr.getKey()));
        return one(out.take());
      })
      .Case([&](xf::CastOp) {
        In<C> x(*in[0]);
        Out<C> out(dtype, shape);
        std::copy(x.get(), x.get() + in[0]->numel(), out.get());
        return one(out.take());
      })
      .Case([&](xf::FillOp fill) {
        Out<C> out(dtype, shape);
        std::fill(out.get(), out.get() + rt::num_elements(shape),
                  static_cast<C>(fill.getValue().convertToDouble()));
        return one(out.take());
      })
      .Case([&](xf::ScaleOp sc) {
        In<C> x(*in[0]);
        Out<C> out(dtype, shape);
        cpu::scale(x.get(), out.get(), in[0]->numel(), sc.getFactor().convertToDouble());
        return one(out.take());
      })
      .Default([&](Operation *) { return runGradOp<C>(op, in, place); });
}

/// Backward and optimizer ops.
template <class C>
Results runGradOp(Operation *op, llvm::ArrayRef<const HostTensor *> in,
                  const OpPlacement &place) {
  auto outOf = [&](unsigned i) {
    auto [dtype, shape] = resultSpec(op, i);
    return Out<C>(dtype, shape);
  };
  auto rowsCols = [&](const HostTensor &t) {
    int64_t cols = lastDim(t);
    return std::pair<int64_t, int64_t>(cols ? t.numel() / cols : 0, cols);
  };
  auto take = [](auto &...outs) {
    Results r;
    (r.push_back(outs.take()), ...);
    return r;
  };
  return llvm::TypeSwitch<Operation *, Results>(op)
      .Case([&](xf::ReduceSumOp rs) {
        In<C> x(*in[0]);
        Out<C> out = outOf(0);
        cpu::reduce_sum(x.get(), out.get(), in[0]->shape,
                        std::vector<int64_t>(rs.getDims().begin(), rs.getDims().end()));
        return take(out);
      })
      .Case([&](xf::GeluGradOp) {
        In<C> dy(*in[0]), x(*in[1]);
        Out<C> dx = outOf(0);
        cpu::gelu_tanh_backward(dy.get(), x.get(), dx.get(), in[0]->numel());
        return take(dx);
      })
      .Case([&](xf::SwigluGradOp) {
        In<C> dy(*in[0]), g(*in[1]), u(*in[2]);
        Out<C> dg = outOf(0), du = outOf(1);
        cpu::swiglu_backward(dy.get(), g.get(), u.get(), dg.get(), du.get(), in[0]->numel());
        return take(dg, du);
      })
      .Case([&](xf::SoftmaxGradOp) {
        In<C> dy(*in[0]), y(*in[1]);
        Out<C> dx = outOf(0);
        auto [rows, cols] = rowsCols(*in[0]);
        cpu::softmax_lastdim_backward(dy.get(), y.get(), dx.get(), rows, cols);
        return take(dx);
      })
      .Case([&](xf::LayerNormGradOp ln) {
        In<C> dy(*in[0]), x(*in[1]), g(*in[2]);
        Out<C> dx = outOf(0), dg = outOf(1), db = outOf(2);
        auto [rows, cols] = rowsCols(*in[1]);
        cpu::layernorm_backward(dy.get(), x.get(), g.get(), dx.get(), dg.get(), db.get(), rows,
                                cols, ln.getEpsilon().convertToDouble());
        return take(dx, dg, db);
      })
      .Case([&](xf::RmsNormGradOp rn) {
        In<C> dy(*in[0]), x(*in[1]), g(*in[2]);
        Out<C> dx = outOf(0), dg = outOf(1);
        auto [rows, cols] = rowsCols(*in[1]);
        cpu::rmsnorm_backward(dy.get(), x.get(), g.get(), dx.get(), dg.get(), rows, cols,
                              rn.getEpsilon().convertToDouble());
        return take(dx, dg);
      })
      .Case([&](xf::AttentionGradOp at) {
        In<C> dout(*in[0]), q(*in[1]), k(*in[2]), v(*in[3]), o(*in[4]);
        Out<C> dq = outOf(0), dk = outOf(1), dv = outOf(2);
        const auto &qs = in[1]->shape;
        cpu::attention_backward(dout.get(), q.get(), k.get(), v.get(), o.get(), dq.get(), dk.get(),
                                dv.get(), qs[0], qs[1], qs[2], in[2]->shape[2], qs[3],
                                at.getCausal(), at.getScale().convertToDouble());
        return take(dq, dk, dv);
      })
      .Case([&](xf::EmbeddingGradOp) {
        In<C> dy(*in[0]);
        Out<C> dt = outOf(0);
        const std::vector<int64_t> &table = resultSpec(op).second; // [vocab, hidden], verified
        OpPlacement::Dim rows = place.resultDim(0, 0);
        cpu::embedding_backward_block(dy.get(), in[1]->data<int32_t>(), dt.get(), in[1]->numel(),
                                      rows.global, rows.offset, rows.local, table[1]);
        return take(dt);
      })
      .Case([&](xf::SumSquaresOp) {
        In<C> x(*in[0]);
        HostTensor out(DType::F32, {});
        out.data<float>()[0] = static_cast<float>(cpu::sum_squares(x.get(), in[0]->numel()));
        return one(std::move(out));
      })
      .Case([&](xf::AdamWOp ad) {
        // Copies of the parameter and the moments, updated in place.
        Out<C> p = outOf(0), m = outOf(1), v = outOf(2);
        int64_t n = in[0]->numel();
        for (auto [src, dst] : {std::pair{in[0], &p}, {in[2], &m}, {in[3], &v}}) {
          In<C> s(*src);
          std::copy(s.get(), s.get() + n, dst->get());
        }
        bool skip = ad.getSkip() && scalarValue(*in[7]) != 0.0;
        if (!skip) {
          In<C> g(*in[1]);
          cpu::adamw(p.get(), g.get(), m.get(), v.get(), n, scalarValue(*in[4]),
                     ad.getBeta1().convertToDouble(), ad.getBeta2().convertToDouble(),
                     ad.getEpsilon().convertToDouble(), ad.getWeightDecay().convertToDouble(),
                     static_cast<int64_t>(scalarValue(*in[6])) + 1, scalarValue(*in[5]));
        }
        return take(p, m, v);
      })
      .Default([&](Operation *) -> Results {
        throw rt::Error("the reference executor does not support this op");
      });
}

/// The scalar ops of the optimizer (counters, schedule, clipping, scaling).
Results runScalarOp(Operation *op, llvm::ArrayRef<const HostTensor *> in) {
  auto f32 = [](double v) {
    HostTensor t(DType::F32, {});
    t.data<float>()[0] = static_cast<float>(v);
    return t;
  };
  auto i32 = [](int64_t v) {
    HostTensor t(DType::I32, {});
    t.data<int32_t>()[0] = static_cast<int32_t>(v);
    return t;
  };
  auto list = [](auto... ts) {
    Results r;
    (r.push_back(std::move(ts)), ...);
    return r;
  };
  return llvm::TypeSwitch<Operation *, Results>(op)
      .Case([&](xf::LrScheduleOp lr) {
        return list(f32(cpu::lr_schedule(static_cast<int64_t>(scalarValue(*in[0])),
                                         lr.getLr().convertToDouble(),
                                         lr.getMinLr().convertToDouble(), lr.getWarmup(),
                                         lr.getDecaySteps())));
      })
      .Case([&](xf::ClipGradNormOp clip) {
        double sumsq = scalarValue(*in[0]);
        double scale = clip.getLossScale() ? scalarValue(*in[1]) : 1.0;
        double norm = std::sqrt(sumsq) / scale;
        double maxNorm = clip.getMaxNorm().convertToDouble();
        double coef = maxNorm > 0.0 ? std::min(1.0, maxNorm / (norm + 1e-6)) : 1.0;
        bool inf = !std::isfinite(sumsq);
        return list(f32(norm), f32(inf ? 0.0 : coef / scale), f32(inf ? 1.0 : 0.0));
      })
      .Case([&](xf::CountStepOp cs) {
        bool skip = cs.getSkip() && scalarValue(*in[1]) != 0.0;
        return list(i32(static_cast<int64_t>(scalarValue(*in[0])) + (skip ? 0 : 1)));
      })
      .Case([&](xf::LossScaleUpdateOp ls) {
        double scale = scalarValue(*in[0]);
        int64_t good = static_cast<int64_t>(scalarValue(*in[1]));
        if (scalarValue(*in[2]) != 0.0) {
          scale = std::max(scale / ls.getFactor().convertToDouble(),
                           ls.getMinScale().convertToDouble());
          good = 0;
        } else if (++good >= ls.getWindow()) {
          scale *= ls.getFactor().convertToDouble();
          good = 0;
        }
        return list(f32(scale), i32(good));
      });
}

/// Ops that only move bytes, whatever the element type.
HostTensor runLayoutOp(Operation *op, const HostTensor &x) {
  auto [dtype, shape] = resultSpec(op);
  if (isa<xf::ReshapeOp>(op)) {
    HostTensor out = x;
    out.shape = shape;
    return out;
  }
  auto tr = cast<xf::TransposeOp>(op);
  HostTensor out(dtype, shape);
  std::vector<int64_t> perm(tr.getPermutation().begin(), tr.getPermutation().end());
  switch (rt::dtype_size(x.dtype)) {
  case 8:
    cpu::transpose(x.data<double>(), out.data<double>(), x.shape, perm);
    break;
  case 4:
    if (x.dtype == DType::I32)
      cpu::transpose(x.data<int32_t>(), out.data<int32_t>(), x.shape, perm);
    else
      cpu::transpose(x.data<float>(), out.data<float>(), x.shape, perm);
    break;
  default:
    cpu::transpose(x.data<uint16_t>(), out.data<uint16_t>(), x.shape, perm);
  }
  return out;
}

/// The element type that decides the compute type of an op: its first float
/// operand, or its result for ops without one.
Type computeElementType(Operation *op) {
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && isa<FloatType>(t.getElementType()))
      return t.getElementType();
  return cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
}

} // namespace

//===----------------------------------------------------------------------===//
// Cross-entropy, whole or vocabulary-parallel
//===----------------------------------------------------------------------===//

namespace {

bool isCrossEntropy(Operation *op) {
  return isa<xf::CrossEntropyOp, xf::CrossEntropyGradOp, xf::LinearCrossEntropyOp,
             xf::LinearCrossEntropyGradOp>(op);
}

/// (operand, dim) of a cross-entropy op that holds the vocabulary.
std::pair<unsigned, unsigned> vocabDimOf(Operation *op) {
  auto last = [&](unsigned i) {
    return std::pair<unsigned, unsigned>(
        i, cast<ShapedType>(op->getOperand(i).getType()).getRank() - 1);
  };
  return llvm::TypeSwitch<Operation *, std::pair<unsigned, unsigned>>(op)
      .Case([&](xf::CrossEntropyOp) { return last(0); })
      .Case([&](xf::CrossEntropyGradOp) { return last(1); })
      .Case([&](xf::LinearCrossEntropyOp lce) {
        return std::pair<unsigned, unsigned>(1, lce.getVocabMajor() ? 0 : 1);
      })
      .Case([&](xf::LinearCrossEntropyGradOp lce) {
        return std::pair<unsigned, unsigned>(2, lce.getVocabMajor() ? 0 : 1);
      });
}

/// One rank's operands of a cross-entropy op, in compute type C.
template <class C> struct LossOperands {
  double dloss = 0.0;
  std::optional<In<C>> logits, x, w, mask;
  const int32_t *targets = nullptr;
  int64_t rows = 0, hidden = 0;
};

/// Per-row statistics of a vocabulary block (see cpu::cross_entropy_block_stats).
struct RowStats {
  std::vector<double> max, sumExp, target;
};

/// Runs a cross-entropy op on every rank: in[r] are rank r's operands,
/// blocks[r] its vocabulary block and groups[r] its vocabulary group (ranks
/// in group order). Each rank computes the statistics of its block, each
/// group combines them in group order, and each rank finishes with the
/// combined statistics — a whole vocabulary is a group of one. The backward
/// of a whole vocabulary needs no statistics: its kernel computes them per
/// row.
///
/// tokenGroups[r] are the ranks whose tokens share rank r's mean (the token
/// dims split over data-parallel axes). Each computes its share of the mean
/// over the whole group: its sum over the group's counted rows, not its own
/// mean, so the shares add up to the unsharded mean however unevenly targets
/// are masked (one count per rank is exchanged).
template <class C>
std::vector<Results> runCrossEntropy(Operation *op,
                                     llvm::ArrayRef<SmallVector<const HostTensor *>> in,
                                     llvm::ArrayRef<OpPlacement::Dim> blocks,
                                     llvm::ArrayRef<std::vector<int64_t>> groups,
                                     llvm::ArrayRef<std::vector<int64_t>> tokenGroups) {
  bool grad = isa<xf::CrossEntropyGradOp, xf::LinearCrossEntropyGradOp>(op);
  bool linear = isa<xf::LinearCrossEntropyOp, xf::LinearCrossEntropyGradOp>(op);
  bool vocabMajor = false;
  int64_t ignore = 0;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](xf::CrossEntropyOp o) { ignore = o.getIgnoreIndex(); })
      .Case([&](xf::CrossEntropyGradOp o) { ignore = o.getIgnoreIndex(); })
      .Case([&](xf::LinearCrossEntropyOp o) {
        ignore = o.getIgnoreIndex();
        vocabMajor = o.getVocabMajor();
      })
      .Case([&](xf::LinearCrossEntropyGradOp o) {
        ignore = o.getIgnoreIndex();
        vocabMajor = o.getVocabMajor();
      });
  size_t n = in.size();
  auto rowsOf = [](const HostTensor &t) {
    int64_t cols = lastDim(t);
    return cols ? t.numel() / cols : 0;
  };
  std::vector<LossOperands<C>> ops(n);
  for (size_t r = 0; r < n; ++r) {
    LossOperands<C> &o = ops[r];
    llvm::ArrayRef<const HostTensor *> v = in[r];
    size_t i = 0;
    if (grad)
      o.dloss = scalarValue(*v[i++]);
    o.rows = rowsOf(*v[i]);
    if (linear) {
      o.hidden = lastDim(*v[i]);
      o.x.emplace(*v[i++]);
      o.w.emplace(*v[i++]);
    } else {
      o.logits.emplace(*v[i++]);
    }
    o.targets = v[i++]->data<int32_t>();
    if (v.size() > i)
      o.mask.emplace(*v[i]);
  }
  auto maskOf = [&](size_t r) { return ops[r].mask ? ops[r].mask->get() : nullptr; };

  // 1. Statistics of each rank's block.
  bool split = llvm::any_of(groups, [](const std::vector<int64_t> &g) { return g.size() > 1; });
  bool needStats = !grad || split;
  std::vector<RowStats> stats(needStats ? n : 0);
  for (size_t r = 0; r < stats.size(); ++r) {
    LossOperands<C> &o = ops[r];
    const OpPlacement::Dim &b = blocks[r];
    RowStats &s = stats[r];
    for (auto *v : {&s.max, &s.sumExp, &s.target})
      v->resize(o.rows);
    if (linear)
      cpu::linear_cross_entropy_block_stats<C>(
          o.x->get(), o.w->get(), vocabMajor, o.targets, maskOf(r), o.rows, o.hidden, b.global,
          b.offset, b.local, ignore, s.max.data(), s.sumExp.data(), s.target.data());
    else
      cpu::cross_entropy_block_stats<C>(o.logits->get(), o.targets, maskOf(r), o.rows, b.global,
                                        b.offset, b.local, ignore, s.max.data(),
                                        s.sumExp.data(), s.target.data());
  }

  // 2. The exchange: each group combines its members' statistics in group
  //    order; the members share the result.
  std::vector<RowStats> combined(stats.size());
  std::vector<int64_t> combinedOf(n, -1);
  for (size_t r = 0; r < stats.size(); ++r) {
    if (combinedOf[r] >= 0)
      continue;
    std::vector<const double *> mx, se, tg;
    for (int64_t m : groups[r]) {
      if (ops[m].rows != ops[r].rows)
        throw rt::Error("the ranks of a vocabulary group hold different numbers of tokens");
      mx.push_back(stats[m].max.data());
      se.push_back(stats[m].sumExp.data());
      tg.push_back(stats[m].target.data());
      combinedOf[m] = static_cast<int64_t>(r);
    }
    RowStats &c = combined[r];
    for (auto *v : {&c.max, &c.sumExp, &c.target})
      v->resize(ops[r].rows);
    cpu::cross_entropy_combine_stats(static_cast<int64_t>(mx.size()), mx.data(), se.data(),
                                     tg.data(), ops[r].rows, c.max.data(), c.sumExp.data(),
                                     c.target.data());
  }

  // 3. Each rank's share of its token group's mean: count / group count
  //    (the local kernels divide by the local count).
  std::vector<int64_t> counted(n, 0);
  for (size_t r = 0; r < n; ++r)
    for (int64_t row = 0; row < ops[r].rows; ++row)
      counted[r] += cpu::isCounted(ops[r].targets, maskOf(r), row, ignore) ? 1 : 0;
  std::vector<double> share(n, 1.0);
  for (size_t r = 0; r < n; ++r) {
    if (tokenGroups[r].size() <= 1)
      continue;
    int64_t total = 0;
    for (int64_t m : tokenGroups[r])
      total += counted[m];
    share[r] = total > 0 ? static_cast<double>(counted[r]) / static_cast<double>(total) : 0.0;
    ops[r].dloss *= share[r]; // the backward is linear in dloss
  }

  // 4. The loss, or each rank's block of the gradients.
  std::vector<Results> out(n);
  for (size_t r = 0; r < n; ++r) {
    LossOperands<C> &o = ops[r];
    const OpPlacement::Dim &b = blocks[r];
    const RowStats *c = needStats ? &combined[combinedOf[r]] : nullptr;
    auto outOf = [&](unsigned i) {
      auto [dtype, shape] = resultSpec(op, i);
      return Out<C>(dtype, shape);
    };
    if (!grad) {
      double loss = cpu::cross_entropy_from_stats<C>(c->max.data(), c->sumExp.data(),
                                                     c->target.data(), o.targets, maskOf(r),
                                                     o.rows, ignore, nullptr);
      Out<C> res = outOf(0);
      res.get()[0] = static_cast<C>(loss * share[r]);
      out[r] = one(res.take());
      continue;
    }
    const double *mx = c ? c->max.data() : nullptr, *se = c ? c->sumExp.data() : nullptr;
    if (linear) {
      Out<C> dx = outOf(0), dw = outOf(1);
      cpu::linear_cross_entropy_block_backward<C>(o.dloss, o.x->get(), o.w->get(), vocabMajor,
                                                  o.targets, maskOf(r), mx, se, dx.get(),
                                                  dw.get(), o.rows, o.hidden, b.global,
                                                  b.offset, b.local, ignore);
      out[r].push_back(dx.take());
      out[r].push_back(dw.take());
    } else {
      Out<C> dl = outOf(0);
      cpu::cross_entropy_block_backward<C>(o.dloss, o.logits->get(), o.targets, maskOf(r), mx,
                                           se, dl.get(), o.rows, b.global, b.offset, b.local,
                                           ignore);
      out[r] = one(dl.take());
    }
  }
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Executor
//===----------------------------------------------------------------------===//

Executor::Executor(func::FuncOp func, RunOptions options) : func_(func), options_(options) {
  // Resolved quietly here, so that numRanks() is known before run(); run()
  // reports a grid that cannot be resolved.
  if (!func.isExternal()) {
    FailureOr<std::optional<MeshSimulation>> mesh = MeshSimulation::forFunction(func, false);
    if (succeeded(mesh) && *mesh)
      mesh_ = std::make_shared<const MeshSimulation>(std::move(**mesh));
  }
  ranks_.resize(mesh_ ? mesh_->numRanks() : 1);
  for (size_t r = 0; r < ranks_.size(); ++r)
    ranks_[r].rank = static_cast<int>(r);
}

LogicalResult Executor::operandsOf(Operation *op, const RankEnv &env,
                                   SmallVectorImpl<const HostTensor *> &in) {
  for (Value v : op->getOperands()) {
    auto it = env.values.find(v);
    if (it == env.values.end())
      return op->emitError("reference executor: operand has no value (is the IR in SSA "
                           "dominance order?)");
    in.push_back(&it->second);
  }
  return success();
}

LogicalResult Executor::execLocal(Operation *op, RankEnv &env) {
  SmallVector<const HostTensor *> in;
  if (failed(operandsOf(op, env, in)))
    return failure();
  try {
    OpPlacement place(op, mesh_ ? &mesh_->mesh() : nullptr, env.rank);
    Results results;
    if (auto iota = dyn_cast<xf::IotaOp>(op)) {
      auto [dtype, shape] = resultSpec(op);
      results = one(HostTensor(dtype, shape));
      cpu::iota(results[0].data<int32_t>(), shape, iota.getDim(),
                place.resultDim(0, iota.getDim()).offset);
    } else if (isa<xf::ReshapeOp, xf::TransposeOp>(op)) {
      results = one(runLayoutOp(op, *in[0]));
    } else if (isa<xf::LrScheduleOp, xf::ClipGradNormOp, xf::CountStepOp,
                   xf::LossScaleUpdateOp>(op)) {
      results = runScalarOp(op, in);
    } else if (computeElementType(op).isF64()) {
      results = runFloatOp<double>(op, in, options_, place);
    } else {
      results = runFloatOp<float>(op, in, options_, place);
    }
    for (auto [value, result] : llvm::zip_equal(op->getResults(), results))
      env.values[value] = std::move(result);
  } catch (const rt::Error &e) {
    return op->emitError() << "reference executor: " << e.what();
  }
  return success();
}

LogicalResult Executor::execCollective(Operation *op) {
  if (!mesh_)
    return op->emitError() << "reference executor: '" << op->getName()
                           << "' needs a partitioned function (one with '"
                           << sharding::kGridAttr << "')";
  std::vector<const HostTensor *> in;
  for (RankEnv &env : ranks_) {
    SmallVector<const HostTensor *, 1> operands;
    if (failed(operandsOf(op, env, operands)))
      return failure();
    in.push_back(operands.front());
  }
  try {
    std::vector<HostTensor> out;
    mesh_->runCollective(op, in, out);
    for (auto [env, value] : llvm::zip_equal(ranks_, out))
      env.values[op->getResult(0)] = std::move(value);
  } catch (const rt::Error &e) {
    return op->emitError() << "reference executor: " << e.what();
  }
  return success();
}

LogicalResult Executor::execCrossEntropy(Operation *op) {
  std::vector<SmallVector<const HostTensor *>> in(ranks_.size());
  for (auto [env, operands] : llvm::zip_equal(ranks_, in))
    if (failed(operandsOf(op, env, operands)))
      return failure();
  try {
    auto [operand, dim] = vocabDimOf(op);
    // The mesh axes of the op's normalized (token) factors.
    sharding::AxisList tokenAxes;
    if (auto attr = op->getAttrOfType<ArrayAttr>(sharding::kFactorAxesAttr)) {
      xf::OpShardingRule rule = cast<xf::ShardingRuleOpInterface>(op).getShardingRule();
      for (size_t f = 0; f < rule.factors.size() && f < attr.size(); ++f)
        if (auto axes = dyn_cast<DenseI16ArrayAttr>(attr[f]); axes && rule.factors[f].normalized)
          tokenAxes.append(axes.asArrayRef().begin(), axes.asArrayRef().end());
    }
    std::vector<OpPlacement::Dim> blocks;
    std::vector<std::vector<int64_t>> groups, tokenGroups;
    for (const RankEnv &env : ranks_) {
      OpPlacement place(op, mesh_ ? &mesh_->mesh() : nullptr, env.rank);
      blocks.push_back(place.operandDim(operand, dim));
      groups.push_back(mesh_ ? mesh_->mesh().group(blocks.back().axes, env.rank)
                             : std::vector<int64_t>{env.rank});
      tokenGroups.push_back(mesh_ && !tokenAxes.empty() ? mesh_->mesh().group(tokenAxes, env.rank)
                                                        : std::vector<int64_t>{env.rank});
    }
    std::vector<Results> results =
        computeElementType(op).isF64()
            ? runCrossEntropy<double>(op, in, blocks, groups, tokenGroups)
            : runCrossEntropy<float>(op, in, blocks, groups, tokenGroups);
    for (auto [env, res] : llvm::zip_equal(ranks_, results))
      for (auto [value, result] : llvm::zip_equal(op->getResults(), res))
        env.values[value] = std::move(result);
  } catch (const rt::Error &e) {
    return op->emitError() << "reference executor: " << e.what();
  }
  return success();
}

LogicalResult Executor::distributeArguments(std::vector<HostTensor> &args) {
  Block &body = func_.getBody().front();
  for (RankEnv &env : ranks_)
    env.values.clear();
  if (mesh_) {
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      std::vector<HostTensor> perRank;
      if (failed(mesh_->distributeArgument(i, std::move(args[i]), perRank)))
        return failure();
      for (auto [env, value] : llvm::zip_equal(ranks_, perRank))
        env.values[arg] = std::move(value);
    }
    return success();
  }
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    auto spec = tensorSpec(arg.getType());
    if (failed(spec))
      return func_.emitError() << argumentName(func_, i) << " has type " << arg.getType()
                               << "; the executor needs static tensors of f32, f64, bf16, "
                                  "f16 or i32";
    if (spec->first != args[i].dtype || spec->second != args[i].shape)
      return func_.emitError() << argumentName(func_, i) << " is " << arg.getType()
                               << " but was given " << rt::dtype_name(args[i].dtype) << " "
                               << rt::shape_str(args[i].shape);
    ranks_.front().values[arg] = std::move(args[i]);
  }
  return success();
}

LogicalResult Executor::collectResults(func::ReturnOp ret, std::vector<HostTensor> &results) {
  results.clear();
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (!mesh_) {
      results.push_back(ranks_.front().values.lookup(v));
      continue;
    }
    std::vector<const HostTensor *> perRank;
    for (const RankEnv &env : ranks_) {
      auto it = env.values.find(v);
      if (it == env.values.end())
        return ret.emitError("reference executor: returned value has no value");
      perRank.push_back(&it->second);
    }
    HostTensor global;
    if (failed(mesh_->assembleResult(ret, i, perRank, global)))
      return failure();
    results.push_back(std::move(global));
  }
  return success();
}

LogicalResult Executor::run(std::vector<HostTensor> args, std::vector<HostTensor> &results) {
  if (func_.isExternal())
    return func_.emitError("cannot execute a function declaration");
  if (!mesh_ && func_->hasAttr(sharding::kGridAttr)) {
    // Report why the constructor could not resolve the grid.
    if (succeeded(MeshSimulation::forFunction(func_, true)))
      func_.emitError("reference executor: cannot resolve the function's grid");
    return failure();
  }
  Block &body = func_.getBody().front();
  if (args.size() != body.getNumArguments())
    return func_.emitError() << "expected " << body.getNumArguments() << " arguments, got "
                             << args.size();

  // Drop each value after its last use: activations of a full model would not
  // all fit otherwise.
  llvm::DenseMap<Operation *, SmallVector<Value>> dying;
  {
    llvm::DenseMap<Value, Operation *> lastUse;
    for (Operation &op : body)
      for (Value v : op.getOperands())
        lastUse[v] = &op;
    for (auto &[v, op] : lastUse)
      dying[op].push_back(v);
  }

  if (failed(distributeArguments(args)))
    return failure();
  results.clear();
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      return collectResults(ret, results);
    bool isXf = op.getNumResults() >= 1 && op.getDialect() && isa<xf::XfDialect>(op.getDialect());
    if (!isXf && !MeshSimulation::isCollective(&op))
      return op.emitError() << "reference executor: '" << op.getName()
                            << "' is not supported (xf ops and the shard collectives "
                               "all_gather, all_reduce, reduce_scatter, all_slice and "
                               "all_to_all only)";
    auto start = std::chrono::steady_clock::now();
    if (MeshSimulation::isCollective(&op)) {
      if (failed(execCollective(&op)))
        return failure();
    } else if (isCrossEntropy(&op)) {
      if (failed(execCrossEntropy(&op)))
        return failure();
    } else {
      for (RankEnv &env : ranks_)
        if (failed(execLocal(&op, env)))
          return failure();
    }
    if (options_.profile)
      profile_[op.getName().getStringRef().str()] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (Value v : dying.lookup(&op))
      for (RankEnv &env : ranks_)
        env.values.erase(v);
  }
  return success();
}
