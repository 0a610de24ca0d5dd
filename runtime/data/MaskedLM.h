//===- MaskedLM.h - BERT's masked-LM batches --------------------*- C++ -*-===//
//
// The one masking rule of every masked-LM run (`shardc run/train`, the
// simulated mesh, compiled steps): each token of the global batch is masked
// with probability 0.15, decided by Philox at (seed, "mlm-mask", its global
// data position), so a decision depends only on the seed and where the token
// sits in the data, never on the rank, the mesh or the micro-batching. A
// masked token's target is its id and its input becomes the mask id; every
// other target is the ignore index -100. (No 80/10/10 replacement: every
// masked input is the mask id.)
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_DATA_MASKEDLM_H
#define SHARDC_RUNTIME_DATA_MASKEDLM_H

#include <cstdint>

namespace shardc::data {

inline constexpr float kMaskedLmProbability = 0.15f;
inline constexpr int32_t kMaskedLmIgnore = -100;

/// Masks n tokens (a global batch, row-major) whose first token is at data
/// position `position`: tokens[i] is replaced by maskToken where masked;
/// targets[i] is the original token there, -100 elsewhere.
void applyMaskedLM(int32_t *tokens, int32_t *targets, int64_t n, int64_t position,
                   uint64_t seed, int32_t maskToken);

} // namespace shardc::data

#endif // SHARDC_RUNTIME_DATA_MASKEDLM_H
