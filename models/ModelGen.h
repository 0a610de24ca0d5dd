//===- ModelGen.h - model presets and the model generator -------*- C++ -*-===//
//
// `shardc gen` builds a model as one func.func @forward(inputs..., params...)
// -> loss of xf ops. Parameter names follow the Hugging Face checkpoints of
// each family (GPT-2's fused c_attn is split into q/k/v so that tensor
// parallelism can split heads; `shardc export` concatenates them back).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_MODELS_MODELGEN_H
#define SHARDC_MODELS_MODELGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardc::models {

enum class Family { GPT2, BERT, LLAMA };

/// Everything that decides a generated model.
struct ModelConfig {
  Family family = Family::GPT2;
  std::string name = "custom";
  int64_t vocab = 50257;          ///< real vocabulary size
  int64_t vocabPadMultiple = 128; ///< padded vocab = round up to this multiple
  int64_t positions = 1024;       ///< learned position table size (GPT-2, BERT)
  int64_t hidden = 768;
  int64_t layers = 12;
  int64_t heads = 12;
  int64_t kvHeads = 0; ///< 0: equal to heads (no grouped-query attention)
  int64_t ffn = 0;     ///< 0: 4 * hidden
  int64_t typeVocab = 2; ///< BERT token types
  int64_t batch = 4;
  int64_t seq = 1024;
  double normEps = 1e-5;
  double dropout = 0.0;
  double ropeTheta = 10000.0;
  double initStd = 0.02;
  bool preLN = true; ///< BERT: pre-LN (Megatron) or post-LN (original)
  std::string dtype = "f32"; ///< f32 | bf16 | f16 | f64

  int64_t paddedVocab() const {
    return (vocab + vocabPadMultiple - 1) / vocabPadMultiple * vocabPadMultiple;
  }
  int64_t kvHeadsOrHeads() const { return kvHeads ? kvHeads : heads; }
  int64_t ffnOrDefault() const { return ffn ? ffn : 4 * hidden; }
  int64_t headDim() const { return hidden / heads; }
};

/// A named preset and what it reproduces.
struct Preset {
  std::string name;
  std::string description;
  ModelConfig config;
};

/// All presets, in the order `shardc gen --list` prints them.
const std::vector<Preset> &presets();
std::optional<ModelConfig> findPreset(const std::string &name);
std::optional<Family> parseFamily(const std::string &name);
const char *familyName(Family f);

/// Checks a configuration; returns an error message or "".
std::string validate(const ModelConfig &config);

/// Builds the model module. The config must be valid.
mlir::OwningOpRef<mlir::ModuleOp> buildModel(mlir::MLIRContext &ctx, const ModelConfig &config);

/// Parameter count, FLOPs and memory of a model (Transformer Math formulas).
struct Summary {
  int64_t params = 0;           ///< as generated (padded vocabulary)
  int64_t paramsUnpadded = 0;   ///< with the real vocabulary (the published count)
  int64_t embeddingParams = 0;  ///< token + position (+ type) embeddings
  double flopsPerToken = 0;     ///< 6N + attention
  double attentionFlopsPerToken = 0;
  int64_t tokensPerBatch = 0;
};
Summary summarize(mlir::MLIRContext &ctx, const ModelConfig &config);
/// The summary as the table `shardc gen --summary` prints.
std::string formatSummary(const ModelConfig &config, const Summary &s);

} // namespace shardc::models

#endif // SHARDC_MODELS_MODELGEN_H
