//===- CommChecks.h - one check of the communicators, any transport -*- C++ -*-===//
//
// Every rank's input is a deterministic function of its rank, so each rank
// computes the expected result of every collective locally from all inputs
// (concatenation, slicing, sums in group order) and compares bit for bit. A
// split-vocabulary cross-entropy is checked against the unsplit loss. Run
// over MPI (CommMpiTest.cpp, 4 processes) and in one process on 4 threads
// (InProcessCommTest.cpp): the transports must agree bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_TEST_UNIT_RUNTIME_PROGRAM_COMMCHECKS_H
#define SHARDC_TEST_UNIT_RUNTIME_PROGRAM_COMMCHECKS_H

#include "TestPrograms.h"

#include "runtime/comm/Comm.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/program/KernelRunner.h"
#include "runtime/program/KernelScratch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace shardc::test {

using rt::Axes;
using rt::KernelRunner;

inline const std::vector<int64_t> kShape = {4, 4, 3};
inline const int64_t kNumel = 48;

inline std::vector<float> inputOf(int64_t rank) { return randomFloats(kNumel, 100 + rank); }

inline int64_t linear(const std::vector<int64_t> &shape, const std::vector<int64_t> &idx) {
  int64_t l = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    l = l * shape[d] + idx[d];
  return l;
}

inline std::vector<int64_t> unravel(const std::vector<int64_t> &shape, int64_t l) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = l % shape[d];
    l /= shape[d];
  }
  return idx;
}

/// The collectives of one communicator, in call-table order.
enum Coll { Gather1, Gather0, Reduce, ReduceBf16, ReduceI32, Scatter1, Slice0, ToAll, kPerComm };

inline json collectiveCalls(int comm, const Axes &axes, int64_t n) {
  auto t = [](std::vector<int64_t> shape, const char *dtype = "F32") {
    return tensor(dtype, std::move(shape));
  };
  auto with = [&](json c) {
    c["comm"] = comm;
    c["attrs"]["grid_axes"] = axes;
    return c;
  };
  json calls = json::array();
  calls.push_back(with(call("shard.all_gather", {t(kShape)}, {t({4, 4 * n, 3})},
                            {{"gather_axis", 1}})));
  calls.push_back(with(call("shard.all_gather", {t(kShape)}, {t({4 * n, 4, 3})},
                            {{"gather_axis", 0}})));
  calls.push_back(with(call("shard.all_reduce", {t(kShape)}, {t(kShape)}, {{"reduction", "sum"}})));
  calls.push_back(with(call("shard.all_reduce", {t(kShape, "BF16")}, {t(kShape, "BF16")},
                            {{"reduction", "sum"}})));
  calls.push_back(with(call("shard.all_reduce", {t(kShape, "I32")}, {t(kShape, "I32")},
                            {{"reduction", "sum"}})));
  calls.push_back(with(call("shard.reduce_scatter", {t(kShape)}, {t({4, 4 / n, 3})},
                            {{"scatter_axis", 1}, {"reduction", "sum"}})));
  calls.push_back(with(call("shard.all_slice", {t(kShape)}, {t({4 / n, 4, 3})},
                            {{"slice_axis", 0}})));
  calls.push_back(with(call("shard.all_to_all", {t(kShape)}, {t({4 / n, 4, 3 * n})},
                            {{"split_axis", 0}, {"concat_axis", 2}})));
  return calls;
}

inline const std::vector<Axes> kComms = {{1}, {0}, {0, 1}};

inline rt::Program collectivesProgram() {
  json calls = json::array();
  rt::MeshDesc mesh{{"dp", "tp"}, {2, 2}};
  for (size_t c = 0; c < kComms.size(); ++c)
    for (json &e : collectiveCalls(static_cast<int>(c), kComms[c], mesh.size(kComms[c])))
      calls.push_back(e);
  return program({"dp", "tp"}, {2, 2}, calls, kComms);
}

template <class T> void expectSame(const std::vector<T> &a, const std::vector<T> &b,
                                   const std::string &what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < a.size() && bad < 3; ++i)
    if (!(a[i] == b[i])) {
      ADD_FAILURE() << what << ": element " << i << " is " << a[i] << ", expected " << b[i];
      ++bad;
    }
}

/// Every collective on every communicator of a dp=2,tp=2 mesh, as rank
/// `comm.rank()`, against the result computed from all ranks' inputs. With
/// `planned`, each call stages through a scratch buffer given to it, as a
/// compiled step's plan gives it (KernelScratch.h collectiveStaging, with
/// room for a copy of an overlapping input): the results are the same and
/// nothing past the planned bytes is written.
inline void checkCollectives(rt::Communicators &comm, bool planned = false) {
  rt::Program p = collectivesProgram();
  if (planned)
    for (size_t i = 0; i < p.calls.size(); ++i) {
      std::unique_ptr<rt::DecodedCall> d = rt::decodeCall(p, i, {});
      p.calls[i].scratch = rt::scratch::collectiveStaging(
                               *d, p.mesh.size(p.comms[p.calls[i].comm].axes), true, false)
                               .total;
    }
  int64_t rank = comm.rank();
  KernelRunner runner(p, rank, &comm);
  constexpr uint8_t kGuard = 0xA5;
  constexpr size_t kGuardBytes = 64;
  auto run = [&](int call, int c, const void *in, void *out) {
    if (!planned) {
      runner.collective(call, c, in, out);
      return;
    }
    const size_t bytes = static_cast<size_t>(p.calls[call].scratch);
    std::vector<uint8_t> staging(bytes + kGuardBytes, kGuard);
    runner.collective(call, c, in, out, bytes > 0 ? staging.data() : nullptr);
    for (size_t i = bytes; i < staging.size(); ++i)
      if (staging[i] != kGuard) {
        ADD_FAILURE() << p.calls[call].op << ": byte " << i << " past its " << bytes
                      << " planned staging bytes was written";
        break;
      }
  };

  std::vector<std::vector<float>> inputs;
  for (int64_t r = 0; r < 4; ++r)
    inputs.push_back(inputOf(r));
  const std::vector<float> &mine = inputs[rank];

  for (size_t c = 0; c < kComms.size(); ++c) {
    const Axes &axes = kComms[c];
    std::vector<int64_t> group = p.mesh.group(axes, rank);
    int64_t n = static_cast<int64_t>(group.size());
    int64_t k = std::find(group.begin(), group.end(), rank) - group.begin();
    std::string where = "comm " + rt::axesString(axes) + " on rank " + std::to_string(rank);
    int base = static_cast<int>(c) * kPerComm;

    // all_gather along dims 1 and 0.
    for (int64_t dim : {1, 0}) {
      std::vector<int64_t> shape = kShape;
      shape[dim] *= n;
      std::vector<float> out(kNumel * n), ref(kNumel * n);
      for (int64_t l = 0; l < kNumel * n; ++l) {
        std::vector<int64_t> idx = unravel(shape, l);
        int64_t member = idx[dim] / kShape[dim];
        idx[dim] %= kShape[dim];
        ref[l] = inputs[group[member]][linear(kShape, idx)];
      }
      run(base + (dim == 1 ? Gather1 : Gather0), static_cast<int>(c), mine.data(),
                        out.data());
      expectSame(out, ref, "all_gather dim " + std::to_string(dim) + " " + where);
      // The input inside the output's bytes: read from a copy.
      std::vector<float> both(kNumel * n);
      std::copy(mine.begin(), mine.end(), both.begin() + (n - 1) * kNumel);
      run(base + (dim == 1 ? Gather1 : Gather0), static_cast<int>(c),
          both.data() + (n - 1) * kNumel, both.data());
      expectSame(both, ref, "all_gather dim " + std::to_string(dim) + " over its input " + where);
    }

    // all_reduce: f32 and bf16 sum in float in group order, i32 in int64.
    {
      std::vector<float> out(kNumel), ref(kNumel);
      for (int64_t l = 0; l < kNumel; ++l) {
        float acc = inputs[group[0]][l];
        for (int64_t m = 1; m < n; ++m)
          acc += inputs[group[m]][l];
        ref[l] = acc;
      }
      run(base + Reduce, static_cast<int>(c), mine.data(), out.data());
      expectSame(out, ref, "all_reduce f32 " + where);
      std::vector<float> inPlace = mine;
      run(base + Reduce, static_cast<int>(c), inPlace.data(), inPlace.data());
      expectSame(inPlace, ref, "all_reduce f32 in place " + where);

      std::vector<std::vector<uint16_t>> bf(4, std::vector<uint16_t>(kNumel));
      for (int64_t r = 0; r < 4; ++r)
        cpu::cast_f32_to_bf16(inputs[r].data(), bf[r].data(), kNumel);
      std::vector<uint16_t> bfOut(kNumel), bfRef(kNumel);
      for (int64_t l = 0; l < kNumel; ++l) {
        float acc = cpu::bf16_to_f32(bf[group[0]][l]);
        for (int64_t m = 1; m < n; ++m)
          acc += cpu::bf16_to_f32(bf[group[m]][l]);
        bfRef[l] = cpu::f32_to_bf16(acc);
      }
      run(base + ReduceBf16, static_cast<int>(c), bf[rank].data(), bfOut.data());
      expectSame(bfOut, bfRef, "all_reduce bf16 " + where);

      std::vector<int32_t> ids(kNumel), idOut(kNumel), idRef(kNumel, 0);
      for (int64_t l = 0; l < kNumel; ++l) {
        ids[l] = static_cast<int32_t>(rank * 1000 + l);
        for (int64_t m : group)
          idRef[l] += static_cast<int32_t>(m * 1000 + l);
      }
      run(base + ReduceI32, static_cast<int>(c), ids.data(), idOut.data());
      expectSame(idOut, idRef, "all_reduce i32 " + where);
    }

    // reduce_scatter along dim 1: this member's part of the group-order sum.
    {
      std::vector<int64_t> shape = kShape;
      shape[1] /= n;
      int64_t numel = kNumel / n;
      std::vector<float> out(numel), ref(numel);
      for (int64_t l = 0; l < numel; ++l) {
        std::vector<int64_t> idx = unravel(shape, l);
        idx[1] += k * shape[1];
        int64_t src = linear(kShape, idx);
        float acc = inputs[group[0]][src];
        for (int64_t m = 1; m < n; ++m)
          acc += inputs[group[m]][src];
        ref[l] = acc;
      }
      run(base + Scatter1, static_cast<int>(c), mine.data(), out.data());
      expectSame(out, ref, "reduce_scatter " + where);
    }

    // all_slice along dim 0: this member's part of its own input.
    {
      std::vector<int64_t> shape = kShape;
      shape[0] /= n;
      int64_t numel = kNumel / n;
      std::vector<float> out(numel), ref(numel);
      for (int64_t l = 0; l < numel; ++l) {
        std::vector<int64_t> idx = unravel(shape, l);
        idx[0] += k * shape[0];
        ref[l] = mine[linear(kShape, idx)];
      }
      run(base + Slice0, static_cast<int>(c), mine.data(), out.data());
      expectSame(out, ref, "all_slice " + where);
    }

    // all_to_all: split dim 0, concat dim 2; block j of the result is member
    // j's part k.
    {
      std::vector<int64_t> piece = kShape, shape = kShape;
      piece[0] /= n;
      shape[0] /= n;
      shape[2] *= n;
      std::vector<float> out(kNumel), ref(kNumel);
      for (int64_t l = 0; l < kNumel; ++l) {
        std::vector<int64_t> idx = unravel(shape, l);
        int64_t member = idx[2] / piece[2];
        idx[2] %= piece[2];
        idx[0] += k * piece[0];
        ref[l] = inputs[group[member]][linear(kShape, idx)];
      }
      run(base + ToAll, static_cast<int>(c), mine.data(), out.data());
      expectSame(out, ref, "all_to_all " + where);
    }
  }
}

/// Reductions larger than the runner's exchange rounds (KernelRunner's
/// kExchangeBytes, 1 MiB per round): an all-reduce of an odd element count
/// (uneven chunks) out of place and in place, in f32 and bf16, and a
/// reduce-scatter of non-contiguous parts, over all four ranks; every
/// element is the group-order sum, as one exchange would give.
inline void checkLargeReductions(rt::Communicators &comm) {
  const int64_t numel = 700001, rows = 64, cols = 6000; // 2.8 MB; 1.5 MB
  rt::MeshDesc mesh{{"dp", "tp"}, {2, 2}};
  const Axes all = {0, 1};
  auto with = [&](json c) {
    c["comm"] = 0;
    c["attrs"]["grid_axes"] = all;
    return c;
  };
  json calls = json::array();
  calls.push_back(with(call("shard.all_reduce", {tensor("F32", {numel})},
                            {tensor("F32", {numel})}, {{"reduction", "sum"}})));
  calls.push_back(with(call("shard.all_reduce", {tensor("BF16", {numel})},
                            {tensor("BF16", {numel})}, {{"reduction", "sum"}})));
  calls.push_back(with(call("shard.reduce_scatter", {tensor("F32", {rows, cols})},
                            {tensor("F32", {rows, cols / 4})},
                            {{"scatter_axis", 1}, {"reduction", "sum"}})));
  rt::Program p = program({"dp", "tp"}, {2, 2}, calls, {all});
  const int64_t rank = comm.rank();
  KernelRunner runner(p, rank, &comm);
  std::vector<std::vector<float>> in;
  for (int64_t r = 0; r < 4; ++r)
    in.push_back(randomFloats(numel, 500 + r));
  std::vector<float> ref(numel);
  for (int64_t l = 0; l < numel; ++l)
    ref[l] = ((in[0][l] + in[1][l]) + in[2][l]) + in[3][l];
  std::vector<float> out(numel);
  runner.collective(0, 0, in[rank].data(), out.data());
  expectSame(out, ref, "large all_reduce f32 on rank " + std::to_string(rank));
  std::vector<float> inPlace = in[rank];
  runner.collective(0, 0, inPlace.data(), inPlace.data());
  expectSame(inPlace, ref, "large all_reduce f32 in place on rank " + std::to_string(rank));

  std::vector<std::vector<uint16_t>> bf(4, std::vector<uint16_t>(numel));
  for (int64_t r = 0; r < 4; ++r)
    cpu::cast_f32_to_bf16(in[r].data(), bf[r].data(), numel);
  std::vector<uint16_t> bfOut(numel), bfRef(numel);
  for (int64_t l = 0; l < numel; ++l) {
    float acc = cpu::bf16_to_f32(bf[0][l]);
    for (int64_t m = 1; m < 4; ++m)
      acc += cpu::bf16_to_f32(bf[m][l]);
    bfRef[l] = cpu::f32_to_bf16(acc);
  }
  runner.collective(1, 0, bf[rank].data(), bfOut.data());
  expectSame(bfOut, bfRef, "large all_reduce bf16 on rank " + std::to_string(rank));

  const int64_t part = cols / 4;
  std::vector<float> rsOut(rows * part), rsRef(rows * part);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < part; ++j) {
      int64_t src = i * cols + rank * part + j;
      rsRef[i * part + j] = ((in[0][src] + in[1][src]) + in[2][src]) + in[3][src];
    }
  runner.collective(2, 0, in[rank].data(), rsOut.data());
  expectSame(rsOut, rsRef, "large reduce_scatter on rank " + std::to_string(rank));
}

/// Rows split over dp, the vocabulary over tp: the loss shares add up to the
/// unsplit mean over dp, both tp members hold the same value, and the
/// gradient blocks are the unsplit gradient's.
inline void checkSplitCrossEntropy(rt::Communicators &comm) {
  const int64_t Rl = 6, Vl = 5, R = 2 * Rl, V = 2 * Vl;
  json ce = call("xf.cross_entropy", {tensor("F32", {Rl, Vl}), tensor("I32", {Rl})},
                 {tensor("F32", {})}, {{"ignore_index", -1}, {"token_axes", {0}}});
  ce["operand_axes"] = {{{0}, {1}}, {{0}}};
  ce["result_axes"] = {json::array()};
  json grad = call("xf.cross_entropy_grad",
                   {tensor("F32", {}), tensor("F32", {Rl, Vl}), tensor("I32", {Rl})},
                   {tensor("F32", {Rl, Vl})}, {{"ignore_index", -1}, {"token_axes", {0}}});
  grad["operand_axes"] = {json::array(), {{0}, {1}}, {{0}}};
  grad["result_axes"] = {{{0}, {1}}};
  rt::Program p = program({"dp", "tp"}, {2, 2}, json::array({ce, grad}));
  int64_t rank = comm.rank();
  KernelRunner runner(p, rank, &comm);

  std::vector<float> logits = randomFloats(R * V, 200, -4, 4);
  std::vector<int32_t> targets = randomIds(R, V, 201);
  targets[1] = -1; // uneven counts over dp
  targets[2] = -1;
  std::vector<int64_t> c = p.mesh.coords(rank);
  std::vector<float> block(Rl * Vl);
  for (int64_t r = 0; r < Rl; ++r)
    for (int64_t v = 0; v < Vl; ++v)
      block[r * Vl + v] = logits[(c[0] * Rl + r) * V + c[1] * Vl + v];
  std::vector<int32_t> myTargets(targets.begin() + c[0] * Rl, targets.begin() + (c[0] + 1) * Rl);

  float loss = 0;
  void *fwd[] = {block.data(), myTargets.data(), &loss};
  runner.kernel(0, fwd, {});
  std::vector<float> overTp(2), overDp(2);
  comm.allgather({1}, &loss, overTp.data(), sizeof(float));
  comm.allgather({0}, &loss, overDp.data(), sizeof(float));
  EXPECT_EQ(overTp[0], overTp[1]);
  double whole = cpu::cross_entropy(logits.data(), targets.data(), (const float *)nullptr, R, V,
                                    -1, nullptr);
  EXPECT_NEAR(double(overDp[0]) + double(overDp[1]), whole, 1e-5);

  float dloss = 1.5f;
  std::vector<float> dblock(Rl * Vl), dwhole(R * V);
  void *bwd[] = {&dloss, block.data(), myTargets.data(), dblock.data()};
  runner.kernel(1, bwd, {});
  cpu::cross_entropy_backward<float>(dloss, logits.data(), targets.data(), nullptr, dwhole.data(),
                                     R, V, -1);
  for (int64_t r = 0; r < Rl; ++r)
    for (int64_t v = 0; v < Vl; ++v)
      EXPECT_NEAR(dblock[r * Vl + v], dwhole[(c[0] * Rl + r) * V + c[1] * Vl + v], 1e-6);
}

/// A padded vocabulary split over tp=4 (ranks of a 1 x 4 mesh): 16 columns,
/// `classes` = 9, so the blocks hold 4, 4, 1 (+3 padding) and 0 classes (all
/// padding). The loss and the class columns' gradient equal the unpadded
/// [R, 9] problem whatever the padding logits hold; the padding's gradient
/// is exactly zero. Through the op table, the decoder and the runner.
inline void checkSplitCrossEntropyPadded(rt::Communicators &comm) {
  const int64_t R = 6, Vl = 4, V = 4 * Vl, K = 9;
  json ce = call("xf.cross_entropy", {tensor("F32", {R, Vl}), tensor("I32", {R})},
                 {tensor("F32", {})}, {{"ignore_index", -1}, {"classes", K}});
  ce["operand_axes"] = {{json::array(), {0}}, {json::array()}};
  ce["result_axes"] = {json::array()};
  json grad = call("xf.cross_entropy_grad",
                   {tensor("F32", {}), tensor("F32", {R, Vl}), tensor("I32", {R})},
                   {tensor("F32", {R, Vl})}, {{"ignore_index", -1}, {"classes", K}});
  grad["operand_axes"] = {json::array(), {json::array(), {0}}, {json::array()}};
  grad["result_axes"] = {{json::array(), {0}}};
  rt::Program p = program({"tp"}, {4}, json::array({ce, grad}));
  int64_t rank = comm.rank();
  KernelRunner runner(p, rank, &comm);

  std::vector<float> logits = randomFloats(R * V, 210, -4, 4);
  for (int64_t r = 0; r < R; ++r) // padding far above the classes
    for (int64_t v = K; v < V; ++v)
      logits[r * V + v] = 30.0f;
  std::vector<int32_t> targets = randomIds(R, K, 211);
  targets[3] = -1;
  std::vector<float> trueLogits(R * K), block(R * Vl);
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t v = 0; v < K; ++v)
      trueLogits[r * K + v] = logits[r * V + v];
    for (int64_t v = 0; v < Vl; ++v)
      block[r * Vl + v] = logits[r * V + rank * Vl + v];
  }
  float loss = 0;
  void *fwd[] = {block.data(), targets.data(), &loss};
  runner.kernel(0, fwd, {});
  double whole = cpu::cross_entropy(trueLogits.data(), targets.data(), (const float *)nullptr, R,
                                    K, -1, nullptr);
  EXPECT_NEAR(loss, whole, 1e-5 * std::fabs(whole)) << "rank " << rank;

  float dloss = 1.25f;
  std::vector<float> dblock(R * Vl, NAN), dwhole(R * K);
  void *bwd[] = {&dloss, block.data(), targets.data(), dblock.data()};
  runner.kernel(1, bwd, {});
  cpu::cross_entropy_backward<float>(dloss, trueLogits.data(), targets.data(), nullptr,
                                     dwhole.data(), R, K, -1);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t v = 0; v < Vl; ++v) {
      int64_t col = rank * Vl + v;
      if (col < K)
        EXPECT_NEAR(dblock[r * Vl + v], dwhole[r * K + col], 1e-6) << "rank " << rank;
      else
        EXPECT_EQ(dblock[r * Vl + v], 0.0f) << "padding column " << col;
    }
}

} // namespace shardc::test

#endif // SHARDC_TEST_UNIT_RUNTIME_PROGRAM_COMMCHECKS_H
