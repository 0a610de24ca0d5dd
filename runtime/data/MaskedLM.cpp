//===- MaskedLM.cpp - BERT's masked-LM batches ----------------------------===//
#include "runtime/data/MaskedLM.h"

#include "runtime/rng/Philox.h"

namespace shardc::data {

void applyMaskedLM(int32_t *tokens, int32_t *targets, int64_t n, int64_t position,
                   uint64_t seed, int32_t maskToken) {
  const uint64_t stream = rng::name_key("mlm-mask");
  for (int64_t i = 0; i < n; ++i) {
    bool masked =
        rng::uniform(seed, stream, static_cast<uint64_t>(position + i)) < kMaskedLmProbability;
    targets[i] = masked ? tokens[i] : kMaskedLmIgnore;
    if (masked)
      tokens[i] = maskToken;
  }
}

} // namespace shardc::data
