#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

// The regexes come from the models' tokenizer.json files (as collected by
// llama.cpp's llama-vocab.cpp). Case-insensitive contraction groups are
// spelled out in ASCII so that PCRE2's Unicode case folding (which would also
// match U+017F for 's') does not change the splits.
#define PAGODA_CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"

constexpr const char* kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr const char* kLlama3 =
    PAGODA_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kQwen2 =
    PAGODA_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Cased letters, written as escapes: in literal form several of them (e.g.
// U+212A KELVIN SIGN, U+1F7D) are easily normalized to other code points by
// editors, which silently changes the ranges.
constexpr const char* kDeepseekLlmLetters =
    "\\s?["
    "A-Za-z\\x{b5}\\x{c0}-\\x{d6}\\x{d8}-\\x{f6}\\x{f8}-\\x{1ba}\\x{1bc}-\\x{1bf}\\x{1c4}"
    "-\\x{293}\\x{295}-\\x{2af}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37b}-\\x{37d}\\x{37f}"
    "\\x{386}\\x{388}-\\x{38a}\\x{38c}\\x{38e}-\\x{3a1}\\x{3a3}-\\x{3f5}\\x{3f7}-\\x{481}"
    "\\x{48a}-\\x{52f}\\x{531}-\\x{556}\\x{10a0}-\\x{10c5}\\x{13a0}-\\x{13f5}\\x{13f8}-"
    "\\x{13fd}\\x{1c90}-\\x{1cba}\\x{1cbd}-\\x{1cbf}\\x{1d00}-\\x{1d2b}\\x{1d6b}-"
    "\\x{1d77}\\x{1d79}-\\x{1d9a}\\x{1e00}-\\x{1f15}\\x{1f18}-\\x{1f1d}\\x{1f20}-"
    "\\x{1f45}\\x{1f48}-\\x{1f4d}\\x{1f50}-\\x{1f57}\\x{1f59}\\x{1f5b}\\x{1f5d}\\x{1f5f}-"
    "\\x{1f7d}\\x{1f80}-\\x{1fb4}\\x{1fb6}-\\x{1fbc}\\x{1fbe}\\x{1fc2}-\\x{1fc4}\\x{1fc6}"
    "-\\x{1fcc}\\x{1fd0}-\\x{1fd3}\\x{1fd6}-\\x{1fdb}\\x{1fe0}-\\x{1fec}\\x{1ff2}-"
    "\\x{1ff4}\\x{1ff6}-\\x{1ffc}\\x{2102}\\x{2107}\\x{210a}-\\x{2113}\\x{2115}\\x{2119}-"
    "\\x{211d}\\x{2124}\\x{2126}\\x{2128}\\x{212a}-\\x{212d}\\x{212f}-\\x{2134}\\x{2139}"
    "\\x{213c}-\\x{213f}\\x{2145}-\\x{2149}\\x{214e}\\x{2183}\\x{2184}\\x{2c00}-\\x{2c7b}"
    "\\x{2c7e}-\\x{2ce4}\\x{2ceb}-\\x{2cee}\\x{2cf2}\\x{2cf3}\\x{a640}-\\x{a66d}\\x{a680}"
    "-\\x{a69b}\\x{a722}-\\x{a76f}\\x{a771}-\\x{a787}\\x{a78b}-\\x{a78e}\\x{ab70}-"
    "\\x{abbf}\\x{fb00}-\\x{fb06}\\x{fb13}-\\x{fb17}\\x{ff21}-\\x{ff3a}\\x{ff41}-"
    "\\x{ff5a}\\x{10400}-\\x{1044f}\\x{104b0}-\\x{104d3}\\x{104d8}-\\x{104fb}\\x{10c80}-"
    "\\x{10cb2}\\x{10cc0}-\\x{10cf2}\\x{118a0}-\\x{118df}\\x{1e900}-\\x{1e943}"
    "]+";
constexpr const char* kCjk = "[\\x{4e00}-\\x{9fa5}\\x{800}-\\x{4e00}\\x{ac00}-\\x{d7ff}]+";
constexpr const char* kDeepseek3Main =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
    " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kPoro = " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{ff0c}\\x{3001}\\x{964}\\x{6d4}\\x{60c})]+";
constexpr const char* kTekken =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kGpt4o =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    PAGODA_CONTRACTIONS "?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    PAGODA_CONTRACTIONS "?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Kimi K2 (tokenization_kimi.py's tiktoken pat_str, which llama.cpp's
// llama-vocab.cpp/unicode.cpp quote): GPT-4o's word alternatives with Han runs
// taken out and split off first, newline runs after punctuation not including
// '/'. Three spelling changes for PCRE2 (only the last can change a split,
// and only for U+017F after an apostrophe):
//   - tiktoken's regex is Rust's, where a bare \p{Han} is the Script property;
//     PCRE2 reads a bare script name as Script_Extensions (which would add
//     e.g. U+3001 and U+3002, sc=Common), so it is written \p{sc:Han};
//   - Rust's class intersection [X&&[^\p{Han}]] (PCRE2 10.42 has none) is a
//     negative lookahead before the class;
//   - the case-insensitive contraction group is spelled out in ASCII as for
//     the other families (Rust's (?i) would also take U+017F for 's').
// llama.cpp implements this pattern by hand (unicode_regex_split_custom_kimi_k2)
// and there merges the two case alternatives into one letter run, so
// "getUserName" is one word there and three here (as in tiktoken): pagoda
// follows the model's own pattern.
#define PAGODA_NOT_HAN "(?!\\p{sc:Han})"
constexpr const char* kKimiK2 =
    "\\p{sc:Han}+|"
    "[^\\r\\n\\p{L}\\p{N}]?(?:" PAGODA_NOT_HAN "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}])*"
    "(?:" PAGODA_NOT_HAN "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}])+" PAGODA_CONTRACTIONS "?|"
    "[^\\r\\n\\p{L}\\p{N}]?(?:" PAGODA_NOT_HAN "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}])+"
    "(?:" PAGODA_NOT_HAN "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}])*" PAGODA_CONTRACTIONS "?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
#undef PAGODA_NOT_HAN

#undef PAGODA_CONTRACTIONS

struct Family {
  std::vector<const char*> names;
  std::vector<const char*> regexes;
  bool ignore_merges = false;
  bool add_bos = false;
};

const std::vector<Family>& Families() {
  static const std::vector<Family> kFamilies = {
      {{"default"},
       {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral"},
       {kLlama3}, /*ignore_merges=*/true, /*add_bos=*/true},
      // GLM-4 and GLM-4.5+ (llama.cpp's CHATGLM4: Llama 3's regex, but merges
      // are not skipped and no BOS is added: the template writes [gMASK]<sop>).
      {{"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"}, {kLlama3}},
      {{"deepseek-llm"},
       {"[\r\n]", kDeepseekLlmLetters, "\\s?[!-/:-~\\x{ff01}-\\x{ff0f}\\x{ff1a}-\\x{ff5e}\\x{2018}-\\x{201f}\\x{3000}-\\x{3002}]+", "\\s+$", kCjk, "\\p{N}+"}},
      {{"deepseek-v3"}, {"\\p{N}{1,3}", "[\\x{4e00}-\\x{9fa5}\\x{3040}-\\x{309f}\\x{30a0}-\\x{30ff}]+", kDeepseek3Main}},
      {{"deepseek-coder"}, {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"}},
      {{"falcon"}, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
       {"\\p{N}", kGpt2}},
      {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es", "jina-v2-de",
        "jina-v2-code", "roberta-bpe", "mpt", "olmo", "jais", "trillion", "exaone4"},
       {kGpt2}},
      {{"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"}, {kQwen2}},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {kPoro}},
      {{"viking"}, {kPoro, "\\p{N}"}},
      {{"tekken"}, {kTekken}, /*ignore_merges=*/true, /*add_bos=*/true},
      // Kanana-2 ships GPT-4o's pattern (llama.cpp maps "kanana2" to GPT4O).
      {{"gpt-4o", "llama4", "kanana2"}, {kGpt4o}},
      {{"kimi-k2"}, {kKimiK2}},
  };
  return kFamilies;
}

}  // namespace

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }

  // Appends the matches of this regex in `piece`, and the gaps between them.
  void SplitInto(std::string_view piece, std::vector<std::string_view>* out) const;
};

namespace {

// Runs one match; on a JIT stack overflow retries with a large JIT stack and
// then with the interpreter, so a pathological input degrades, never fails.
int MatchOnce(const pcre2_code* code, std::string_view s, size_t pos, pcre2_match_data* md) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  int rc = pcre2_match(code, subject, s.size(), pos, 0, md, nullptr);
  if (rc != PCRE2_ERROR_JIT_STACKLIMIT) return rc;
  pcre2_match_context* ctx = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
  if (ctx != nullptr && stack != nullptr) {
    pcre2_jit_stack_assign(ctx, nullptr, stack);
    rc = pcre2_match(code, subject, s.size(), pos, 0, md, ctx);
  }
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT || ctx == nullptr || stack == nullptr) {
    rc = pcre2_match(code, subject, s.size(), pos, PCRE2_NO_JIT, md, ctx);
  }
  pcre2_jit_stack_free(stack);
  pcre2_match_context_free(ctx);
  return rc;
}

}  // namespace

void PreTokenizer::Regex::SplitInto(std::string_view piece,
                                    std::vector<std::string_view>* out) const {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  size_t last = 0;  // end of the previous match
  size_t pos = 0;   // where to search next
  while (md != nullptr && pos < piece.size()) {
    const int rc = MatchOnce(code, piece, pos, md);
    if (rc < 0) break;  // no match, or a resource limit: the rest is one gap
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t begin = ov[0];
    const size_t end = ov[1];
    if (end <= begin || begin < pos || end > piece.size()) {
      // An empty match splits nothing; step over one character.
      pos = std::max(pos, begin) + utf8::CharLen(piece, std::max(pos, begin));
      continue;
    }
    if (begin > last) out->push_back(piece.substr(last, begin - last));
    out->push_back(piece.substr(begin, end - begin));
    last = pos = end;
  }
  if (last < piece.size()) out->push_back(piece.substr(last));
  pcre2_match_data_free(md);
}

PreTokenizer::~PreTokenizer() = default;

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::FromRegexes(
    std::string name, const std::vector<std::string>& regexes) {
  std::unique_ptr<PreTokenizer> pre(new PreTokenizer());
  pre->name_ = std::move(name);
  for (const std::string& pattern : regexes) {
    int err = 0;
    PCRE2_SIZE err_off = 0;
    const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     options, &err, &err_off, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return InvalidArgument("pre-tokenizer '" + pre->name_ + "': regex does not compile at offset " +
                             std::to_string(err_off) + ": " + reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: the interpreter is the fallback
    auto regex = std::make_unique<Regex>();
    regex->code = code;
    pre->regexes_.push_back(std::move(regex));
  }
  return pre;
}

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::Create(std::string_view name) {
  const std::string_view key = name.empty() ? std::string_view("default") : name;
  for (const Family& f : Families()) {
    if (std::find(f.names.begin(), f.names.end(), key) == f.names.end()) continue;
    std::vector<std::string> regexes(f.regexes.begin(), f.regexes.end());
    PAGODA_ASSIGN_OR_RETURN(auto pre, FromRegexes(std::string(key), regexes));
    pre->ignore_merges_ = f.ignore_merges;
    pre->default_add_bos_ = f.add_bos;
    return pre;
  }
  std::string supported;
  for (const std::string& n : SupportedNames()) supported += (supported.empty() ? "" : ", ") + n;
  return InvalidArgument("unknown pre-tokenizer 'tokenizer.ggml.pre' = '" + std::string(name) +
                         "' (supported: " + supported + ")");
}

std::vector<std::string> PreTokenizer::SupportedNames() {
  std::vector<std::string> names;
  for (const Family& f : Families()) names.insert(names.end(), f.names.begin(), f.names.end());
  return names;
}

void PreTokenizer::Split(std::string_view text, std::vector<std::string_view>* words) const {
  if (text.empty()) return;
  std::vector<std::string_view> cur{text};
  std::vector<std::string_view> next;
  for (const auto& regex : regexes_) {
    next.clear();
    for (std::string_view piece : cur) regex->SplitInto(piece, &next);
    cur.swap(next);
  }
  words->insert(words->end(), cur.begin(), cur.end());
}

}  // namespace pagoda
