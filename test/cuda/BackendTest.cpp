//===- BackendTest.cpp - the CUDA backend behind the C ABI ----------------===//
//
// Runs everywhere (not only on GPUs):
//  - without a CUDA device, makeCudaBackend fails with an Error that says so
//    (what `step --device cuda` prints), never a crash;
//  - with one: arenas round-trip host <-> device; an arena larger than the
//    GPU is an Error naming the arena and the planned bytes; call tables run
//    on the GPU equal the CPU backend (the compiler's GEMMs with epilogues:
//    bias, bias + GELU, dGELU, bias gradient as cuBLASLt epilogues; one
//    multi-tensor AdamW call and a single one; residual adds fused into
//    layernorm/rmsnorm), eager and replayed from a CUDA graph; activation
//    offload's copies to and from the pinned host arena (also on the CPU
//    backend, so that part runs everywhere); kernels that take their
//    scratch from the plan (the buffer after the results) instead of the
//    backend's workspace; concat, split and attention on a packed qkv;
//    collectives staging through their planned scratch (also on the CPU
//    backend, with the plan's size checked when the program loads).
//
//===----------------------------------------------------------------------===//

#include "runtime/program/Backend.h"
#include "runtime/program/CallDecoder.h"
#include "runtime/program/KernelScratch.h"

#include "runtime/rng/Philox.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace shardc::rt;

namespace {

bool haveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TensorType f32(std::vector<int64_t> shape) { return TensorType{DType::F32, std::move(shape)}; }

Call call(const std::string &op, std::vector<TensorType> in, std::vector<TensorType> out,
          nlohmann::json attrs = nlohmann::json::object()) {
  Call c;
  c.op = op;
  c.operands = std::move(in);
  c.results = std::move(out);
  c.attrs = std::move(attrs);
  return c;
}

/// One rank, one arena of `bytes`.
Program oneArena(int64_t bytes) {
  Program p;
  p.mesh.names = {"dp"};
  p.mesh.sizes = {1};
  p.arenas = {ArenaDesc{"workspace", bytes}};
  p.plannedPeakBytes = bytes;
  return p;
}

TEST(CudaBackend, NoDeviceIsAClearError) {
  if (haveGpu())
    GTEST_SKIP() << "a CUDA device is present";
  Program p = oneArena(1024);
  try {
    makeCudaBackend(p, nullptr, CudaOptions{});
    FAIL() << "makeCudaBackend succeeded without a GPU";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
}

TEST(CudaBackend, ArenasRoundTrip) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  Program p = oneArena(4096);
  auto b = makeCudaBackend(p, nullptr, CudaOptions{});
  EXPECT_NE(b->describe().find("cuda: GPU"), std::string::npos);
  uint8_t *h = b->hostArena(0);
  for (int i = 0; i < 4096; ++i)
    h[i] = static_cast<uint8_t>(i * 7);
  b->toDevice(0, 0, 4096);
  std::memset(h, 0, 4096);
  b->toHost(0, 100, 1000);
  for (int i = 0; i < 4096; ++i)
    ASSERT_EQ(h[i], i >= 100 && i < 1100 ? static_cast<uint8_t>(i * 7) : 0) << i;
}

TEST(CudaBackend, OutOfMemoryNamesThePlan) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  Program p = oneArena(int64_t(1) << 50); // 1 PiB
  try {
    makeCudaBackend(p, nullptr, CudaOptions{});
    FAIL() << "a 1 PiB arena was allocated";
  } catch (const Error &e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cannot allocate arena 'workspace'"), std::string::npos) << what;
    EXPECT_NE(what.find("the memory plan needs 1125899906842624 bytes"), std::string::npos)
        << what;
  }
}

/// Runs `p`'s calls in order on `b` with every buffer at its offset of arena
/// 0 (`offsets`: per call, operands then results) after uploading `init`.
std::vector<float> runCalls(Backend &b, const Program &p,
                            const std::vector<std::vector<int64_t>> &offsets,
                            const std::vector<float> &init, bool twice) {
  std::memcpy(b.hostArena(0), init.data(), init.size() * 4);
  b.toDevice(0, 0, static_cast<int64_t>(init.size() * 4));
  auto *base = static_cast<uint8_t *>(b.arena(0));
  auto entry = [&] {
    for (size_t i = 0; i < p.calls.size(); ++i) {
      std::vector<void *> bufs;
      for (int64_t off : offsets[i])
        bufs.push_back(base + off);
      b.kernel(static_cast<int>(i), bufs.data());
    }
  };
  StepContext step{1234, 0, true};
  // The CUDA backend runs an entry eagerly, then captures it, then replays.
  for (int r = 0; r < (twice ? 3 : 1); ++r) {
    if (r > 0) {
      std::memcpy(b.hostArena(0), init.data(), init.size() * 4);
      b.toDevice(0, 0, static_cast<int64_t>(init.size() * 4));
    }
    b.run(entry, 0, step);
  }
  b.toHost(0, 0, static_cast<int64_t>(init.size() * 4));
  std::vector<float> out(init.size());
  std::memcpy(out.data(), b.hostArena(0), init.size() * 4);
  return out;
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want, double rtol) {
  ASSERT_EQ(got.size(), want.size());
  double scale = 0;
  for (float w : want)
    scale = std::max(scale, std::fabs(double(w)));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(double(got[i]) - want[i]), rtol * std::max(scale, 1e-30))
        << "element " << i << ": " << got[i] << " vs " << want[i];
}

/// The call table run on the CPU backend and on the GPU (eager, then from a
/// CUDA graph): the first `compared` floats of the arena agree to 1e-5.
void expectGpuMatchesCpu(const Program &p, const std::vector<std::vector<int64_t>> &offsets,
                         const std::vector<float> &init, int64_t compared) {
  auto cpu = makeCpuBackend(p, nullptr);
  std::vector<float> want = runCalls(*cpu, p, offsets, init, false);
  want.resize(compared);
  for (bool graphs : {false, true}) {
    CudaOptions o;
    o.graphs = graphs;
    auto gpu = makeCudaBackend(p, nullptr, o);
    std::vector<float> got = runCalls(*gpu, p, offsets, init, graphs);
    got.resize(compared);
    SCOPED_TRACE(graphs ? "CUDA graphs" : "eager");
    expectClose(got, want, 1e-5);
  }
}


TEST(CudaBackend, FusedGemmEpiloguesAndAdamWMatchTheCpu) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  const int64_t M = 48, K = 64, N = 80;
  // Arena layout (floats): x[M,K] w[K,N] bias[N] h[M,N] g[M,N] dy[M,N]
  // dh[M,N] wT[N,K] (holds an [M,K] product: N*K >= M*K) plus AdamW params/grads/moments.
  int64_t at = 0;
  auto place = [&](int64_t n) {
    int64_t off = at;
    at += n;
    return off * 4;
  };
  int64_t x = place(M * K), w = place(K * N), bias = place(N), h = place(M * N),
          g = place(M * N), dy = place(M * N), dh = place(M * N), wT = place(N * K),
          y2 = place(M * N), dw = place(K * N), db = place(N);
  int64_t p1 = place(100), g1 = place(100), m1 = place(100), v1 = place(100);
  int64_t p2 = place(37), g2 = place(37), m2 = place(37), v2 = place(37);
  int64_t p3 = place(64), g3 = place(64), m3 = place(64), v3 = place(64);
  int64_t lr = place(1), gs = place(1), stepc = place(1);
  Program p = oneArena(at * 4);
  nlohmann::json mm = {{"equation", "mk,kn->mn"}};
  nlohmann::json mmT = {{"equation", "mn,kn->mk"}};
  nlohmann::json wgrad = {{"equation", "mk,mn->kn"}};
  nlohmann::json adam = {{"beta1", 0.9}, {"beta2", 0.95}, {"epsilon", 1e-8},
                         {"weight_decay", 0.1}};
  nlohmann::json multi = adam;
  multi["decay"] = {1, 0};
  multi["copies"] = nlohmann::json::array();
  p.calls = {
      // g = gelu(x @ w + bias), h = the pre-activation: one GEMM, BiasGeluAux.
      call("xf.matmul_bias_gelu", {f32({M, K}), f32({K, N}), f32({N})},
           {f32({M, N}), f32({M, N})}, mm),
      // y2 = x @ w + bias: the Bias epilogue.
      call("xf.matmul_bias", {f32({M, K}), f32({K, N}), f32({N})}, {f32({M, N})}, mm),
      // dh = (dy @ w) * gelu'(h): the DGelu epilogue.
      call("xf.matmul_dgelu", {f32({M, K}), f32({K, N}), f32({M, N})}, {f32({M, N})}, mm),
      // dw = x^T dh, db = the column sums of dh: the BGrad epilogue.
      call("xf.matmul_bgrad", {f32({M, K}), f32({M, N})}, {f32({K, N}), f32({N})}, wgrad),
      // A transposed operand (mk = mn . kn^T) with no epilogue.
      call("xf.matmul", {f32({M, N}), f32({K, N})}, {f32({M, K})}, mmT),
      call("xf.multi_adamw",
           {f32({100}), f32({37}), f32({100}), f32({37}), f32({100}), f32({37}), f32({100}),
            f32({37}), f32({}), f32({}), f32({})},
           {f32({100}), f32({37}), f32({100}), f32({37}), f32({100}), f32({37})}, multi),
      call("xf.adamw", {f32({64}), f32({64}), f32({64}), f32({64}), f32({}), f32({}), f32({})},
           {f32({64}), f32({64}), f32({64})}, adam),
  };
  std::vector<std::vector<int64_t>> offsets = {
      {x, w, bias, g, h}, {x, w, bias, y2}, {dy, w, h, dh}, {x, dh, dw, db}, {dh, w, wT},
      {p1, p2, g1, g2, m1, m2, v1, v2, lr, gs, stepc, p1, p2, m1, m2, v1, v2},
      {p3, g3, m3, v3, lr, gs, stepc, p3, m3, v3},
  };
  std::vector<float> init(at);
  shardc::rng::init_normal(init.data(), at, 0, 7, "backend-test", 0.0, 0.5);
  // Moments of the right sign and size (v >= 0: no NaN from its root).
  for (auto [i, n] : {std::pair<int64_t, int64_t>{m1, 100}, {m2, 37}, {m3, 64}, {v1, 100},
                      {v2, 37}, {v3, 64}})
    for (int64_t j = 0; j < n; ++j)
      init[i / 4 + j] = std::fabs(init[i / 4 + j]) * (i == v1 || i == v2 || i == v3 ? 0.01f : 0.1f);
  init[lr / 4] = 1e-3f;
  init[gs / 4] = 0.5f;
  init[stepc / 4] = 3.0f;

  auto cpu = makeCpuBackend(p, nullptr);
  std::vector<float> want = runCalls(*cpu, p, offsets, init, false);
  for (bool graphs : {false, true}) {
    CudaOptions o;
    o.graphs = graphs;
    auto gpu = makeCudaBackend(p, nullptr, o);
    std::vector<float> got = runCalls(*gpu, p, offsets, init, graphs);
    // f32 GEMMs without TF32: 1e-5 of the largest value.
    SCOPED_TRACE(graphs ? "CUDA graphs" : "eager");
    expectClose(got, want, 1e-5);
  }
}

// Calls with planned scratch (runtime/program/KernelScratch.h: a buffer after
// the results, sized by the compiler's function) run their kernels in it: the
// layernorm gradient's partial sums, the gradient norm's partials and a GEMM
// result relaid out for cuBLASLt equal the CPU backend's, eager and from a
// CUDA graph. The scratch regions are 256-byte aligned as the plan places
// them, and a call planned short of its need is refused when the backend
// loads the program.
TEST(CudaBackend, PlannedScratchMatchesTheCpu) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  const int64_t R = 96, C = 80, M = 48, K = 64, N = 40;
  int64_t at = 0;
  auto place = [&](int64_t n) {
    int64_t off = (at + 63) / 64 * 64;
    at = off + n;
    return off * 4;
  };
  int64_t dy = place(R * C), x = place(R * C), gamma = place(C), dx = place(R * C),
          dg = place(C), db = place(C), ss = place(1), a = place(M * K), bm = place(K * N),
          out = place(N * M);
  const int64_t results = at; // floats compared; the scratch follows
  Program p = oneArena(0);
  p.calls = {
      call("xf.layernorm_grad", {f32({R, C}), f32({R, C}), f32({C})},
           {f32({R, C}), f32({C}), f32({C})}, {{"epsilon", 1e-5}}),
      call("xf.sum_squares", {f32({R, C})}, {f32({})}),
      // The result's letters are not M then N: cuBLASLt's result is relaid.
      call("xf.matmul", {f32({M, K}), f32({K, N})}, {f32({N, M})}, {{"equation", "mk,kn->nm"}}),
  };
  std::vector<std::vector<int64_t>> offsets = {
      {dy, x, gamma, dx, dg, db}, {x, ss}, {a, bm, out}};
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const int64_t bytes = callScratchBytes(*decodeCall(p, i, {0}), p.mesh);
    ASSERT_GT(bytes, 0) << p.calls[i].op;
    p.calls[i].scratch = bytes;
    at = (at + 63) / 64 * 64;
    offsets[i].push_back(place((bytes + 3) / 4));
  }
  p.arenas = {ArenaDesc{"workspace", at * 4}};
  p.plannedPeakBytes = at * 4;
  std::vector<float> init(at);
  shardc::rng::init_normal(init.data(), at, 0, 11, "backend-scratch", 0.0, 0.5);
  for (int64_t j = 0; j < C; ++j)
    init[gamma / 4 + j] = 1.0f + 0.1f * init[gamma / 4 + j];

  expectGpuMatchesCpu(p, offsets, init, results);
  p.calls[0].scratch -= 1;
  EXPECT_THROW(makeCudaBackend(p, nullptr, CudaOptions{}), Error);
}

TEST(CudaBackend, AttentionOverAQueryRowBlockMatchesTheCpu) {
  // Attention and its gradient over the first of two blocks of query rows
  // (split over tp: heads that do not divide it), its scratch planned: the
  // GPU places the block in full-length copies (KernelScratch's
  // attentionRowBlockBytes); the CPU kernels take the block's offset.
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  const int64_t B = 2, S = 96, Sq = 48, Hq = 4, Hkv = 2, D = 64;
  int64_t at = 0;
  auto place = [&](int64_t n) {
    int64_t off = (at + 63) / 64 * 64;
    at = off + n;
    return off * 4;
  };
  const int64_t nq = B * Sq * Hq * D, nkv = B * S * Hkv * D;
  int64_t q = place(nq), k = place(nkv), v = place(nkv), out = place(nq), dout = place(nq),
          dq = place(nq), dk = place(nkv), dv = place(nkv);
  const int64_t results = at;
  Program p = oneArena(0);
  p.mesh.names = {"tp"};
  p.mesh.sizes = {2};
  nlohmann::json attrs = {{"causal", true}, {"scale", 0.125}};
  p.calls = {
      call("xf.attention", {f32({B, Sq, Hq, D}), f32({B, S, Hkv, D}), f32({B, S, Hkv, D})},
           {f32({B, Sq, Hq, D})}, attrs),
      call("xf.attention_grad",
           {f32({B, Sq, Hq, D}), f32({B, Sq, Hq, D}), f32({B, S, Hkv, D}), f32({B, S, Hkv, D}),
            f32({B, Sq, Hq, D})},
           {f32({B, Sq, Hq, D}), f32({B, S, Hkv, D}), f32({B, S, Hkv, D})}, attrs),
  };
  std::vector<Axes> rows = {{}, {0}, {}, {}}, whole(4);
  p.calls[0].operandAxes = {rows, whole, whole};
  p.calls[1].operandAxes = {rows, rows, whole, whole, rows};
  std::vector<std::vector<int64_t>> offsets = {{q, k, v, out}, {dout, q, k, v, out, dq, dk, dv}};
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const int64_t bytes = callScratchBytes(*decodeCall(p, i, {0}), p.mesh);
    ASSERT_GT(bytes, 0) << p.calls[i].op;
    p.calls[i].scratch = bytes;
    offsets[i].push_back(place((bytes + 3) / 4));
  }
  p.arenas = {ArenaDesc{"workspace", at * 4}};
  p.plannedPeakBytes = at * 4;
  std::vector<float> init(at);
  shardc::rng::init_normal(init.data(), at, 0, 11, "backend-attention-rows", 0.0, 1.0);
  expectGpuMatchesCpu(p, offsets, init, results);
}

TEST(CudaBackend, PackedAttentionConcatAndSplitMatchTheCpu) {
  // The fused Q/K/V projection's ops: three projections joined along a
  // middle dim and the last dim and cut again (strided copies), and attention
  // and its gradient on a packed qkv [B, S, Hkv, G + 2, D] (unpacked into the
  // call's scratch on the GPU, read in place on the CPU): G = 2 causal with
  // planned scratch, G = 1 not causal in the backend's own workspace.
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  const int64_t B = 2, S = 37, Hkv = 2, D = 64, Hidden = 48;
  int64_t at = 0;
  auto place = [&](int64_t n) {
    int64_t off = (at + 63) / 64 * 64;
    at = off + n;
    return off * 4;
  };
  nlohmann::json causal = {{"causal", true}, {"scale", 0.125}}, full = {{"scale", 0.125}};
  Program p = oneArena(0);
  std::vector<std::vector<int64_t>> offsets;
  // Concat/split along dim 1 of [B*S, n, Hidden] and along the last dim.
  for (int64_t dim : {1, 2}) {
    std::vector<int64_t> sizes = {3, 1, 2}, joined = {B * S, 4, Hidden};
    joined[dim] = 0;
    std::vector<TensorType> parts;
    std::vector<int64_t> in, out;
    for (int64_t n : sizes) {
      std::vector<int64_t> shape = {B * S, 4, Hidden};
      shape[dim] = n;
      parts.push_back(f32(shape));
      joined[dim] += n;
      in.push_back(place(B * S * 4 * Hidden));
      out.push_back(place(B * S * 4 * Hidden));
    }
    int64_t whole = place(B * S * 6 * Hidden);
    p.calls.push_back(call("xf.concat", parts, {f32(joined)}, {{"dim", dim}}));
    std::vector<int64_t> c = in;
    c.push_back(whole);
    offsets.push_back(c);
    p.calls.push_back(call("xf.split", {f32(joined)}, parts, {{"dim", dim}}));
    std::vector<int64_t> sp = {whole};
    sp.insert(sp.end(), out.begin(), out.end());
    offsets.push_back(sp);
  }
  for (int64_t G : {2, 1}) {
    const int64_t Hq = Hkv * G;
    std::vector<int64_t> qkvShape = {B, S, Hkv, G + 2, D}, qShape = {B, S, Hq, D};
    const nlohmann::json &attrs = G == 2 ? causal : full;
    int64_t qkv = place(B * S * Hkv * (G + 2) * D), out = place(B * S * Hq * D),
            dout = place(B * S * Hq * D), dqkv = place(B * S * Hkv * (G + 2) * D);
    p.calls.push_back(call("xf.packed_attention", {f32(qkvShape)}, {f32(qShape)}, attrs));
    offsets.push_back({qkv, out});
    p.calls.push_back(call("xf.packed_attention_grad", {f32(qShape), f32(qkvShape), f32(qShape)},
                           {f32(qkvShape)}, attrs));
    offsets.push_back({dout, qkv, out, dqkv});
  }
  const int64_t results = at;
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const int64_t bytes = callScratchBytes(*decodeCall(p, i, {0}), p.mesh);
    const bool packed = p.calls[i].op.rfind("xf.packed_attention", 0) == 0;
    ASSERT_EQ(bytes > 0, packed) << p.calls[i].op;
    if (packed && p.calls[i].attrs.contains("causal")) {
      p.calls[i].scratch = bytes;
      offsets[i].push_back(place((bytes + 3) / 4));
    }
  }
  p.arenas = {ArenaDesc{"workspace", at * 4}};
  p.plannedPeakBytes = at * 4;
  std::vector<float> init(at);
  shardc::rng::init_normal(init.data(), at, 0, 13, "backend-packed-attention", 0.0, 1.0);
  expectGpuMatchesCpu(p, offsets, init, results);
}

TEST(CudaBackend, FusedResidualNormMatchesTheCpu) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  const int64_t R = 37, C = 96;
  int64_t at = 0;
  auto place = [&](int64_t n) {
    int64_t off = at;
    at += n;
    return off * 4;
  };
  int64_t x = place(R * C), r = place(R * C), h = place(R * C), y = place(R * C),
          gamma = place(C), beta = place(C), h2 = place(R * C);
  Program p = oneArena(at * 4);
  nlohmann::json eps = {{"epsilon", 1e-5}};
  p.calls = {
      // h = x + r; y = layernorm(h): one kernel storing h and y.
      call("xf.add", {f32({R, C}), f32({R, C})}, {f32({R, C})}),
      call("xf.layernorm", {f32({R, C}), f32({C}), f32({C})}, {f32({R, C})}, eps),
      // h2 = y + h (in place over h2's own buffer); rmsnorm in place over
      // the sum: h2 is dead, the fused kernel stores only the norm.
      call("xf.add", {f32({R, C}), f32({R, C})}, {f32({R, C})}),
      call("xf.rmsnorm", {f32({R, C}), f32({C})}, {f32({R, C})}, eps),
  };
  std::vector<std::vector<int64_t>> offsets = {
      {x, r, h}, {h, gamma, beta, y}, {y, h, h2}, {h2, gamma, h2}};
  std::vector<float> init(at);
  shardc::rng::init_normal(init.data(), at, 0, 11, "backend-norm-test", 0.0, 1.0);
  auto cpu = makeCpuBackend(p, nullptr);
  std::vector<float> want = runCalls(*cpu, p, offsets, init, false);
  for (bool graphs : {false, true}) {
    CudaOptions o;
    o.graphs = graphs;
    auto gpu = makeCudaBackend(p, nullptr, o);
    SCOPED_TRACE(graphs ? "CUDA graphs" : "eager");
    expectClose(runCalls(*gpu, p, offsets, init, graphs), want, 1e-5);
  }
}

/// Activation offload's copies (shardc_rt_copy_start / _copy_wait): a value
/// copied from the device workspace to the pinned host arena, the workspace
/// overwritten by a kernel in between, and copied back; the same on the CPU
/// backend. Eager and from a CUDA graph (the copy stream forks from and
/// joins the captured compute stream).
TEST(CudaBackend, OffloadCopiesRoundTrip) {
  constexpr int64_t N = 1 << 16; // floats
  Program p = oneArena(3 * N * 4);
  p.arenas.push_back(ArenaDesc{kHostArenaName, N * 4});
  p.calls = {call("xf.scale", {f32({N})}, {f32({N})}, {{"factor", 0.0}})};
  std::vector<float> init(3 * N);
  shardc::rng::init_normal(init.data(), N, 0, 5, "backend-offload-test", 0.0, 1.0);
  auto check = [&](Backend &b, bool graphs) {
    auto *ws = static_cast<uint8_t *>(b.arena(0));
    auto *host = static_cast<uint8_t *>(b.arena(1));
    auto entry = [&] {
      int out = b.copyStart(host, ws, N * 4); // x -> host
      b.copyWait(out);
      void *bufs[] = {ws, ws};                // x *= 0 over its own bytes
      b.kernel(0, bufs);
      int back = b.copyStart(ws + N * 4, host, N * 4); // host -> second slot
      b.copyWait(back);
    };
    StepContext step{1234, 0, true};
    for (int r = 0; r < (graphs ? 3 : 1); ++r) {
      std::memcpy(b.hostArena(0), init.data(), init.size() * 4);
      b.toDevice(0, 0, static_cast<int64_t>(init.size() * 4));
      b.run(entry, 0, step);
      b.toHost(0, 0, static_cast<int64_t>(init.size() * 4));
      b.toHost(1, 0, N * 4);
      const auto *got = reinterpret_cast<const float *>(b.hostArena(0));
      for (int64_t i = 0; i < N; ++i) {
        ASSERT_EQ(got[i], 0.0f) << "run " << r << ", the scaled value " << i;
        ASSERT_EQ(got[N + i], init[i]) << "run " << r << ", the copied-back value " << i;
      }
      ASSERT_EQ(std::memcmp(b.hostArena(1), init.data(), N * 4), 0) << "run " << r;
    }
    EXPECT_THROW(b.copyWait(0), Error); // nothing in flight
  };
  auto cpu = makeCpuBackend(p, nullptr);
  check(*cpu, false);
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device (the CPU backend passed)";
  for (bool graphs : {false, true}) {
    CudaOptions o;
    o.graphs = graphs;
    auto gpu = makeCudaBackend(p, nullptr, o);
    SCOPED_TRACE(graphs ? "CUDA graphs" : "eager");
    check(*gpu, graphs);
  }
}

// Collectives that copy through staging (KernelScratch.h collectiveStaging),
// on a group of one: a reduce-scatter on an inner axis (packed by member),
// an all-to-all (packed and received blocks) and an all-gather whose input
// overlaps its output (read from a copy). Each stages through the planned
// region given to it, on the CPU and the GPU (eager and from a CUDA graph),
// with the same results as without one; nothing past the plan is written;
// a plan smaller than the staging is refused when the program loads.
TEST(CudaBackend, CollectiveStagingMatchesTheCpu) {
  const std::vector<int64_t> shape = {4, 6, 3};
  const int64_t numel = 4 * 6 * 3, bytes = numel * 4;
  Program p = oneArena(0);
  p.comms = {CommDesc{{0}}};
  p.calls = {call("shard.reduce_scatter", {f32(shape)}, {f32(shape)},
                  {{"scatter_axis", 1}, {"reduction", "sum"}}),
             call("shard.all_to_all", {f32(shape)}, {f32(shape)},
                  {{"split_axis", 1}, {"concat_axis", 2}}),
             call("shard.all_gather", {f32(shape)}, {f32(shape)}, {{"gather_axis", 0}})};
  // Floats: x, then per call its output and its staging (+ a guard).
  const int64_t x = 0, guard = 64;
  std::vector<int64_t> outs, stagings;
  int64_t at = numel;
  for (size_t i = 0; i < p.calls.size(); ++i) {
    p.calls[i].comm = 0;
    p.calls[i].scratch = scratch::collectiveStaging(*decodeCall(p, i, {0}), 1, true, false).total;
    ASSERT_GT(p.calls[i].scratch, 0) << p.calls[i].op;
    outs.push_back(at);
    at += (numel + 63) / 64 * 64;
    stagings.push_back(at);
    at += (p.calls[i].scratch / 4 + guard + 63) / 64 * 64;
  }
  p.arenas = {ArenaDesc{"workspace", at * 4}};
  p.plannedPeakBytes = at * 4;
  std::vector<float> init(at, -7.0f);
  shardc::rng::init_normal(init.data(), numel, 0, 17, "backend-staging", 0.0, 1.0);
  auto run = [&](Backend &b, bool planned, bool graphs) {
    auto *ws = static_cast<float *>(b.arena(0));
    auto entry = [&] {
      for (int i = 0; i < 2; ++i)
        b.collectiveWait(b.collectiveStart(i, 0, ws + x, ws + outs[i],
                                           planned ? ws + stagings[i] : nullptr));
      // The all-gather reads its input from 16 floats into its output.
      b.collectiveWait(b.collectiveStart(2, 0, ws + outs[2] + 16, ws + outs[2],
                                         planned ? ws + stagings[2] : nullptr));
    };
    StepContext step{1234, 0, true};
    std::vector<float> start = init;
    std::copy(init.begin(), init.begin() + numel, start.begin() + outs[2] + 16);
    for (int r = 0; r < (graphs ? 3 : 1); ++r) {
      std::memcpy(b.hostArena(0), start.data(), start.size() * 4);
      b.toDevice(0, 0, static_cast<int64_t>(start.size() * 4));
      b.run(entry, 0, step);
    }
    b.toHost(0, 0, static_cast<int64_t>(start.size() * 4));
    std::vector<float> got(start.size());
    std::memcpy(got.data(), b.hostArena(0), got.size() * 4);
    for (size_t i = 0; i < p.calls.size(); ++i)
      for (int64_t g = p.calls[i].scratch / 4; g < p.calls[i].scratch / 4 + guard; ++g)
        EXPECT_EQ(got[stagings[i] + g], -7.0f) << p.calls[i].op << ": float " << g
                                               << " past its staging was written";
    std::vector<float> results;
    for (int64_t o : outs)
      results.insert(results.end(), got.begin() + o, got.begin() + o + numel);
    return results;
  };
  auto cpu = makeCpuBackend(p, nullptr);
  std::vector<float> want = run(*cpu, false, false);
  // A group of one: the reduce-scatter and all-to-all give the input back,
  // the all-gather its (overlapping) input.
  for (int c = 0; c < 3; ++c)
    for (int64_t i = 0; i < numel; ++i)
      ASSERT_EQ(want[c * numel + i], init[i]) << p.calls[c].op << " element " << i;
  auto cpuPlanned = makeCpuBackend(p, nullptr);
  EXPECT_EQ(run(*cpuPlanned, true, false), want);
  Program small = p;
  small.calls[1].scratch = 1;
  EXPECT_THROW(makeCpuBackend(small, nullptr), Error);
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device (the CPU backend passed)";
  for (bool graphs : {false, true})
    for (bool planned : {false, true}) {
      CudaOptions o;
      o.graphs = graphs;
      auto gpu = makeCudaBackend(p, nullptr, o);
      SCOPED_TRACE(std::string(graphs ? "CUDA graphs" : "eager") +
                   (planned ? ", planned staging" : ", own staging"));
      EXPECT_EQ(run(*gpu, planned, graphs), want);
    }
}

} // namespace
