#include "gateway/request_tokenizer.h"

#include "api/chat_request.h"
#include "api/completion_request.h"
#include "gguf/gguf_file.h"
#include "tokenizer/chat_template.h"

namespace pagoda::gateway {

namespace {

Status FromApi(const api::ApiError& e) { return InvalidArgument(e.message); }

}  // namespace

Result<std::unique_ptr<RequestTokenizer>> RequestTokenizer::FromGguf(const std::string& path) {
  // The mapping is never touched past the header: no weight page is read.
  auto file = GgufFile::Open(path);
  if (!file.ok()) return file.status();
  auto t = FromMetadata((*file)->metadata());
  if (!t.ok()) return t.status().WithContext(path);
  return t;
}

Result<std::unique_ptr<RequestTokenizer>> RequestTokenizer::FromMetadata(const GgufMetadata& metadata) {
  auto tok = Tokenizer::FromMetadata(metadata);
  if (!tok.ok()) return tok.status();
  std::unique_ptr<RequestTokenizer> t(new RequestTokenizer());
  t->tokenizer_ = std::move(tok).value();
  auto enc = chat::MakePromptEncoder(*t->tokenizer_, ChatTemplateSource(metadata));
  if (!enc.ok()) return enc.status();
  t->encoder_ = std::move(enc).value();
  return t;
}

Result<std::vector<int32_t>> RequestTokenizer::Tokens(std::string_view path, std::string_view body) const {
  if (path == "/v1/chat/completions") {
    auto req = api::ParseChatCompletionRequest(body);
    if (!req.ok()) return FromApi(req.error());
    auto ids = chat::EncodeChatPrompt(encoder_, req->messages, /*add_generation_prompt=*/true,
                                      chat::PromptTools(req.value()));
    if (!ids.ok()) return FromApi(ids.error());
    return std::move(ids).value();
  }
  if (path == "/v1/completions") {
    auto req = api::ParseCompletionRequest(body);
    if (!req.ok()) return FromApi(req.error());
    // Several prompts run as several sequences; the first one routes (the
    // rest usually share its document prefix).
    const api::CompletionPrompt& p = req->prompts.front();
    if (p.is_tokens) return p.tokens;
    auto ids = chat::EncodeTextPrompt(encoder_, p.text);
    if (!ids.ok()) return FromApi(ids.error());
    return std::move(ids).value();
  }
  return InvalidArgument("no prompt to tokenize on " + std::string(path));
}

}  // namespace pagoda::gateway
