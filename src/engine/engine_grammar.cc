// The engine's grammar-constraint steps (EngineRequest::constraint): mask
// before sampling, advance after. Engine thread only.
#include <algorithm>
#include <string>

#include "engine/engine.h"
#include "sampling/grammar/grammar.h"
#include "sampling/grammar/token_matcher.h"

namespace pagoda {

Status Engine::ValidateConstraint(const EngineRequest& r) const {
  if (!r.constraint) return Status::Ok();
  if (r.constraint->grammar == nullptr) return InvalidArgument("the request's grammar constraint has no grammar");
  if (options_.grammar_vocab == nullptr) {
    return FailedPrecondition("this engine has no vocabulary index for grammar constraints (EngineOptions::grammar_vocab)");
  }
  if (options_.grammar_vocab->vocab_size() > model_.n_vocab()) {
    return FailedPrecondition("the grammar vocabulary index has more tokens than the model");
  }
  return Status::Ok();
}

Result<const grammar::TokenBitmask*> Engine::GrammarMask(Sequence& s) {
  if (!s.grammar || !s.grammar_active) return nullptr;
  // Tokens left, this one included: max_tokens, and the context (n_ctx
  // computed positions allow n_ctx + 1 tokens).
  const int32_t remaining = std::min(s.request().max_tokens - s.n_generated(),
                                     options_.n_ctx + 1 - static_cast<int32_t>(s.tokens.size()));
  if (s.grammar->ComputeMask(grammar_mask_, remaining) == 0) {
    if (s.grammar->ComputeMask(grammar_mask_) > 0) {
      return InvalidArgument("the grammar cannot be completed within the remaining " + std::to_string(remaining) +
                             " tokens (max_tokens or the context)");
    }
    return InvalidArgument("grammar allows no next token");
  }
  return &grammar_mask_;
}

bool Engine::GrammarAccept(Sequence& s, TokenId id) {
  if (!s.grammar) return false;
  if (s.grammar_active) {
    PAGODA_CHECK(s.grammar->AcceptToken(id)) << "sampled token " << id << " is outside the grammar mask";
    return s.grammar->IsFinished();
  }
  // Waiting for delay_until in the generated text (tokens shown with specials).
  const std::string& marker = s.request().constraint->delay_until;
  if (id >= 0 && id < s.grammar->vocab().vocab_size()) s.grammar_tail += s.grammar->vocab().rendered(id);
  if (s.grammar_tail.find(marker) != std::string::npos) {
    s.grammar_active = true;
    s.grammar_tail.clear();
    s.grammar_tail.shrink_to_fit();
  } else if (s.grammar_tail.size() > marker.size()) {
    s.grammar_tail.erase(0, s.grammar_tail.size() - marker.size());
  }
  return false;
}

}  // namespace pagoda
