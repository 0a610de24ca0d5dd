//===- Einsum.cpp - einsum equations of xf.matmul -------------------------===//

#include "dialects/xf/Einsum.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

using namespace shardc::xf;

static bool has(const std::string &s, char c) {
  return s.find(c) != std::string::npos;
}

std::optional<Einsum> Einsum::parse(llvm::StringRef eq, std::string &error) {
  auto [inputs, out] = eq.split("->");
  if (out.size() == eq.size() || !eq.contains("->")) {
    error = llvm::formatv("equation '{0}' must have the form 'lhs,rhs->out'", eq).str();
    return std::nullopt;
  }
  auto [lhs, rhs] = inputs.split(',');
  if (!inputs.contains(',') || rhs.contains(',')) {
    error = llvm::formatv("equation '{0}' must have exactly two operands", eq).str();
    return std::nullopt;
  }
  Einsum e{lhs.str(), rhs.str(), out.str(), "", "", "", ""};
  for (const std::string *part : {&e.lhs, &e.rhs, &e.out}) {
    for (size_t i = 0; i < part->size(); ++i) {
      char c = (*part)[i];
      if (c < 'a' || c > 'z') {
        error = llvm::formatv("equation '{0}' has '{1}'; use lower-case letters only", eq, c).str();
        return std::nullopt;
      }
      if (part->find(c, i + 1) != std::string::npos) {
        error = llvm::formatv("letter '{0}' repeats within '{1}' in equation '{2}'", c, *part, eq).str();
        return std::nullopt;
      }
    }
  }
  for (char c : e.out) {
    bool l = has(e.lhs, c), r = has(e.rhs, c);
    if (!l && !r) {
      error = llvm::formatv("result letter '{0}' appears in no operand of '{1}'", c, eq).str();
      return std::nullopt;
    }
    (l && r ? e.batch : l ? e.lhsFree : e.rhsFree) += c;
  }
  for (char c : e.lhs) {
    if (has(e.out, c))
      continue;
    if (!has(e.rhs, c)) {
      error = llvm::formatv("letter '{0}' of lhs is neither in the result nor in rhs "
                            "in '{1}'; summing a single operand is not supported", c, eq).str();
      return std::nullopt;
    }
    e.contracted += c;
  }
  for (char c : e.rhs) {
    if (!has(e.out, c) && !has(e.lhs, c)) {
      error = llvm::formatv("letter '{0}' of rhs is neither in the result nor in lhs "
                            "in '{1}'; summing a single operand is not supported", c, eq).str();
      return std::nullopt;
    }
  }
  return e;
}

std::optional<llvm::SmallVector<int64_t>>
Einsum::inferShape(llvm::ArrayRef<int64_t> lhsShape, llvm::ArrayRef<int64_t> rhsShape,
                   std::string &error) const {
  if (lhsShape.size() != lhs.size()) {
    error = llvm::formatv("lhs has rank {0} but the equation names {1} dimensions ('{2}')",
                          lhsShape.size(), lhs.size(), lhs).str();
    return std::nullopt;
  }
  if (rhsShape.size() != rhs.size()) {
    error = llvm::formatv("rhs has rank {0} but the equation names {1} dimensions ('{2}')",
                          rhsShape.size(), rhs.size(), rhs).str();
    return std::nullopt;
  }
  int64_t size[26];
  for (int64_t &s : size)
    s = -1;
  for (size_t i = 0; i < lhs.size(); ++i)
    size[lhs[i] - 'a'] = lhsShape[i];
  for (size_t i = 0; i < rhs.size(); ++i) {
    int64_t &s = size[rhs[i] - 'a'];
    if (s >= 0 && s != rhsShape[i]) {
      error = llvm::formatv("dimension '{0}' is {1} in lhs but {2} in rhs", rhs[i], s,
                            rhsShape[i]).str();
      return std::nullopt;
    }
    s = rhsShape[i];
  }
  llvm::SmallVector<int64_t> shape;
  for (char c : out)
    shape.push_back(size[c - 'a']);
  return shape;
}
