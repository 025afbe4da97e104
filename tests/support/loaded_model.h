// A GGUF file loaded for engine tests: its tokenizer and model on a pool of
// its own. Failures are reported as test failures, leaving members null.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "base/thread_pool.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::testing {

struct LoadedModel {
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Model> model;
};

inline LoadedModel LoadModelAndTokenizer(const std::string& path, int threads,
                                         const ModelOptions& options = ModelOptions()) {
  LoadedModel l;
  auto file = GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return l;
  std::shared_ptr<const GgufFile> shared(std::move(file).value());
  auto tok = Tokenizer::FromMetadata(shared->metadata());
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  if (!tok.ok()) return l;
  l.tokenizer = std::move(tok).value();
  l.pool = std::make_unique<ThreadPool>(threads);
  auto model = LoadModel(shared, *l.pool, options);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (model.ok()) l.model = std::move(model).value();
  return l;
}

}  // namespace pagoda::testing
