//===- VjpTest.cpp - every VJP rule against central finite differences ----===//
//
// For each differentiable xf op: a one-op f64 function y = op(x...), a random
// cotangent r, and L = sum(r * y). The analytic gradients come from the op's
// VJPOpInterface rule (built into a function @vjp(x..., r) -> dx... and run by
// the reference executor); the numeric ones from central differences of L,
// each evaluation also through the executor. Relative error (2-norm over the
// checked elements) must be <= 1e-6.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleLoading.h"
#include "compiler/executor/Executor.h"
#include "dialects/xf/XfOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;
using namespace shardc;
using exec::DType;
using exec::HostTensor;

namespace {

struct Case {
  std::string name;
  std::string op;          ///< body of @f: `%y = ...` using %a0, %a1, ...
  std::vector<std::string> argTypes;
  std::string resultType;
  std::map<int, std::vector<int32_t>> ids; ///< values of integer arguments
  bool training = false;                   ///< dropout active
};

class VjpChecker {
public:
  VjpChecker() {
    DialectRegistry registry;
    registerShardcDialects(registry);
    ctx_.appendDialectRegistry(registry);
    ctx_.loadAllAvailableDialects();
  }

  void check(const Case &c) {
    SCOPED_TRACE(c.name);
    std::string text = "func.func @f(";
    for (size_t i = 0; i < c.argTypes.size(); ++i)
      text += (i ? ", %a" : "%a") + std::to_string(i) + ": " + c.argTypes[i];
    text += ") -> " + c.resultType + " {\n  " + c.op + "\n  return %y : " + c.resultType + "\n}\n";
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx_);
    ASSERT_TRUE(module) << text;
    auto f = module->lookupSymbol<func::FuncOp>("f");
    Operation *op = &f.getBody().front().front();
    auto vjpIface = dyn_cast<xf::VJPOpInterface>(op);
    ASSERT_TRUE(vjpIface) << "no VJP rule";

    // @vjp(a..., r) -> gradients of the float arguments.
    OpBuilder b(&ctx_);
    b.setInsertionPointToEnd(module->getBody());
    SmallVector<Type> argTypes(f.getArgumentTypes());
    argTypes.push_back(op->getResult(0).getType());
    auto vjp = func::FuncOp::create(b, f.getLoc(), "vjp", b.getFunctionType(argTypes, {}));
    Block *body = vjp.addEntryBlock();
    b.setInsertionPointToEnd(body);
    IRMapping map;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      map.map(f.getArgument(i), body->getArgument(i));
    Operation *clone = b.clone(*op, map);
    SmallVector<Value> grads;
    ASSERT_TRUE(succeeded(cast<xf::VJPOpInterface>(clone).buildVJP(
        b, {body->getArguments().back()}, grads)));
    ASSERT_EQ(grads.size(), op->getNumOperands());
    SmallVector<Value> results;
    std::vector<int> gradArg;
    for (auto [i, g] : llvm::enumerate(grads))
      if (g) {
        results.push_back(g);
        gradArg.push_back(static_cast<int>(i));
      }
    func::ReturnOp::create(b, f.getLoc(), results);
    vjp.setFunctionType(b.getFunctionType(argTypes, TypeRange(ValueRange(results))));
    ASSERT_TRUE(succeeded(verify(*module))) << "VJP of " << c.name << " does not verify";

    // Random inputs and cotangent.
    std::vector<HostTensor> args;
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      auto [dtype, shape] = *exec::tensorSpec(f.getArgument(i).getType());
      HostTensor t(dtype, shape);
      if (dtype == DType::I32) {
        const std::vector<int32_t> &v = c.ids.at(static_cast<int>(i));
        EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
        std::copy(v.begin(), v.end(), t.data<int32_t>());
      } else {
        fillRandom(t);
      }
      args.push_back(std::move(t));
    }
    auto [rType, rShape] = *exec::tensorSpec(op->getResult(0).getType());
    HostTensor r(rType, rShape);
    fillRandom(r);

    exec::RunOptions options;
    options.training = c.training;
    options.seed = 77;
    options.step = 3;
    std::vector<HostTensor> analytic;
    {
      std::vector<HostTensor> vargs = args;
      vargs.push_back(r);
      exec::Executor ex(vjp, options);
      ASSERT_TRUE(succeeded(ex.run(vargs, analytic)));
    }
    exec::Executor forward(f, options);
    auto loss = [&](const std::vector<HostTensor> &in) {
      std::vector<HostTensor> out;
      EXPECT_TRUE(succeeded(forward.run(in, out)));
      double l = 0;
      for (int64_t i = 0; i < r.numel(); ++i)
        l += r.data<double>()[i] * out[0].data<double>()[i];
      return l;
    };

    for (size_t g = 0; g < gradArg.size(); ++g) {
      int a = gradArg[g];
      const HostTensor &an = analytic[g];
      ASSERT_EQ(an.shape, args[a].shape);
      // Every element of small tensors, an even sample of large ones.
      int64_t n = args[a].numel(), stride = std::max<int64_t>(1, n / 48);
      double err2 = 0, ref2 = 0;
      for (int64_t i = 0; i < n; i += stride) {
        std::vector<HostTensor> plus = args, minus = args;
        double x = args[a].data<double>()[i], h = 1e-5 * std::max(1.0, std::fabs(x));
        plus[a].data<double>()[i] = x + h;
        minus[a].data<double>()[i] = x - h;
        double fd = (loss(plus) - loss(minus)) / (2 * h);
        double v = an.data<double>()[i];
        err2 += (fd - v) * (fd - v);
        ref2 += v * v;
      }
      ASSERT_GT(ref2, 0.0) << "gradient of argument " << a << " is identically zero";
      EXPECT_LE(std::sqrt(err2 / ref2), 1e-6) << "argument #" << a;
    }
  }

private:
  void fillRandom(HostTensor &t) {
    std::normal_distribution<double> dist(0.0, 1.0);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<double>()[i] = dist(rng_);
  }

  MLIRContext ctx_;
  std::mt19937_64 rng_{20261122};
};

std::vector<int32_t> iota(int n, int mod, int start = 0) {
  std::vector<int32_t> v;
  for (int i = 0; i < n; ++i)
    v.push_back((start + 7 * i) % mod);
  return v;
}

TEST(VjpTest, Elementwise) {
  VjpChecker c;
  c.check({"add", "%y = xf.add %a0, %a1 : tensor<3x5xf64>",
           {"tensor<3x5xf64>", "tensor<3x5xf64>"}, "tensor<3x5xf64>"});
  c.check({"bias_add", "%y = xf.bias_add %a0, %a1 : tensor<2x3x5xf64>, tensor<5xf64>",
           {"tensor<2x3x5xf64>", "tensor<5xf64>"}, "tensor<2x3x5xf64>"});
  c.check({"scale", "%y = xf.scale %a0 factor = -2.500000e-01 : tensor<4x3xf64>",
           {"tensor<4x3xf64>"}, "tensor<4x3xf64>"});
  c.check({"gelu", "%y = xf.gelu %a0 : tensor<6x7xf64>", {"tensor<6x7xf64>"}, "tensor<6x7xf64>"});
  c.check({"swiglu", "%y = xf.swiglu %a0, %a1 : tensor<4x9xf64>",
           {"tensor<4x9xf64>", "tensor<4x9xf64>"}, "tensor<4x9xf64>"});
  c.check({"softmax", "%y = xf.softmax %a0 : tensor<3x2x8xf64>", {"tensor<3x2x8xf64>"},
           "tensor<3x2x8xf64>"});
  c.check({"dropout", "%y = xf.dropout %a0 rate = 3.000000e-01 key = 5 : tensor<8x16xf64>",
           {"tensor<8x16xf64>"}, "tensor<8x16xf64>", {}, /*training=*/true});
}

TEST(VjpTest, Matmul) {
  VjpChecker c;
  // Conv1D layout, nn.Linear layout, a tied head, batched attention-style,
  // and an output permutation.
  c.check({"conv1d", "%y = xf.matmul \"bsh,hk->bsk\" %a0, %a1 : tensor<2x3x4xf64>, tensor<4x5xf64> -> tensor<2x3x5xf64>",
           {"tensor<2x3x4xf64>", "tensor<4x5xf64>"}, "tensor<2x3x5xf64>"});
  c.check({"linear", "%y = xf.matmul \"bsh,oh->bso\" %a0, %a1 : tensor<2x3x4xf64>, tensor<6x4xf64> -> tensor<2x3x6xf64>",
           {"tensor<2x3x4xf64>", "tensor<6x4xf64>"}, "tensor<2x3x6xf64>"});
  c.check({"batched", "%y = xf.matmul \"bhqd,bhkd->bhqk\" %a0, %a1 : tensor<2x2x3x4xf64>, tensor<2x2x5x4xf64> -> tensor<2x2x3x5xf64>",
           {"tensor<2x2x3x4xf64>", "tensor<2x2x5x4xf64>"}, "tensor<2x2x3x5xf64>"});
  c.check({"permuted", "%y = xf.matmul \"mk,kn->nm\" %a0, %a1 : tensor<3x4xf64>, tensor<4x5xf64> -> tensor<5x3xf64>",
           {"tensor<3x4xf64>", "tensor<4x5xf64>"}, "tensor<5x3xf64>"});
}

TEST(VjpTest, Normalization) {
  VjpChecker c;
  c.check({"layernorm", "%y = xf.layernorm %a0, %a1, %a2 epsilon = 1.000000e-05 : tensor<3x4x8xf64>, tensor<8xf64>, tensor<8xf64>",
           {"tensor<3x4x8xf64>", "tensor<8xf64>", "tensor<8xf64>"}, "tensor<3x4x8xf64>"});
  c.check({"rmsnorm", "%y = xf.rmsnorm %a0, %a1 epsilon = 1.000000e-05 : tensor<5x8xf64>, tensor<8xf64>",
           {"tensor<5x8xf64>", "tensor<8xf64>"}, "tensor<5x8xf64>"});
}

TEST(VjpTest, AttentionAndRope) {
  VjpChecker c;
  c.check({"causal", "%y = xf.attention %a0, %a1, %a2 causal scale = 5.000000e-01 : tensor<2x5x2x4xf64>, tensor<2x5x2x4xf64>, tensor<2x5x2x4xf64>",
           {"tensor<2x5x2x4xf64>", "tensor<2x5x2x4xf64>", "tensor<2x5x2x4xf64>"}, "tensor<2x5x2x4xf64>"});
  c.check({"bidirectional-gqa", "%y = xf.attention %a0, %a1, %a2 scale = 3.000000e-01 : tensor<1x4x4x4xf64>, tensor<1x4x2x4xf64>, tensor<1x4x2x4xf64>",
           {"tensor<1x4x4x4xf64>", "tensor<1x4x2x4xf64>", "tensor<1x4x2x4xf64>"}, "tensor<1x4x4x4xf64>"});
  c.check({"mqa", "%y = xf.attention %a0, %a1, %a2 causal scale = 5.000000e-01 : tensor<1x3x3x2xf64>, tensor<1x3x1x2xf64>, tensor<1x3x1x2xf64>",
           {"tensor<1x3x3x2xf64>", "tensor<1x3x1x2xf64>", "tensor<1x3x1x2xf64>"}, "tensor<1x3x3x2xf64>"});
  // Q, K and V packed as -xf-fuse-qkv makes them: [b, s, kv_heads, group + 2, d].
  c.check({"packed-causal", "%y = xf.packed_attention %a0 causal scale = 5.000000e-01 : tensor<2x5x2x3x4xf64> -> tensor<2x5x2x4xf64>",
           {"tensor<2x5x2x3x4xf64>"}, "tensor<2x5x2x4xf64>"});
  c.check({"packed-gqa", "%y = xf.packed_attention %a0 scale = 3.000000e-01 : tensor<1x4x2x4x3xf64> -> tensor<1x4x4x3xf64>",
           {"tensor<1x4x2x4x3xf64>"}, "tensor<1x4x4x3xf64>"});
  c.check({"rope", "%y = xf.rope %a0 theta = 1.000000e+04 : tensor<2x5x2x6xf64>",
           {"tensor<2x5x2x6xf64>"}, "tensor<2x5x2x6xf64>"});
  c.check({"rope-inverse", "%y = xf.rope %a0 theta = 1.000000e+02 inverse : tensor<1x4x1x4xf64>",
           {"tensor<1x4x1x4xf64>"}, "tensor<1x4x1x4xf64>"});
}

TEST(VjpTest, ShapeOps) {
  VjpChecker c;
  c.check({"reshape", "%y = xf.reshape %a0 : tensor<2x6xf64> -> tensor<3x2x2xf64>",
           {"tensor<2x6xf64>"}, "tensor<3x2x2xf64>"});
  c.check({"transpose", "%y = xf.transpose %a0 [2, 0, 1] : tensor<2x3x4xf64> -> tensor<4x2x3xf64>",
           {"tensor<2x3x4xf64>"}, "tensor<4x2x3xf64>"});
  c.check({"concat", "%y = xf.concat %a0, %a1, %a2 dim = 1 : tensor<2x1x3xf64>, tensor<2x2x3xf64>, tensor<2x1x3xf64> -> tensor<2x4x3xf64>",
           {"tensor<2x1x3xf64>", "tensor<2x2x3xf64>", "tensor<2x1x3xf64>"}, "tensor<2x4x3xf64>"});
  c.check({"cast-f64", "%y = xf.cast %a0 : tensor<3x3xf64> -> tensor<3x3xf64>",
           {"tensor<3x3xf64>"}, "tensor<3x3xf64>"});
}

TEST(VjpTest, EmbeddingAndLosses) {
  VjpChecker c;
  c.check({"embedding", "%y = xf.embedding %a0, %a1 : tensor<7x4xf64>, tensor<2x5xi32> -> tensor<2x5x4xf64>",
           {"tensor<7x4xf64>", "tensor<2x5xi32>"}, "tensor<2x5x4xf64>",
           {{1, {0, 3, 3, 6, 1, 3, 0, 2, 2, 5}}}});
  c.check({"cross_entropy", "%y = xf.cross_entropy %a0, %a1 ignore_index = -100 : tensor<2x3x9xf64>, tensor<2x3xi32> -> tensor<f64>",
           {"tensor<2x3x9xf64>", "tensor<2x3xi32>"}, "tensor<f64>",
           {{1, {4, -100, 8, 0, 2, -100}}}});
  c.check({"cross_entropy-mask", "%y = xf.cross_entropy %a0, %a1 mask %a2 ignore_index = -1 : tensor<6x5xf64>, tensor<6xi32>, tensor<6xf64> -> tensor<f64>",
           {"tensor<6x5xf64>", "tensor<6xi32>", "tensor<6xf64>"}, "tensor<f64>",
           {{1, {0, 1, 2, 3, 4, 0}}}});
  c.check({"linear_cross_entropy-vocab-major", "%y = xf.linear_cross_entropy %a0, %a1, %a2 vocab_major ignore_index = -100 : tensor<2x3x4xf64>, tensor<11x4xf64>, tensor<2x3xi32> -> tensor<f64>",
           {"tensor<2x3x4xf64>", "tensor<11x4xf64>", "tensor<2x3xi32>"}, "tensor<f64>",
           {{2, iota(6, 11)}}});
  c.check({"linear_cross_entropy", "%y = xf.linear_cross_entropy %a0, %a1, %a2 ignore_index = -100 : tensor<5x4xf64>, tensor<4x6xf64>, tensor<5xi32> -> tensor<f64>",
           {"tensor<5x4xf64>", "tensor<4x6xf64>", "tensor<5xi32>"}, "tensor<f64>",
           {{2, {1, -100, 5, 0, 3}}}});
}

} // namespace
