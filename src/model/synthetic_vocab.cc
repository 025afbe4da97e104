#include "model/synthetic_vocab.h"

#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>

namespace pagoda {
namespace {

constexpr const char* kSpace = "\xE2\x96\x81";  // U+2581 "▁", SPM's space marker

// Frequent English words (and a few capitalised sentence starters).
constexpr const char* kWords[] = {
    "the", "of", "and", "to", "a", "in", "is", "it", "you", "that", "he", "was", "for", "on",
    "are", "with", "as", "I", "his", "they", "be", "at", "one", "have", "this", "from", "or",
    "had", "by", "not", "word", "but", "what", "some", "we", "can", "out", "other", "were",
    "all", "there", "when", "up", "use", "your", "how", "said", "an", "each", "she", "which",
    "do", "their", "time", "if", "will", "way", "about", "many", "then", "them", "write",
    "would", "like", "so", "these", "her", "long", "make", "thing", "see", "him", "two", "has",
    "look", "more", "day", "could", "go", "come", "did", "number", "sound", "no", "most",
    "people", "my", "over", "know", "water", "than", "call", "first", "who", "may", "down",
    "side", "been", "now", "find", "any", "new", "work", "part", "take", "get", "place",
    "made", "live", "where", "after", "back", "little", "only", "round", "man", "year",
    "came", "show", "every", "good", "me", "give", "our", "under", "name", "very", "through",
    "just", "form", "great", "think", "say", "help", "low", "line", "before", "turn", "cause",
    "same", "mean", "differ", "move", "right", "boy", "old", "too", "does", "tell", "sentence",
    "set", "three", "want", "air", "well", "also", "play", "small", "end", "put", "home",
    "read", "hand", "port", "large", "spell", "add", "even", "land", "here", "must", "big",
    "high", "such", "follow", "act", "why", "ask", "men", "change", "went", "light", "kind",
    "off", "need", "house", "picture", "try", "us", "again", "animal", "point", "mother",
    "world", "near", "build", "self", "earth", "father", "The", "A", "It", "He", "She", "They",
    "We", "You", "In", "Once", "upon", "story", "cat", "dog", "sun", "tree", "happy", "friend",
    "Hello", "hello", "model", "token", "text", "data", "code", "test", "value", "function",
};

class PieceList {
 public:
  explicit PieceList(size_t want) : want_(want) {}
  bool full() const { return pieces_.size() >= want_; }
  void Add(const std::string& p) {
    if (!full() && seen_.insert(p).second) pieces_.push_back(p);
  }
  // p and each of its prefixes (at UTF-8 boundaries past the first char).
  void AddWithPrefixes(const std::string& p) {
    for (size_t len = 1; len <= p.size(); ++len) {
      if (len < p.size() && (static_cast<unsigned char>(p[len]) & 0xC0) == 0x80) continue;
      Add(p.substr(0, len));
    }
  }
  std::vector<std::string>& pieces() { return pieces_; }

 private:
  size_t want_;
  std::vector<std::string> pieces_;
  std::unordered_set<std::string> seen_;
};

// All lowercase strings of length n, in lexicographic order, each with
// `prefix` in front; stops once the list is full.
void AddLetterStrings(PieceList& list, const std::string& prefix, int n) {
  std::string s(n, 'a');
  while (!list.full()) {
    list.Add(prefix + s);
    int i = n - 1;
    while (i >= 0 && s[i] == 'z') s[i--] = 'a';
    if (i < 0) return;
    ++s[i];
  }
}

void FillPieces(PieceList& list) {
  list.Add(kSpace);
  for (char c = 'a'; c <= 'z'; ++c) list.Add(std::string(1, c));
  for (char c = 'A'; c <= 'Z'; ++c) list.Add(std::string(1, c));
  for (char c = '0'; c <= '9'; ++c) list.Add(std::string(1, c));
  for (char c = '!'; c <= '~'; ++c) list.Add(std::string(1, c));
  for (char c = 'a'; c <= 'z'; ++c) list.Add(kSpace + std::string(1, c));
  for (char c = 'A'; c <= 'Z'; ++c) list.Add(kSpace + std::string(1, c));
  for (const char* w : kWords) list.AddWithPrefixes(kSpace + std::string(w));
  for (const char* w : kWords) list.AddWithPrefixes(w);
  for (int n = 2; n <= 5 && !list.full(); ++n) {
    AddLetterStrings(list, "", n);
    AddLetterStrings(list, kSpace, n);
  }
}

Status CheckSize(int32_t n_vocab) {
  if (n_vocab < kSyntheticVocabMinSize || n_vocab > kSyntheticVocabMaxSize) {
    return InvalidArgument("synthetic vocabulary size must be in [" +
                           std::to_string(kSyntheticVocabMinSize) + ", " +
                           std::to_string(kSyntheticVocabMaxSize) + "], got " +
                           std::to_string(n_vocab));
  }
  return Status::Ok();
}

// Fills tokens (and types, and scores when given) up to n_vocab with the
// pieces of FillPieces, as normal tokens with descending scores.
void AppendPieces(int32_t n_vocab, std::vector<std::string>& tokens, std::vector<int32_t>& types,
                  std::vector<float>* scores) {
  PieceList list(size_t(n_vocab) - tokens.size());
  FillPieces(list);
  for (size_t i = 0; i < list.pieces().size(); ++i) {
    tokens.push_back(std::move(list.pieces()[i]));
    if (scores != nullptr) scores->push_back(-float(i));
    types.push_back(1);  // normal
  }
  // 5-letter strings alone give 2 * 26^5 pieces, far above the maximum size.
  PAGODA_CHECK(tokens.size() == size_t(n_vocab)) << tokens.size() << " != " << n_vocab;
}

}  // namespace

Result<GgufMetadata> MakeSyntheticWordPieceVocab(int32_t n_vocab) {
  PAGODA_RETURN_IF_ERROR(CheckSize(n_vocab));
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  std::vector<int32_t> types = {3, 2, 3, 3, 3};  // control, unknown, control...
  AppendPieces(n_vocab, tokens, types, nullptr);
  GgufMetadata md;
  md.Set("tokenizer.ggml.model", "bert");
  md.Set("tokenizer.ggml.pre", "bert-bge");
  md.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  md.Set("tokenizer.ggml.token_type", GgufValue::I32Array(types));
  md.Set("tokenizer.ggml.token_type_count", uint32_t{2});
  md.Set("tokenizer.ggml.padding_token_id", uint32_t{0});
  md.Set("tokenizer.ggml.unknown_token_id", uint32_t{1});
  md.Set("tokenizer.ggml.cls_token_id", uint32_t{2});
  md.Set("tokenizer.ggml.seperator_token_id", uint32_t{3});  // sic: gguf-py's spelling
  md.Set("tokenizer.ggml.mask_token_id", uint32_t{4});
  return md;
}

Result<GgufMetadata> MakeSyntheticVocab(int32_t n_vocab) {
  PAGODA_RETURN_IF_ERROR(CheckSize(n_vocab));
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores(3, 0.0f);
  std::vector<int32_t> types = {2, 3, 3};  // unknown, control, control
  tokens.reserve(n_vocab);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    tokens.push_back(buf);
    scores.push_back(0.0f);
    types.push_back(6);  // byte
  }
  AppendPieces(n_vocab, tokens, types, &scores);

  GgufMetadata md;
  md.Set("tokenizer.ggml.model", "llama");
  md.Set("tokenizer.ggml.pre", "default");
  md.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  md.Set("tokenizer.ggml.scores", GgufValue::F32Array(scores));
  md.Set("tokenizer.ggml.token_type", GgufValue::I32Array(types));
  md.Set("tokenizer.ggml.bos_token_id", uint32_t{1});
  md.Set("tokenizer.ggml.eos_token_id", uint32_t{2});
  md.Set("tokenizer.ggml.unknown_token_id", uint32_t{0});
  md.Set("tokenizer.ggml.add_bos_token", true);
  md.Set("tokenizer.ggml.add_eos_token", false);
  return md;
}

}  // namespace pagoda
