//===- ExecutorVsBlas.cpp - reference executor against OpenBLAS alone -----===//
//
//   bench_executor_vs_blas <model.mlir> <tokens.bin> [--runs N] [--position P]
//                          [--seed S] [--function NAME] [--no-isolate]
//
// 1. Runs the model function with the reference executor (parameters from the
//    seed, default 1234; one batch of the token file): one warm-up run, then N
//    timed runs (default 3). Prints the best and median wall time and the time
//    per op name (RunOptions.profile, mean over the timed runs).
// 2. Lists the GEMMs the executor performs, as it will call them:
//    - every xf.matmul is one batched GEMM; its (batch, M, N, K, transA,
//      transB) follow from the einsum classification of dialects/xf/Einsum.h;
//    - xf.attention (runtime/cpu/Attention.cpp) does two GEMMs, QK^T and PV,
//      per (batch, head, block of 64 queries); causal blocks stop at their last
//      query. The brief's accounting, two S x S x D GEMMs per (batch, head), is
//      timed too and printed for reference, but not counted in the total;
//    - xf.linear_cross_entropy (when the logits GEMM is fused into the loss)
//      does one [chunk, hidden] x [hidden, vocab] GEMM per chunk of rows.
// 3. Times exactly those GEMMs with cblas_sgemm alone on buffers allocated and
//    filled before timing (one warm-up pass, best of N passes), and prints the
//    table and the ratio executor total / BLAS-only total.
// Unless --no-isolate is given, each distinct xf.matmul is also run alone through
// the executor (the op cloned into a one-op function), which splits the
// executor's xf.matmul time by shape.
//
// Threads: whatever OpenMP and OpenBLAS pick (both cores by default; set
// OMP_NUM_THREADS / OPENBLAS_NUM_THREADS to change it); the settings are
// printed. The attention GEMMs are timed both as sequential calls to threaded
// OpenBLAS and as an OpenMP loop over single-threaded OpenBLAS calls (the
// kernel's scheme); the faster counts.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleLoading.h"
#include "compiler/executor/Executor.h"
#include "compiler/executor/Params.h"
#include "dialects/xf/Einsum.h"
#include "dialects/xf/Params.h"
#include "dialects/xf/XfDialect.h"
#include "dialects/xf/XfOps.h"
#include "runtime/Error.h"
#include "runtime/data/TokenFile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/SourceMgr.h"

#include <cblas.h>
#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace mlir;
using namespace shardc;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

//===----------------------------------------------------------------------===//
// Command line and machine description
//===----------------------------------------------------------------------===//

struct Options {
  std::string model, tokens, function;
  int runs = 3;
  int64_t position = 0;
  uint64_t seed = 1234;
  bool isolate = true;
};

[[noreturn]] void usage(const char *msg) {
  std::fprintf(stderr,
               "bench_executor_vs_blas: %s\n"
               "usage: bench_executor_vs_blas <model.mlir> <tokens.bin> [--runs N] "
               "[--position P] [--seed S] [--function NAME] [--no-isolate]\n",
               msg);
  std::exit(2);
}

Options parseOptions(int argc, char **argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(("option '" + a + "' needs a value").c_str());
      return argv[++i];
    };
    auto integer = [&](int64_t minimum) -> int64_t {
      std::string v = value();
      char *end = nullptr;
      long long x = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end || x < minimum)
        usage(("option '" + a + "' expects an integer >= " + std::to_string(minimum) +
               ", got '" + v + "'")
                  .c_str());
      return x;
    };
    if (a == "--runs")
      o.runs = static_cast<int>(integer(1));
    else if (a == "--position")
      o.position = integer(0);
    else if (a == "--seed")
      o.seed = static_cast<uint64_t>(integer(0));
    else if (a == "--function")
      o.function = value();
    else if (a == "--no-isolate")
      o.isolate = false;
    else if (a == "-h" || a == "--help")
      usage("help");
    else if (!a.empty() && a[0] == '-')
      usage(("unknown option '" + a + "'").c_str());
    else
      positional.push_back(a);
  }
  if (positional.size() != 2)
    usage("expected a model file and a token file");
  o.model = positional[0];
  o.tokens = positional[1];
  return o;
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown";
}

std::string loadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

/// CPU seconds used by this process, and by the whole machine (/proc/stat,
/// all non-idle time): their difference over a phase is what other processes
/// took while it ran, the measure of how undisturbed a timing was.
struct CpuSample {
  double self = 0, machine = 0;
  long minorFaults = 0;
  Clock::time_point wall = Clock::now();
  static CpuSample now() {
    CpuSample s;
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    s.minorFaults = ru.ru_minflt;
    s.self = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
             1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    std::ifstream in("/proc/stat");
    std::string cpu;
    unsigned long long user = 0, nice = 0, sys = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
                       steal = 0;
    in >> cpu >> user >> nice >> sys >> idle >> iowait >> irq >> softirq >> steal;
    s.machine = double(user + nice + sys + irq + softirq + steal) / double(sysconf(_SC_CLK_TCK));
    return s;
  }
  /// Cores used by this process and by others over the interval since
  /// `start`, and the memory this process first-touched (minor page faults).
  static std::string usage(const CpuSample &start) {
    CpuSample end = now();
    double wall = std::chrono::duration<double>(end.wall - start.wall).count();
    double self = (end.self - start.self) / wall;
    double others = std::max(0.0, (end.machine - start.machine) / wall - self);
    double faultGB = double(end.minorFaults - start.minorFaults) * double(sysconf(_SC_PAGESIZE)) / 1e9;
    char buf[128];
    std::snprintf(buf, sizeof buf,
                  "[this process %.2f cores, other processes %.2f cores; page faults %.2f GB]",
                  self, others, faultGB);
    return buf;
  }
};

std::string envOr(const char *name, const char *fallback) {
  const char *v = std::getenv(name);
  return v ? v : fallback;
}

const char *blasParallelName(int p) {
  switch (p) {
  case 0:
    return "sequential build";
  case 1:
    return "pthreads build";
  case 2:
    return "OpenMP build";
  }
  return "unknown build";
}

//===----------------------------------------------------------------------===//
// Parsing the model
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// The GEMMs of a function
//===----------------------------------------------------------------------===//

/// One (possibly batched) row-major GEMM: C = alpha op(A) op(B), op(A) M x K.
struct Gemm {
  int64_t batch = 1, M = 0, N = 0, K = 0;
  bool transA = false, transB = false;
  int64_t lda = 0, ldb = 0, ldc = 0, strideA = 0, strideB = 0, strideC = 0;
  double flops() const { return 2.0 * double(batch) * double(M) * double(N) * double(K); }
  /// Elements each operand spans from its base pointer.
  int64_t spanA() const { return strideA * (batch - 1) + (transA ? K : M) * lda; }
  int64_t spanB() const { return strideB * (batch - 1) + (transB ? N : K) * ldb; }
  int64_t spanC() const { return strideC * (batch - 1) + M * ldc; }
};

/// A GEMM timed by sequential cblas_sgemm calls (threaded OpenBLAS), with the
/// op name it belongs to and a label naming its shape.
struct SeqGemm {
  std::string opName, label;
  Gemm g;
};

/// One xf.attention op: q [B, S, Hq, D], k and v [B, S, Hkv, D].
struct AttentionShape {
  int64_t B, S, Hq, Hkv, D;
  bool causal;
  float scale;
};

/// Query rows per task of attention_forward; mirrors kBlockRows in
/// runtime/cpu/Attention.cpp (not exported by the runtime).
constexpr int64_t kAttentionBlockRows = 64;
/// Mirrors kLogitsScratchElems and kMaxChunkRows in runtime/cpu/Loss.cpp.
constexpr int64_t kLceScratchElems = int64_t(1) << 23;
constexpr int64_t kLceMaxChunkRows = 256;

std::vector<int64_t> shapeOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return {t.getShape().begin(), t.getShape().end()};
}

/// The GEMM the executor performs for an xf.matmul: the equation classified by
/// xf::Einsum into batch (B), M, N and K letters; an operand already laid out
/// as [B, M, K] / [B, K, M] (lhs) or [B, K, N] / [B, N, K] (rhs) is used in
/// place, possibly transposed, any other layout is first permuted into
/// [B, M, K] / [B, K, N]; a result not in [B, M, N] order is permuted after.
/// NOTE: the two transA / transB lines restate the rule in Executor.cpp's
/// runMatmul; a shared helper in Einsum.h would keep them in one place.
Gemm matmulGemm(xf::MatmulOp op, std::string &label) {
  std::string error;
  std::optional<xf::Einsum> parsed = xf::Einsum::parse(op.getEquation(), error);
  if (!parsed)
    throw rt::Error("bad einsum '" + op.getEquation().str() + "': " + error);
  const xf::Einsum &e = *parsed;
  std::vector<int64_t> ls = shapeOf(op.getLhs()), rs = shapeOf(op.getRhs());
  int64_t size[26] = {};
  for (size_t i = 0; i < e.lhs.size(); ++i)
    size[e.lhs[i] - 'a'] = ls[i];
  for (size_t i = 0; i < e.rhs.size(); ++i)
    size[e.rhs[i] - 'a'] = rs[i];
  auto product = [&](const std::string &letters) {
    int64_t p = 1;
    for (char c : letters)
      p *= size[c - 'a'];
    return p;
  };
  const std::string &B = e.batch, &M = e.lhsFree, &N = e.rhsFree, &K = e.contracted;
  Gemm g;
  g.transA = e.lhs == B + K + M && e.lhs != B + M + K;
  g.transB = e.rhs == B + N + K && e.rhs != B + K + N;
  bool permA = e.lhs != (g.transA ? B + K + M : B + M + K);
  bool permB = e.rhs != (g.transB ? B + N + K : B + K + N);
  bool permOut = e.out != B + M + N;
  g.batch = product(B);
  g.M = product(M);
  g.N = product(N);
  g.K = product(K);
  g.lda = g.transA ? g.M : g.K;
  g.ldb = g.transB ? g.K : g.N;
  g.ldc = g.N;
  g.strideA = g.M * g.K;
  g.strideB = g.K * g.N;
  g.strideC = g.M * g.N;
  std::ostringstream os;
  os << e.lhs << "," << e.rhs << "->" << e.out << " ";
  if (g.batch != 1)
    os << g.batch << "x";
  os << g.M << "x" << g.N << "x" << g.K << " " << (g.transA ? 'T' : 'N')
     << (g.transB ? 'T' : 'N');
  if (permA || permB || permOut)
    os << " +perm";
  label = os.str();
  return g;
}

struct Workload {
  std::vector<SeqGemm> seq;               ///< xf.matmul, linear_cross_entropy chunks
  std::vector<AttentionShape> attentions; ///< one per xf.attention
  std::map<std::string, Operation *> firstMatmul; ///< label -> an op of that shape
  std::map<std::string, int64_t> opCount;         ///< IR ops per op name
  bool nonF32 = false;                            ///< a GEMM-bearing op is not f32
};

bool isF32(Value v) { return cast<RankedTensorType>(v.getType()).getElementType().isF32(); }

Workload collect(func::FuncOp func) {
  Workload w;
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    ++w.opCount[op.getName().getStringRef().str()];
    if (auto mm = dyn_cast<xf::MatmulOp>(op)) {
      std::string label;
      Gemm g = matmulGemm(mm, label);
      w.seq.push_back({"xf.matmul", label, g});
      w.firstMatmul.emplace(label, &op);
      w.nonF32 |= !isF32(mm.getLhs());
    } else if (auto at = dyn_cast<xf::AttentionOp>(op)) {
      std::vector<int64_t> q = shapeOf(at.getQ()), k = shapeOf(at.getK());
      w.attentions.push_back({q[0], q[1], q[2], k[2], q[3], bool(at.getCausal()),
                              float(at.getScale().convertToDouble())});
      w.nonF32 |= !isF32(at.getQ());
    } else if (auto lce = dyn_cast<xf::LinearCrossEntropyOp>(op)) {
      std::vector<int64_t> x = shapeOf(lce.getX()), wt = shapeOf(lce.getWeight());
      bool vocabMajor = bool(lce.getVocabMajor());
      int64_t hidden = x.back(), rows = 1;
      for (size_t i = 0; i + 1 < x.size(); ++i)
        rows *= x[i];
      int64_t vocab = vocabMajor ? wt[0] : wt[1];
      int64_t chunk = std::clamp<int64_t>(kLceScratchElems / vocab, 1, kLceMaxChunkRows);
      for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        Gemm g;
        g.M = std::min(chunk, rows - r0);
        g.N = vocab;
        g.K = hidden;
        g.transB = vocabMajor;
        g.lda = hidden;
        g.ldb = vocabMajor ? hidden : vocab;
        g.ldc = vocab;
        std::ostringstream os;
        os << "logit chunk " << g.M << "x" << g.N << "x" << g.K << " N"
           << (vocabMajor ? 'T' : 'N');
        w.seq.push_back({"xf.linear_cross_entropy", os.str(), g});
      }
      w.nonF32 |= !isF32(lce.getX());
    }
  }
  return w;
}

//===----------------------------------------------------------------------===//
// BLAS-only timing
//===----------------------------------------------------------------------===//

void fillRandom(float *p, int64_t n, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    p[i] = float(int64_t(s >> 40) - (int64_t(1) << 23)) / float(int64_t(1) << 23);
  }
}

void sgemm(const Gemm &g, float alpha, const float *A, const float *B, float *C) {
  for (int64_t i = 0; i < g.batch; ++i)
    cblas_sgemm(CblasRowMajor, g.transA ? CblasTrans : CblasNoTrans,
                g.transB ? CblasTrans : CblasNoTrans, blasint(g.M), blasint(g.N),
                blasint(g.K), alpha, A + i * g.strideA, blasint(g.lda), B + i * g.strideB,
                blasint(g.ldb), 0.0f, C + i * g.strideC, blasint(g.ldc));
}

/// Single-threaded OpenBLAS for its lifetime (pthreads builds; an OpenMP build
/// already runs serially inside a parallel region).
class SerialBlas {
public:
  SerialBlas() {
    if (openblas_get_parallel() == 1 && (saved_ = openblas_get_num_threads()) > 1)
      openblas_set_num_threads(1);
  }
  ~SerialBlas() {
    if (saved_ > 1)
      openblas_set_num_threads(saved_);
  }

private:
  int saved_ = 0;
};

/// Buffers for the attention GEMMs: q, k, v, out in BSHD layout as the
/// executor holds them, and per-thread score scratch.
struct AttentionBuffers {
  std::vector<float> q, k, v, o;
  std::vector<std::vector<float>> scores;
};

struct AttentionCount {
  int64_t gemms = 0;
  double flops = 0;
};

/// Runs (or, with count, only counts) the GEMMs of one attention op: per
/// (b, h) and block of `blockRows` queries, scores = scale Q K^T over the keys
/// the block needs, then out = scores V. `full` uses one S-row block per head
/// and all S keys (the S x S x D accounting). `parallel`: tasks spread over
/// OpenMP threads with single-threaded BLAS; otherwise sequential calls.
void attentionGemms(const AttentionShape &a, bool full, bool parallel, AttentionBuffers *buf,
                    AttentionCount *count) {
  int64_t blockRows = full ? a.S : kAttentionBlockRows;
  int64_t nBlocks = (a.S + blockRows - 1) / blockRows;
  int64_t nTasks = a.B * a.Hq * nBlocks, group = a.Hq / a.Hkv;
  int64_t qStride = a.Hq * a.D, kvStride = a.Hkv * a.D;
  auto task = [&](int64_t t, float *p, bool run) {
    int64_t blk = t % nBlocks, h = (t / nBlocks) % a.Hq, b = t / (nBlocks * a.Hq);
    int64_t i0 = blk * blockRows, i1 = std::min(a.S, i0 + blockRows), rows = i1 - i0;
    int64_t nKeys = a.causal && !full ? i1 : a.S;
    if (!run) {
      count->gemms += 2;
      count->flops += 2 * (2.0 * rows * nKeys * a.D);
      return;
    }
    const float *qb = buf->q.data() + ((b * a.S + i0) * a.Hq + h) * a.D;
    const float *kh = buf->k.data() + (b * a.S * a.Hkv + h / group) * a.D;
    const float *vh = buf->v.data() + (b * a.S * a.Hkv + h / group) * a.D;
    float *ob = buf->o.data() + ((b * a.S + i0) * a.Hq + h) * a.D;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(rows), blasint(nKeys),
                blasint(a.D), a.scale, qb, blasint(qStride), kh, blasint(kvStride), 0.0f, p,
                blasint(nKeys));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(rows), blasint(a.D),
                blasint(nKeys), 1.0f, p, blasint(nKeys), vh, blasint(kvStride), 0.0f, ob,
                blasint(qStride));
  };
  if (count) {
    for (int64_t t = 0; t < nTasks; ++t)
      task(t, nullptr, false);
    return;
  }
  if (!parallel) {
    for (int64_t t = 0; t < nTasks; ++t)
      task(t, buf->scores[0].data(), true);
    return;
  }
  SerialBlas serial;
#pragma omp parallel
  {
    float *p = buf->scores[omp_get_thread_num()].data();
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < nTasks; ++t)
      task(t, p, true);
  }
}

/// Lets idle worker threads of the previous phase stop spinning before the
/// next timing starts: after a parallel region libgomp's workers busy-wait
/// (milliseconds by default) and OpenBLAS's workers yield-spin, and on a
/// 2-core machine either steals the core the other pool's next call needs.
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

struct BlasTimes {
  std::map<std::string, double> perOp;    ///< op name -> best seconds (sequential GEMMs)
  std::map<std::string, double> perLabel; ///< label -> best seconds
  double attSeq = 0, attPar = 0;          ///< kernel blocks: sequential / OpenMP
  double fullSeq = 0, fullPar = 0;        ///< S x S x D per head: sequential / OpenMP
};

BlasTimes timeBlas(const Workload &w, int runs) {
  // Buffers sized for the largest GEMM, filled once, shared by all GEMMs.
  int64_t spanA = 1, spanB = 1, spanC = 1;
  for (const SeqGemm &s : w.seq) {
    spanA = std::max(spanA, s.g.spanA());
    spanB = std::max(spanB, s.g.spanB());
    spanC = std::max(spanC, s.g.spanC());
  }
  std::vector<float> A(spanA), B(spanB), C(spanC);
  fillRandom(A.data(), spanA, 1);
  fillRandom(B.data(), spanB, 2);
  fillRandom(C.data(), spanC, 3); // touch every page before timing

  AttentionBuffers ab;
  int threads = omp_get_max_threads();
  int64_t qkv = 1, scoreElems = 1;
  for (const AttentionShape &a : w.attentions) {
    qkv = std::max(qkv, a.B * a.S * a.Hq * a.D);
    scoreElems = std::max(scoreElems, a.S * a.S);
  }
  for (auto *v : {&ab.q, &ab.k, &ab.v, &ab.o}) {
    v->resize(qkv);
    fillRandom(v->data(), qkv, v->size() + uintptr_t(v));
  }
  ab.scores.assign(threads, std::vector<float>(w.attentions.empty() ? 1 : scoreElems, 0.0f));

  BlasTimes best;
  for (int pass = 0; pass <= runs; ++pass) { // pass 0 warms up
    CpuSample cpu0 = CpuSample::now();
    std::map<std::string, double> perOp, perLabel;
    settle();
    for (const SeqGemm &s : w.seq) {
      auto t0 = Clock::now();
      sgemm(s.g, 1.0f, A.data(), B.data(), C.data());
      double t = since(t0);
      perOp[s.opName] += t;
      perLabel[s.label] += t;
    }
    double att[4] = {0, 0, 0, 0}; // blocks seq, blocks par, full seq, full par
    for (int mode = 0; mode < 4; ++mode) {
      settle();
      auto t0 = Clock::now();
      for (const AttentionShape &a : w.attentions)
        attentionGemms(a, /*full=*/mode >= 2, /*parallel=*/mode % 2 == 1, &ab, nullptr);
      att[mode] = since(t0);
    }
    if (pass == 0)
      continue;
    auto keepMin = [&](double &slot, double v) { slot = pass == 1 ? v : std::min(slot, v); };
    for (auto &[k, v] : perOp)
      keepMin(best.perOp[k], v);
    for (auto &[k, v] : perLabel)
      keepMin(best.perLabel[k], v);
    keepMin(best.attSeq, att[0]);
    keepMin(best.attPar, att[1]);
    keepMin(best.fullSeq, att[2]);
    keepMin(best.fullPar, att[3]);
    std::printf("  BLAS pass %d: sequential GEMMs %.3f s, attention blocks %.3f s (seq) / "
                "%.3f s (omp), full S*S*D %.3f s / %.3f s %s\n",
                pass, [&] {
                  double s = 0;
                  for (auto &[k, v] : perOp)
                    s += v;
                  return s;
                }(),
                att[0], att[1], att[2], att[3], CpuSample::usage(cpu0).c_str());
    std::fflush(stdout);
  }
  return best;
}

//===----------------------------------------------------------------------===//
// Executor timing
//===----------------------------------------------------------------------===//

void fillTensor(exec::HostTensor &t, uint64_t seed) {
  if (t.dtype == exec::DType::F32)
    fillRandom(t.data<float>(), t.numel(), seed);
}

/// Best seconds the executor spends in `op` run alone: the op is cloned into a
/// function of its operands and run warm-up + `runs` times on random inputs.
double isolatedSeconds(MLIRContext &ctx, Operation *op, int runs) {
  OpBuilder b(&ctx);
  Location loc = op->getLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto type = b.getFunctionType(op->getOperandTypes(), op->getResultTypes());
  auto fn = func::FuncOp::create(b, loc, "isolated", type);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  IRMapping map;
  map.map(op->getOperands(), entry->getArguments());
  Operation *clone = b.clone(*op, map);
  func::ReturnOp::create(b, loc, clone->getResults());

  std::vector<exec::HostTensor> args;
  for (auto [i, t] : llvm::enumerate(op->getOperandTypes())) {
    auto spec = exec::tensorSpec(t);
    if (failed(spec))
      throw rt::Error("isolated op has a non-static operand");
    args.emplace_back(spec->first, spec->second);
    fillTensor(args.back(), 100 + i);
  }
  exec::RunOptions options;
  options.profile = true;
  exec::Executor ex(fn, options);
  std::vector<exec::HostTensor> results;
  std::string name = op->getName().getStringRef().str();
  double bestT = 1e300, prev = 0;
  for (int r = 0; r <= runs; ++r) {
    if (failed(ex.run(args, results)))
      throw rt::Error("isolated run of " + name + " failed");
    double now = ex.profile().at(name);
    if (r > 0)
      bestT = std::min(bestT, now - prev);
    prev = now;
  }
  return bestT;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int run(const Options &opt) {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module = loadModule(ctx, opt.model);
  if (!module)
    throw rt::Error("cannot parse '" + opt.model + "'");
  func::FuncOp func = xf::getModelFunction(*module, opt.function);
  if (!func)
    throw rt::Error("no model function in '" + opt.model + "'");

  std::printf("== bench_executor_vs_blas ==\n");
  std::printf("model     %s (@%s)\n", opt.model.c_str(), func.getSymName().str().c_str());
  std::printf("tokens    %s (position %lld)\n", opt.tokens.c_str(), (long long)opt.position);
  std::printf("machine   %s, %ld CPUs online\n", cpuModel().c_str(), sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("threads   OpenMP max threads %d (OMP_NUM_THREADS=%s); OpenBLAS %d threads, %s "
              "(OPENBLAS_NUM_THREADS=%s), core %s\n",
              omp_get_max_threads(), envOr("OMP_NUM_THREADS", "unset").c_str(),
              openblas_get_num_threads(), blasParallelName(openblas_get_parallel()),
              envOr("OPENBLAS_NUM_THREADS", "unset").c_str(), openblas_get_corename());
  std::printf("openblas  %s\n", openblas_get_config());
  std::printf("runs      1 warm-up + %d timed (executor), 1 warm-up + best of %d (BLAS)\n",
              opt.runs, opt.runs);
  std::printf("loadavg   %s (start)\n", loadAverage().c_str());
  std::fflush(stdout);

  // --- executor -----------------------------------------------------------
  data::TokenFile tokens = data::TokenFile::open(opt.tokens);
  exec::ParamValues params = exec::initParams(func, opt.seed);
  std::vector<exec::HostTensor> args =
      exec::buildArguments(func, params, tokens, opt.position, opt.seed);
  params.clear();

  exec::RunOptions options;
  options.seed = opt.seed;
  options.profile = true;
  exec::Executor executor(func, options);
  std::vector<exec::HostTensor> results;
  std::vector<double> walls;
  std::map<std::string, double> profileAfterWarmup;
  double loss = 0;
  for (int r = 0; r <= opt.runs; ++r) {
    CpuSample cpu0 = CpuSample::now();
    auto t0 = Clock::now();
    if (failed(executor.run(args, results)))
      throw rt::Error("executor run failed");
    double t = since(t0);
    if (r == 0)
      profileAfterWarmup = executor.profile();
    else
      walls.push_back(t);
    if (!results.empty() && results[0].numel() == 1 && results[0].dtype == exec::DType::F32)
      loss = results[0].data<float>()[0];
    std::printf("  executor %-8s %.3f s %s\n",
                r == 0 ? "warm-up" : ("run " + std::to_string(r)).c_str(), t,
                CpuSample::usage(cpu0).c_str());
    std::fflush(stdout);
  }
  results.clear();
  double bestWall = *std::min_element(walls.begin(), walls.end());
  double medianWall = median(walls);
  std::map<std::string, double> execPerOp; // mean seconds per timed run
  double execOpSum = 0;
  for (auto &[name, secs] : executor.profile()) {
    double before = profileAfterWarmup.count(name) ? profileAfterWarmup.at(name) : 0.0;
    execPerOp[name] = (secs - before) / opt.runs;
    execOpSum += execPerOp[name];
  }
  double meanWall = 0;
  for (double t : walls)
    meanWall += t / walls.size();

  // --- what the executor pays besides kernels --------------------------------
  // Executor::run takes its arguments by value and copies them again into the
  // rank environment; every op result is a fresh, zero-initialized HostTensor.
  Workload w = collect(func);
  std::string diagnostics;
  {
    double bytes = 0;
    for (const exec::HostTensor &t : args)
      bytes += double(t.bytes.size());
    auto t0 = Clock::now();
    std::vector<exec::HostTensor> copy = args;
    double copyS = since(t0);
    t0 = Clock::now();
    copy.clear();
    copy.shrink_to_fit();
    double freeS = since(t0);
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "copying the argument list (%.0f MB) once: %.3f s, freeing it: %.3f s\n",
                  bytes / 1e6, copyS, freeS);
    diagnostics += buf;
    Operation *largest = nullptr;
    int64_t largestElems = 0;
    for (Operation &op : func.getBody().front())
      if (isa<xf::MatmulOp>(op)) {
        int64_t n = cast<RankedTensorType>(op.getResult(0).getType()).getNumElements();
        if (n > largestElems)
          largest = &op, largestElems = n;
      }
    if (largest) {
      auto spec = exec::tensorSpec(largest->getResult(0).getType());
      t0 = Clock::now();
      exec::HostTensor out(spec->first, spec->second);
      double allocS = since(t0);
      std::snprintf(buf, sizeof buf,
                    "allocating the largest matmul result %s %s (%.0f MB, zero-filled): %.3f s\n",
                    rt::dtype_name(out.dtype), rt::shape_str(out.shape).c_str(),
                    out.bytes.size() / 1e6, allocS);
      diagnostics += buf;
    }
  }

  // --- the GEMMs, BLAS alone --------------------------------------------------
  if (w.nonF32)
    std::printf("NOTE: some GEMM operands are not f32; the BLAS-only side times sgemm "
                "regardless (the executor computes bf16/f16 in f32 and f64 in f64)\n");
  std::map<std::string, int64_t> labelCount;
  std::map<std::string, double> labelFlops;
  std::map<std::string, std::string> labelOp;
  std::map<std::string, double> opFlops;
  std::map<std::string, int64_t> opGemms;
  for (const SeqGemm &s : w.seq) {
    ++labelCount[s.label];
    labelFlops[s.label] += s.g.flops();
    labelOp[s.label] = s.opName;
    opFlops[s.opName] += s.g.flops();
    opGemms[s.opName] += s.g.batch;
  }
  AttentionCount attBlocks, attFull;
  for (const AttentionShape &a : w.attentions) {
    attentionGemms(a, false, false, nullptr, &attBlocks);
    attentionGemms(a, true, false, nullptr, &attFull);
  }
  BlasTimes blas = timeBlas(w, opt.runs);

  std::map<std::string, double> isolated;
  if (opt.isolate)
    for (auto &[label, op] : w.firstMatmul) {
      CpuSample cpu0 = CpuSample::now();
      isolated[label] = isolatedSeconds(ctx, op, opt.runs);
      std::printf("  executor alone, %-36s best %.4g s %s\n", label.c_str(), isolated[label],
                  CpuSample::usage(cpu0).c_str());
      std::fflush(stdout);
    }
  std::printf("loadavg   %s (end)\n\n", loadAverage().c_str());

  // --- report ---------------------------------------------------------------
  double attBlas = std::min(blas.attSeq, blas.attPar);
  double fullBlas = std::min(blas.fullSeq, blas.fullPar);
  double gemmFlops = attBlocks.flops, blasTotal = w.attentions.empty() ? 0 : attBlas;
  for (auto &[op, f] : opFlops) {
    gemmFlops += f;
    blasTotal += blas.perOp[op];
  }

  std::printf("loss %.6f   executor wall: best %.3f s, median %.3f s, mean %.3f s over %d runs\n\n",
              loss, bestWall, medianWall, meanWall, opt.runs);
  std::printf("%-44s %6s %7s %9s %12s %12s %9s\n", "op kind", "ops", "GEMMs", "GFLOP",
              "executor s", "BLAS-only s", "exec/BLAS");
  std::printf("%s\n", std::string(105, '-').c_str());
  auto row = [&](const std::string &name, const std::string &ops, const std::string &gemms,
                 double gflop, double execS, double blasS) {
    // Three decimals, or three significant digits below 0.1 (tiny models).
    auto num = [](char *buf, size_t n, double x) {
      std::snprintf(buf, n, x >= 0.1 || x == 0 ? "%.3f" : "%.3g", x);
    };
    char g[32] = "-", e[32] = "-", bl[32] = "-", ratio[32] = "-";
    if (gflop >= 0)
      gflop >= 10 ? (void)std::snprintf(g, sizeof g, "%.1f", gflop) : num(g, sizeof g, gflop);
    if (execS >= 0)
      num(e, sizeof e, execS);
    if (blasS >= 0)
      num(bl, sizeof bl, blasS);
    if (execS >= 0 && blasS > 0)
      std::snprintf(ratio, sizeof ratio, "%.2f", execS / blasS);
    std::printf("%-44s %6s %7s %9s %12s %12s %9s\n", name.c_str(), ops.c_str(), gemms.c_str(),
                g, e, bl, ratio);
  };
  auto str = [](int64_t x) { return std::to_string(x); };

  // GEMM-bearing ops first, then the rest by executor time.
  std::vector<std::pair<double, std::string>> rest;
  for (auto &[name, secs] : execPerOp)
    if (name != "xf.matmul" && name != "xf.attention" && name != "xf.linear_cross_entropy")
      rest.push_back({secs, name});
  std::sort(rest.rbegin(), rest.rend());
  auto execOf = [&](const std::string &n) { return execPerOp.count(n) ? execPerOp[n] : 0.0; };

  for (const char *op : {"xf.matmul", "xf.linear_cross_entropy"}) {
    if (!opFlops.count(op))
      continue;
    row(op, str(w.opCount[op]), str(opGemms[op]), opFlops[op] / 1e9, execOf(op),
        blas.perOp[op]);
    for (auto &[label, n] : labelCount)
      if (labelOp[label] == op)
        row("  " + label, str(n), str(n), labelFlops[label] / 1e9,
            isolated.count(label) ? isolated[label] * n : -1.0, blas.perLabel[label]);
  }
  if (!w.attentions.empty()) {
    row("xf.attention (QK^T + PV, 64-query blocks)", str(w.attentions.size()),
        str(attBlocks.gemms), attBlocks.flops / 1e9, execOf("xf.attention"), attBlas);
    char buf[96];
    std::snprintf(buf, sizeof buf, "  BLAS seq %.3f s / omp x 1-thread %.3f s", blas.attSeq,
                  blas.attPar);
    std::printf("  %s\n", buf);
    row("  [ref] S*S*D per (b,h), not in total", str(w.attentions.size()), str(attFull.gemms),
        attFull.flops / 1e9, -1.0, fullBlas);
  }
  for (auto &[secs, name] : rest)
    row(name, str(w.opCount[name]), "", -1.0, secs, -1.0);
  row("(outside ops: Executor::run bookkeeping, arg copies)", "", "", -1.0, meanWall - execOpSum,
      -1.0);
  std::printf("%s\n", std::string(105, '-').c_str());
  row("total (executor: best wall)", "", "", gemmFlops / 1e9, bestWall, blasTotal);
  std::printf("\n");
  double gemmShare = (execOf("xf.matmul") + execOf("xf.attention") +
                      execOf("xf.linear_cross_entropy")) /
                     meanWall;
  std::printf("diagnostics (single-threaded, outside the timed runs):\n");
  std::printf("%s\n", diagnostics.c_str());
  std::printf("executor total / BLAS-only total = %.3f s / %.3f s = %.2f   "
              "(executor %.1f GFLOP/s, BLAS-only %.1f GFLOP/s on %.1f GEMM GFLOP; "
              "GEMM-bearing ops are %.0f%% of the executor's mean run)\n",
              bestWall, blasTotal, bestWall / blasTotal, gemmFlops / 1e9 / bestWall,
              gemmFlops / 1e9 / blasTotal, gemmFlops / 1e9, 100.0 * gemmShare);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options opt = parseOptions(argc, argv);
  try {
    return run(opt);
  } catch (const rt::Error &e) {
    std::fprintf(stderr, "bench_executor_vs_blas: error: %s\n", e.what());
    return 1;
  }
}
