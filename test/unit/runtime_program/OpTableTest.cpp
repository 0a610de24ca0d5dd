//===- OpTableTest.cpp - the op table, decoded by the runtime -------------===//
//
// The op table (runtime/abi/OpTable.h) is the compiler-runtime contract: the
// decoder rejects what it does not list (op, attribute, kind, a missing
// required attribute), a program compiled against another table or schema
// version is refused, and the in-place pairs the planner relies on are the
// ones the kernels honour (an in-place call computes what an out-of-place
// one does, bit for bit).
//
//===----------------------------------------------------------------------===//

#include "TestPrograms.h"

#include "runtime/abi/OpTable.h"
#include "runtime/program/KernelRunner.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <set>

using namespace shardc;
using namespace shardc::test;

namespace {

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const rt::Error &e) {
    return e.what();
  }
  return "";
}

TEST(OpTable, CodesIndexTheTableAndNamesAreUnique) {
  const auto &table = shardc::abi::opTable();
  std::set<std::string> names;
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(table[i].code), i) << table[i].name;
    EXPECT_TRUE(names.insert(table[i].name).second) << table[i].name;
    EXPECT_EQ(shardc::abi::findOp(table[i].name), &table[i]);
    EXPECT_LE(table[i].minOperands, table[i].maxOperands) << table[i].name;
    const bool lists = table[i].tensorLists > 0; // pairs of lists
    for (const shardc::abi::InPlace &p : table[i].inPlace) {
      EXPECT_LT(p.operand, lists ? table[i].tensorLists : table[i].maxOperands) << table[i].name;
      EXPECT_LT(p.result, lists ? table[i].resultLists : table[i].results) << table[i].name;
    }
  }
  EXPECT_EQ(shardc::abi::findOp("xf.frobnicate"), nullptr);
  EXPECT_EQ(shardc::abi::opTableFingerprint().size(), 16u);
  EXPECT_EQ(shardc::abi::opTableFingerprint(), shardc::abi::opTableFingerprint());
}

TEST(OpTable, TheDecoderChecksAttributesByTheTable) {
  auto decode = [](json c) {
    return errorOf([&] { rt::KernelRunner runner(oneCall(c), 0, nullptr); });
  };
  json x = {tensor("F32", {2, 4})};
  EXPECT_EQ(decode(call("xf.scale", x, x, {{"factor", 2.0}})), "");
  EXPECT_NE(decode(call("xf.scale", x, x, {{"factor", 2.0}, {"bias", 1.0}}))
                .find("attribute 'bias' is not one of the op's"),
            std::string::npos);
  EXPECT_NE(decode(call("xf.scale", x, x, {{"factor", "2"}})).find("'factor' must be f64"),
            std::string::npos);
  EXPECT_NE(decode(call("xf.scale", x, x)).find("attribute 'factor' (f64) is missing"),
            std::string::npos);
  EXPECT_NE(decode(call("xf.transpose", x, {tensor("F32", {4, 2})}, {{"permutation", {1.5, 0}}}))
                .find("'permutation' must be i64 array"),
            std::string::npos);
  EXPECT_NE(decode(call("xf.gelu", x, {tensor("F32", {2, 4}), tensor("F32", {2, 4})}))
                .find("has 1 operands and 2 results"),
            std::string::npos);
}

TEST(OpTable, ProgramsOfAnotherTableOrVersionAreRefused) {
  json j = {{"version", shardc::abi::kProgramVersion}, {"op_table", shardc::abi::opTableFingerprint()},
            {"mesh", {{"names", json::array()}, {"sizes", json::array()}}},
            {"arenas", json::array()}, {"tensors", json::array()},
            {"calls", json::array()}, {"comms", json::array()}};
  EXPECT_EQ(errorOf([&] { rt::parseProgram(j.dump()); }), "");
  json other = j;
  other["op_table"] = "0123456789abcdef";
  EXPECT_NE(errorOf([&] { rt::parseProgram(other.dump()); }).find("compiled against op table"),
            std::string::npos);
  json old = j;
  old["version"] = 1;
  EXPECT_NE(errorOf([&] { rt::parseProgram(old.dump()); }).find("version 1"), std::string::npos);
  json none = j;
  none.erase("op_table");
  EXPECT_NE(errorOf([&] { rt::parseProgram(none.dump()); }), "");
}

/// Every in-place pair of every pointwise op the planner may alias: the call
/// run with result `r` in operand `o`'s buffer equals the call run out of
/// place, bit for bit (no operand copy is made for these pairs).
TEST(OpTable, InPlacePairsComputeWhatOutOfPlaceDoes) {
  struct Case {
    std::string op;
    std::vector<json> operands, results;
    json attrs = json::object();
  };
  json x = tensor("F32", {3, 8}), row = tensor("F32", {8});
  std::vector<Case> cases = {
      {"xf.add", {x, x}, {x}},
      {"xf.bias_add", {x, row}, {x}},
      {"xf.layernorm", {x, row, row}, {x}, {{"epsilon", 1e-5}}},
      {"xf.rmsnorm", {x, row}, {x}, {{"epsilon", 1e-5}}},
      {"xf.gelu", {x}, {x}},
      {"xf.swiglu", {x, x}, {x}},
      {"xf.softmax", {x}, {x}},
      {"xf.scale", {x}, {x}, {{"factor", 0.5}}},
      {"xf.reshape", {x}, {tensor("F32", {24})}},
      {"xf.cast", {x}, {x}},
      {"xf.gelu_grad", {x, x}, {x}},
      {"xf.softmax_grad", {x, x}, {x}},
      {"xf.swiglu_grad", {x, x, x}, {x, x}},
  };
  for (const Case &c : cases) {
    const shardc::abi::OpSpec *spec = shardc::abi::findOp(c.op);
    ASSERT_NE(spec, nullptr) << c.op;
    ASSERT_FALSE(spec->inPlace.empty()) << c.op;
    rt::Program p = oneCall(call(c.op, c.operands, c.results, c.attrs));
    rt::KernelRunner runner(p, 0, nullptr);
    std::vector<std::vector<float>> in;
    for (size_t i = 0; i < c.operands.size(); ++i)
      in.push_back(randomFloats(p.calls[0].operands[i].numel(), 100 + i, 0.1f, 1.0f));
    auto run = [&](int operand, int result) {
      std::vector<std::vector<float>> bufs = in;
      for (const rt::TensorType &t : p.calls[0].results)
        bufs.emplace_back(t.numel());
      std::vector<void *> ptrs;
      for (auto &b : bufs)
        ptrs.push_back(b.data());
      if (operand >= 0)
        ptrs[c.operands.size() + result] = ptrs[operand];
      runner.kernel(0, ptrs.data(), {});
      std::vector<std::vector<float>> out;
      for (size_t r = 0; r < c.results.size(); ++r)
        out.push_back(static_cast<int>(r) == result && operand >= 0
                          ? bufs[operand]
                          : bufs[c.operands.size() + r]);
      return out;
    };
    auto reference = run(-1, -1);
    for (const shardc::abi::InPlace &pair : spec->inPlace) {
      if (pair.operand >= c.operands.size())
        continue;
      auto got = run(pair.operand, pair.result);
      EXPECT_EQ(0, std::memcmp(got[pair.result].data(), reference[pair.result].data(),
                               reference[pair.result].size() * sizeof(float)))
          << c.op << " operand " << int(pair.operand) << " -> result " << int(pair.result);
    }
  }
}

TEST(OpTable, MultiTensorOpsTakeListsOfAnyLength) {
  using shardc::abi::findOp;
  using shardc::abi::listLength;
  using shardc::abi::mayShareBuffer;
  const auto &adam = *findOp("xf.multi_adamw");
  const auto &sums = *findOp("xf.multi_sum_squares");
  // n = 3: 12 list operands + 3 scalars (+ skip); 9 results + up to 3 copies.
  EXPECT_EQ(listLength(adam, 15, 9), 3);
  EXPECT_EQ(listLength(adam, 16, 11), 3);
  EXPECT_EQ(listLength(adam, 16, 13), -1); // four copies of three parameters
  EXPECT_EQ(listLength(adam, 14, 9), -1);  // lists of unequal length
  EXPECT_EQ(listLength(adam, 3, 0), -1);   // no parameter
  EXPECT_EQ(listLength(sums, 5, 1), 5);
  EXPECT_EQ(listLength(sums, 0, 1), -1);
  EXPECT_EQ(listLength(sums, 2, 2), -1);
  EXPECT_EQ(listLength(*findOp("xf.adamw"), 8, 3), 0);
  // In place element by element: param i -> new param i, m i -> new m i,
  // v i -> new v i; never across tensors, never a gradient or a copy.
  const auto code = adam.code;
  EXPECT_TRUE(mayShareBuffer(code, 1, 1, 15, 10));  // param 1 -> new param 1
  EXPECT_TRUE(mayShareBuffer(code, 7, 4, 15, 10));  // m 1 -> new m 1
  EXPECT_TRUE(mayShareBuffer(code, 11, 8, 15, 10)); // v 2 -> new v 2
  EXPECT_FALSE(mayShareBuffer(code, 1, 2, 15, 10)); // param 1 -> new param 2
  EXPECT_FALSE(mayShareBuffer(code, 4, 0, 15, 10)); // grad 1 -> new param 0
  EXPECT_FALSE(mayShareBuffer(code, 0, 9, 15, 10)); // param 0 -> its copy
  EXPECT_FALSE(mayShareBuffer(code, 12, 0, 15, 10)); // lr
}

TEST(OpTable, ConcatTakesAListOfOperandsAndSplitAListOfResults) {
  using shardc::abi::findOp;
  using shardc::abi::listLength;
  using shardc::abi::mayShareBuffer;
  const auto &concat = *findOp("xf.concat");
  const auto &split = *findOp("xf.split");
  EXPECT_EQ(listLength(concat, 1, 1), 1);
  EXPECT_EQ(listLength(concat, 3, 1), 3);
  EXPECT_EQ(listLength(concat, 0, 1), -1);
  EXPECT_EQ(listLength(concat, 3, 2), -1);
  EXPECT_EQ(listLength(split, 1, 1), 1);
  EXPECT_EQ(listLength(split, 1, 3), 3);
  EXPECT_EQ(listLength(split, 1, 0), -1);
  EXPECT_EQ(listLength(split, 2, 3), -1);
  EXPECT_EQ(shardc::abi::arityText(split), "takes 1 operands and 1 lists of n >= 1 results");
  // Copies, never views: no operand shares a result's buffer.
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(mayShareBuffer(concat.code, i, 0, 3, 1));
    EXPECT_FALSE(mayShareBuffer(split.code, 0, i, 1, 3));
  }
  EXPECT_EQ(listLength(*findOp("xf.packed_attention"), 1, 1), 0);
  EXPECT_EQ(listLength(*findOp("xf.packed_attention_grad"), 3, 1), 0);
}

TEST(OpTable, TheDecoderChecksMultiAdamWAttributes) {
  json p = tensor("F32", {4}), s = tensor("F32", {}), step = tensor("I32", {});
  json ins = {p, p, p, p, p, p, p, p, s, s, step};
  auto decode = [&](json results, json decay, json copies) {
    json c = call("xf.multi_adamw", ins, results,
                  {{"beta1", 0.9}, {"beta2", 0.95}, {"epsilon", 1e-8}, {"weight_decay", 0.1},
                   {"decay", decay}, {"copies", copies}});
    return errorOf([&] { rt::KernelRunner runner(oneCall(c), 0, nullptr); });
  };
  json six = {p, p, p, p, p, p};
  json withCopy = six;
  withCopy.push_back(tensor("BF16", {4}));
  EXPECT_EQ(decode(six, {1, 0}, json::array()), "");
  EXPECT_EQ(decode(withCopy, {1, 0}, {1}), "");
  EXPECT_NE(decode(six, {1, 2}, json::array()).find("'decay' must hold one 0 or 1"),
            std::string::npos);
  EXPECT_NE(decode(six, {1}, json::array()).find("'decay'"), std::string::npos);
  EXPECT_NE(decode(withCopy, {1, 0}, {2}).find("'copies'"), std::string::npos);
  json f32Copy = six;
  f32Copy.push_back(p);
  EXPECT_NE(decode(f32Copy, {1, 0}, {0}).find("bf16/f16"), std::string::npos);
}

} // namespace
