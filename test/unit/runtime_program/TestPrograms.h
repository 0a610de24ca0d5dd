//===- TestPrograms.h - hand-built descriptors for runtime tests -*- C++ -*-===//
//
// A descriptor with only a mesh, communicators and a call table (no arenas
// or boundary tensors), and deterministic random buffers.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_TEST_UNIT_RUNTIME_PROGRAM_TESTPROGRAMS_H
#define SHARDC_TEST_UNIT_RUNTIME_PROGRAM_TESTPROGRAMS_H

#include "runtime/abi/OpTable.h"
#include "runtime/program/Program.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace shardc::test {

using nlohmann::json;

/// {"dtype": ..., "shape": ...}
inline json tensor(const std::string &dtype, std::vector<int64_t> shape) {
  return {{"dtype", dtype}, {"shape", shape}};
}

/// One call-table entry.
inline json call(const std::string &op, json operands, json results,
                 json attrs = json::object()) {
  return {{"op", op}, {"operands", operands}, {"results", results}, {"attrs", attrs}};
}

/// A program on mesh `names`/`sizes` with the given calls and communicator
/// axes.
inline rt::Program program(std::vector<std::string> names, std::vector<int64_t> sizes,
                           json calls, std::vector<rt::Axes> comms = {}) {
  json j = {{"version", abi::kProgramVersion},
            {"op_table", abi::opTableFingerprint()},
            {"mesh", {{"names", names}, {"sizes", sizes}}},
            {"arenas", json::array()},
            {"tensors", json::array()},
            {"calls", calls},
            {"comms", json::array()}};
  for (const rt::Axes &a : comms)
    j["comms"].push_back({{"axes", a}});
  return rt::parseProgram(j.dump());
}

/// A program of one call on no mesh.
inline rt::Program oneCall(json c) { return program({}, {}, json::array({c})); }

inline std::vector<float> randomFloats(int64_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

inline std::vector<int32_t> randomIds(int64_t n, int32_t bound, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> dist(0, bound - 1);
  std::vector<int32_t> v(n);
  for (int32_t &x : v)
    x = dist(gen);
  return v;
}

} // namespace shardc::test

#endif // SHARDC_TEST_UNIT_RUNTIME_PROGRAM_TESTPROGRAMS_H
