//===- Program.cpp - the compiled step's descriptor -----------------------===//

#include "runtime/program/Program.h"

#include "runtime/abi/OpTable.h"

#include <algorithm>

using nlohmann::json;

namespace shardc::rt {

std::vector<int64_t> BoundaryTensor::blockOffsets(const MeshDesc &mesh, int64_t rank) const {
  return mesh.blockOffsets(globalShape, sharding, rank);
}

const BoundaryTensor *Program::find(const std::string &kind, const std::string &name,
                                    int microBatch) const {
  for (const BoundaryTensor &t : tensors)
    if (t.kind == kind && t.name == name && t.microBatch == microBatch)
      return &t;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

[[noreturn]] void bad(const std::string &what) {
  throw Error("the program descriptor is malformed: " + what);
}

template <class T> T get(const json &j, const char *key, const std::string &where) {
  auto it = j.find(key);
  if (it == j.end())
    bad(where + " has no \"" + key + "\"");
  try {
    return it->get<T>();
  } catch (const json::exception &) {
    bad(where + ": \"" + key + "\" has the wrong type");
  }
}

TensorType tensorType(const json &j, const std::string &where) {
  TensorType t;
  t.dtype = dtype_from_name(get<std::string>(j, "dtype", where));
  t.shape = get<std::vector<int64_t>>(j, "shape", where);
  for (int64_t d : t.shape)
    if (d < 0)
      bad(where + " has a negative dim");
  return t;
}

std::vector<std::vector<Axes>> axesList(const json &j, const char *key, const std::string &where) {
  if (!j.contains(key))
    return {};
  return get<std::vector<std::vector<Axes>>>(j, key, where);
}

json tensorTypeJson(const TensorType &t) {
  return {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}};
}

} // namespace

Program parseProgram(const std::string &text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception &e) {
    bad(std::string("not JSON (") + e.what() + ")");
  }
  Program p;
  p.version = get<int>(j, "version", "the descriptor");
  if (p.version != abi::kProgramVersion)
    bad("version " + std::to_string(p.version) + " (this runtime reads version " +
        std::to_string(abi::kProgramVersion) + "; recompile the step)");
  p.opTable = get<std::string>(j, "op_table", "the descriptor");
  if (p.opTable != abi::opTableFingerprint())
    bad("compiled against op table " + p.opTable + ", but this runtime's is " +
        abi::opTableFingerprint() + " (runtime/abi/OpTable.cpp changed; recompile the step)");
  p.source = j.value("source", "");
  p.strategy = j.value("strategy", "");
  p.precision = j.value("precision", "fp32");
  p.model = j.value("model", json::object());
  if (!p.model.is_object())
    bad("'model' must be an object");
  p.microBatches = j.value("micro_batches", int64_t{1});
  const json &mesh = j.at("mesh");
  p.mesh.names = get<std::vector<std::string>>(mesh, "names", "mesh");
  p.mesh.sizes = get<std::vector<int64_t>>(mesh, "sizes", "mesh");
  if (p.mesh.names.size() != p.mesh.sizes.size())
    bad("mesh names and sizes differ in length");
  for (int64_t s : p.mesh.sizes)
    if (s < 1)
      bad("a mesh axis has size < 1");
  if (!abi::withinDeviceLimit(p.mesh.sizes))
    bad("the mesh has more than " + std::to_string(abi::kMaxDevices) + " ranks");
  auto checkAxes = [&](const Axes &axes, const std::string &where) {
    for (int a : axes)
      if (a < 0 || a >= static_cast<int>(p.mesh.sizes.size()))
        bad(where + " names mesh axis " + std::to_string(a) + ", outside " + p.mesh.str());
  };
  for (const json &a : j.at("arenas")) {
    ArenaDesc d{get<std::string>(a, "name", "an arena"), get<int64_t>(a, "bytes", "an arena")};
    if (d.bytes < 0)
      bad("arena '" + d.name + "' has negative size");
    p.arenas.push_back(d);
  }
  p.plannedPeakBytes = j.value("planned_peak_bytes", int64_t{0});
  p.activationBytes = j.value("activation_bytes", int64_t{-1});
  p.unstagedBytes = j.value("unstaged_bytes", int64_t{-1});
  p.storedActivationBytes = j.value("stored_activation_bytes", int64_t{-1});
  if (j.contains("train"))
    p.train = j.at("train");
  if (j.contains("pipeline")) {
    const json &pl = j.at("pipeline");
    p.pipeline.axis = get<int>(pl, "axis", "the pipeline");
    p.pipeline.stages = get<int64_t>(pl, "stages", "the pipeline");
    checkAxes({p.pipeline.axis}, "the pipeline");
    if (p.pipeline.stages != p.mesh.sizes[p.pipeline.axis])
      bad("the pipeline has " + std::to_string(p.pipeline.stages) + " stages but its axis " +
          std::to_string(p.pipeline.axis) + " has size " +
          std::to_string(p.mesh.sizes[p.pipeline.axis]));
    p.pipeline.info = pl;
  }
  auto checkStage = [&](int stage, const std::string &where) {
    if (stage < -1 || (stage >= 0 && stage >= p.pipeline.stages))
      bad(where + " is on stage " + std::to_string(stage) + ", but the step has " +
          std::to_string(p.pipeline.stages) + " pipeline stage(s)");
  };
  for (const json &c : j.at("comms")) {
    CommDesc d{get<Axes>(c, "axes", "a communicator")};
    checkAxes(d.axes, "a communicator");
    p.comms.push_back(d);
  }
  for (const json &t : j.at("tensors")) {
    BoundaryTensor b;
    b.kind = get<std::string>(t, "kind", "a tensor");
    b.name = get<std::string>(t, "name", "a tensor");
    std::string where = b.kind + " '" + b.name + "'";
    b.microBatch = t.value("micro_batch", 0);
    b.local = tensorType(t, where);
    b.globalShape = get<std::vector<int64_t>>(t, "global_shape", where);
    b.sharding = get<std::vector<Axes>>(t, "sharding", where);
    b.arena = get<int>(t, "arena", where);
    b.offset = get<int64_t>(t, "offset", where);
    b.stage = t.value("stage", -1);
    checkStage(b.stage, where);
    if (b.globalShape.size() != b.local.shape.size() || b.sharding.size() != b.local.shape.size())
      bad(where + ": shape, global_shape and sharding differ in rank");
    for (size_t d = 0; d < b.sharding.size(); ++d) {
      checkAxes(b.sharding[d], where);
      if (b.local.shape[d] * p.mesh.size(b.sharding[d]) != b.globalShape[d])
        bad(where + ": dim " + std::to_string(d) + " is not its global size split by its axes");
    }
    if (b.arena < 0 || b.arena >= static_cast<int>(p.arenas.size()) || b.offset < 0 ||
        b.offset + b.local.bytes() > p.arenas[b.arena].bytes)
      bad(where + " lies outside its arena");
    if (t.contains("param")) {
      const json &q = t.at("param");
      b.param = ParamInit{get<std::string>(q, "name", where), q.value("role", "weight"),
                          q.value("init", "normal"), q.value("std", 0.0)};
    }
    p.tensors.push_back(std::move(b));
  }
  for (const json &c : j.at("calls")) {
    Call call;
    call.op = get<std::string>(c, "op", "a call");
    std::string where = "call " + std::to_string(p.calls.size()) + " (" + call.op + ")";
    for (const json &t : c.at("operands"))
      call.operands.push_back(tensorType(t, where));
    for (const json &t : c.at("results"))
      call.results.push_back(tensorType(t, where));
    if (c.contains("attrs"))
      call.attrs = c.at("attrs");
    call.operandAxes = axesList(c, "operand_axes", where);
    call.resultAxes = axesList(c, "result_axes", where);
    for (const auto &list : {call.operandAxes, call.resultAxes})
      for (const auto &dims : list)
        for (const Axes &axes : dims)
          checkAxes(axes, where);
    call.comm = c.value("comm", -1);
    call.stage = c.value("stage", -1);
    checkStage(call.stage, where);
    call.scratch = c.value("scratch", int64_t(0));
    if (call.scratch < 0)
      bad(where + " has " + std::to_string(call.scratch) + " bytes of scratch");
    if (call.comm >= static_cast<int>(p.comms.size()))
      bad(where + " names communicator " + std::to_string(call.comm));
    p.calls.push_back(std::move(call));
  }
  return p;
}

bool Program::runs(const Call &c, int64_t rank) const {
  if (c.stage < 0)
    return true;
  int me = stageOf(rank);
  if (c.stage == me)
    return true;
  // A transfer also runs on the stage it sends to.
  auto to = c.attrs.find("to");
  return c.op == "xf.transfer" && to != c.attrs.end() && to->is_number_integer() &&
         to->get<int>() == me;
}

json programToJson(const Program &p, bool withCalls) {
  json j = {{"version", p.version},
            {"op_table", p.opTable},
            {"source", p.source},
            {"strategy", p.strategy},
            {"precision", p.precision},
            {"micro_batches", p.microBatches},
            {"mesh", {{"names", p.mesh.names}, {"sizes", p.mesh.sizes}}},
            {"planned_peak_bytes", p.plannedPeakBytes},
            {"activation_bytes", p.activationBytes},
            {"unstaged_bytes", p.unstagedBytes},
            {"stored_activation_bytes", p.storedActivationBytes},
            {"train", p.train},
            {"model", p.model}};
  j["arenas"] = json::array();
  for (const ArenaDesc &a : p.arenas)
    j["arenas"].push_back({{"name", a.name}, {"bytes", a.bytes}});
  if (p.pipeline.axis >= 0)
    j["pipeline"] = p.pipeline.info;
  j["comms"] = json::array();
  for (const CommDesc &c : p.comms)
    j["comms"].push_back({{"axes", c.axes}});
  j["tensors"] = json::array();
  for (const BoundaryTensor &b : p.tensors) {
    json t = tensorTypeJson(b.local);
    t["kind"] = b.kind;
    t["name"] = b.name;
    if (b.kind == "input")
      t["micro_batch"] = b.microBatch;
    t["global_shape"] = b.globalShape;
    t["sharding"] = b.sharding;
    t["arena"] = b.arena;
    t["offset"] = b.offset;
    if (b.stage >= 0)
      t["stage"] = b.stage;
    if (b.param)
      t["param"] = {{"name", b.param->name},
                    {"role", b.param->role},
                    {"init", b.param->init},
                    {"std", b.param->std}};
    j["tensors"].push_back(t);
  }
  if (withCalls) {
    j["calls"] = json::array();
    for (const Call &c : p.calls) {
      json e = {{"op", c.op}, {"attrs", c.attrs}};
      e["operands"] = json::array();
      for (const TensorType &t : c.operands)
        e["operands"].push_back(tensorTypeJson(t));
      e["results"] = json::array();
      for (const TensorType &t : c.results)
        e["results"].push_back(tensorTypeJson(t));
      if (!c.operandAxes.empty() || !c.resultAxes.empty()) {
        e["operand_axes"] = c.operandAxes;
        e["result_axes"] = c.resultAxes;
      }
      if (c.comm >= 0)
        e["comm"] = c.comm;
      if (c.stage >= 0)
        e["stage"] = c.stage;
      if (c.scratch > 0)
        e["scratch"] = c.scratch;
      j["calls"].push_back(e);
    }
  }
  return j;
}

} // namespace shardc::rt
