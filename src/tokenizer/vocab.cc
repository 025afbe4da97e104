#include "tokenizer/vocab.h"

#include <limits>

namespace pagoda {
namespace {

std::string Q(std::string_view key) {
  std::string s;  // built piecewise: GCC 12 warns falsely on "'" + std::string(...)
  s.reserve(key.size() + 2);
  s.push_back('\'');
  s.append(key);
  s.push_back('\'');
  return s;
}

TokenAttr AttrFromType(int64_t t) {
  return (t >= 0 && t <= 6) ? static_cast<TokenAttr>(t) : TokenAttr::kUndefined;
}

Status LoadTexts(const GgufMetadata& md, Vocab* v) {
  const GgufValue* value = md.Find(kKeyTokens);
  if (value == nullptr) return NotFound("missing metadata key " + Q(kKeyTokens));
  const GgufArray* arr = value->AsArray();
  if (arr == nullptr || arr->elem_type != GgufType::kString) {
    return InvalidArgument("metadata key " + Q(kKeyTokens) + " must be an array of strings");
  }
  if (arr->items.empty()) return InvalidArgument("metadata key " + Q(kKeyTokens) + " is empty");
  if (arr->items.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return InvalidArgument("metadata key " + Q(kKeyTokens) + " has too many entries");
  }
  const size_t n = arr->items.size();
  v->texts.reserve(n);
  v->index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string* s = arr->items[i].AsString();
    if (s == nullptr) {
      return InvalidArgument("metadata key " + Q(kKeyTokens) + " entry " + std::to_string(i) +
                             " is not a string");
    }
    v->texts.push_back(*s);
    // Empty texts can never match; duplicates keep the first id.
    if (!s->empty()) v->index.emplace(*s, static_cast<TokenId>(i));
  }
  return Status::Ok();
}

Status LoadScoresAndTypes(const GgufMetadata& md, Vocab* v) {
  const size_t n = v->texts.size();
  auto length_error = [&](const char* key, size_t got) {
    return InvalidArgument("metadata key " + Q(key) + " has " + std::to_string(got) +
                           " entries but " + Q(kKeyTokens) + " has " + std::to_string(n));
  };
  if (md.Has(kKeyScores)) {
    PAGODA_ASSIGN_OR_RETURN(v->scores, md.GetFloatArray(kKeyScores));
    if (v->scores.size() != n) return length_error(kKeyScores, v->scores.size());
  } else {
    v->scores.assign(n, 0.0f);
  }
  v->attrs.assign(n, TokenAttr::kNormal);
  if (md.Has(kKeyTokenType)) {
    PAGODA_ASSIGN_OR_RETURN(std::vector<int64_t> types, md.GetIntArray(kKeyTokenType));
    if (types.size() != n) return length_error(kKeyTokenType, types.size());
    for (size_t i = 0; i < n; ++i) v->attrs[i] = AttrFromType(types[i]);
  }
  return Status::Ok();
}

// Reads an optional special-token id key. `strict`: an out-of-range id is an
// error; otherwise it disables the token (padding ids past the end are common
// in converted files and harmless).
Status LoadSpecialId(const GgufMetadata& md, const char* key, bool strict, Vocab* v, TokenId* id) {
  if (!v->InRange(*id)) *id = kNoToken;  // a default that does not fit this vocab
  if (!md.Has(key)) return Status::Ok();
  PAGODA_ASSIGN_OR_RETURN(int64_t raw, md.GetInt(key));
  if (raw == -1 || raw == 0xFFFFFFFFll) {  // converters write uint32(-1) for "none"
    *id = kNoToken;
    return Status::Ok();
  }
  if (raw < 0 || raw >= v->size()) {
    if (!strict) {
      *id = kNoToken;
      return Status::Ok();
    }
    return OutOfRange("metadata key " + Q(key) + " = " + std::to_string(raw) +
                      " is outside the vocabulary of " + std::to_string(v->size()) + " tokens");
  }
  *id = static_cast<TokenId>(raw);
  return Status::Ok();
}

Status LoadSpecialIds(const GgufMetadata& md, Vocab* v) {
  struct Key { const char* name; TokenId* id; bool strict; };
  const Key keys[] = {
      {"tokenizer.ggml.bos_token_id", &v->bos, true},
      {"tokenizer.ggml.eos_token_id", &v->eos, true},
      {"tokenizer.ggml.unknown_token_id", &v->unk, true},
      {"tokenizer.ggml.eot_token_id", &v->eot, true},
      {"tokenizer.ggml.eom_token_id", &v->eom, true},
      {"tokenizer.ggml.seperator_token_id", &v->sep, true},  // sic: gguf-py's spelling
      {"tokenizer.ggml.padding_token_id", &v->pad, false},
  };
  for (const Key& k : keys) PAGODA_RETURN_IF_ERROR(LoadSpecialId(md, k.name, k.strict, v, k.id));
  return Status::Ok();
}

// Texts that end a turn in the chat formats we know. llama.cpp keys the EOG set
// on the same texts, for want of per-token metadata.
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<EOT>", "_<EOT>", "<|end_of_text|>", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
    "<end_of_utterance>",
};
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "_<EOT>",
    "<|end_of_text|>", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
};

void BuildEog(Vocab* v) {
  auto mark_control = [v](TokenId id) {
    // An end-of-turn marker must never be printed as text nor be produced from
    // text without parse_special, whatever type the converter gave it.
    if (v->attrs[id] != TokenAttr::kControl) v->attrs[id] = TokenAttr::kControl;
  };
  if (v->eot == kNoToken) {
    for (std::string_view t : kEotTexts) {
      if (TokenId id = v->Find(t); id != kNoToken) {
        v->eot = id;
        break;
      }
    }
  }
  if (v->eom == kNoToken) v->eom = v->Find("<|eom_id|>");
  for (std::string_view t : kEogTexts) {
    if (TokenId id = v->Find(t); id != kNoToken) {
      v->eog.insert(id);
      mark_control(id);
    }
  }
  for (TokenId id : {v->eos, v->eot, v->eom}) {
    if (id != kNoToken) v->eog.insert(id);
  }
}

}  // namespace

Result<Vocab> Vocab::Load(const GgufMetadata& md, TokenizerKind kind, bool bpe_add_bos) {
  Vocab v;
  PAGODA_RETURN_IF_ERROR(LoadTexts(md, &v));
  PAGODA_RETURN_IF_ERROR(LoadScoresAndTypes(md, &v));
  if (kind == TokenizerKind::kSpm) {
    v.bos = 1;
    v.eos = 2;
    v.unk = 0;
    v.add_bos = true;
    v.add_space_prefix = true;
  } else if (kind == TokenizerKind::kWpm) {
    v.bos = 101;  // [CLS]
    v.unk = 100;
    v.sep = 102;
    v.pad = 0;
    v.add_bos = true;
    v.add_sep = true;
  } else {
    v.add_bos = bpe_add_bos;
  }
  PAGODA_RETURN_IF_ERROR(LoadSpecialIds(md, &v));
  if (kind == TokenizerKind::kWpm && !md.Has("tokenizer.ggml.bos_token_id")) {
    PAGODA_RETURN_IF_ERROR(LoadSpecialId(md, "tokenizer.ggml.cls_token_id", true, &v, &v.bos));
  }
  PAGODA_ASSIGN_OR_RETURN(v.add_bos, md.GetBoolOr("tokenizer.ggml.add_bos_token", v.add_bos));
  PAGODA_ASSIGN_OR_RETURN(v.add_eos, md.GetBoolOr("tokenizer.ggml.add_eos_token", v.add_eos));
  PAGODA_ASSIGN_OR_RETURN(v.add_sep, md.GetBoolOr("tokenizer.ggml.add_sep_token", v.add_sep));
  PAGODA_ASSIGN_OR_RETURN(v.add_space_prefix,
                          md.GetBoolOr("tokenizer.ggml.add_space_prefix", v.add_space_prefix));
  // A default that the vocabulary cannot honour is dropped; an explicit
  // request is an error.
  if (v.add_bos && v.bos == kNoToken) {
    if (md.Has("tokenizer.ggml.add_bos_token")) {
      return InvalidArgument("'tokenizer.ggml.add_bos_token' is true but "
                             "'tokenizer.ggml.bos_token_id' is not set");
    }
    v.add_bos = false;
  }
  if (v.add_eos && v.eos == kNoToken) {
    return InvalidArgument("'tokenizer.ggml.add_eos_token' is true but "
                           "'tokenizer.ggml.eos_token_id' is not set");
  }
  if (v.add_sep && v.sep == kNoToken) {
    if (md.Has("tokenizer.ggml.add_sep_token")) {
      return InvalidArgument("'tokenizer.ggml.add_sep_token' is true but "
                             "'tokenizer.ggml.seperator_token_id' is not set");
    }
    v.add_sep = false;
  }
  BuildEog(&v);
  return v;
}

}  // namespace pagoda
