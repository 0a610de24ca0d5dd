//===- Debug.cpp - per-pass debug output that works in release builds -----===//

#include "passes/Debug.h"

#include "mlir/IR/Operation.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

using namespace mlir;

namespace shardc::debug {
namespace {

struct Switches {
  std::mutex mutex;
  llvm::StringSet<> types;
  bool all = false;

  Switches() {
    if (const char *env = std::getenv("SHARDC_DEBUG"))
      add(env);
  }
  void add(llvm::StringRef list) {
    llvm::SmallVector<llvm::StringRef> parts;
    list.split(parts, ',', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef p : parts) {
      p = p.trim();
      if (p == "all" || p == "*")
        all = true;
      else if (!p.empty())
        types.insert(p);
    }
  }
};

Switches &switches() {
  static Switches s;
  return s;
}

/// Ops by dialect namespace, for the summaries.
std::map<std::string, int64_t> countOps(Operation *root) {
  std::map<std::string, int64_t> counts;
  root->walk([&](Operation *op) { ++counts[op->getName().getDialectNamespace().str()]; });
  return counts;
}

std::string describe(const std::map<std::string, int64_t> &counts) {
  int64_t total = 0;
  std::string parts;
  for (auto &[dialect, n] : counts) {
    total += n;
    parts += (parts.empty() ? "" : ", ") + dialect + " " + std::to_string(n);
  }
  return std::to_string(total) + " ops (" + parts + ")";
}

class Summary : public PassInstrumentation {
public:
  void runBeforePass(Pass *pass, Operation *op) override {
    if (!enabled(pass->getArgument()))
      return;
    before_[{pass, op}] = {countOps(op), std::chrono::steady_clock::now()};
  }
  void runAfterPass(Pass *pass, Operation *op) override { report(pass, op, "done"); }
  void runAfterPassFailed(Pass *pass, Operation *op) override { report(pass, op, "FAILED"); }

private:
  void report(Pass *pass, Operation *op, llvm::StringRef how) {
    auto it = before_.find({pass, op});
    if (it == before_.end())
      return;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                          it->second.second)
                    .count();
    stream(pass->getArgument()) << how << " on '" << op->getName() << "' in "
                                << llvm::format("%.1f", ms) << " ms: "
                                << describe(it->second.first) << " -> " << describe(countOps(op))
                                << "\n";
    before_.erase(it);
  }

  std::map<std::pair<Pass *, Operation *>,
           std::pair<std::map<std::string, int64_t>, std::chrono::steady_clock::time_point>>
      before_;
};

} // namespace

bool enabled(llvm::StringRef type) {
  Switches &s = switches();
  if (s.all)
    return true;
  if (s.types.empty())
    return false;
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.types.contains(type);
}

void enable(llvm::StringRef list) {
  Switches &s = switches();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.add(list);
}

llvm::raw_ostream &stream(llvm::StringRef type) { return llvm::errs() << "[" << type << "] "; }

void instrument(PassManager &pm) { pm.addInstrumentation(std::make_unique<Summary>()); }

} // namespace shardc::debug
