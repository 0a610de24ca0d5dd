//===- Gemm.cpp - GEMMs through cuBLASLt ----------------------------------===//
//
// See Gemm.h for the row-major -> column-major mapping and the epilogue
// rules. This file is plain C++ (host compiler); every cuBLASLt call goes
// through SHARDC_CUBLAS.
//
// One run() is: a hash lookup of the plan (descriptor, layouts, algorithm),
// two or three cublasLtMatmulDescSetAttribute calls for the epilogue's
// pointers (host-side stores) and the cublasLtMatmul launch. The heuristic
// query (tens of microseconds) happens once per distinct key.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Gemm.h"

#include "runtime/Error.h"
#include "runtime/cuda/CudaCheck.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

namespace shardc::cuda {

namespace {

const char *epilogueName(Epilogue e) {
  switch (e) {
  case Epilogue::None:
    return "none";
  case Epilogue::Bias:
    return "bias";
  case Epilogue::BiasGeluAux:
    return "bias+gelu(aux)";
  case Epilogue::DGelu:
    return "dgelu(aux)";
  case Epilogue::BGrad:
    return "bgrad";
  }
  return "?";
}

/// "gemm [batch 2] (37x53x29, A^T bf16 lda 40, B bf16 ldb 56, C f32 ldc 64,
/// strides 0/0/0, epilogue bias)": the shape of a call for error messages.
std::string describe(const GemmArgs &g) {
  std::string s = "gemm [batch " + std::to_string(g.batch) + "] (m " + std::to_string(g.m) +
                  ", n " + std::to_string(g.n) + ", k " + std::to_string(g.k) + "; A" +
                  (g.transA ? "^T " : " ") + rt::dtype_name(g.a.dtype) + " lda " +
                  std::to_string(g.lda) + ", B" + (g.transB ? "^T " : " ") +
                  rt::dtype_name(g.b.dtype) + " ldb " + std::to_string(g.ldb) + ", C " +
                  rt::dtype_name(g.c.dtype) + " ldc " + std::to_string(g.ldc);
  if (g.batch > 1)
    s += ", strides " + std::to_string(g.strideA) + "/" + std::to_string(g.strideB) + "/" +
         std::to_string(g.strideC);
  s += ", epilogue " + std::string(epilogueName(g.epilogue)) + ")";
  return s;
}

[[noreturn]] void fail(const GemmArgs &g, const std::string &why) {
  std::string prefix = errorRank() >= 0 ? "rank " + std::to_string(errorRank()) + ": " : "";
  throw rt::Error(prefix + describe(g) + ": " + why);
}

bool isLowp(DType t) { return t == DType::BF16 || t == DType::F16; }

/// The dtype rules of Gemm.h (CUBLAS_COMPUTE_32F, f32 scale).
bool dtypesSupported(DType ab, DType c) {
  if (ab == DType::F32)
    return c == DType::F32;
  if (isLowp(ab))
    return c == ab || c == DType::F32;
  return false;
}

cudaDataType_t cudaType(DType t) {
  switch (t) {
  case DType::F32:
    return CUDA_R_32F;
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F16:
    return CUDA_R_16F;
  default:
    throw rt::Error(std::string("gemm: dtype ") + rt::dtype_name(t) + " is not supported");
  }
}

/// The largest power of two (<= 256) dividing `bytes`; 256 for 0.
uint32_t powerOfTwoDividing(uint64_t bytes) {
  uint32_t a = 256;
  while (a > 1 && bytes % a != 0)
    a /= 2;
  return a;
}

/// The alignment every matrix of a strided batch has: that of the base
/// pointer and of the stride in bytes.
uint32_t operandAlignment(const void *p, int64_t batch, int64_t stride, DType t) {
  uint32_t a = powerOfTwoDividing(reinterpret_cast<uintptr_t>(p));
  if (batch > 1)
    a = std::min(a, powerOfTwoDividing(uint64_t(stride) * uint64_t(rt::dtype_size(t))));
  return a;
}

bool hasBias(Epilogue e) {
  return e == Epilogue::Bias || e == Epilogue::BiasGeluAux || e == Epilogue::BGrad;
}
bool hasAux(Epilogue e) { return e == Epilogue::BiasGeluAux || e == Epilogue::DGelu; }

cublasLtEpilogue_t ltEpilogue(Epilogue e) {
  switch (e) {
  case Epilogue::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case Epilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case Epilogue::BiasGeluAux:
    return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  case Epilogue::DGelu:
    return CUBLASLT_EPILOGUE_DGELU;
  case Epilogue::BGrad:
    // cuBLASLt's A is our B (the operand swap of Gemm.h): BGRADA reduces it
    // over k into a vector of D's rows = our n columns. BGRADB would reduce
    // our A (the column sums of X in dW = X^T dY), which is not wanted.
    return CUBLASLT_EPILOGUE_BGRADA;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

/// Throws rt::Error for arguments run() cannot accept (before any cuBLASLt
/// call): sizes, leading dimensions, dtypes and the epilogue rules.
void validate(const GemmArgs &g) {
  if (g.batch < 0 || g.m < 0 || g.n < 0 || g.k < 0)
    fail(g, "negative size");
  if (g.batch > INT_MAX)
    fail(g, "batch exceeds the 32-bit batch count of cuBLASLt");
  if (g.lda < std::max<int64_t>(1, g.transA ? g.m : g.k))
    fail(g, "lda is shorter than a stored row of A");
  if (g.ldb < std::max<int64_t>(1, g.transB ? g.k : g.n))
    fail(g, "ldb is shorter than a stored row of B");
  if (g.ldc < std::max<int64_t>(1, g.n))
    fail(g, "ldc is shorter than a row of C");
  if (g.batch > 1 && g.strideC == 0)
    fail(g, "strideC = 0 would make the batch's products overwrite each other");
  if (g.a.dtype != g.b.dtype)
    fail(g, "A and B must share a dtype (cuBLASLt has no mixed A/B for these types)");
  if (!dtypesSupported(g.a.dtype, g.c.dtype))
    fail(g, "unsupported dtypes (A/B f32 -> C f32; A/B bf16/f16 -> C in A's dtype or f32)");
  bool empty = g.batch == 0 || g.m == 0 || g.n == 0;
  if (!empty && (!g.c.p || (g.k > 0 && (!g.a.p || !g.b.p))))
    fail(g, "null operand pointer");
  if (g.epilogue == Epilogue::None)
    return;
  if (g.batch != 1)
    fail(g, "epilogues are only supported for batch 1");
  if (hasBias(g.epilogue)) {
    if (!g.bias.p)
      fail(g, "the epilogue needs a bias pointer");
    if (g.bias.dtype != g.c.dtype)
      fail(g, "the bias must have C's dtype");
  }
  if (hasAux(g.epilogue)) {
    if (!g.aux.p)
      fail(g, "the epilogue needs an aux pointer");
    if (g.aux.dtype != g.c.dtype)
      fail(g, "aux must have C's dtype");
    if (g.ldc % 8 != 0)
      fail(g, "the aux epilogues need ldc divisible by 8 (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD)");
    if (reinterpret_cast<uintptr_t>(g.aux.p) % 16 != 0)
      fail(g, "aux must be 16-byte aligned");
  }
  if (g.epilogue == Epilogue::BGrad) {
    if (g.transB)
      fail(g, "the bias-gradient epilogue needs a non-transposed B (cuBLASLt BGRADA "
              "requires its A, our B, untransposed)");
    if (g.alpha != 1.0f)
      fail(g, "the bias-gradient epilogue needs alpha = 1");
  }
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

struct PlanKey {
  int64_t batch, m, n, k, lda, ldb, ldc, strideA, strideB, strideC;
  int aType, cType, epilogue;
  bool transA, transB;
  uint32_t alignA, alignB, alignC, alignBias, alignAux;

  auto tie() const {
    return std::tie(batch, m, n, k, lda, ldb, ldc, strideA, strideB, strideC, aType, cType,
                    epilogue, transA, transB, alignA, alignB, alignC, alignBias, alignAux);
  }
  bool operator==(const PlanKey &o) const { return tie() == o.tie(); }
};

struct PlanKeyHash {
  size_t operator()(const PlanKey &k) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    for (int64_t v : {k.batch, k.m, k.n, k.k, k.lda, k.ldb, k.ldc, k.strideA, k.strideB, k.strideC})
      mix(uint64_t(v));
    mix(uint64_t(k.aType) | uint64_t(k.cType) << 8 | uint64_t(k.epilogue) << 16 |
        uint64_t(k.transA) << 24 | uint64_t(k.transB) << 25);
    mix(uint64_t(k.alignA) | uint64_t(k.alignB) << 16 | uint64_t(k.alignC) << 32 |
        uint64_t(k.alignBias) << 48);
    mix(k.alignAux);
    return size_t(h);
  }
};

PlanKey keyOf(const GemmArgs &g) {
  PlanKey k{};
  k.batch = g.batch;
  k.m = g.m;
  k.n = g.n;
  k.k = g.k;
  k.lda = g.lda;
  k.ldb = g.ldb;
  k.ldc = g.ldc;
  // A stride only matters with more than one matrix.
  k.strideA = g.batch > 1 ? g.strideA : 0;
  k.strideB = g.batch > 1 ? g.strideB : 0;
  k.strideC = g.batch > 1 ? g.strideC : 0;
  k.aType = int(g.a.dtype);
  k.cType = int(g.c.dtype);
  k.epilogue = int(g.epilogue);
  k.transA = g.transA;
  k.transB = g.transB;
  k.alignA = operandAlignment(g.a.p, g.batch, g.strideA, g.a.dtype);
  k.alignB = operandAlignment(g.b.p, g.batch, g.strideB, g.b.dtype);
  k.alignC = operandAlignment(g.c.p, g.batch, g.strideC, g.c.dtype);
  k.alignBias = hasBias(g.epilogue) ? powerOfTwoDividing(reinterpret_cast<uintptr_t>(g.bias.p)) : 0;
  k.alignAux = hasAux(g.epilogue) ? powerOfTwoDividing(reinterpret_cast<uintptr_t>(g.aux.p)) : 0;
  return k;
}

/// A cached GEMM configuration. cuBLASLt's "A" is our B and its "B" our A;
/// C and D share one layout (cuBLAS 13 allows C == D only with Cdesc == Ddesc).
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t ltA = nullptr, ltB = nullptr, ltC = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;
  std::string why; ///< why no algorithm (ok == false)

  Plan() = default;
  Plan(const Plan &) = delete;
  Plan &operator=(const Plan &) = delete;
  ~Plan() {
    // Destructors do not throw: failures here only leak host memory.
    if (ltC)
      cublasLtMatrixLayoutDestroy(ltC);
    if (ltB)
      cublasLtMatrixLayoutDestroy(ltB);
    if (ltA)
      cublasLtMatrixLayoutDestroy(ltA);
    if (desc)
      cublasLtMatmulDescDestroy(desc);
  }
};

void setBatch(cublasLtMatrixLayout_t layout, int64_t batch, int64_t stride) {
  int32_t count = int32_t(batch);
  SHARDC_CUBLAS(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                 sizeof(count)));
  SHARDC_CUBLAS(cublasLtMatrixLayoutSetAttribute(
      layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
}

/// Sets the epilogue's pointers on the descriptor. The heuristic reads their
/// values (never the memory) to learn their alignment, so they are set before
/// it runs and again for every call.
void setEpiloguePointers(cublasLtMatmulDesc_t desc, const GemmArgs &g) {
  if (hasBias(g.epilogue)) {
    void *bias = g.bias.p;
    SHARDC_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                 sizeof(bias)));
  }
  if (hasAux(g.epilogue)) {
    void *aux = g.aux.p;
    SHARDC_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                                 &aux, sizeof(aux)));
  }
}

/// Builds the descriptor and layouts of a validated call and asks the
/// heuristic for its best algorithm. A call without one gives ok == false.
std::unique_ptr<Plan> buildPlan(cublasLtHandle_t handle, uint64_t workspaceBytes, const GemmArgs &g,
                                const PlanKey &key) {
  auto plan = std::make_unique<Plan>();
  SHARDC_CUBLAS(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t opA = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N; // cuBLASLt A = our B
  cublasOperation_t opB = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N; // cuBLASLt B = our A
  SHARDC_CUBLAS(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)));
  SHARDC_CUBLAS(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)));
  if (g.epilogue != Epilogue::None) {
    uint32_t epi = ltEpilogue(g.epilogue);
    SHARDC_CUBLAS(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                                 sizeof(epi)));
    if (hasAux(g.epilogue)) {
      // aux is shaped like D (column-major [n x m]), with C's leading dimension.
      int64_t auxLd = g.ldc;
      SHARDC_CUBLAS(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                   &auxLd, sizeof(auxLd)));
    }
    setEpiloguePointers(plan->desc, g);
  }

  // Row-major X [r, c] with row stride ld is column-major [c x r] with the
  // same ld. cuBLASLt A = our op(B)^T: stored B is [k, n] (or [n, k] when
  // transposed), i.e. column-major [n x k] (or [k x n], op T).
  SHARDC_CUBLAS(cublasLtMatrixLayoutCreate(&plan->ltA, cudaType(g.b.dtype),
                                           uint64_t(g.transB ? g.k : g.n),
                                           uint64_t(g.transB ? g.n : g.k), g.ldb));
  SHARDC_CUBLAS(cublasLtMatrixLayoutCreate(&plan->ltB, cudaType(g.a.dtype),
                                           uint64_t(g.transA ? g.m : g.k),
                                           uint64_t(g.transA ? g.k : g.m), g.lda));
  SHARDC_CUBLAS(cublasLtMatrixLayoutCreate(&plan->ltC, cudaType(g.c.dtype), uint64_t(g.n),
                                           uint64_t(g.m), g.ldc));
  if (g.batch > 1) {
    setBatch(plan->ltA, g.batch, g.strideB);
    setBatch(plan->ltB, g.batch, g.strideA);
    setBatch(plan->ltC, g.batch, g.strideC);
  }

  cublasLtMatmulPreference_t pref = nullptr;
  SHARDC_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  struct PrefGuard {
    cublasLtMatmulPreference_t p;
    ~PrefGuard() { cublasLtMatmulPreferenceDestroy(p); }
  } guard{pref};
  SHARDC_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                     &workspaceBytes, sizeof(workspaceBytes)));
  // The default minimum alignment is 256 bytes: without these an algorithm
  // needing it could be chosen for a less aligned operand (a column offset
  // into a weight, a batch stride).
  uint32_t alignA = key.alignB, alignB = key.alignA, alignC = key.alignC;
  SHARDC_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA, sizeof(alignA)));
  SHARDC_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB, sizeof(alignB)));
  SHARDC_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC, sizeof(alignC)));
  SHARDC_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC, sizeof(alignC)));

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
      handle, plan->desc, plan->ltA, plan->ltB, plan->ltC, plan->ltC, pref, 1, &result, &found);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
    plan->why = std::string("cuBLASLt has no algorithm (cublasLtMatmulAlgoGetHeuristic: ") +
                cublasLtGetStatusString(st != CUBLAS_STATUS_SUCCESS ? st : result.state) + ", " +
                std::to_string(found) + " results; alignments A " + std::to_string(key.alignA) +
                " B " + std::to_string(key.alignB) + " C " + std::to_string(key.alignC) + " bytes)";
    return plan;
  }
  if (result.workspaceSize > workspaceBytes) {
    plan->why = "cuBLASLt's algorithm needs " + std::to_string(result.workspaceSize) +
                " workspace bytes, more than the " + std::to_string(workspaceBytes) + " given";
    return plan;
  }
  plan->algo = result.algo;
  plan->ok = true;
  return plan;
}

} // namespace

//===----------------------------------------------------------------------===//
// Gemm
//===----------------------------------------------------------------------===//

struct Gemm::Impl {
  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr;
  uint64_t workspaceBytes = 0;
  std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash> plans;

  /// The cached plan of a validated call, built on first use.
  Plan &planFor(const GemmArgs &g) {
    PlanKey key = keyOf(g);
    auto it = plans.find(key);
    if (it == plans.end())
      it = plans.emplace(key, buildPlan(handle, workspaceBytes, g, key)).first;
    return *it->second;
  }
};

int64_t Gemm::workspaceBytes() const { return int64_t(impl_->workspaceBytes); }

Gemm::Gemm(int64_t workspaceBytes) : impl_(std::make_unique<Impl>()) {
  if (workspaceBytes < 0)
    throw rt::Error("Gemm: negative workspace size " + std::to_string(workspaceBytes));
  SHARDC_CUBLAS(cublasLtCreate(&impl_->handle));
  impl_->workspaceBytes = uint64_t(workspaceBytes);
  if (workspaceBytes > 0) {
    cudaError_t e = cudaMalloc(&impl_->workspace, size_t(workspaceBytes));
    if (e != cudaSuccess) {
      cublasLtDestroy(impl_->handle);
      checkCuda(e, "cudaMalloc(&workspace, workspaceBytes)", __FILE__, __LINE__);
    }
  }
}

Gemm::~Gemm() {
  impl_->plans.clear();
  if (impl_->workspace)
    cudaFree(impl_->workspace);
  if (impl_->handle)
    cublasLtDestroy(impl_->handle);
}

bool Gemm::supports(const GemmArgs &args) {
  try {
    validate(args);
  } catch (const rt::Error &) {
    return false;
  }
  if (args.batch == 0 || args.m == 0 || args.n == 0)
    return true;
  return impl_->planFor(args).ok;
}

void Gemm::run(const GemmArgs &g, cudaStream_t s) {
  validate(g);
  if (g.batch == 0 || g.m == 0 || g.n == 0)
    return;
  Plan &plan = impl_->planFor(g);
  if (!plan.ok)
    fail(g, plan.why);
  if (g.epilogue != Epilogue::None)
    setEpiloguePointers(plan.desc, g);
  float alpha = g.alpha, beta = g.beta;
  // Host-pointer alpha/beta: read at enqueue time (also under graph capture).
  SHARDC_CUBLAS(cublasLtMatmul(impl_->handle, plan.desc, &alpha, g.b.p, plan.ltA, g.a.p, plan.ltB,
                               &beta, g.c.p, plan.ltC, g.c.p, plan.ltC, &plan.algo,
                               impl_->workspace, size_t(impl_->workspaceBytes), s));
}

bool Gemm::epilogueSupported(Epilogue epilogue, DType ab, DType c) {
  if (!dtypesSupported(ab, c))
    return false;
  if (epilogue == Epilogue::None)
    return true;

  static std::mutex mutex;
  static std::map<std::tuple<int, int, int>, bool> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_tuple(int(epilogue), int(ab), int(c));
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;

  // Without a device the dtype rules are the answer (not cached: a device
  // may appear once the backend selects one).
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return true;
  }
  cublasLtHandle_t handle = nullptr;
  if (cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS)
    return true;
  struct HandleGuard {
    cublasLtHandle_t h;
    ~HandleGuard() { cublasLtDestroy(h); }
  } guard{handle};

  // A 256^3 probe with 256-byte aligned (never dereferenced) operands.
  constexpr int64_t kDim = 256;
  auto fake = [](uintptr_t addr) { return reinterpret_cast<void *>(addr); };
  GemmArgs g;
  g.m = g.n = g.k = kDim;
  g.lda = g.ldb = g.ldc = kDim;
  g.a = {fake(1u << 20), ab};
  g.b = {fake(2u << 20), ab};
  g.c = {fake(3u << 20), c};
  g.epilogue = epilogue;
  if (hasBias(epilogue))
    g.bias = {fake(4u << 20), c};
  if (hasAux(epilogue))
    g.aux = {fake(5u << 20), c};
  bool ok = false;
  try {
    validate(g);
    ok = buildPlan(handle, 32ull << 20, g, keyOf(g))->ok;
  } catch (const rt::Error &) {
    ok = false;
  }
  cache.emplace(key, ok);
  return ok;
}

} // namespace shardc::cuda
