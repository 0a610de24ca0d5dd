//===- CallDecoder.h - the call table, decoded once -------------*- C++ -*-===//
//
// A compiled step's call table (Program.h) names ops, dtypes, shapes and
// attributes as JSON. Every backend (the CPU KernelRunner, the CUDA backend)
// decodes each call once, at start-up, into a DecodedCall: the op kind,
// checked shapes, the attributes it uses and where this rank's block lies
// in ops whose values depend on global indices. A call no backend can run
// is an Error naming its index and op then, never in the middle of a step.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_PROGRAM_CALLDECODER_H
#define SHARDC_RUNTIME_PROGRAM_CALLDECODER_H

#include "runtime/abi/OpTable.h"
#include "runtime/program/Program.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardc::rt {

/// The callee of a call: the op table's code (runtime/abi/OpTable.h).
using OpKind = abi::OpCode;

enum class Reduction { Sum, Max, Min };

/// A parsed `lhs,rhs->out` equation, classified as dialects/xf/Einsum.cpp
/// does (batch, free and contracted letters in the same orders).
struct Equation {
  std::string lhs, rhs, out, batch, lhsFree, rhsFree, contracted;
};

/// Where this rank's block of one tensor dim lies in the global op.
struct Block {
  int64_t offset = 0, global = 0, local = 0;
  Axes axes;
};

/// The columns of a loss's vocabulary block that are classes: the first
/// min(local, classes - offset) (possibly none); the rest are padding.
inline int64_t classColumns(const Block &b, int64_t classes) {
  return classes <= b.offset ? 0 : (classes - b.offset < b.local ? classes - b.offset : b.local);
}

struct DecodedCall {
  int index = 0;
  std::string op;
  OpKind kind = OpKind::Add;
  std::vector<TensorType> operands, results;
  bool f64 = false; ///< compute in double (else float)

  // Attributes (those the op has).
  double epsilon = 0, scale = 0, theta = 0, rate = 0, value = 0, factor = 0, beta1 = 0,
         beta2 = 0, weightDecay = 0, maxNorm = 0, lr = 0, minLr = 0, minScale = 0;
  int64_t key = 0, dim = 0, ignoreIndex = 0, warmup = 0, decaySteps = 0, window = 0;
  /// A loss's classes: the true vocabulary size (the global vocabulary dim
  /// when the op has no `classes`; columns at and past it are padding).
  int64_t classes = 0;
  bool causal = false, inverse = false, vocabMajor = false;
  std::vector<int64_t> permutation, dims;
  /// Multi-tensor ops: the list length n (0 for other ops); xf.multi_adamw:
  /// per tensor 1 if it decays, and the tensors whose low-precision copy it
  /// writes (results 3n..).
  int64_t lists = 0;
  std::vector<int64_t> decay, copies;

  // xf.matmul: the equation, letter sizes and the GEMM layout.
  Equation eq;
  int64_t letter[26] = {};
  bool transA = false, transB = false;
  int64_t batch = 0, m = 0, n = 0, k = 0;

  // Placement: the block of the dim whose values depend on global indices
  // (embedding rows, iota dim, rope positions, the vocabulary of a loss).
  Block block;
  std::vector<int64_t> dropOffset, dropGlobal;
  Axes tokenAxes;

  // Collectives.
  std::optional<Axes> gridAxes;
  int64_t axis = 0, axis2 = 0;
  Reduction reduction = Reduction::Sum;

  /// The planned scratch bytes (Call::scratch): the buffer after the
  /// results, at least callScratchBytes (KernelScratch.h); 0: none planned
  /// (the backend then uses its own memory).
  int64_t scratch = 0;

  std::string where() const { return "call " + std::to_string(index) + " (" + op + ")"; }
};

/// The most operands plus results of any op of fixed arity (xf.adamw:
/// 8 + 3); a multi-tensor op (DecodedCall::lists) has any number.
constexpr size_t kMaxCallBuffers = 16;

bool isCollectiveKind(OpKind k);
bool isCrossEntropyKind(OpKind k);
inline bool isFloat(DType t) { return t != DType::I32; }
inline int64_t lastDim(const TensorType &t) { return t.shape.empty() ? 1 : t.shape.back(); }
inline int64_t rowsOf(const TensorType &t) {
  int64_t cols = lastDim(t);
  return cols ? t.numel() / cols : 0;
}

/// Parses and classifies a matmul equation; throws Error.
Equation parseEquation(const std::string &eq);

/// Decodes call `index` of `program` for the rank at mesh coordinates
/// `coords`. Throws Error naming the call if no backend can run it.
std::unique_ptr<DecodedCall> decodeCall(const Program &program, size_t index,
                                        const std::vector<int64_t> &coords);

/// The operands of kernel call `d` (buffers: operands then results) that
/// overlap a result without being exactly in place where the kernel allows
/// it (inPlaceOk): the backend must read them from a copy.
std::vector<size_t> operandsToCopy(const DecodedCall &d, void *const *buffers);

/// `shape` seen as [outer, shape[dim], inner bytes]: how a collective cuts a
/// tensor along `dim` into parts (KernelRunner, the CUDA backend).
struct Split3 {
  int64_t outer = 1, dimSize = 1, inner = 1;
  Split3(const std::vector<int64_t> &shape, int64_t dim, int64_t elemBytes) {
    for (int64_t d = 0; d < dim; ++d)
      outer *= shape[d];
    dimSize = shape[dim];
    inner = elemBytes;
    for (size_t d = dim + 1; d < shape.size(); ++d)
      inner *= shape[d];
  }
};

/// Checks a collective call on a group of `members` ranks: the cut dims
/// divide into equal parts and the result type is what the exchange
/// produces. Throws Error (without the call prefix) otherwise.
void checkCollectiveShapes(const DecodedCall &d, int64_t members);

/// Throws Error prefixed with the call's index and op.
[[noreturn]] void failCall(const DecodedCall &d, const std::string &what);

/// Whether operand `operand` of `kind` may share its buffer with result
/// `result` (the op table's in-place pairs, which the memory planner reads
/// too; Kernels.h lists the aliasing each kernel allows).
inline bool inPlaceOk(const DecodedCall &d, size_t operand, size_t result) {
  return abi::mayShareBuffer(d.kind, operand, result, d.operands.size(), d.results.size());
}

} // namespace shardc::rt

#endif // SHARDC_RUNTIME_PROGRAM_CALLDECODER_H
