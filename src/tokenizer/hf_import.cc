#include "tokenizer/hf_import.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/normalizer.h"

namespace pagoda {
namespace {

using Json = nlohmann::json;

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum TokenType : int32_t {
  kTypeNormal = 1, kTypeUnknown = 2, kTypeControl = 3, kTypeUserDefined = 4, kTypeUnused = 5,
  kTypeByte = 6,
};

// Score of tokens no merge produces: SPM merging must never prefer them.
constexpr float kUnreachableScore = -1e9f;

std::string Q(const std::string& s) { return "'" + s + "'"; }

// ---------------------------------------------------------------------------
// Pre-tokenizer recognition.

// The GPT-2 split used by a ByteLevel pre-tokenizer with use_regex=true.
constexpr const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct KnownPre {
  const char* name;               // tokenizer.ggml.pre
  std::vector<const char*> regexes;  // canonical form, see Canonical()
  bool ignore_merges;             // what llama.cpp does for this pre type
};

const std::vector<KnownPre>& KnownPres() {
  static const std::vector<KnownPre> kPres = {
      {"llama-bpe",
       {R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       true},
      {"qwen2",
       {R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       false},
      {"deepseek-v3",
       {R"(\p{N}{1,3})", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
        R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       false},
      {"gpt-2", {kGpt2Regex}, false},
      // o200k_base (tiktoken), as HF conversions of GPT-4o write it; also
      // Kanana-2's tokenizer.json (llama.cpp's "kanana2" is GPT4O too).
      {"gpt-4o",
       {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|)"
        R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|)"
        R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       false},
      // Kimi K2: tokenization_kimi.py's pat_str verbatim (Rust syntax, class
      // intersections), as a tokenizer.json converted from its tiktoken.model
      // spells it; the model ships no tokenizer.json of its own.
      {"kimi-k2",
       {R"([\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+)"
        R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|)"
        R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*)"
        R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|)"
        R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       false},
  };
  return kPres;
}

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t pos = s->find(from); pos != std::string::npos; pos = s->find(from, pos + to.size())) {
    s->replace(pos, from.size(), to);
  }
}

// One spelling per regex: tokenizer.json files write CR/LF either as escapes
// or as raw characters, and the contraction group either case-insensitively
// (Rust regex syntax) or with explicit classes (llama.cpp's spelling).
std::string Canonical(std::string re) {
  ReplaceAll(&re, "\r", "\\r");
  ReplaceAll(&re, "\n", "\\n");
  ReplaceAll(&re, "(?i:'s|'t|'re|'ve|'m|'ll|'d)",
             "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])");
  return re;
}

Result<const KnownPre*> RecognizePre(const std::vector<std::string>& regexes) {
  for (const KnownPre& pre : KnownPres()) {
    if (pre.regexes.size() != regexes.size()) continue;
    bool same = true;
    for (size_t i = 0; i < regexes.size() && same; ++i) same = Canonical(regexes[i]) == pre.regexes[i];
    if (same) return &pre;
  }
  std::string list, known;
  for (const std::string& r : regexes) list += (list.empty() ? "" : ", ") + Q(r);
  for (const KnownPre& pre : KnownPres()) known += (known.empty() ? "" : ", ") + std::string(pre.name);
  return Unimplemented("unsupported pre-tokenizer: no known tokenizer.ggml.pre splits with the "
                       "regexes [" + list + "] (known: " + known + ")");
}

// ---------------------------------------------------------------------------
// tokenizer.json structure.

// A node and, when it is a Sequence, its children, flattened.
std::vector<const Json*> Flatten(const Json& node, const char* children_key) {
  std::vector<const Json*> out;
  if (node.is_null()) return out;
  if (node.is_object() && node.value("type", "") == "Sequence" && node.contains(children_key) &&
      node[children_key].is_array()) {
    for (const Json& child : node[children_key]) {
      auto sub = Flatten(child, children_key);
      out.insert(out.end(), sub.begin(), sub.end());
    }
    return out;
  }
  out.push_back(&node);
  return out;
}

std::string TypeOf(const Json& node) {
  return node.is_object() && node.contains("type") && node["type"].is_string()
             ? node["type"].get<std::string>() : std::string("(untyped)");
}

bool IsSpaceToMetaspace(const Json& n) {
  return TypeOf(n) == "Replace" && n.contains("pattern") && n["pattern"].is_object() &&
         n["pattern"].value("String", "") == " " && n.value("content", "") == "\u2581";
}

// What the normalizer and pre-tokenizer amount to.
struct Pipeline {
  bool byte_level = false;
  bool space_to_metaspace = false;  // ' ' -> U+2581 (SentencePiece escaping)
  bool add_space_prefix = false;
  bool nfc = false;  // Unicode NFC before anything else
  std::vector<std::string> regexes;
  // A Split kept only its matches (behavior Removed, inverted), as tiktoken
  // conversions write GPT-4o's split: the same pieces as Isolated when the
  // one regex matches every character, which every single-regex known pre does.
  bool split_keeps_matches = false;
};

Status ReadNormalizer(const Json& root, Pipeline* p) {
  if (!root.contains("normalizer")) return Status::Ok();
  for (const Json* n : Flatten(root["normalizer"], "normalizers")) {
    const std::string type = TypeOf(*n);
    if (type == "NFC") {
      // llama.cpp's converter drops it (GGUF has no key for it); we record it
      // as tokenizer.pagoda.normalizer so decomposed input tokenizes as in HF.
      p->nfc = true;
    } else if (IsSpaceToMetaspace(*n)) {
      p->space_to_metaspace = true;
    } else if (type == "Prepend" && n->value("prepend", "") == "\u2581") {
      p->add_space_prefix = true;
    } else {
      return Unimplemented("unsupported normalizer " + Q(type) + " in tokenizer.json");
    }
  }
  return Status::Ok();
}

Status ReadSplit(const Json& n, Pipeline* p) {
  const Json& pattern = n.contains("pattern") ? n["pattern"] : Json();
  if (pattern.is_object() && pattern.contains("String") && pattern["String"] == " " &&
      p->space_to_metaspace) {
    return Status::Ok();  // no spaces are left after the normalizer
  }
  if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string()) {
    return Unimplemented("unsupported Split pre-tokenizer pattern " + pattern.dump());
  }
  const std::string behavior = n.value("behavior", "");
  const bool invert = n.value("invert", false);
  if (behavior == "Removed" && invert) {
    p->split_keeps_matches = true;
  } else if (behavior != "Isolated" || invert) {
    return Unimplemented("unsupported Split pre-tokenizer: behavior " + Q(behavior) + ", invert " +
                         (invert ? "true" : "false") + " (only Isolated not inverted, or Removed inverted)");
  }
  p->regexes.push_back(pattern["Regex"].get<std::string>());
  return Status::Ok();
}

Status ReadPreTokenizer(const Json& root, Pipeline* p) {
  if (!root.contains("pre_tokenizer")) return Status::Ok();
  for (const Json* n : Flatten(root["pre_tokenizer"], "pretokenizers")) {
    const std::string type = TypeOf(*n);
    if (type == "Split") {
      PAGODA_RETURN_IF_ERROR(ReadSplit(*n, p));
    } else if (type == "ByteLevel") {
      if (n->value("add_prefix_space", false)) {
        return Unimplemented("unsupported ByteLevel pre-tokenizer with add_prefix_space=true");
      }
      p->byte_level = true;
      if (n->value("use_regex", true)) p->regexes.push_back(kGpt2Regex);
    } else if (type == "Metaspace") {
      if (n->value("replacement", "") != "\u2581" || n->value("split", true)) {
        return Unimplemented("unsupported Metaspace pre-tokenizer (only replacement U+2581 "
                             "with split=false)");
      }
      p->space_to_metaspace = true;
      const std::string scheme = n->value("prepend_scheme", "");
      p->add_space_prefix = scheme.empty() ? n->value("add_prefix_space", true) : scheme != "never";
    } else {
      return Unimplemented("unsupported pre-tokenizer " + Q(type) + " in tokenizer.json");
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Vocabulary.

struct AddedToken {
  int64_t id = -1;
  std::string content;
  bool special = false;
};

struct Table {
  std::vector<std::string> texts;
  std::vector<int32_t> types;
  std::vector<float> scores;
  std::unordered_map<std::string, int64_t> ids;  // text -> first id
};

Result<std::vector<AddedToken>> ReadAddedTokens(const Json& root) {
  std::vector<AddedToken> out;
  if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return out;
  if (!root["added_tokens"].is_array()) return InvalidArgument("'added_tokens' must be an array");
  for (const Json& a : root["added_tokens"]) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
        !a.contains("content") || !a["content"].is_string()) {
      return InvalidArgument("added token " + a.dump() + " lacks an integer 'id' or a 'content'");
    }
    AddedToken t{a["id"].get<int64_t>(), a["content"].get<std::string>(), a.value("special", false)};
    if (t.id < 0) return InvalidArgument("added token " + Q(t.content) + " has a negative id");
    out.push_back(std::move(t));
  }
  return out;
}

// llama.cpp's convert marks some added tokens control although the file says
// they are not special (Gemma's <unusedN> and <mask>, DeepSeek's <｜...｜>).
bool LooksSpecial(const std::string& s) {
  auto starts = [&](const char* p) { return s.rfind(p, 0) == 0; };
  auto ends = [&](const std::string& p) {
    return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (s == "<pad>" || s == "<mask>" || s == "<2mass>" || s == "[@BOS@]") return true;
  if (starts("<|") && ends("|>")) return true;
  if (starts("<\uff5c") && ends("\uff5c>")) return true;
  return starts("<unused") && ends(">");
}

bool IsByteToken(const std::string& s) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return s.size() == 6 && s.compare(0, 3, "<0x") == 0 && hex(s[3]) && hex(s[4]) && s[5] == '>';
}

Result<Table> BuildTable(const Json& model, const std::vector<AddedToken>& added, bool spm) {
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return InvalidArgument("tokenizer.json 'model.vocab' is missing or not an object");
  }
  int64_t n = 0;
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) {
      return InvalidArgument("vocab entry " + Q(text) + " has an invalid id " + id.dump());
    }
    n = std::max(n, id.get<int64_t>() + 1);
  }
  for (const AddedToken& a : added) n = std::max(n, a.id + 1);
  if (n == 0) return InvalidArgument("tokenizer.json has an empty vocabulary");
  if (n > std::numeric_limits<int32_t>::max()) return InvalidArgument("vocabulary ids are too large");

  Table t;
  std::vector<bool> present(n, false);
  t.texts.resize(n);
  t.types.assign(n, kTypeNormal);
  for (const auto& [text, id] : model["vocab"].items()) {
    const int64_t i = id.get<int64_t>();
    if (present[i]) return InvalidArgument("vocab id " + std::to_string(i) + " is used twice");
    present[i] = true;
    t.texts[i] = text;
    if (spm && IsByteToken(text)) t.types[i] = kTypeByte;
  }
  // Added tokens keep their raw content. convert_hf_to_gguf rewrites U+2581 to
  // ' ' in Gemma's user-defined tokens ("\u2581\u2581"...), which makes every
  // double space split out before merging and differ from HF; raw content is
  // matched on raw text exactly as HF's added vocabulary does.
  for (const AddedToken& a : added) {
    present[a.id] = true;
    t.texts[a.id] = a.content;
    t.types[a.id] = a.special || LooksSpecial(a.content) ? kTypeControl : kTypeUserDefined;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!present[i]) {
      t.texts[i] = "[PAD" + std::to_string(i) + "]";
      t.types[i] = kTypeUnused;
    }
    t.ids.emplace(t.texts[i], i);
  }
  return t;
}

// Merges as (left, right); tokenizers >= 0.20 write pairs, older ones "a b".
Result<std::vector<std::pair<std::string, std::string>>> ReadMerges(const Json& model) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!model.contains("merges") || !model["merges"].is_array()) {
    return InvalidArgument("tokenizer.json 'model.merges' is missing or not an array");
  }
  out.reserve(model["merges"].size());
  for (const Json& m : model["merges"]) {
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
        return InvalidArgument("malformed merge " + Q(s) + " (expected \"left right\")");
      }
      out.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return InvalidArgument("malformed merge " + m.dump());
    }
  }
  return out;
}

// SPM merges the adjacent pair whose merged token scores highest; BPE merges
// the pair with the lowest rank. Scoring each token by minus the rank of the
// first merge that produces it makes the two agree when, as SentencePiece's
// exporter writes them, the merges of a token are contiguous and list every
// split of it.
void SetSpmScores(const std::vector<std::pair<std::string, std::string>>& merges, Table* t) {
  t->scores.assign(t->texts.size(), kUnreachableScore);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    auto it = t->ids.find(merges[rank].first + merges[rank].second);
    if (it == t->ids.end()) continue;
    float& score = t->scores[it->second];
    score = std::max(score, -static_cast<float>(rank));
  }
}

// ---------------------------------------------------------------------------
// Special tokens from tokenizer_config.json and the post-processor.

struct Specials {
  std::optional<int64_t> bos, eos, unk, pad;
  std::optional<bool> add_bos, add_eos;
};

// A config token entry: "text", {"content": "text", ...} or null.
Result<std::optional<int64_t>> ConfigToken(const Json& cfg, const char* key, const Table& t) {
  if (!cfg.contains(key) || cfg[key].is_null()) return std::optional<int64_t>();
  const Json& v = cfg[key];
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
  } else if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    text = v["content"].get<std::string>();
  } else {
    return InvalidArgument(std::string("tokenizer_config.json '") + key + "' is neither a string "
                           "nor a token object: " + v.dump());
  }
  auto it = t.ids.find(text);
  if (it == t.ids.end()) {
    return InvalidArgument(std::string("tokenizer_config.json '") + key + "' " + Q(text) +
                           " is not in the vocabulary");
  }
  return std::optional<int64_t>(it->second);
}

// TemplateProcessing's single-sequence template: a leading special token is
// BOS, a trailing one EOS (what gguf-py's SpecialVocab infers).
void ReadPostProcessor(const Json& root, const Table& t, Specials* s) {
  if (!root.contains("post_processor")) return;
  for (const Json* p : Flatten(root["post_processor"], "processors")) {
    if (TypeOf(*p) != "TemplateProcessing" || !p->contains("single") ||
        !(*p)["single"].is_array() || (*p)["single"].empty()) {
      continue;
    }
    const Json& single = (*p)["single"];
    auto special_id = [&](const Json& item) -> std::optional<int64_t> {
      if (!item.is_object() || !item.contains("SpecialToken")) return std::nullopt;
      auto it = t.ids.find(item["SpecialToken"].value("id", ""));
      return it == t.ids.end() ? std::nullopt : std::optional<int64_t>(it->second);
    };
    const auto first = special_id(single.front());
    const auto last = single.size() > 1 ? special_id(single.back()) : std::nullopt;
    s->add_bos = first.has_value();
    s->add_eos = last.has_value();
    if (first && !s->bos) s->bos = first;
    if (last && !s->eos) s->eos = last;
  }
}

Result<Specials> ReadSpecials(const Json& root, const Json& cfg, const Json& model, const Table& t) {
  Specials s;
  PAGODA_ASSIGN_OR_RETURN(s.bos, ConfigToken(cfg, "bos_token", t));
  PAGODA_ASSIGN_OR_RETURN(s.eos, ConfigToken(cfg, "eos_token", t));
  PAGODA_ASSIGN_OR_RETURN(s.unk, ConfigToken(cfg, "unk_token", t));
  PAGODA_ASSIGN_OR_RETURN(s.pad, ConfigToken(cfg, "pad_token", t));
  if (!s.unk && model.contains("unk_token") && model["unk_token"].is_string()) {
    auto it = t.ids.find(model["unk_token"].get<std::string>());
    if (it != t.ids.end()) s.unk = it->second;
  }
  ReadPostProcessor(root, t, &s);
  for (const char* key : {"add_bos_token", "add_eos_token"}) {
    if (!cfg.contains(key) || cfg[key].is_null()) continue;
    if (!cfg[key].is_boolean()) {
      return InvalidArgument(std::string("tokenizer_config.json '") + key + "' must be a boolean");
    }
    (std::string(key) == "add_bos_token" ? s.add_bos : s.add_eos) = cfg[key].get<bool>();
  }
  return s;
}

Status SetChatTemplates(const Json& cfg, GgufMetadata* md) {
  if (!cfg.contains("chat_template") || cfg["chat_template"].is_null()) return Status::Ok();
  const Json& ct = cfg["chat_template"];
  if (ct.is_string()) {
    md->Set("tokenizer.chat_template", ct.get<std::string>());
    return Status::Ok();
  }
  if (!ct.is_array()) return InvalidArgument("tokenizer_config.json 'chat_template' must be a string or a list");
  for (const Json& named : ct) {
    if (!named.is_object() || !named.contains("name") || !named["name"].is_string() ||
        !named.contains("template") || !named["template"].is_string()) {
      return InvalidArgument("tokenizer_config.json 'chat_template' entries need 'name' and 'template'");
    }
    const std::string name = named["name"].get<std::string>();
    md->Set(name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name,
            named["template"].get<std::string>());
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------

Status CheckModel(const Json& model, const Pipeline& p, bool* spm) {
  const std::string type = model.value("type", model.contains("merges") ? "BPE" : "");
  if (type != "BPE") {
    return Unimplemented("unsupported tokenizer model type " + Q(type.empty() ? "(none)" : type) +
                         " (only BPE is supported)");
  }
  if (model.contains("dropout") && model["dropout"].is_number() && model["dropout"].get<double>() > 0) {
    return Unimplemented("unsupported BPE dropout");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty()) {
      return Unimplemented(std::string("unsupported BPE '") + key + "'");
    }
  }
  const bool byte_fallback = model.value("byte_fallback", false);
  if (p.byte_level) {
    if (byte_fallback) return Unimplemented("unsupported: byte-level BPE with byte_fallback");
    *spm = false;
    return Status::Ok();
  }
  if (p.space_to_metaspace && byte_fallback) {
    if (model.value("ignore_merges", false)) {
      return Unimplemented("unsupported: SentencePiece-style BPE with ignore_merges");
    }
    *spm = true;
    return Status::Ok();
  }
  return Unimplemented("unsupported BPE flavour: neither byte-level (ByteLevel pre-tokenizer) nor "
                       "SentencePiece-style (' ' -> U+2581 with byte_fallback)");
}

Result<Json> ParseObject(const std::string& text, const char* what) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(std::string(what) + " is not valid JSON");
  if (!j.is_object()) return InvalidArgument(std::string(what) + " is not a JSON object");
  return j;
}

Status SetVocabKeys(const Json& model, const Pipeline& p, bool spm, Table* t, GgufMetadata* md) {
  PAGODA_ASSIGN_OR_RETURN(auto merges, ReadMerges(model));
  if (spm) {
    SetSpmScores(merges, t);
    md->Set("tokenizer.ggml.model", "llama");
  } else {
    PAGODA_ASSIGN_OR_RETURN(const KnownPre* pre, RecognizePre(p.regexes));
    if (p.split_keeps_matches && pre->regexes.size() != 1) {
      return Unimplemented(std::string("unsupported: Split pre-tokenizers that drop what their regex does not "
                                       "match (behavior Removed, inverted) with pre-tokenizer ") +
                           pre->name + ", which splits in several passes");
    }
    if (model.value("ignore_merges", false) && !pre->ignore_merges) {
      return Unimplemented(std::string("unsupported: ignore_merges=true with pre-tokenizer ") +
                           pre->name + ", which merges every word");
    }
    md->Set("tokenizer.ggml.model", "gpt2");
    md->Set("tokenizer.ggml.pre", pre->name);
  }
  // Always written, "none" included: without the key a qwen2 pre-tokenizer
  // would default to NFC (see normalizer.h).
  md->Set(kKeyNormalizer, p.nfc ? "nfc" : "none");
  md->Set("tokenizer.ggml.tokens", GgufValue::StringArray(t->texts));
  if (spm) md->Set("tokenizer.ggml.scores", GgufValue::F32Array(t->scores));
  md->Set("tokenizer.ggml.token_type", GgufValue::I32Array(t->types));
  if (!spm) {
    std::vector<std::string> lines;
    lines.reserve(merges.size());
    for (const auto& [l, r] : merges) {
      // GGUF stores "left right": a space inside a side would be ambiguous.
      if (l.find(' ') != std::string::npos || r.find(' ') != std::string::npos) {
        return Unimplemented("unsupported merge containing a space: " + Q(l) + " + " + Q(r));
      }
      lines.push_back(l + " " + r);
    }
    md->Set("tokenizer.ggml.merges", GgufValue::StringArray(lines));
  } else {
    md->Set("tokenizer.ggml.add_space_prefix", p.add_space_prefix);
  }
  return Status::Ok();
}

void SetSpecialKeys(const Specials& s, bool spm, Table* t, GgufMetadata* md) {
  auto set_id = [md](const char* key, const std::optional<int64_t>& id) {
    if (id) md->Set(key, static_cast<uint32_t>(*id));
  };
  set_id("tokenizer.ggml.bos_token_id", s.bos);
  set_id("tokenizer.ggml.eos_token_id", s.eos);
  set_id("tokenizer.ggml.unknown_token_id", s.unk);
  set_id("tokenizer.ggml.padding_token_id", s.pad);
  if (s.unk && spm) t->types[*s.unk] = kTypeUnknown;
  if (s.add_bos) md->Set("tokenizer.ggml.add_bos_token", *s.add_bos && s.bos.has_value());
  if (s.add_eos) md->Set("tokenizer.ggml.add_eos_token", *s.add_eos && s.eos.has_value());
}

}  // namespace

Result<GgufMetadata> ImportHfTokenizer(const std::string& tokenizer_json,
                                       const std::string& tokenizer_config_json) {
  PAGODA_ASSIGN_OR_RETURN(Json root, ParseObject(tokenizer_json, "tokenizer.json"));
  Json cfg = Json::object();
  if (!tokenizer_config_json.empty()) {
    PAGODA_ASSIGN_OR_RETURN(cfg, ParseObject(tokenizer_config_json, "tokenizer_config.json"));
  }
  if (!root.contains("model") || !root["model"].is_object()) {
    return InvalidArgument("tokenizer.json has no 'model' object");
  }
  const Json& model = root["model"];
  Pipeline p;
  PAGODA_RETURN_IF_ERROR(ReadNormalizer(root, &p));
  PAGODA_RETURN_IF_ERROR(ReadPreTokenizer(root, &p));
  bool spm = false;
  PAGODA_RETURN_IF_ERROR(CheckModel(model, p, &spm));

  PAGODA_ASSIGN_OR_RETURN(std::vector<AddedToken> added, ReadAddedTokens(root));
  PAGODA_ASSIGN_OR_RETURN(Table table, BuildTable(model, added, spm));
  PAGODA_ASSIGN_OR_RETURN(Specials specials, ReadSpecials(root, cfg, model, table));

  GgufMetadata md;
  // Types are final only after the special ids are known (UNKNOWN), so the
  // arrays are written after SetSpecialKeys has adjusted them.
  GgufMetadata specials_md;
  SetSpecialKeys(specials, spm, &table, &specials_md);
  PAGODA_RETURN_IF_ERROR(SetVocabKeys(model, p, spm, &table, &md));
  for (const auto& [key, value] : specials_md.entries()) md.Set(key, value);
  PAGODA_RETURN_IF_ERROR(SetChatTemplates(cfg, &md));
  return md;
}

}  // namespace pagoda
