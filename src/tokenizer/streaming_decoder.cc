// StreamingDecoder (declared in tokenizer.h beside the Tokenizer it reads).
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace pagoda {

std::string StreamingDecoder::Push(TokenId id) {
  pending_.append(tok_->PieceView(id, special_));
  // Emit everything except a trailing sequence that may still complete.
  const size_t hold = utf8::IncompleteTail(pending_);
  const std::string_view ready(pending_.data(), pending_.size() - hold);
  std::string out;
  out.reserve(ready.size());
  utf8::AppendSanitized(&out, ready);
  pending_.erase(0, ready.size());
  return out;
}

std::string StreamingDecoder::Flush() {
  std::string out;
  utf8::AppendSanitized(&out, pending_);
  pending_.clear();
  return out;
}

}  // namespace pagoda
