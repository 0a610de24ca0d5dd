//===- KernelScratch.h - the scratch memory of each kernel call -*- C++ -*-===//
//
// Some kernels need memory besides their operands and results while they
// run: the fused linear cross-entropy's logit chunks, the statistics a loss
// gathers over its vocabulary group, the per-slot partial sums of the norm
// gradients, the attention backward's row statistics, the partial sums of
// the gradient norm, a GEMM operand laid out for cuBLASLt. The bytes are a
// function of the call alone (its shapes, dtypes, attributes and the mesh),
// written here once, MLIR- and CUDA-free, and read by both sides:
//  - the memory planner (-xf-plan-memory) places each call's scratch in the
//    workspace arena for the duration of the call (callScratchBytes), so the
//    planned peak includes it;
//  - the runtime hands the planned region to the kernel as one more buffer
//    after the results (the C ABI's buffer array), and each backend sizes
//    its use of it with the same functions (the CUDA backend's kernels, the
//    CPU kernel runner's logit chunks). A call whose plan gives less than
//    it needs is refused when the program is loaded.
// A call's scratch is the most any backend uses for it: the compiled step
// does not know which backend will run it.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_PROGRAM_KERNELSCRATCH_H
#define SHARDC_RUNTIME_PROGRAM_KERNELSCRATCH_H

#include "runtime/HostTensor.h"

#include <cstdint>

namespace shardc::abi {
struct Mesh;
enum class OpCode : uint8_t;
} // namespace shardc::abi

namespace shardc::rt {

struct DecodedCall;

/// Which logit dimension the GPU's fused linear cross-entropy chunks (Auto:
/// the longer one; runtime/cuda/LinearCrossEntropy.h).
enum class LinearCrossEntropyChunking { Auto, Rows, Vocab };

/// The GPU's fused linear cross-entropy problem (runtime/cuda/
/// LinearCrossEntropy.h explains the chunking).
struct LinearCrossEntropyShape {
  int64_t rows = 0, hidden = 0, vocab = 0, vocabBegin = 0, blockVocab = 0;
  /// A padded vocabulary (xf's `classes`): `vocab` is then the number of
  /// classes and only the block's first classCols columns are classes (0:
  /// all blockVocab). The GEMMs still run over the whole block (aligned
  /// strides); the padding columns get no probability and a zero dlogits, so
  /// dW's padding rows/columns come out as zeros.
  int64_t classCols = 0;
  int64_t ignoreIndex = -100;
  bool vocabMajor = false;
  /// f32 logits per chunk; 0: the default, 256 Mi elements (1 GiB). The
  /// chunk rows (columns) are rounded down to multiples of 128 (256) when
  /// the budget allows. Tests force small chunks with it.
  int64_t chunkElems = 0;
  LinearCrossEntropyChunking chunking = LinearCrossEntropyChunking::Auto;
};

namespace scratch {

inline int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

/// The GPU's default logit chunk: 256 Mi f32 logits (1 GiB). Measured on an
/// H200 (2026-11-27, linear_ce_bench at GPT-2 124M's LM head: 65536 tokens,
/// H = 768, V = 50304, bf16, chunks of rows): 46.1 ms forward + backward with
/// 64 Mi elements (52 chunks of 1280 rows, each adding 2*V*H*4 = 309 MB of
/// dW accumulation and a k = 1280 dW GEMM), 41.5 ms with 256 Mi (13 chunks),
/// 40.8 ms with 512 Mi; chunking by vocabulary instead 47.0 ms. The
/// workspace grows from 516 to 1,658 MiB at that shape.
constexpr int64_t kLinearCrossEntropyChunkElems = int64_t(256) << 20;

struct LinearCrossEntropyChunks {
  bool byVocab = false;
  int64_t rows = 0;  ///< rows per chunk
  int64_t vocab = 0; ///< columns per chunk
};
/// The GPU's chunks of `s` (its shape must be valid).
LinearCrossEntropyChunks linearCrossEntropyChunks(const LinearCrossEntropyShape &s);

/// The GPU's workspace regions (byte offsets, 256-aligned) for chunks `c`:
/// a counter, the f32 logit chunk, with `lowp` dlogits in W's 16-bit dtype,
/// with `acc` the f32 copy of the gradient accumulated across chunks.
struct LinearCrossEntropyLayout {
  int64_t count = 0, logits = 0, lowp = 0, acc = 0, total = 0;
};
LinearCrossEntropyLayout linearCrossEntropyLayout(const LinearCrossEntropyShape &s,
                                                  const LinearCrossEntropyChunks &c, bool lowp,
                                                  bool acc);

/// Rows per logit chunk of the CPU's linear cross-entropy over a block of
/// `blockVocab` columns: at most 8 Mi logits (at least one row) and 256 rows
/// per chunk.
constexpr int64_t kCpuLogitChunkElems = int64_t(1) << 23;
constexpr int64_t kCpuMaxChunkRows = 256;
int64_t cpuLogitChunkRows(int64_t blockVocab);

/// Partial-sum slots of the GPU's layernorm/rmsnorm gradient kernels: one
/// per warp team (up to 1024) or per block team (up to 264, fewer for very
/// wide rows). A function of the shape only, so the order of the sums never
/// depends on the device.
int64_t normGradSlots(int64_t rows, int64_t cols);

/// The GPU's linear cross-entropy workspace of one call: the forward's
/// logit chunk; the backward's also holds dlogits in W's 16-bit dtype (w not
/// f32) and an f32 copy of the gradient accumulated across chunks (dx when
/// chunking by vocabulary, dw by rows) when that gradient is not f32.
int64_t linearCrossEntropyBytes(const LinearCrossEntropyShape &s, bool backward, DType w,
                                DType dx, DType dw);

/// The GPU's layernorm (rmsnorm) gradient partial sums: 2 (1) f32 rows of
/// `cols` per slot.
int64_t normGradBytes(int64_t rows, int64_t cols, bool rms);

/// One f32 [B, Hq, S] row statistic of the GPU's attention, 256-aligned.
inline int64_t attentionStatsBytes(int64_t B, int64_t S, int64_t Hq) {
  return align256(B * Hq * S * int64_t(sizeof(float)));
}
/// The GPU's attention backward: two row statistics (lse and delta).
inline int64_t attentionBackwardBytes(int64_t B, int64_t S, int64_t Hq) {
  return B <= 0 || S <= 0 || Hq <= 0 ? 0 : 2 * attentionStatsBytes(B, S, Hq);
}
/// One full-length [B, Skv, Hq, D] copy of attentionRowBlockBytes, 256-aligned
/// (the backend places the i-th at i times this).
inline int64_t attentionRowCopyBytes(int64_t B, int64_t Skv, int64_t Hq, int64_t D,
                                     int64_t elemBytes) {
  return align256(B * Skv * Hq * D * elemBytes);
}
/// The GPU's attention over a block of the query rows (split over an axis
/// the heads do not divide): its kernels take whole sequences, so the block
/// sits in zeroed full-length copies of `tensors` [B, Skv, Hq, D] tensors
/// (q and out; for the backward also dout and dq), and the backward adds its
/// row statistics over all Skv rows.
inline int64_t attentionRowBlockBytes(int64_t B, int64_t Skv, int64_t Hq, int64_t D,
                                      int64_t elemBytes, int tensors, bool backward) {
  if (B <= 0 || Skv <= 0 || Hq <= 0 || D <= 0)
    return 0;
  return tensors * attentionRowCopyBytes(B, Skv, Hq, D, elemBytes) +
         (backward ? attentionBackwardBytes(B, Skv, Hq) : 0);
}

/// The GPU's packed attention (xf.packed_attention(_grad) on a qkv of
/// [B, S, Hkv, G + 2, D]): its kernels take dense tensors, so q, k and v are
/// unpacked into the call's scratch (and the backward's dq, dk, dv packed
/// from it), each 256-aligned in qkv's dtype; the backward's row statistics
/// (attentionBackwardBytes) follow. Byte offsets; all 0 for an empty qkv.
struct PackedAttentionLayout {
  int64_t q = 0, k = 0, v = 0, dq = 0, dk = 0, dv = 0, workspace = 0, total = 0;
};
PackedAttentionLayout packedAttentionLayout(int64_t B, int64_t S, int64_t Hkv, int64_t G,
                                            int64_t D, int64_t elemBytes, bool backward);

/// Blocks (= partial sums) of the GPU's sum of squares over n elements: one
/// per 4096 elements, at most 2048.
int64_t sumSquaresBlocks(int64_t n);
/// The GPU's partial sums (double) of one sum of squares over `count` tensors.
int64_t sumSquaresBytes(const int64_t *ns, int count);

/// The GPU's copies of a matmul's operands and result for cuBLASLt (each
/// 256-aligned; 0 where the buffer is used as it is): an operand whose
/// letters are not in a GEMM order, or mixed operand dtypes (widened to f32);
/// a result whose letters are not batch, M, N.
struct MatmulRelayout {
  int64_t lhs = 0, rhs = 0, out = 0;
  int64_t total() const { return lhs + rhs + out; }
};
MatmulRelayout matmulRelayout(const DecodedCall &d);

/// The GPU's loss workspace: [stats f32 3*rows][gathered f32 members*3*rows]
/// [linear CE scratch].
struct LossLayout {
  int64_t stats = 0, gathered = 0, linear = 0;
  int64_t total() const { return stats + gathered + linear; }
};
LossLayout lossLayout(const DecodedCall &d, const abi::Mesh &mesh);
/// The linear cross-entropy problem of a xf.linear_cross_entropy(_grad) call.
LinearCrossEntropyShape linearCrossEntropyShape(const DecodedCall &d);

/// A collective's staging in its planned scratch: the copies the GPU
/// backend makes around the library call (NCCL reads and writes contiguous
/// blocks). Byte offsets from the scratch, each 256-aligned; -1 where the
/// call stages nothing there. The CPU kernel runner stages through the same
/// regions (its exchange's receive side is its own memory, see KernelRunner).
///  - inputCopy: an input overlapping the output (other than an all-reduce
///    in place, or a pipeline transfer, whose ranks either send or receive)
///    is read from a copy (the input's bytes);
///  - blocks: an all-gather whose blocks are not contiguous in the result
///    (the gathered axis is not the outermost of the shape) receives the n
///    blocks here (n x the input's bytes) and places them; a reduce-scatter
///    on such an axis packs its input here by member (the input's bytes); an
///    all-to-all packs its input here by member;
///  - received: an all-to-all's received blocks (the input's bytes).
/// The plan gives a collective this scratch for its window in flight (from
/// its input's producer to its output's first reader), so the scheduler's
/// start and wait keep their freedom (-xf-plan-memory).
struct CollectiveStaging {
  int64_t inputCopy = -1, blocks = -1, received = -1;
  int64_t total = 0;
};
/// The staging of collective `d` on a group of `members` ranks;
/// `inputOverlapsOutput`: the input's bytes overlap the output's (a copy is
/// needed unless the call is an all-reduce in place).
CollectiveStaging collectiveStaging(const DecodedCall &d, int64_t members,
                                    bool inputOverlapsOutput, bool inPlace);

/// A backend's staging for collective `d` run on buffers `in` and `out`
/// with the planned `scratch` (a pointer counts only where the program
/// plans staging for the call, d.scratch > 0): the regions, and the base
/// they are offsets from (null: the backend stages in its own memory).
/// Throws Error where the plan is smaller than the staging.
struct PlannedStaging {
  CollectiveStaging layout;
  uint8_t *base = nullptr;
};
PlannedStaging plannedStaging(const DecodedCall &d, int64_t members, const void *in,
                              const void *out, void *scratch);

} // namespace scratch

/// Whether a call of `code` may need scratch (callScratchBytes can be > 0).
bool mayNeedScratch(abi::OpCode code);

/// The scratch bytes call `d` may use on any backend (0: none).
int64_t callScratchBytes(const DecodedCall &d, const abi::Mesh &mesh);

} // namespace shardc::rt

#endif // SHARDC_RUNTIME_PROGRAM_KERNELSCRATCH_H
