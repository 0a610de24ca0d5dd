//===- OpTable.h - the kernel-level ops of the runtime, declared once -*- C++ -*-===//
//
// The contract between the compiler and the runtime, MLIR-free. Every op a
// compiled step may call (the xf ops that reach the runtime and the shard
// collectives) has one entry here: its code, its name in the program, how
// many operands and results it takes, its typed attributes and which
// operands each result may share a buffer with. Every side reads this one
// table:
//  - lowering (-xf-lower-to-rt) encodes an op's attributes by it and rejects
//    ops the runtime has no kernel for, at compile time;
//  - the rt dialect's verifier checks rt.kernel / rt.collective against it;
//  - the memory planner (-xf-plan-memory) places a result in a dying
//    operand's buffer only where the table says the kernel allows it;
//  - the runtime decodes calls by it (CallDecoder) and dispatches on OpCode
//    in each backend (KernelRunner, the CUDA backend), and copies an operand
//    aside only where the planner was not allowed to alias it.
// A program records the table's fingerprint; a runtime built with another
// table refuses it up front.
//
// Adding an op to the runtime: one entry in OpTable.cpp, its OpCode below,
// one kernel per backend.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_ABI_OPTABLE_H
#define SHARDC_RUNTIME_ABI_OPTABLE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardc::abi {

/// The callee of a kernel or collective call. The order is the table's.
enum class OpCode : uint8_t {
  Embedding, Iota, Matmul, Add, BiasAdd, LayerNorm, RmsNorm, Gelu, Swiglu, Softmax, Attention,
  Rope, Dropout, Reshape, Transpose, Cast, Fill, Scale, CrossEntropy, LinearCrossEntropy,
  CrossEntropyGrad, LinearCrossEntropyGrad, GeluGrad, SwigluGrad, SoftmaxGrad, LayerNormGrad,
  RmsNormGrad, AttentionGrad, EmbeddingGrad, ReduceSum, SumSquares, ClipGradNorm, LrSchedule,
  AdamW, CountStep, LossScaleUpdate, MultiSumSquares, MultiAdamW, MatmulBias, MatmulBiasGelu, MatmulDGelu, MatmulBGrad,
  AllGather, AllReduce, ReduceScatter, AllSlice, AllToAll,
  Transfer, Offload, Reload, Concat, Split, PackedAttention, PackedAttentionGrad,
};

/// How an attribute is encoded (in rt IR / in the program's JSON).
enum class AttrKind : uint8_t {
  F64,       ///< f64 FloatAttr / number
  I64,       ///< i64 IntegerAttr / integer
  Unit,      ///< UnitAttr / true, or absent
  I64Array,  ///< DenseI64ArrayAttr / array of integers
  String,    ///< StringAttr / string
  Axes,      ///< DenseI16ArrayAttr of mesh axes / array of integers
  Reduction, ///< the shard reduction kind as a string: "sum", "max", "min"
};

struct AttrSpec {
  const char *name;
  AttrKind kind;
  bool required;
};

/// Result `result` may be written into the buffer of operand `operand`: the
/// kernel reads each element of the operand before it writes the same
/// element of the result, and nothing of the operand after. In a
/// multi-tensor op the two name lists, paired element by element.
struct InPlace {
  uint8_t operand, result;
};

struct OpSpec {
  OpCode code;
  const char *name; ///< "xf.layernorm", "shard.all_gather", ...
  uint8_t minOperands, maxOperands, results;
  bool collective;
  std::vector<AttrSpec> attrs;
  std::vector<InPlace> inPlace;
  /// Run in place, the kernel has nothing to do (the result is a view of the
  /// operand's bytes): lowering emits no call for it.
  bool viewInPlace = false;
  /// A multi-tensor op (the optimizer over all parameters in one call,
  /// xf.concat) when non-zero: its operands are `tensorLists` lists of n >= 1
  /// tensors each, then minOperands..maxOperands scalars; its results are
  /// `resultLists` lists of n, then `results` more, then (with
  /// `extraResults`) up to n more (the low-precision weight copies). n is
  /// the call's, not the table's; `inPlace` pairs lists. With tensorLists = 0
  /// and resultLists > 0 (xf.split) the operands are minOperands..maxOperands
  /// tensors and only the results form lists.
  uint8_t tensorLists = 0, resultLists = 0;
  bool extraResults = false;
};

/// The list length n of a call of `op` with these operand and result counts;
/// 0 for an op of fixed arity whose counts fit, -1 where they do not fit.
int64_t listLength(const OpSpec &op, size_t operands, size_t results);
/// "takes 2..3 operands and 1 result" (for diagnostics).
std::string arityText(const OpSpec &op);

/// Every op, indexed by OpCode.
const std::vector<OpSpec> &opTable();
inline const OpSpec &opSpec(OpCode code) { return opTable()[static_cast<size_t>(code)]; }
/// The op named `name`; null if the runtime has no such op.
const OpSpec *findOp(std::string_view name);
/// The attribute `name` of `op`; null if it has none of that name.
const AttrSpec *findAttr(const OpSpec &op, std::string_view name);
/// Whether result `result` of a `code` call with these operand and result
/// counts may share operand `operand`'s buffer.
bool mayShareBuffer(OpCode code, size_t operand, size_t result, size_t operands,
                    size_t results);
const char *attrKindName(AttrKind kind);

/// Version of the program descriptor's schema (Program.h).
constexpr int kProgramVersion = 2;
/// A hash of the whole table (names, codes, counts, attributes, in-place
/// pairs) as 16 hex digits: a program compiled against another table is
/// refused by the runtime.
std::string opTableFingerprint();

} // namespace shardc::abi

#endif // SHARDC_RUNTIME_ABI_OPTABLE_H
