//===- KernelScratch.cpp - the scratch memory of each kernel call ---------===//

#include "runtime/program/KernelScratch.h"

#include "runtime/program/CallDecoder.h"
#include "runtime/Error.h"

#include <algorithm>
#include <vector>

namespace shardc::rt {
namespace scratch {

namespace {
constexpr int64_t kRowAlign = 128;   // a GEMM tile's rows
constexpr int64_t kVocabAlign = 256; // a GEMM tile's columns; keeps W column offsets aligned

bool chunksByVocab(const LinearCrossEntropyShape &s) {
  switch (s.chunking) {
  case LinearCrossEntropyChunking::Rows:
    return false;
  case LinearCrossEntropyChunking::Vocab:
    return true;
  default:
    return s.blockVocab >= s.rows;
  }
}
} // namespace

LinearCrossEntropyChunks linearCrossEntropyChunks(const LinearCrossEntropyShape &s) {
  const int64_t budget = s.chunkElems > 0 ? s.chunkElems : kLinearCrossEntropyChunkElems;
  const int64_t rows = std::max<int64_t>(s.rows, 1), vocab = std::max<int64_t>(s.blockVocab, 1);
  if (chunksByVocab(s)) {
    int64_t vc = std::max<int64_t>(1, budget / rows);
    if (vc >= kVocabAlign)
      vc -= vc % kVocabAlign;
    return {true, rows, std::min(vc, vocab)};
  }
  int64_t rc = std::max<int64_t>(1, budget / vocab);
  if (rc >= kRowAlign)
    rc -= rc % kRowAlign;
  return {false, std::min(rc, rows), vocab};
}

LinearCrossEntropyLayout linearCrossEntropyLayout(const LinearCrossEntropyShape &s,
                                                  const LinearCrossEntropyChunks &c, bool lowp,
                                                  bool acc) {
  LinearCrossEntropyLayout l;
  int64_t off = 0;
  l.count = off;
  off += 256;
  const int64_t elems = c.rows * c.vocab;
  l.logits = off;
  off += align256(elems * 4);
  l.lowp = off;
  if (lowp)
    off += align256(elems * 2);
  l.acc = off;
  if (acc)
    off += align256((c.byVocab ? s.rows : s.blockVocab) * s.hidden * 4);
  l.total = off;
  return l;
}

int64_t linearCrossEntropyBytes(const LinearCrossEntropyShape &s, bool backward, DType w,
                                DType dx, DType dw) {
  const LinearCrossEntropyChunks c = linearCrossEntropyChunks(s);
  const bool lowp = backward && w != DType::F32;
  const bool acc = backward && (c.byVocab ? dx != DType::F32 : dw != DType::F32);
  return linearCrossEntropyLayout(s, c, lowp, acc).total;
}

int64_t normGradBytes(int64_t rows, int64_t cols, bool rms) {
  return (rms ? 1 : 2) * normGradSlots(rows, cols) * std::max<int64_t>(cols, 0) *
         int64_t(sizeof(float));
}

int64_t sumSquaresBytes(const int64_t *ns, int count) {
  int64_t blocks = 0;
  for (int i = 0; i < count; ++i)
    blocks += sumSquaresBlocks(ns[i]);
  return std::max<int64_t>(blocks, 1) * int64_t(sizeof(double));
}

int64_t cpuLogitChunkRows(int64_t blockVocab) {
  return std::clamp<int64_t>(kCpuLogitChunkElems / std::max<int64_t>(blockVocab, 1), 1,
                             kCpuMaxChunkRows);
}

int64_t normGradSlots(int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0)
    return 0;
  if (cols <= 512)
    return std::min<int64_t>(rows, 1024);
  return std::min<int64_t>(rows, std::clamp<int64_t>((int64_t(1) << 22) / cols, 16, 264));
}

int64_t sumSquaresBlocks(int64_t n) {
  return n <= 0 ? 0 : std::clamp<int64_t>((n + 4095) / 4096, 1, 2048);
}

PackedAttentionLayout packedAttentionLayout(int64_t B, int64_t S, int64_t Hkv, int64_t G,
                                            int64_t D, int64_t elemBytes, bool backward) {
  PackedAttentionLayout l;
  if (B <= 0 || S <= 0 || Hkv <= 0 || G <= 0 || D <= 0)
    return l;
  const int64_t q = align256(B * S * Hkv * G * D * elemBytes),
                kv = align256(B * S * Hkv * D * elemBytes);
  l.k = q;
  l.v = l.k + kv;
  l.total = l.v + kv;
  if (!backward)
    return l;
  l.dq = l.total;
  l.dk = l.dq + q;
  l.dv = l.dk + kv;
  l.workspace = l.dv + kv;
  l.total = l.workspace + attentionBackwardBytes(B, S, Hkv * G);
  return l;
}

MatmulRelayout matmulRelayout(const DecodedCall &d) {
  const Equation &e = d.eq;
  const std::string &B = e.batch, &M = e.lhsFree, &N = e.rhsFree, &K = e.contracted;
  const TensorType &lt = d.operands[0], &rt_ = d.operands[1], &ot = d.results[0];
  // cuBLASLt needs A and B of one dtype: mixed operands are widened to f32.
  const DType ab = lt.dtype == rt_.dtype ? lt.dtype : DType::F32;
  const std::string lhsWant = d.transA ? B + K + M : B + M + K;
  const std::string rhsWant = d.transB ? B + N + K : B + K + N;
  const int64_t es = dtype_size(ab);
  MatmulRelayout r;
  r.lhs = (e.lhs != lhsWant || lt.dtype != ab) ? align256(lt.numel() * es) : 0;
  r.rhs = (e.rhs != rhsWant || rt_.dtype != ab) ? align256(rt_.numel() * es) : 0;
  r.out = B + M + N != e.out ? align256(ot.bytes()) : 0;
  return r;
}

LinearCrossEntropyShape linearCrossEntropyShape(const DecodedCall &d) {
  const size_t first = d.kind == OpKind::LinearCrossEntropyGrad ? 1 : 0; // dloss first
  const Block &b = d.block;
  LinearCrossEntropyShape shape;
  shape.rows = rowsOf(d.operands[first]);
  shape.hidden = lastDim(d.operands[first]);
  shape.vocab = d.classes;
  shape.vocabBegin = b.offset;
  shape.blockVocab = b.local; // the GEMMs over the whole (aligned) block
  shape.classCols = classColumns(b, d.classes);
  shape.ignoreIndex = d.ignoreIndex;
  shape.vocabMajor = d.vocabMajor;
  return shape;
}

LossLayout lossLayout(const DecodedCall &d, const abi::Mesh &mesh) {
  const bool grad = d.kind == OpKind::CrossEntropyGrad || d.kind == OpKind::LinearCrossEntropyGrad;
  const bool linear =
      d.kind == OpKind::LinearCrossEntropy || d.kind == OpKind::LinearCrossEntropyGrad;
  const int64_t rows = rowsOf(d.operands[grad ? 1 : 0]);
  const int64_t members = mesh.size(d.block.axes);
  LossLayout l;
  l.stats = align256(3 * rows * 4);
  l.gathered = members > 1 ? align256(members * 3 * rows * 4) : 0;
  if (linear && rows > 0 && d.block.local > 0)
    l.linear = linearCrossEntropyBytes(linearCrossEntropyShape(d), grad,
                                       d.operands[grad ? 2 : 1].dtype, d.results[0].dtype,
                                       grad ? d.results[1].dtype : DType::F32);
  return l;
}

CollectiveStaging collectiveStaging(const DecodedCall &d, int64_t members,
                                    bool inputOverlapsOutput, bool inPlace) {
  CollectiveStaging st;
  const TensorType &in = d.operands[0];
  const int64_t bytes = in.bytes(), es = dtype_size(in.dtype);
  if (bytes == 0)
    return st;
  auto region = [&](int64_t size) {
    int64_t at = st.total;
    st.total += align256(size);
    return at;
  };
  // (A transfer's rank either sends its input or receives its output: the
  // two are on different pipeline stages, whose ranks share no bytes.)
  if (inputOverlapsOutput && !(inPlace && d.kind == OpKind::AllReduce) &&
      d.kind != OpKind::Transfer)
    st.inputCopy = region(bytes);
  switch (d.kind) {
  case OpKind::AllGather: {
    std::vector<int64_t> shape = in.shape;
    shape[d.axis] *= members;
    if (members > 1 && Split3(shape, d.axis, es).outer != 1)
      st.blocks = region(members * bytes);
    break;
  }
  case OpKind::ReduceScatter:
    if (Split3(in.shape, d.axis, es).outer != 1)
      st.blocks = region(bytes);
    break;
  case OpKind::AllToAll:
    st.blocks = region(bytes);
    st.received = region(bytes);
    break;
  default: // all-reduce, all-slice, transfer: in place or straight from the input
    break;
  }
  return st;
}

PlannedStaging plannedStaging(const DecodedCall &d, int64_t members, const void *in,
                              const void *out, void *scratch) {
  const auto *i = static_cast<const uint8_t *>(in), *o = static_cast<const uint8_t *>(out);
  const bool overlaps = i < o + d.results[0].bytes() && o < i + d.operands[0].bytes();
  PlannedStaging p;
  p.layout = collectiveStaging(d, members, overlaps, in == out);
  p.base = d.scratch > 0 ? static_cast<uint8_t *>(scratch) : nullptr;
  if (p.base && d.scratch < p.layout.total)
    throw Error("the plan gives it " + std::to_string(d.scratch) +
                " bytes of staging, it needs " + std::to_string(p.layout.total));
  return p;
}

} // namespace scratch

bool mayNeedScratch(abi::OpCode code) {
  switch (code) {
  case OpKind::Matmul:
  case OpKind::MatmulBias:
  case OpKind::MatmulBiasGelu:
  case OpKind::MatmulDGelu:
  case OpKind::MatmulBGrad:
  case OpKind::LayerNormGrad:
  case OpKind::RmsNormGrad:
  case OpKind::Attention:
  case OpKind::AttentionGrad:
  case OpKind::SumSquares:
  case OpKind::MultiSumSquares:
  case OpKind::CrossEntropy:
  case OpKind::CrossEntropyGrad:
  case OpKind::LinearCrossEntropy:
  case OpKind::LinearCrossEntropyGrad:
  case OpKind::PackedAttention:
  case OpKind::PackedAttentionGrad:
    return true;
  default:
    return false;
  }
}

int64_t callScratchBytes(const DecodedCall &d, const abi::Mesh &mesh) {
  if (!mayNeedScratch(d.kind))
    return 0;
  using namespace scratch;
  const auto &ins = d.operands;
  switch (d.kind) {
  case OpKind::Matmul:
  case OpKind::MatmulBias: // the fused GEMMs fall back to the plain one
  case OpKind::MatmulBiasGelu:
  case OpKind::MatmulDGelu:
  case OpKind::MatmulBGrad:
    return matmulRelayout(d).total();
  case OpKind::LayerNormGrad:
  case OpKind::RmsNormGrad:
    return normGradBytes(rowsOf(ins[1]), lastDim(ins[1]), d.kind == OpKind::RmsNormGrad);
  case OpKind::Attention:
  case OpKind::AttentionGrad: {
    bool backward = d.kind == OpKind::AttentionGrad;
    const auto &q = ins[backward ? 1 : 0].shape; // [B, S, Hq, D]
    if (q.size() != 4)
      return 0;
    if (d.block.local < d.block.global) // a block of the query rows
      return attentionRowBlockBytes(q[0], d.block.global, q[2], q[3],
                                    dtype_size(ins[backward ? 1 : 0].dtype), backward ? 4 : 2,
                                    backward);
    return backward ? attentionBackwardBytes(q[0], q[1], q[2]) : 0;
  }
  case OpKind::PackedAttention:
  case OpKind::PackedAttentionGrad: {
    bool backward = d.kind == OpKind::PackedAttentionGrad;
    const TensorType &qkv = ins[backward ? 1 : 0]; // [B, S, Hkv, G + 2, D]
    if (qkv.shape.size() != 5)
      return 0;
    const auto &s = qkv.shape;
    return packedAttentionLayout(s[0], s[1], s[2], s[3] - 2, s[4], dtype_size(qkv.dtype),
                                 backward)
        .total;
  }
  case OpKind::SumSquares:
  case OpKind::MultiSumSquares: {
    std::vector<int64_t> ns;
    for (const TensorType &t : ins)
      ns.push_back(t.numel());
    return sumSquaresBytes(ns.data(), static_cast<int>(ns.size()));
  }
  case OpKind::CrossEntropy:
  case OpKind::CrossEntropyGrad:
  case OpKind::LinearCrossEntropy:
  case OpKind::LinearCrossEntropyGrad: {
    int64_t bytes = lossLayout(d, mesh).total();
    const bool linear =
        d.kind == OpKind::LinearCrossEntropy || d.kind == OpKind::LinearCrossEntropyGrad;
    if (linear) {
      // The CPU's logit (or dlogit) chunk, in its compute type: at most
      // min(cpuLogitChunkRows(c), rows) x c logits for the block's c class
      // columns. Bounded over every c <= the block (a padded vocabulary's
      // last block has fewer classes, and a narrower block can take more
      // logits per chunk), so every rank of a vocabulary split needs no
      // more than the plan, which is decoded on one rank, gives.
      const size_t first = d.kind == OpKind::LinearCrossEntropyGrad ? 1 : 0;
      const int64_t rows = rowsOf(ins[first]), local = d.block.local;
      if (local > 0 && rows > 0) {
        const int64_t chunk = std::min(std::min(rows, kCpuMaxChunkRows) * local,
                                       std::max(kCpuLogitChunkElems, local));
        bytes = std::max(bytes, chunk * int64_t(d.f64 ? sizeof(double) : sizeof(float)));
      }
    }
    return bytes;
  }
  default:
    return 0;
  }
}

} // namespace shardc::rt
