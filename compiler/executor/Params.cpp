//===- Params.cpp - parameter values and data batches for a model ---------===//

#include "compiler/executor/Params.h"

#include "runtime/checkpoint/InitFrom.h"
#include "runtime/checkpoint/Safetensors.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/data/MaskedLM.h"
#include "runtime/data/TokenFile.h"
#include "runtime/rng/Philox.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace shardc;
using namespace shardc::exec;

static std::vector<int64_t> shapeOf(RankedTensorType t) {
  return std::vector<int64_t>(t.getShape().begin(), t.getShape().end());
}

HostTensor shardc::exec::convertFloat(const HostTensor &t, DType to) {
  if (t.dtype == to)
    return t;
  if (t.dtype == DType::I32 || to == DType::I32)
    throw rt::Error(std::string("cannot convert ") + rt::dtype_name(t.dtype) + " to " +
                    rt::dtype_name(to));
  // Through f64, which holds every f32/bf16/f16 value exactly.
  std::vector<double> wide(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype) {
    case DType::F32:
      wide[i] = t.data<float>()[i];
      break;
    case DType::F64:
      wide[i] = t.data<double>()[i];
      break;
    case DType::BF16:
      wide[i] = cpu::bf16_to_f32(t.data<uint16_t>()[i]);
      break;
    default:
      wide[i] = cpu::f16_to_f32(t.data<uint16_t>()[i]);
    }
  }
  HostTensor out(to, t.shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (to) {
    case DType::F32:
      out.data<float>()[i] = static_cast<float>(wide[i]);
      break;
    case DType::F64:
      out.data<double>()[i] = wide[i];
      break;
    case DType::BF16:
      out.data<uint16_t>()[i] = cpu::f32_to_bf16(static_cast<float>(wide[i]));
      break;
    default:
      out.data<uint16_t>()[i] = cpu::f32_to_f16(static_cast<float>(wide[i]));
    }
  }
  return out;
}

ParamValues shardc::exec::initParams(func::FuncOp func, uint64_t seed) {
  ParamValues values;
  for (const xf::ParamArg &p : xf::getParams(func)) {
    auto [dtype, shape] = *tensorSpec(p.type);
    // Generate in f64 (f64 parameters) or f32 and round once, so a bf16
    // parameter is the rounded f32 parameter of the same seed.
    HostTensor t(dtype == DType::F64 ? DType::F64 : DType::F32, shape);
    std::string name = p.attr.getName().str();
    switch (p.attr.getInit()) {
    case xf::InitKind::normal:
      if (t.dtype == DType::F64)
        rng::init_normal(t.data<double>(), t.numel(), 0, seed, name, 0.0, p.attr.getStdValue());
      else
        rng::init_normal(t.data<float>(), t.numel(), 0, seed, name, 0.0, p.attr.getStdValue());
      break;
    case xf::InitKind::zeros:
    case xf::InitKind::ones: {
      double v = p.attr.getInit() == xf::InitKind::ones ? 1.0 : 0.0;
      if (t.dtype == DType::F64)
        rng::init_constant(t.data<double>(), t.numel(), v);
      else
        rng::init_constant(t.data<float>(), t.numel(), v);
      break;
    }
    }
    values[name] = convertFloat(t, dtype);
  }
  return values;
}

ParamValues shardc::exec::loadParams(func::FuncOp func, const std::string &path) {
  std::map<std::string, ckpt::TensorData> file = ckpt::read_safetensors(path);
  ParamValues values;
  for (const xf::ParamArg &p : xf::getParams(func)) {
    std::string name = p.attr.getName().str();
    auto it = file.find(name);
    if (it == file.end())
      throw rt::Error(path + ": no tensor '" + name + "' (a parameter of the model)");
    auto [dtype, shape] = *tensorSpec(p.type);
    if (it->second.shape != shape)
      throw rt::Error(path + ": tensor '" + name + "' has shape " +
                      rt::shape_str(it->second.shape) + " but the model expects " +
                      rt::shape_str(shape));
    HostTensor stored;
    stored.dtype = rt::dtype_from_name(it->second.dtype);
    stored.shape = it->second.shape;
    stored.bytes = std::move(it->second.bytes);
    if (stored.dtype == DType::I32)
      throw rt::Error(path + ": tensor '" + name + "' is I32; parameters are floats");
    values[name] = convertFloat(stored, dtype);
  }
  return values;
}

ParamValues shardc::exec::initParamsFrom(func::FuncOp func, const std::string &path) {
  std::vector<ckpt::InitParam> wanted;
  for (const xf::ParamArg &p : xf::getParams(func))
    wanted.push_back({p.attr.getName().str(), p.attr.getRole() == xf::ParamRole::embedding,
                      shapeOf(p.type)});
  std::map<std::string, HostTensor> found = ckpt::readInitParams(path, wanted);
  ParamValues values;
  for (const xf::ParamArg &p : xf::getParams(func)) {
    std::string name = p.attr.getName().str();
    values[name] = convertFloat(found.at(name), tensorSpec(p.type)->first);
  }
  return values;
}

void shardc::exec::saveParams(const ParamValues &params, const std::string &path,
                              const std::map<std::string, std::string> &metadata) {
  std::map<std::string, ckpt::TensorData> out;
  for (const auto &[name, t] : params)
    out[name] = ckpt::TensorData{rt::dtype_name(t.dtype), t.shape, t.bytes};
  ckpt::write_safetensors(path, out, metadata);
}

void shardc::exec::fillInputs(func::FuncOp func, std::vector<HostTensor> &args,
                              const data::TokenFile &tokens, int64_t position, uint64_t seed,
                              int32_t maskToken, int64_t microBatch) {
  args.resize(func.getNumArguments());
  std::vector<xf::InputArg> inputs;
  for (xf::InputArg &in : xf::getInputs(func)) {
    auto mb = func.getArgAttrOfType<IntegerAttr>(in.index, xf::XfDialect::kMicroBatchAttrName);
    if ((mb ? mb.getInt() : 0) == microBatch)
      inputs.push_back(std::move(in));
  }
  bool mlm = false;
  for (const xf::InputArg &in : inputs)
    mlm |= in.kind == "token_types";

  HostTensor tokensT, targetsT;
  for (const xf::InputArg &in : inputs) {
    if (in.kind != "tokens")
      continue;
    if (in.type.getRank() != 2)
      throw rt::Error("input 'tokens' must be [batch, seq], got rank " +
                      std::to_string(in.type.getRank()));
    tokensT = HostTensor(DType::I32, shapeOf(in.type));
    targetsT = HostTensor(DType::I32, shapeOf(in.type));
    tokens.batch(position, in.type.getDimSize(0), in.type.getDimSize(1),
                 tokensT.data<int32_t>(), targetsT.data<int32_t>());
  }
  if (tokensT.bytes.empty())
    throw rt::Error("the model function has no 'tokens' input");
  if (mlm && maskToken < 0) {
    // Default mask id: the last row of the token embedding — the embedding
    // table with the most rows (BERT's position and segment tables are
    // smaller) — a padding row when the vocabulary is padded, so it never
    // occurs in real text. Compiled steps take the same (runtime/main).
    for (const xf::ParamArg &p : xf::getParams(func))
      if (p.attr.getRole() == xf::ParamRole::embedding && p.type.getRank() == 2)
        maskToken = std::max(maskToken, static_cast<int32_t>(p.type.getDimSize(0) - 1));
  }
  if (mlm) // masked LM on the same tokens (the rule compiled steps use too)
    data::applyMaskedLM(tokensT.data<int32_t>(), targetsT.data<int32_t>(), tokensT.numel(),
                        position, seed, maskToken);
  for (const xf::InputArg &in : inputs) {
    if (in.kind == "tokens") {
      args[in.index] = tokensT;
    } else if (in.kind == "targets") {
      args[in.index] = targetsT;
    } else if (in.kind == "token_types") {
      args[in.index] = HostTensor(DType::I32, shapeOf(in.type)); // one segment: type 0
    } else {
      auto [dtype, shape] = *tensorSpec(in.type);
      HostTensor ones(DType::F32, shape);
      rng::init_constant(ones.data<float>(), ones.numel(), 1.0);
      args[in.index] = convertFloat(ones, dtype);
    }
  }
}

std::vector<HostTensor> shardc::exec::buildArguments(func::FuncOp func,
                                                     const ParamValues &params,
                                                     const data::TokenFile &tokens,
                                                     int64_t position, uint64_t seed,
                                                     int32_t maskToken) {
  std::vector<HostTensor> args(func.getNumArguments());
  fillInputs(func, args, tokens, position, seed, maskToken, 0);
  for (const xf::ParamArg &p : xf::getParams(func))
    args[p.index] = params.at(p.attr.getName().str());
  for (unsigned i = 0; i < args.size(); ++i)
    if (args[i].bytes.empty() && args[i].numel() != 0)
      throw rt::Error("argument #" + std::to_string(i) +
                      " is neither an xf.param nor an xf.input; shardc run cannot feed it");
  return args;
}
