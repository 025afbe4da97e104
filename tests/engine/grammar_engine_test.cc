// Grammar-constrained generation through the engine, on stories260K and a
// random-weight model: at temperature 1 every output is in the grammar's
// language (checked with the byte matcher's Accepts, independently of the
// token masks), budget-aware completion keeps small max_tokens outputs
// valid, a grammar no token can follow ends with an error, and delay_until
// leaves the text before the marker free.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "gguf/gguf_file.h"
#include "model/random_model.h"
#include "sampling/grammar/grammar.h"
#include "sampling/grammar/matcher.h"
#include "sampling/grammar/test_grammars.h"
#include "sampling/grammar/token_matcher.h"
#include "support/loaded_model.h"
#include "support/test_paths.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {
namespace {

using testing::Drain;
using testing::Outcome;
using testing::RunUntilIdle;

struct Loaded : testing::LoadedModel {
  std::shared_ptr<const grammar::TokenVocabIndex> vocab;
};

Loaded LoadFrom(const std::string& path) {
  Loaded l;
  static_cast<testing::LoadedModel&>(l) = testing::LoadModelAndTokenizer(path, 1);
  if (l.tokenizer) l.vocab = grammar::TokenVocabIndex::Build(*l.tokenizer);
  return l;
}

Loaded& Stories() {
  static Loaded* l = new Loaded(LoadFrom(pagoda::testing::TestDataPath("stories260K.gguf")));
  return *l;
}

Loaded& RandomWeights() {
  static Loaded* l = [] {
    RandomModelSpec spec;
    spec.n_embd = 64;
    spec.n_layer = 2;
    spec.n_head = 4;
    spec.n_head_kv = 2;
    spec.n_ff = 128;
    spec.n_vocab = 1024;
    spec.n_ctx = 512;
    spec.seed = 5;
    spec.n_threads = 1;
    const std::string path = (::pagoda::testing::TempDirForProcess() / "pagoda_grammar_engine_model.gguf").string();
    Status st = WriteRandomModel(spec, path);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return new Loaded(LoadFrom(path));
  }();
  return *l;
}

EngineOptions Options(const Loaded& l) {
  EngineOptions o;
  o.n_ctx = 512;
  o.max_running = 4;
  o.max_waiting = 64;
  o.max_batch_tokens = 64;
  o.block_size = 16;
  o.kv_type = KvType::kF32;
  const Tokenizer* tok = l.tokenizer.get();
  o.is_eog = [tok](TokenId id) { return tok->IsEog(id); };
  o.grammar_vocab = l.vocab;
  return o;
}

std::shared_ptr<const grammar::Grammar> Compile(std::string_view text) {
  auto g = grammar::CompileGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

// The generated text as the grammar sees it (EOG tokens add nothing).
std::string TextOf(const Loaded& l, const std::vector<TokenId>& tokens) {
  std::string s;
  for (TokenId t : tokens) s += l.vocab->bytes(t);
  return s;
}

std::vector<Outcome> RunRequest(Loaded& l, EngineRequest r, const EngineOptions& o) {
  auto engine = testing::MakeEngine(*l.model, o);
  auto h = engine->Submit(std::move(r));
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  if (!h.ok()) return {};
  RunUntilIdle(*engine);
  std::vector<Outcome> out;
  Drain(**h, out);
  return out;
}

EngineRequest Constrained(const Loaded& l, std::shared_ptr<const grammar::Grammar> g, uint64_t seed, int max_tokens,
                          int n = 2) {
  EngineRequest r;
  r.id = "g" + std::to_string(seed);
  r.prompt = l.tokenizer->Encode("Once upon a time", true, false);
  r.max_tokens = max_tokens;
  r.n = n;
  r.sampling.temperature = 1.0f;
  r.sampling.seed = seed;
  r.constraint = GrammarConstraint{std::move(g), ""};
  return r;
}

class GrammarEngineTest : public ::testing::TestWithParam<bool> {
 protected:
  Loaded& Model() {
    if (GetParam()) return RandomWeights();
    return Stories();
  }
  void SetUp() override {
    if (!GetParam() && !pagoda::testing::HaveTestData("stories260K.gguf")) GTEST_SKIP() << "stories260K.gguf absent";
  }
};

TEST_P(GrammarEngineTest, EveryOutputIsInTheLanguage) {
  Loaded& l = Model();
  ASSERT_TRUE(l.model);
  // JSON with an object at the top (a bare number would end at once).
  std::string json_object = pagoda::testing::kJsonGrammar;
  json_object.replace(json_object.find("root ::= value"), 14, "root ::= object");
  for (const std::string& text : {json_object, std::string(pagoda::testing::kNestedObjectGrammar)}) {
    auto g = Compile(text);
    size_t longest = 0;
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const auto outs = RunRequest(l, Constrained(l, g, seed, 400), Options(l));
      ASSERT_EQ(outs.size(), 2u);
      for (const Outcome& o : outs) {
        ASSERT_TRUE(o.finished);
        ASSERT_NE(o.final_event.finish, FinishReason::kError) << o.final_event.error.ToString();
        const std::string s = TextOf(l, o.tokens);
        EXPECT_TRUE(grammar::Accepts(*g, s)) << "seed " << seed << ": " << s;
        longest = std::max(longest, s.size());
      }
    }
    if (text != json_object) EXPECT_GT(longest, 60u) << "required fields make long outputs";
  }
}

TEST_P(GrammarEngineTest, SmallBudgetsStayValid) {
  Loaded& l = Model();
  ASSERT_TRUE(l.model);
  auto g = Compile(pagoda::testing::kJsonGrammar);
  for (int max_tokens : {1, 2, 5, 9, 16}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const auto outs = RunRequest(l, Constrained(l, g, seed * 31 + static_cast<uint64_t>(max_tokens), max_tokens), Options(l));
      ASSERT_EQ(outs.size(), 2u);
      for (const Outcome& o : outs) {
        ASSERT_NE(o.final_event.finish, FinishReason::kError) << o.final_event.error.ToString();
        EXPECT_LE(static_cast<int>(o.tokens.size()), max_tokens);
        const std::string s = TextOf(l, o.tokens);
        EXPECT_TRUE(grammar::Accepts(*g, s)) << "max_tokens " << max_tokens << ": " << s;
      }
    }
  }
}

TEST_P(GrammarEngineTest, CompleteGrammarFinishesWithStop) {
  Loaded& l = Model();
  ASSERT_TRUE(l.model);
  auto g = Compile("root ::= \"yes\" | \"no\"");
  const auto outs = RunRequest(l, Constrained(l, g, 3, 50, 1), Options(l));
  ASSERT_EQ(outs.size(), 1u);
  const std::string s = TextOf(l, outs[0].tokens);
  EXPECT_TRUE(s == "yes" || s == "no") << s;
  EXPECT_TRUE(outs[0].final_event.finish == FinishReason::kStop || outs[0].final_event.finish == FinishReason::kEog);
}

TEST_P(GrammarEngineTest, NoAllowedTokenEndsWithAnError) {
  Loaded& l = Model();
  ASSERT_TRUE(l.model);
  // A vocabulary index without the byte tokens: nothing can produce \x01.
  std::vector<grammar::TokenVocabIndex::Entry> entries;
  for (TokenId t = 0; t < l.vocab->vocab_size(); ++t) {
    grammar::TokenVocabIndex::Entry e{std::string(l.vocab->bytes(t)), l.vocab->token_class(t),
                                      std::string(l.vocab->rendered(t))};
    if (l.tokenizer->attr(t) == TokenAttr::kByte) e.cls = grammar::TokenClass::kNever;
    entries.push_back(std::move(e));
  }
  EngineOptions o = Options(l);
  o.grammar_vocab = grammar::TokenVocabIndex::FromEntries(std::move(entries));
  auto g = Compile("root ::= [a-z] \"\\x01\"");
  const auto outs = RunRequest(l, Constrained(l, g, 1, 50, 1), o);
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].final_event.finish, FinishReason::kError);
  EXPECT_EQ(outs[0].final_event.error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(outs[0].final_event.error.message(), "grammar allows no next token");
  const std::string s = TextOf(l, outs[0].tokens);
  ASSERT_EQ(s.size(), 1u) << s;
  EXPECT_TRUE(s[0] >= 'a' && s[0] <= 'z') << s;
}

TEST_P(GrammarEngineTest, DelayUntilLeavesTheTextBeforeTheMarkerFree) {
  Loaded& l = Model();
  ASSERT_TRUE(l.model);
  auto g = Compile("root ::= \"[\" [0-9]{1,3} \"]\"");
  int activated = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    EngineRequest r = Constrained(l, g, seed, 200, 1);
    r.constraint->delay_until = "e";
    const auto outs = RunRequest(l, std::move(r), Options(l));
    ASSERT_EQ(outs.size(), 1u);
    const Outcome& o = outs[0];
    ASSERT_NE(o.final_event.finish, FinishReason::kError) << o.final_event.error.ToString();
    // Split after the token that completed the marker.
    std::string seen;
    size_t k = 0;
    while (k < o.tokens.size() && seen.find('e') == std::string::npos) seen += l.vocab->rendered(o.tokens[k++]);
    if (seen.find('e') == std::string::npos) continue;  // the marker never came: all free
    const std::vector<TokenId> rest(o.tokens.begin() + static_cast<std::ptrdiff_t>(k), o.tokens.end());
    const std::string s = TextOf(l, rest);
    EXPECT_TRUE(grammar::Accepts(*g, s)) << "after the marker: " << s;
    ++activated;
  }
  EXPECT_GT(activated, 0) << "the marker never appeared";
}

TEST_P(GrammarEngineTest, RejectsConstraintsWithoutAVocabularyIndex) {
  Loaded& l = Model();
  ASSERT_TRUE(l.model);
  EngineOptions o = Options(l);
  o.grammar_vocab = nullptr;
  auto engine = testing::MakeEngine(*l.model, o);
  auto h = engine->Submit(Constrained(l, Compile("root ::= \"a\""), 1, 4));
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kFailedPrecondition);
  EngineRequest r = Constrained(l, nullptr, 1, 4);
  EXPECT_EQ(testing::MakeEngine(*l.model, Options(l))->Submit(std::move(r)).status().code(),
            StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Models, GrammarEngineTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "random_weights" : "stories260K"; });

}  // namespace
}  // namespace pagoda
