//===- KernelRunnerTest.cpp - calls of a compiled step on one rank --------===//
//
// Each call runs through KernelRunner on hand-built descriptors and is
// compared bit for bit with a direct call of the CPU kernel (and, where the
// kernel's meaning is at stake, with a naive loop to a tolerance).
//
//===----------------------------------------------------------------------===//

#include "TestPrograms.h"

#include "runtime/comm/Comm.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/program/KernelRunner.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace shardc;
using namespace shardc::test;
using rt::KernelRunner;
using rt::StepContext;

namespace {

/// Element-wise bit-identical comparison (EXPECT_EQ on floats).
template <class T> void expectSame(const std::vector<T> &actual, const std::vector<T> &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  int reported = 0;
  for (size_t i = 0; i < actual.size() && reported < 5; ++i)
    if (!(actual[i] == expected[i]) && !(actual[i] != actual[i] && expected[i] != expected[i])) {
      ADD_FAILURE() << "element " << i << ": " << actual[i] << " vs " << expected[i];
      ++reported;
    }
}


TEST(KernelRunner, MatmulTransposedLhs) {
  // lhs [b, k, m]: the GEMM reads it transposed in place.
  const int64_t B = 2, K = 5, M = 3, N = 4;
  rt::Program p = oneCall(call("xf.matmul", {tensor("F32", {B, K, M}), tensor("F32", {B, K, N})},
                               {tensor("F32", {B, M, N})}, {{"equation", "bkm,bkn->bmn"}}));
  KernelRunner runner(p, 0, nullptr);
  std::vector<float> a = randomFloats(B * K * M, 1), b = randomFloats(B * K * N, 2),
                     out(B * M * N), ref(B * M * N);
  void *bufs[] = {a.data(), b.data(), out.data()};
  runner.kernel(0, bufs, {});
  cpu::gemm_batched<float>(B, true, false, M, N, K, 1.f, a.data(), M, M * K, b.data(), N, K * N,
                           0.f, ref.data(), N, M * N);
  expectSame(out, ref);
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += double(a[(bb * K + k) * M + m]) * b[(bb * K + k) * N + n];
        EXPECT_NEAR(out[(bb * M + m) * N + n], s, 1e-5);
      }
}

TEST(KernelRunner, MatmulTransposedRhsAndResult) {
  // rhs [n, k] is read transposed; the natural [m, n] result is transposed
  // into the equation's [n, m].
  const int64_t M = 3, N = 5, K = 4;
  rt::Program p = oneCall(call("xf.matmul", {tensor("F32", {M, K}), tensor("F32", {N, K})},
                               {tensor("F32", {N, M})}, {{"equation", "mk,nk->nm"}}));
  KernelRunner runner(p, 0, nullptr);
  std::vector<float> a = randomFloats(M * K, 3), b = randomFloats(N * K, 4), out(N * M),
                     natural(M * N), ref(N * M);
  void *bufs[] = {a.data(), b.data(), out.data()};
  runner.kernel(0, bufs, {});
  cpu::gemm<float>(false, true, M, N, K, 1.f, a.data(), K, b.data(), K, 0.f, natural.data(), N);
  cpu::transpose(natural.data(), ref.data(), {M, N}, {1, 0});
  expectSame(out, ref);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += double(a[m * K + k]) * b[n * K + k];
      EXPECT_NEAR(out[n * M + m], s, 1e-5);
    }
}

TEST(KernelRunner, MatmulResultAliasingAnOperandIsCopied) {
  // A GEMM is not correct in place: the runner must read lhs from a copy.
  const int64_t M = 4;
  rt::Program p = oneCall(call("xf.matmul", {tensor("F32", {M, M}), tensor("F32", {M, M})},
                               {tensor("F32", {M, M})}, {{"equation", "mk,kn->mn"}}));
  KernelRunner runner(p, 0, nullptr);
  std::vector<float> a = randomFloats(M * M, 5), b = randomFloats(M * M, 6), ref(M * M);
  cpu::gemm<float>(false, false, M, M, M, 1.f, a.data(), M, b.data(), M, 0.f, ref.data(), M);
  void *bufs[] = {a.data(), b.data(), a.data()};
  runner.kernel(0, bufs, {});
  expectSame(a, ref);
}

TEST(KernelRunner, LayerNormF32InPlace) {
  const int64_t R = 6, C = 16;
  rt::Program p = oneCall(
      call("xf.layernorm", {tensor("F32", {2, 3, C}), tensor("F32", {C}), tensor("F32", {C})},
           {tensor("F32", {2, 3, C})}, {{"epsilon", 1e-5}}));
  KernelRunner runner(p, 0, nullptr);
  std::vector<float> x = randomFloats(R * C, 7), g = randomFloats(C, 8), b = randomFloats(C, 9),
                     out(R * C), ref(R * C);
  cpu::layernorm_forward<float>(x.data(), g.data(), b.data(), ref.data(), nullptr, nullptr, R, C,
                                1e-5);
  void *bufs[] = {x.data(), g.data(), b.data(), out.data()};
  runner.kernel(0, bufs, {});
  expectSame(out, ref);
  void *inPlace[] = {x.data(), g.data(), b.data(), x.data()};
  runner.kernel(0, inPlace, {});
  expectSame(x, ref);
}

TEST(KernelRunner, LayerNormBf16RoundsOnce) {
  const int64_t R = 4, C = 8;
  rt::Program p = oneCall(
      call("xf.layernorm", {tensor("BF16", {R, C}), tensor("BF16", {C}), tensor("BF16", {C})},
           {tensor("BF16", {R, C})}, {{"epsilon", 1e-5}}));
  KernelRunner runner(p, 0, nullptr);
  auto bf16 = [](const std::vector<float> &v) {
    std::vector<uint16_t> o(v.size());
    cpu::cast_f32_to_bf16(v.data(), o.data(), v.size());
    return o;
  };
  std::vector<uint16_t> x = bf16(randomFloats(R * C, 10)), g = bf16(randomFloats(C, 11)),
                        b = bf16(randomFloats(C, 12)), out(R * C), ref(R * C);
  std::vector<float> xf(R * C), gf(C), bf(C), yf(R * C);
  cpu::cast_bf16_to_f32(x.data(), xf.data(), R * C);
  cpu::cast_bf16_to_f32(g.data(), gf.data(), C);
  cpu::cast_bf16_to_f32(b.data(), bf.data(), C);
  cpu::layernorm_forward<float>(xf.data(), gf.data(), bf.data(), yf.data(), nullptr, nullptr, R,
                                C, 1e-5);
  cpu::cast_f32_to_bf16(yf.data(), ref.data(), R * C);
  void *bufs[] = {x.data(), g.data(), b.data(), out.data()};
  runner.kernel(0, bufs, {});
  expectSame(out, ref);
}

TEST(KernelRunner, AttentionCausalGroupedHeads) {
  const int64_t B = 2, S = 5, Hq = 4, Hkv = 2, D = 8;
  double scale = 1.0 / std::sqrt(double(D));
  rt::Program p = oneCall(call("xf.attention",
                               {tensor("F32", {B, S, Hq, D}), tensor("F32", {B, S, Hkv, D}),
                                tensor("F32", {B, S, Hkv, D})},
                               {tensor("F32", {B, S, Hq, D})},
                               {{"causal", true}, {"scale", scale}}));
  KernelRunner runner(p, 0, nullptr);
  std::vector<float> q = randomFloats(B * S * Hq * D, 13), k = randomFloats(B * S * Hkv * D, 14),
                     v = randomFloats(B * S * Hkv * D, 15), out(q.size()), ref(q.size());
  cpu::attention_forward<float>(q.data(), k.data(), v.data(), ref.data(), nullptr, B, S, Hq, Hkv,
                                D, true, scale);
  void *bufs[] = {q.data(), k.data(), v.data(), out.data()};
  runner.kernel(0, bufs, {});
  expectSame(out, ref);
}

TEST(KernelRunner, EmbeddingVocabularyBlock) {
  // tp=2 splits the table's rows: rank 1 holds rows [V/2, V).
  const int64_t V = 10, Dim = 4, N = 12;
  json c = call("xf.embedding", {tensor("F32", {V / 2, Dim}), tensor("I32", {3, 4})},
                {tensor("F32", {3, 4, Dim})});
  c["operand_axes"] = {{{0}, json::array()}, {json::array(), json::array()}};
  c["result_axes"] = {{json::array(), json::array(), json::array()}};
  rt::Program p = program({"tp"}, {2}, json::array({c}));
  KernelRunner runner(p, 1, nullptr);
  std::vector<float> table = randomFloats(V / 2 * Dim, 16), out(N * Dim, -7.f), ref(N * Dim);
  std::vector<int32_t> ids = randomIds(N, V, 17);
  void *bufs[] = {table.data(), ids.data(), out.data()};
  runner.kernel(0, bufs, {});
  cpu::embedding_block(table.data(), ids.data(), ref.data(), N, V, V / 2, V / 2, Dim);
  expectSame(out, ref);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t d = 0; d < Dim; ++d)
      EXPECT_EQ(out[i * Dim + d], ids[i] >= V / 2 ? table[(ids[i] - V / 2) * Dim + d] : 0.f);
}

TEST(KernelRunner, DropoutBlockMatchesTheWholeTensor) {
  // dp splits dim 0, tp dim 1: rank 3 holds block (1, 1) of a [4, 6] tensor.
  const int64_t R = 2, C = 3;
  json c = call("xf.dropout", {tensor("F32", {R, C})}, {tensor("F32", {R, C})},
                {{"rate", 0.3}, {"key", 7}});
  c["operand_axes"] = {{{0}, {1}}};
  c["result_axes"] = {{{0}, {1}}};
  rt::Program p = program({"dp", "tp"}, {2, 2}, json::array({c}));
  KernelRunner runner(p, 3, nullptr);
  std::vector<float> global = randomFloats(4 * 6, 18, 0.5f, 1.5f), globalOut(4 * 6);
  StepContext ctx{99, 5, true};
  cpu::dropout_block<float>(global.data(), globalOut.data(), {4, 6}, {0, 0}, {4, 6}, 0.3, 99, 5,
                            7);
  std::vector<float> x(R * C), out(R * C), ref(R * C);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t cc = 0; cc < C; ++cc) {
      x[r * C + cc] = global[(2 + r) * 6 + 3 + cc];
      ref[r * C + cc] = globalOut[(2 + r) * 6 + 3 + cc];
    }
  void *bufs[] = {x.data(), out.data()};
  runner.kernel(0, bufs, ctx);
  expectSame(out, ref);
  // In place, and not training: a copy.
  void *inPlace[] = {x.data(), x.data()};
  std::vector<float> before = x;
  runner.kernel(0, inPlace, StepContext{99, 5, false});
  expectSame(x, before);
}

TEST(KernelRunner, AdamWInPlace) {
  const int64_t N = 37;
  json scalarF32 = tensor("F32", {}), scalarI32 = tensor("I32", {});
  json t = tensor("F32", {N});
  json attrs = {{"beta1", 0.9}, {"beta2", 0.95}, {"epsilon", 1e-8}, {"weight_decay", 0.1}};
  rt::Program p = oneCall(call("xf.adamw", {t, t, t, t, scalarF32, scalarF32, scalarI32, scalarF32},
                               {t, t, t}, attrs));
  KernelRunner runner(p, 0, nullptr);
  std::vector<float> param = randomFloats(N, 19), grad = randomFloats(N, 20),
                     m = randomFloats(N, 21, 0, 0.1f), v = randomFloats(N, 22, 0, 0.1f);
  std::vector<float> rp = param, rm = m, rv = v;
  float lr = 3e-4f, gradScale = 0.5f, skip = 0.f;
  int32_t step = 4;
  cpu::adamw(rp.data(), grad.data(), rm.data(), rv.data(), N, lr, 0.9, 0.95, 1e-8, 0.1, 5,
             gradScale);
  void *bufs[] = {param.data(), grad.data(), m.data(), v.data(), &lr, &gradScale, &step, &skip,
                  param.data(), m.data(), v.data()};
  runner.kernel(0, bufs, {});
  expectSame(param, rp);
  expectSame(m, rm);
  expectSame(v, rv);
  // A skipped step leaves everything as it was.
  skip = 1.f;
  runner.kernel(0, bufs, {});
  expectSame(param, rp);
  expectSame(m, rm);
  expectSame(v, rv);
}

TEST(KernelRunner, CrossEntropyWholeVocabulary) {
  const int64_t R = 6, V = 11;
  json maskT = tensor("F32", {2, 3});
  rt::Program p = program(
      {}, {},
      json::array({call("xf.cross_entropy",
                        {tensor("F32", {2, 3, V}), tensor("I32", {2, 3}), maskT},
                        {tensor("F32", {})}, {{"ignore_index", -100}}),
                   call("xf.cross_entropy_grad",
                        {tensor("F32", {}), tensor("F32", {2, 3, V}), tensor("I32", {2, 3}), maskT},
                        {tensor("F32", {2, 3, V})}, {{"ignore_index", -100}})}));
  KernelRunner runner(p, 0, nullptr);
  std::vector<float> logits = randomFloats(R * V, 23, -3, 3), mask = {1, 1, 0, 1, 1, 1};
  std::vector<int32_t> targets = randomIds(R, V, 24);
  targets[4] = -100;
  float loss = 0, dloss = 0.75f;
  void *fwd[] = {logits.data(), targets.data(), mask.data(), &loss};
  runner.kernel(0, fwd, {});
  EXPECT_EQ(loss, static_cast<float>(cpu::cross_entropy(logits.data(), targets.data(),
                                                         mask.data(), R, V, -100, nullptr)));
  std::vector<float> dlogits(R * V), ref(R * V);
  void *bwd[] = {&dloss, logits.data(), targets.data(), mask.data(), dlogits.data()};
  runner.kernel(1, bwd, {});
  cpu::cross_entropy_backward<float>(dloss, logits.data(), targets.data(), mask.data(),
                                     ref.data(), R, V, -100);
  expectSame(dlogits, ref);
}

TEST(KernelRunner, LinearCrossEntropyVocabMajor) {
  const int64_t R = 5, H = 6, V = 9;
  rt::Program p = oneCall(call("xf.linear_cross_entropy",
                               {tensor("F32", {R, H}), tensor("F32", {V, H}), tensor("I32", {R})},
                               {tensor("F32", {})}, {{"ignore_index", -1}, {"vocab_major", true}}));
  KernelRunner runner(p, 0, nullptr);
  std::vector<float> x = randomFloats(R * H, 25), w = randomFloats(V * H, 26);
  std::vector<int32_t> targets = randomIds(R, V, 27);
  float loss = 0;
  void *bufs[] = {x.data(), w.data(), targets.data(), &loss};
  runner.kernel(0, bufs, {});
  EXPECT_EQ(loss, static_cast<float>(cpu::linear_cross_entropy(
                      x.data(), w.data(), true, targets.data(), (const float *)nullptr, R, H, V,
                      -1, nullptr)));
}

TEST(KernelRunner, ElementwiseInPlaceAndScalars) {
  const int64_t N = 10;
  json t = tensor("F32", {N}), s = tensor("F32", {}), i = tensor("I32", {});
  rt::Program p = program(
      {}, {},
      json::array({call("xf.add", {t, t}, {t}), call("xf.gelu", {t}, {t}),
                   call("xf.scale", {t}, {t}, {{"factor", 0.25}}),
                   call("xf.count_step", {i, s}, {i}),
                   call("xf.clip_grad_norm", {s}, {s, s, s}, {{"max_norm", 1.0}}),
                   call("xf.transpose", {tensor("F32", {2, 5})}, {tensor("F32", {5, 2})},
                        {{"permutation", {1, 0}}})}));
  KernelRunner runner(p, 0, nullptr);
  std::vector<float> a = randomFloats(N, 28), b = randomFloats(N, 29), ref(N);
  cpu::add(a.data(), b.data(), ref.data(), N);
  void *addBufs[] = {a.data(), b.data(), b.data()};
  runner.kernel(0, addBufs, {});
  expectSame(b, ref);
  cpu::gelu_tanh(b.data(), ref.data(), N);
  void *geluBufs[] = {b.data(), b.data()};
  runner.kernel(1, geluBufs, {});
  expectSame(b, ref);
  cpu::scale(b.data(), ref.data(), N, 0.25);
  void *scaleBufs[] = {b.data(), b.data()};
  runner.kernel(2, scaleBufs, {});
  expectSame(b, ref);

  int32_t step = 3, next = 0;
  float skip = 1.f;
  void *countBufs[] = {&step, &skip, &next};
  runner.kernel(3, countBufs, {});
  EXPECT_EQ(next, 3);
  skip = 0.f;
  runner.kernel(3, countBufs, {});
  EXPECT_EQ(next, 4);

  float sumsq = 16.f, norm = 0, coef = 0, inf = 0;
  void *clipBufs[] = {&sumsq, &norm, &coef, &inf};
  runner.kernel(4, clipBufs, {});
  EXPECT_EQ(norm, 4.f);
  EXPECT_EQ(coef, static_cast<float>(1.0 / (4.0 + 1e-6)));
  EXPECT_EQ(inf, 0.f);

  // A transpose onto its own operand reads a copy.
  std::vector<float> m = randomFloats(N, 30), mt(N);
  cpu::transpose(m.data(), mt.data(), {2, 5}, {1, 0});
  void *trBufs[] = {m.data(), m.data()};
  runner.kernel(5, trBufs, {});
  expectSame(m, mt);
}

TEST(KernelRunner, SingleRankCollectives) {
  json t = tensor("F32", {3, 4});
  json ar = call("shard.all_reduce", {t}, {t}, {{"grid_axes", json::array()}, {"reduction", "sum"}});
  ar["comm"] = 0;
  rt::Program p = program({}, {}, json::array({ar}), {rt::Axes{}});
  std::unique_ptr<rt::Communicators> comm = rt::makeSingleRankCommunicators(p.mesh);
  KernelRunner runner(p, 0, comm.get());
  std::vector<float> in = randomFloats(12, 31), out(12);
  runner.collective(0, 0, in.data(), out.data());
  expectSame(out, in);
  EXPECT_THROW(runner.kernel(0, nullptr, {}), rt::Error);
}

TEST(KernelRunner, ErrorsNameTheCall) {
  rt::Program bad = program({}, {},
                            json::array({call("xf.gelu", {tensor("F32", {2})}, {tensor("F32", {2})}),
                                         call("xf.frobnicate", json::array(),
                                              {tensor("F32", {2})})}));
  try {
    KernelRunner runner(bad, 0, nullptr);
    FAIL() << "expected an error";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("call 1 (xf.frobnicate)"), std::string::npos) << e.what();
  }
  rt::Program noAttr = oneCall(call("xf.layernorm",
                                    {tensor("F32", {2, 4}), tensor("F32", {4}), tensor("F32", {4})},
                                    {tensor("F32", {2, 4})}));
  EXPECT_THROW(KernelRunner(noAttr, 0, nullptr), rt::Error);
  rt::Program idsAsFloat = oneCall(call("xf.gelu", {tensor("I32", {2})}, {tensor("F32", {2})}));
  EXPECT_THROW(KernelRunner(idsAsFloat, 0, nullptr), rt::Error);
  // A split loss without communicators.
  json ce = call("xf.cross_entropy", {tensor("F32", {4, 5}), tensor("I32", {4})},
                 {tensor("F32", {})}, {{"ignore_index", -1}});
  ce["operand_axes"] = {{json::array(), {0}}, {json::array()}};
  ce["result_axes"] = {json::array()};
  EXPECT_THROW(KernelRunner(program({"tp"}, {2}, json::array({ce})), 0, nullptr), rt::Error);
}

TEST(KernelRunner, AxesSetsNeeded) {
  json ce = call("xf.cross_entropy", {tensor("F32", {4, 5}), tensor("I32", {4})},
                 {tensor("F32", {})}, {{"ignore_index", -1}, {"token_axes", {0}}});
  ce["operand_axes"] = {{json::array(), {1}}, {json::array()}};
  ce["result_axes"] = {json::array()};
  rt::Program p = program({"dp", "tp"}, {2, 2}, json::array({ce}),
                          {rt::Axes{1}, rt::Axes{0, 1}, rt::Axes{1}});
  EXPECT_EQ(KernelRunner::axesSetsNeeded(p), (std::vector<rt::Axes>{{1}, {0, 1}, {0}}));
}

} // namespace
