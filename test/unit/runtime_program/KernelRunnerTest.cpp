//===- KernelRunnerTest.cpp - calls of a compiled step on one rank --------===//
//
// Each call runs through KernelRunner on hand-built descriptors and is
// compared bit for bit with a direct call of the CPU kernel (and, where the
// kernel's meaning is at stake, with a naive loop to a tolerance).
//
//===----------------------------------------------------------------------===//

#include "TestPrograms.h"

#include "runtime/comm/Comm.h"
#include "runtime/cpu/ComputeType.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/program/CallDecoder.h"
#include "runtime/program/KernelRunner.h"
#include "runtime/program/KernelScratch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

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

/// xf.packed_attention and its gradient on a [B, S, Hkv, G + 2, D] qkv equal
/// xf.attention and xf.attention_grad on the q, k, v it holds, bit for bit
/// (dq, dk, dv packed into dqkv's slots), in compute type T.
template <class T> void expectPackedIsUnpacked(const char *dtype) {
  struct Case {
    int64_t B, S, Hkv, G, D;
  };
  for (const Case &c : {Case{2, 37, 2, 1, 8}, Case{1, 37, 2, 2, 16}, Case{2, 70, 1, 2, 4}})
    for (bool causal : {false, true}) {
      SCOPED_TRACE(testing::Message() << dtype << " B=" << c.B << " S=" << c.S << " Hkv="
                                      << c.Hkv << " G=" << c.G << " causal=" << causal);
      const int64_t B = c.B, S = c.S, Hkv = c.Hkv, G = c.G, D = c.D, Hq = Hkv * G;
      const std::vector<int64_t> qkvShape = {B, S, Hkv, G + 2, D}, qShape = {B, S, Hq, D},
                                 kvShape = {B, S, Hkv, D};
      json attrs = {{"scale", 1.0 / std::sqrt(double(D))}};
      if (causal)
        attrs["causal"] = true;
      auto t = [&](const std::vector<int64_t> &shape) { return tensor(dtype, shape); };
      rt::Program p = program(
          {}, {},
          json::array({call("xf.packed_attention", {t(qkvShape)}, {t(qShape)}, attrs),
                       call("xf.attention", {t(qShape), t(kvShape), t(kvShape)}, {t(qShape)},
                            attrs),
                       call("xf.packed_attention_grad", {t(qShape), t(qkvShape), t(qShape)},
                            {t(qkvShape)}, attrs),
                       call("xf.attention_grad",
                            {t(qShape), t(qShape), t(kvShape), t(kvShape), t(qShape)},
                            {t(qShape), t(kvShape), t(kvShape)}, attrs)}));
      KernelRunner runner(p, 0, nullptr);
      // Slots [first, first + heads) of every (b, s, kv head) row of qkv <->
      // a dense [B, S, Hkv * heads, D].
      const int64_t rows = B * S * Hkv, slot = D, row = (G + 2) * D;
      auto unpack = [&](const std::vector<T> &qkv, int64_t first, int64_t heads) {
        std::vector<T> dense(rows * heads * D);
        for (int64_t r = 0; r < rows; ++r)
          std::copy_n(qkv.data() + r * row + first * slot, heads * D,
                      dense.data() + r * heads * D);
        return dense;
      };
      auto packInto = [&](std::vector<T> &qkv, const std::vector<T> &dense, int64_t first,
                          int64_t heads) {
        for (int64_t r = 0; r < rows; ++r)
          std::copy_n(dense.data() + r * heads * D, heads * D,
                      qkv.data() + r * row + first * slot);
      };
      const std::vector<float> values = randomFloats(rows * row, 90, -2, 2);
      std::vector<T> qkv(values.begin(), values.end());
      std::vector<T> q = unpack(qkv, 0, G), k = unpack(qkv, G, 1), v = unpack(qkv, G + 1, 1);
      std::vector<T> out(q.size(), T(NAN)), outPacked(q.size(), T(NAN));
      void *attention[] = {q.data(), k.data(), v.data(), out.data()};
      runner.kernel(1, attention, {});
      void *packed[] = {qkv.data(), outPacked.data()};
      runner.kernel(0, packed, {});
      expectSame(outPacked, out);

      std::vector<T> dout(q.size());
      for (size_t i = 0; i < dout.size(); ++i)
        dout[i] = T(std::sin(0.37 * double(i)));
      std::vector<T> dq(q.size()), dk(k.size()), dv(v.size()), dqkv(qkv.size(), T(NAN));
      void *grad[] = {dout.data(), q.data(), k.data(), v.data(), out.data(),
                      dq.data(),   dk.data(), dv.data()};
      runner.kernel(3, grad, {});
      void *packedGrad[] = {dout.data(), qkv.data(), out.data(), dqkv.data()};
      runner.kernel(2, packedGrad, {});
      std::vector<T> want(qkv.size(), T(NAN));
      packInto(want, dq, 0, G);
      packInto(want, dk, G, 1);
      packInto(want, dv, G + 1, 1);
      expectSame(dqkv, want);
    }
}

TEST(KernelRunner, PackedAttentionIsAttentionOnTheUnpackedTensors) {
  expectPackedIsUnpacked<float>("F32");
  expectPackedIsUnpacked<double>("F64");
}

TEST(KernelRunner, PackedAttentionScratchIsTheGpuDenseCopies) {
  // The GPU unpacks q, k, v (and the backward packs dq, dk, dv) through the
  // call's scratch, each 256-aligned, the backward's row statistics after:
  // qkv [2, 37, 2, 2 + 2, 16] f32 has q of 18944 bytes and k, v of 9472; the
  // backward adds 2 x align256(2 * 4 * 37 * 4 = 1184) = 2560. A plan that
  // gives less is refused when the program is loaded, on the CPU as well.
  json attrs = {{"scale", 0.25}};
  json fwd = call("xf.packed_attention", {tensor("F32", {2, 37, 2, 4, 16})},
                  {tensor("F32", {2, 37, 4, 16})}, attrs);
  json bwd = call("xf.packed_attention_grad",
                  {tensor("F32", {2, 37, 4, 16}), tensor("F32", {2, 37, 2, 4, 16}),
                   tensor("F32", {2, 37, 4, 16})},
                  {tensor("F32", {2, 37, 2, 4, 16})}, attrs);
  rt::Program p = program({}, {}, json::array({fwd, bwd}));
  EXPECT_EQ(rt::callScratchBytes(*rt::decodeCall(p, 0, {}), p.mesh), 18944 + 2 * 9472);
  EXPECT_EQ(rt::callScratchBytes(*rt::decodeCall(p, 1, {}), p.mesh),
            2 * (18944 + 2 * 9472) + 2560);
  const auto l = rt::scratch::packedAttentionLayout(2, 37, 2, 2, 16, 4, true);
  EXPECT_EQ(std::vector<int64_t>({l.q, l.k, l.v, l.dq, l.dk, l.dv, l.workspace}),
            std::vector<int64_t>({0, 18944, 28416, 37888, 56832, 66304, 75776}));
  EXPECT_EQ(rt::scratch::packedAttentionLayout(0, 37, 2, 2, 16, 4, true).total, 0);
  bwd["scratch"] = 2 * (18944 + 2 * 9472) + 2559;
  EXPECT_THROW(KernelRunner(program({}, {}, json::array({bwd})), 0, nullptr), rt::Error);
}

TEST(KernelRunner, ConcatThenSplitReturnsTheOperands) {
  // Three operands of different sizes joined along dim 0, a middle dim and
  // the last dim, then cut again: the joined tensor is the naive
  // concatenation and the parts come back bit for bit (f32 and bf16 bytes).
  const std::vector<int64_t> base = {3, 4, 5};
  for (const char *dtype : {"F32", "BF16"})
    for (int64_t dim = 0; dim < 3; ++dim) {
      SCOPED_TRACE(testing::Message() << dtype << " dim " << dim);
      const std::vector<int64_t> sizes = {2, 1, 3};
      std::vector<json> parts;
      std::vector<std::vector<int64_t>> shapes;
      std::vector<int64_t> joined = base;
      joined[dim] = 0;
      for (int64_t n : sizes) {
        std::vector<int64_t> shape = base;
        shape[dim] = n;
        shapes.push_back(shape);
        parts.push_back(tensor(dtype, shape));
        joined[dim] += n;
      }
      json attrs = {{"dim", dim}};
      rt::Program p = program(
          {}, {},
          json::array({call("xf.concat", parts, {tensor(dtype, joined)}, attrs),
                       call("xf.split", {tensor(dtype, joined)}, parts, attrs)}));
      KernelRunner runner(p, 0, nullptr);
      const int64_t es = rt::dtype_size(rt::dtype_from_name(dtype));
      std::vector<std::vector<uint8_t>> in, back;
      for (size_t i = 0; i < shapes.size(); ++i) {
        std::vector<float> values = randomFloats(rt::num_elements(shapes[i]), 70 + i);
        in.emplace_back(values.size() * es);
        std::memcpy(in.back().data(), values.data(), in.back().size()); // any bytes
        back.emplace_back(in.back().size(), 0xAB);
      }
      std::vector<uint8_t> whole(rt::num_elements(joined) * es, 0xCD);
      void *concat[] = {in[0].data(), in[1].data(), in[2].data(), whole.data()};
      runner.kernel(0, concat, {});
      // The naive concatenation: element (o, j, rest) of part i lands at
      // (o, offset_i + j, rest).
      int64_t outer = 1, inner = es;
      for (int64_t d = 0; d < dim; ++d)
        outer *= base[d];
      for (int64_t d = dim + 1; d < 3; ++d)
        inner *= base[d];
      std::vector<uint8_t> want;
      for (int64_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < in.size(); ++i) {
          const int64_t run = sizes[i] * inner;
          want.insert(want.end(), in[i].begin() + o * run, in[i].begin() + (o + 1) * run);
        }
      EXPECT_EQ(whole, want);
      void *split[] = {whole.data(), back[0].data(), back[1].data(), back[2].data()};
      runner.kernel(1, split, {});
      EXPECT_EQ(back, in);
    }
}

TEST(KernelRunner, ConcatSplitAndPackedAttentionAreCheckedWhenDecoded) {
  auto errorOf = [](json c) -> std::string {
    try {
      KernelRunner runner(oneCall(c), 0, nullptr);
    } catch (const rt::Error &e) {
      return e.what();
    }
    return "";
  };
  auto f32 = [](std::vector<int64_t> shape) { return tensor("F32", shape); };
  json attn = {{"scale", 0.125}};
  struct Case {
    json call;
    std::string message;
  };
  const std::vector<Case> cases = {
      {call("xf.packed_attention", {f32({2, 5, 2, 3, 8})}, {f32({2, 5, 4, 8})}, attn),
       "the result must be [B, S, Hkv * G, D] = [2, 5, 2, 8], not [2, 5, 4, 8]"},
      {call("xf.packed_attention", {f32({2, 5, 2, 2, 8})}, {f32({2, 5, 0, 8})}, attn),
       "needs G >= 1 query heads, k and v (G + 2 >= 3)"},
      {call("xf.packed_attention", {f32({2, 5, 6, 8})}, {f32({2, 5, 2, 8})}, attn),
       "qkv must be [B, S, Hkv, G + 2, D], not [2, 5, 6, 8]"},
      {call("xf.packed_attention", {tensor("I32", {2, 5, 2, 3, 8})}, {f32({2, 5, 2, 8})}, attn),
       "operand #0 must be a float tensor"},
      {call("xf.packed_attention_grad", {f32({2, 5, 4, 8}), f32({2, 5, 2, 4, 8}),
                                         f32({2, 5, 4, 8})},
            {f32({2, 5, 2, 3, 8})}, attn),
       "dqkv must have qkv's shape [2, 5, 2, 4, 8], not [2, 5, 2, 3, 8]"},
      {call("xf.packed_attention_grad", {f32({2, 5, 2, 8}), f32({2, 5, 2, 4, 8}),
                                         f32({2, 5, 4, 8})},
            {f32({2, 5, 2, 4, 8})}, attn),
       "dout and out must be [B, S, Hkv * G, D] = [2, 5, 4, 8], not [2, 5, 2, 8] and "
       "[2, 5, 4, 8]"},
      {call("xf.concat", {f32({2, 3}), f32({2, 4})}, {f32({2, 8})}, {{"dim", 1}}),
       "the operands' sizes in dim 1 sum to 7, not 8 ([2, 8])"},
      {call("xf.concat", {f32({2, 3}), f32({3, 4})}, {f32({2, 7})}, {{"dim", 1}}),
       "operand #1 [3, 4] must match [2, 7] in every dim but 1"},
      {call("xf.concat", {f32({2, 3}), tensor("BF16", {2, 4})}, {f32({2, 7})}, {{"dim", 1}}),
       "operand #1 [2, 4] must have the result's dtype"},
      {call("xf.concat", {f32({2, 3})}, {f32({2, 3})}, {{"dim", 2}}),
       "dim 2 is outside the result [2, 3]"},
      {call("xf.split", {f32({6, 4})}, {f32({2, 4}), f32({3, 4})}, {{"dim", 0}}),
       "the results' sizes in dim 0 sum to 5, not 6 ([6, 4])"},
      {call("xf.split", {f32({6, 4})}, {f32({2, 4}), f32({4})}, {{"dim", 0}}),
       "result #1 [4] must match [6, 4] in every dim but 0"},
      {call("xf.split", {f32({6, 4})}, json::array(), {{"dim", 0}}),
       "takes 1 operands and 1 lists of n >= 1 results"},
      {call("xf.concat", json::array(), {f32({6, 4})}, {{"dim", 0}}),
       "takes 1 lists of n >= 1 tensors"},
      {call("xf.split", {f32({6, 4})}, {f32({6, 4})}), "attribute 'dim' (i64) is missing"},
  };
  for (const Case &c : cases) {
    std::string what = errorOf(c.call);
    EXPECT_NE(what.find(c.message), std::string::npos)
        << c.call.dump() << "\n  gave: " << (what.empty() ? "no error" : what);
  }
  // The packed ops need the whole sequence: their rows split over tp are
  // refused.
  json rows = call("xf.packed_attention", {f32({2, 5, 2, 3, 8})}, {f32({2, 5, 2, 8})}, attn);
  const json none = json::array(), tp = json::array({0});
  rows["operand_axes"] = json::array({json::array({none, tp, none, none, none})});
  rows["result_axes"] = json::array({json::array({none, tp, none, none})});
  try {
    KernelRunner runner(program({"tp"}, {2}, json::array({rows})), 0, nullptr);
    ADD_FAILURE() << "a split sequence was accepted";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("holds 5 of 10 sequence rows; packed attention needs "
                                         "the whole sequence"),
              std::string::npos)
        << e.what();
  }
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

TEST(KernelRunner, MultiAdamWIsTheSingleUpdatesAndCasts) {
  // Three parameters (decay, no decay, decay), two of them with bf16 copies:
  // one call computes what three xf.adamw calls and two xf.cast calls do,
  // bit for bit; a skipped step writes the copies of the unchanged weights.
  const std::vector<int64_t> sizes = {37, 5, 64};
  json scalarF32 = tensor("F32", {}), scalarI32 = tensor("I32", {});
  json ins = json::array(), outs = json::array();
  for (int list = 0; list < 4; ++list)
    for (int64_t n : sizes)
      ins.push_back(tensor("F32", {n}));
  for (json s : {scalarF32, scalarF32, scalarI32, scalarF32})
    ins.push_back(s);
  for (int list = 0; list < 3; ++list)
    for (int64_t n : sizes)
      outs.push_back(tensor("F32", {n}));
  outs.push_back(tensor("BF16", {sizes[0]}));
  outs.push_back(tensor("BF16", {sizes[2]}));
  json attrs = {{"beta1", 0.9},          {"beta2", 0.95},       {"epsilon", 1e-8},
                {"weight_decay", 0.1},   {"decay", {1, 0, 1}},  {"copies", {0, 2}}};
  KernelRunner runner(oneCall(call("xf.multi_adamw", ins, outs, attrs)), 0, nullptr);
  std::vector<std::vector<float>> p, g, m, v;
  for (size_t k = 0; k < sizes.size(); ++k) {
    p.push_back(randomFloats(sizes[k], 30 + k));
    g.push_back(randomFloats(sizes[k], 40 + k));
    m.push_back(randomFloats(sizes[k], 50 + k, 0, 0.1f));
    v.push_back(randomFloats(sizes[k], 60 + k, 0, 0.1f));
  }
  std::vector<std::vector<uint16_t>> copies = {std::vector<uint16_t>(sizes[0]),
                                               std::vector<uint16_t>(sizes[2])};
  float lr = 3e-4f, gradScale = 0.5f, skip = 0.f;
  int32_t step = 4;
  auto rp = p, rm = m, rv = v;
  std::vector<std::vector<uint16_t>> rc = copies;
  for (size_t k = 0; k < sizes.size(); ++k)
    cpu::adamw(rp[k].data(), g[k].data(), rm[k].data(), rv[k].data(), sizes[k], lr, 0.9, 0.95,
               1e-8, k == 1 ? 0.0 : 0.1, 5, gradScale);
  cpu::fromCompute(rp[0].data(), sizes[0], rt::DType::BF16, rc[0].data());
  cpu::fromCompute(rp[2].data(), sizes[2], rt::DType::BF16, rc[1].data());
  std::vector<void *> bufs;
  for (auto *list : {&p, &g, &m, &v})
    for (auto &t : *list)
      bufs.push_back(t.data());
  for (void *s : {static_cast<void *>(&lr), static_cast<void *>(&gradScale),
                  static_cast<void *>(&step), static_cast<void *>(&skip)})
    bufs.push_back(s);
  for (auto *list : {&p, &m, &v}) // in place
    for (auto &t : *list)
      bufs.push_back(t.data());
  for (auto &c : copies)
    bufs.push_back(c.data());
  runner.kernel(0, bufs.data(), {});
  for (size_t k = 0; k < sizes.size(); ++k) {
    expectSame(p[k], rp[k]);
    expectSame(m[k], rm[k]);
    expectSame(v[k], rv[k]);
  }
  expectSame(copies[0], rc[0]);
  expectSame(copies[1], rc[1]);
  // Skipped: nothing moves; the copies are rewritten from the weights.
  skip = 1.f;
  std::fill(copies[0].begin(), copies[0].end(), uint16_t(0));
  runner.kernel(0, bufs.data(), {});
  expectSame(p[0], rp[0]);
  expectSame(copies[0], rc[0]);
}

TEST(KernelRunner, MultiAdamWReadsABf16GradientAsItsWidening) {
  // A gradient reduced in bf16 and read directly (-xf-fuse-optimizer drops
  // the widening cast): the update equals xf.adamw on the widened gradient,
  // bit for bit; an f32 gradient beside it is unaffected.
  const int64_t A = 29, B = 6;
  json scalarF32 = tensor("F32", {}), scalarI32 = tensor("I32", {});
  json ins = {tensor("F32", {A}),  tensor("F32", {B}), tensor("BF16", {A}), tensor("F32", {B}),
              tensor("F32", {A}),  tensor("F32", {B}), tensor("F32", {A}),  tensor("F32", {B}),
              scalarF32,           scalarF32,          scalarI32};
  json outs = {tensor("F32", {A}), tensor("F32", {B}), tensor("F32", {A}),
               tensor("F32", {B}), tensor("F32", {A}), tensor("F32", {B})};
  json attrs = {{"beta1", 0.9},        {"beta2", 0.95},     {"epsilon", 1e-8},
                {"weight_decay", 0.1}, {"decay", {1, 0}},   {"copies", json::array()}};
  KernelRunner runner(oneCall(call("xf.multi_adamw", ins, outs, attrs)), 0, nullptr);
  std::vector<float> p0 = randomFloats(A, 80), p1 = randomFloats(B, 81), g1 = randomFloats(B, 82);
  std::vector<float> m0 = randomFloats(A, 83, 0, 0.1f), m1 = randomFloats(B, 84, 0, 0.1f);
  std::vector<float> v0 = randomFloats(A, 85, 0, 0.1f), v1 = randomFloats(B, 86, 0, 0.1f);
  std::vector<float> g0wide = randomFloats(A, 87);
  std::vector<uint16_t> g0(A);
  cpu::fromCompute(g0wide.data(), A, rt::DType::BF16, g0.data());
  cpu::toCompute(g0.data(), rt::DType::BF16, A, g0wide.data()); // the widening cast
  float lr = 3e-4f, gradScale = 0.5f;
  int32_t step = 2;
  auto rp0 = p0, rm0 = m0, rv0 = v0, rp1 = p1, rm1 = m1, rv1 = v1;
  cpu::adamw(rp0.data(), g0wide.data(), rm0.data(), rv0.data(), A, lr, 0.9, 0.95, 1e-8, 0.1, 3,
             gradScale);
  cpu::adamw(rp1.data(), g1.data(), rm1.data(), rv1.data(), B, lr, 0.9, 0.95, 1e-8, 0.0, 3,
             gradScale);
  void *bufs[] = {p0.data(), p1.data(), g0.data(), g1.data(), m0.data(), m1.data(),
                  v0.data(), v1.data(), &lr,       &gradScale, &step,    p0.data(),
                  p1.data(), m0.data(), m1.data(), v0.data(),  v1.data()};
  runner.kernel(0, bufs, {});
  expectSame(p0, rp0);
  expectSame(m0, rm0);
  expectSame(v0, rv0);
  expectSame(p1, rp1);
  expectSame(m1, rm1);
  expectSame(v1, rv1);
}

TEST(KernelRunner, MultiSumSquaresAddsEveryTensorInDouble) {
  json ins = {tensor("F32", {100}), tensor("BF16", {7}), tensor("F32", {3, 5})};
  KernelRunner runner(oneCall(call("xf.multi_sum_squares", ins, {tensor("F32", {})})), 0,
                      nullptr);
  std::vector<float> a = randomFloats(100, 70), c = randomFloats(15, 72);
  std::vector<float> bf = randomFloats(7, 71);
  std::vector<uint16_t> b(7);
  cpu::fromCompute(bf.data(), 7, rt::DType::BF16, b.data());
  std::vector<float> bw(7);
  cpu::toCompute(b.data(), rt::DType::BF16, 7, bw.data());
  double ref = cpu::sum_squares(a.data(), 100) + cpu::sum_squares(bw.data(), 7) +
               cpu::sum_squares(c.data(), 15);
  float out = 0.f;
  void *bufs[] = {a.data(), b.data(), c.data(), &out};
  runner.kernel(0, bufs, {});
  EXPECT_EQ(out, static_cast<float>(ref));
}

/// Runs one call of `op` on float buffers (operands then results, f32).
std::vector<std::vector<float>> runF32(const std::string &op, const json &operands,
                                       const json &results, const json &attrs,
                                       std::vector<std::vector<float>> in) {
  KernelRunner runner(
      oneCall(call(op, operands, results, attrs.is_null() ? json::object() : attrs)), 0, nullptr);
  std::vector<std::vector<float>> out;
  for (const json &r : results) {
    int64_t n = 1;
    for (int64_t d : r["shape"])
      n *= d;
    out.emplace_back(n);
  }
  std::vector<void *> bufs;
  for (auto &t : in)
    bufs.push_back(t.data());
  for (auto &t : out)
    bufs.push_back(t.data());
  runner.kernel(0, bufs.data(), {});
  return out;
}

TEST(KernelRunner, GemmEpiloguesAreTheUnfusedOpsInF32) {
  // f32: a fused call equals the unfused calls bit for bit (the product is
  // f32 either way, the epilogue the same loop).
  const int64_t B = 2, S = 3, H = 8, O = 12;
  json x = tensor("F32", {B, S, H}), w = tensor("F32", {H, O}), y = tensor("F32", {B, S, O}),
       bias = tensor("F32", {O});
  json mm = {{"equation", "bsh,ho->bso"}};
  auto X = randomFloats(B * S * H, 80), W = randomFloats(H * O, 81), Bv = randomFloats(O, 82),
       P = randomFloats(B * S * O, 83), DY = randomFloats(B * S * O, 84);
  auto prod = runF32("xf.matmul", {x, w}, json::array({y}), mm, {X, W})[0];
  auto biased = runF32("xf.bias_add", {y, bias}, json::array({y}), {}, {prod, Bv})[0];
  auto act = runF32("xf.gelu", json::array({y}), json::array({y}), {}, {biased})[0];

  expectSame(runF32("xf.matmul_bias", {x, w, bias}, json::array({y}), mm, {X, W, Bv})[0], biased);
  auto bg = runF32("xf.matmul_bias_gelu", {x, w, bias}, {y, y}, mm, {X, W, Bv});
  expectSame(bg[0], act);
  expectSame(bg[1], biased);
  auto dgelu = runF32("xf.gelu_grad", {y, y}, json::array({y}), {}, {prod, P})[0];
  expectSame(runF32("xf.matmul_dgelu", {x, w, y}, json::array({y}), mm, {X, W, P})[0], dgelu);
  // The weight gradient "bsh,bso->ho" and the bias gradient: dy summed over
  // b and s.
  json dw = tensor("F32", {H, O});
  json wg = {{"equation", "bsh,bso->ho"}};
  auto want = runF32("xf.matmul", {x, y}, json::array({dw}), wg, {X, DY})[0];
  auto wantDb = runF32("xf.reduce_sum", json::array({y}), json::array({bias}), {{"dims", {0, 1}}}, {DY})[0];
  auto got = runF32("xf.matmul_bgrad", {x, y}, {dw, bias}, wg, {X, DY});
  expectSame(got[0], want);
  expectSame(got[1], wantDb);
  // Bad shapes are the decoder's errors, naming the call.
  EXPECT_THROW(runF32("xf.matmul_bias", {x, w, tensor("F32", {O + 1})}, json::array({y}), mm, {X, W, Bv}),
               rt::Error);
  EXPECT_THROW(runF32("xf.matmul_bgrad", {x, y}, {dw, tensor("F32", {H})}, wg, {X, DY}),
               rt::Error);
}

TEST(KernelRunner, GemmEpiloguesRoundOnceInBf16) {
  // bf16 operands and results: the product and the epilogue in f32, each
  // result rounded once (what cuBLASLt's epilogues do).
  const int64_t M = 5, K = 8, N = 16;
  auto toBf16 = [](std::vector<float> v) {
    std::vector<uint16_t> b(v.size());
    cpu::fromCompute(v.data(), static_cast<int64_t>(v.size()), rt::DType::BF16, b.data());
    return b;
  };
  auto fromBf16 = [](const std::vector<uint16_t> &b) {
    std::vector<float> v(b.size());
    cpu::toCompute(b.data(), rt::DType::BF16, static_cast<int64_t>(b.size()), v.data());
    return v;
  };
  auto X = toBf16(randomFloats(M * K, 90)), W = toBf16(randomFloats(K * N, 91)),
       Bv = toBf16(randomFloats(N, 92));
  json mm = {{"equation", "mk,kn->mn"}};
  // Reference: the same call on the bf16 values widened, in f32, rounded.
  auto ref = runF32("xf.matmul_bias_gelu",
                    {tensor("F32", {M, K}), tensor("F32", {K, N}), tensor("F32", {N})},
                    {tensor("F32", {M, N}), tensor("F32", {M, N})}, mm,
                    {fromBf16(X), fromBf16(W), fromBf16(Bv)});
  KernelRunner runner(oneCall(call("xf.matmul_bias_gelu",
                                   {tensor("BF16", {M, K}), tensor("BF16", {K, N}),
                                    tensor("BF16", {N})},
                                   {tensor("BF16", {M, N}), tensor("BF16", {M, N})}, mm)),
                      0, nullptr);
  std::vector<uint16_t> y(M * N), pre(M * N);
  void *bufs[] = {X.data(), W.data(), Bv.data(), y.data(), pre.data()};
  runner.kernel(0, bufs, {});
  expectSame(y, toBf16(ref[0]));
  expectSame(pre, toBf16(ref[1]));
}

TEST(KernelRunner, MixedAddIsTheWideningCastThenTheAdd) {
  // -xf-fuse-epilogues folds add(x, cast(y)) into add(x, y) with y bf16: the
  // add widens y as it reads it, so the sum is bit-identical to the cast
  // followed by the f32 add, with y on either side.
  const int64_t n = 37;
  std::vector<uint16_t> Y(n);
  cpu::fromCompute(randomFloats(n, 95).data(), n, rt::DType::BF16, Y.data());
  std::vector<float> X = randomFloats(n, 96), widened(n);
  cpu::toCompute(Y.data(), rt::DType::BF16, n, widened.data());
  auto want = runF32("xf.add", {tensor("F32", {n}), tensor("F32", {n})},
                     json::array({tensor("F32", {n})}), {}, {X, widened})[0];
  for (bool yFirst : {false, true}) {
    json ins = yFirst ? json::array({tensor("BF16", {n}), tensor("F32", {n})})
                      : json::array({tensor("F32", {n}), tensor("BF16", {n})});
    KernelRunner runner(oneCall(call("xf.add", ins, json::array({tensor("F32", {n})}), json::object())), 0,
                        nullptr);
    std::vector<float> out(n, -7.0f);
    void *bufs[] = {yFirst ? static_cast<void *>(Y.data()) : X.data(),
                    yFirst ? static_cast<void *>(X.data()) : Y.data(), out.data()};
    runner.kernel(0, bufs, {});
    expectSame(out, want);
  }
}

TEST(KernelRunner, NormGradPlusResidualIsTheGradThenTheAdd) {
  // -xf-fuse-epilogues folds add(r, layernorm_grad(..).dx) into the norm's
  // gradient with a 4th operand: f32 results bit-identical to the two calls,
  // also written over r (in place, as the planner may place it).
  const int64_t R = 5, C = 12, n = R * C;
  auto DY = randomFloats(n, 100), X = randomFloats(n, 101, -1, 3), G = randomFloats(C, 102, 0.5, 1.5),
       RES = randomFloats(n, 103);
  json x = tensor("F32", {R, C}), g = tensor("F32", {C}), eps = {{"epsilon", 1e-5}};
  for (const char *op : {"xf.layernorm_grad", "xf.rmsnorm_grad"}) {
    SCOPED_TRACE(op);
    const bool ln = std::string(op) == "xf.layernorm_grad";
    json results = ln ? json::array({x, g, g}) : json::array({x, g});
    auto plain = runF32(op, {x, x, g}, results, eps, {DY, X, G});
    auto want = runF32("xf.add", {x, x}, json::array({x}), {}, {RES, plain[0]})[0];
    auto fused = runF32(op, {x, x, g, x}, results, eps, {DY, X, G, RES});
    expectSame(fused[0], want);
    expectSame(fused[1], plain[1]);
    // In place: dx over the residual gradient's buffer.
    KernelRunner runner(oneCall(call(op, {x, x, g, x}, results, eps)), 0, nullptr);
    std::vector<float> dy = DY, xs = X, gs = G, res = RES, dg(C), db(C);
    std::vector<void *> bufs = {dy.data(), xs.data(), gs.data(), res.data(), res.data(), dg.data()};
    if (ln)
      bufs.push_back(db.data());
    runner.kernel(0, bufs.data(), {});
    expectSame(res, want);
  }
  // The added gradient must have dx's dtype: a decoder error naming the call.
  EXPECT_THROW(runF32("xf.layernorm_grad", {x, x, g, tensor("BF16", {R, C})},
                      json::array({x, g, g}), eps, {DY, X, G, RES}),
               rt::Error);
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

// The planned scratch (KernelScratch.h, the buffer after the results) holds
// the CPU's logit chunks: the loss and its gradients are bit-identical to the
// runner's own memory, the scratch is written, and a plan that gives a call
// less than it needs is refused when the program is loaded.
TEST(KernelRunner, LinearCrossEntropyUsesThePlannedScratch) {
  const int64_t R = 600, H = 6, V = 9; // the CPU's chunks: 256, 256, 88 rows
  json fwd = call("xf.linear_cross_entropy",
                  {tensor("F32", {R, H}), tensor("F32", {V, H}), tensor("I32", {R})},
                  {tensor("F32", {})}, {{"ignore_index", -1}, {"vocab_major", true}});
  json bwd = call("xf.linear_cross_entropy_grad",
                  {tensor("F32", {}), tensor("F32", {R, H}), tensor("F32", {V, H}),
                   tensor("I32", {R})},
                  {tensor("F32", {R, H}), tensor("F32", {V, H})},
                  {{"ignore_index", -1}, {"vocab_major", true}});
  rt::Program own = program({}, {}, json::array({fwd, bwd}));
  // The most any backend uses: the GPU's [stats 3R f32][count 256][the
  // logits of one chunk of all R rows (V < R: chunks of rows), f32], each
  // 256-aligned, against the CPU's 256 x V logits in its compute type.
  const int64_t gpu = (3 * R * 4 + 255) / 256 * 256 + 256 + (R * V * 4 + 255) / 256 * 256;
  for (size_t c = 0; c < 2; ++c)
    EXPECT_EQ(rt::callScratchBytes(*rt::decodeCall(own, c, {}), own.mesh),
              std::max<int64_t>(gpu, 256 * V * 4));
  const int64_t bytes = rt::callScratchBytes(*rt::decodeCall(own, 0, {}), own.mesh);
  fwd["scratch"] = bwd["scratch"] = bytes;
  rt::Program planned = program({}, {}, json::array({fwd, bwd}));
  EXPECT_EQ(planned.calls[0].scratch, bytes);

  std::vector<float> x = randomFloats(R * H, 28), w = randomFloats(V * H, 29);
  std::vector<int32_t> targets = randomIds(R, V, 30);
  float dloss = 1.5f;
  auto run = [&](const rt::Program &p, std::vector<uint8_t> *scratch) {
    KernelRunner runner(p, 0, nullptr);
    std::vector<float> out(1 + R * H + V * H);
    float *loss = out.data(), *dx = loss + 1, *dw = dx + R * H;
    std::vector<void *> a = {x.data(), w.data(), targets.data(), loss};
    std::vector<void *> b = {&dloss, x.data(), w.data(), targets.data(), dx, dw};
    if (scratch) {
      a.push_back(scratch->data());
      b.push_back(scratch->data());
    }
    runner.kernel(0, a.data(), {});
    runner.kernel(1, b.data(), {});
    return out;
  };
  std::vector<uint8_t> scratch(static_cast<size_t>(bytes), 0xff);
  expectSame(run(planned, &scratch), run(own, nullptr));
  EXPECT_TRUE(std::any_of(scratch.begin(), scratch.end(), [](uint8_t v) { return v != 0xff; }));

  fwd["scratch"] = bytes - 1;
  try {
    KernelRunner runner(program({}, {}, json::array({fwd})), 0, nullptr);
    FAIL() << "expected an error";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("call 0 (xf.linear_cross_entropy): the plan gives it " +
                                         std::to_string(bytes - 1) +
                                         " bytes of scratch, its kernel needs " +
                                         std::to_string(bytes)),
              std::string::npos)
        << e.what();
  }
}

// The plan decodes a call on one rank; the ranks of a padded vocabulary's
// split have fewer class columns in their last block, and the CPU's chunk of
// a narrower block can hold more logits (8 Mi / c rows of c). The scratch is
// bounded over every class count, so it is the same on every rank and
// covers each one's chunk.
TEST(KernelRunner, LinearCrossEntropyScratchCoversEveryBlockOfASplit) {
  const int64_t rows = 1000, local = 40000, hidden = 16;
  rt::DecodedCall d;
  d.kind = rt::OpKind::LinearCrossEntropy;
  d.operands = {{rt::DType::F32, {rows, hidden}}, {rt::DType::F32, {local, hidden}},
                {rt::DType::I32, {rows}}};
  d.results = {{rt::DType::F32, {}}};
  d.block.local = d.block.global = local;
  rt::MeshDesc mesh;
  d.classes = local;
  const int64_t bytes = rt::callScratchBytes(d, mesh);
  int64_t most = 0;
  for (int64_t c = 1; c <= local; ++c) {
    d.classes = c;
    EXPECT_EQ(rt::callScratchBytes(d, mesh), bytes) << c;
    most = std::max(most, std::min(rt::scratch::cpuLogitChunkRows(c), rows) * c * 4);
  }
  EXPECT_GT(most, std::min(rt::scratch::cpuLogitChunkRows(local), rows) * local * 4);
  EXPECT_GE(bytes, most);
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
  // A loss's classes must lie in [1, the vocabulary].
  for (int64_t classes : {0, 6})
    EXPECT_THROW(KernelRunner(oneCall(call("xf.cross_entropy",
                                           {tensor("F32", {4, 5}), tensor("I32", {4})},
                                           {tensor("F32", {})},
                                           {{"ignore_index", -1}, {"classes", classes}})),
                              0, nullptr),
                 rt::Error)
        << classes;
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
