#include "sampling/sampling_params.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace pagoda {
namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

}  // namespace

Status SamplingParams::Validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f) {
    return InvalidArgument("temperature must be a finite number >= 0, got " + Num(temperature));
  }
  if (top_k < 0) {
    return InvalidArgument("top_k must be >= 0 (0 disables), got " + std::to_string(top_k));
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return InvalidArgument("top_p must be in (0, 1], got " + Num(top_p));
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return InvalidArgument("min_p must be in [0, 1], got " + Num(min_p));
  }
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty)) {
    return InvalidArgument("repetition_penalty must be a finite number > 0, got " +
                           Num(repetition_penalty));
  }
  if (penalty_last_n < -1) {
    return InvalidArgument("penalty_last_n must be >= -1 (-1 = whole history), got " +
                           std::to_string(penalty_last_n));
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return InvalidArgument("presence_penalty must be in [-2, 2], got " + Num(presence_penalty));
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return InvalidArgument("frequency_penalty must be in [-2, 2], got " + Num(frequency_penalty));
  }
  for (const auto& [id, bias] : logit_bias) {
    if (std::isnan(bias) || bias == INFINITY) {
      return InvalidArgument("logit_bias for token " + std::to_string(id) +
                             " must be a number or -infinity, got " + Num(bias));
    }
  }
  return Status::Ok();
}

Status SamplingParams::ValidateForVocab(int32_t n_vocab) const {
  PAGODA_RETURN_IF_ERROR(Validate());
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0 || id >= n_vocab) {
      return InvalidArgument("logit_bias token id " + std::to_string(id) +
                             " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace pagoda
