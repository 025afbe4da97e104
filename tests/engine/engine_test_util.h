// Helpers for engine tests: a FakeModel engine driven by Step(), and
// collecting a request's events.
#pragma once

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/fake_model.h"

namespace pagoda::testing {

inline EngineOptions FakeOptions() {
  EngineOptions o;
  o.n_ctx = 128;
  o.max_running = 4;
  o.max_waiting = 16;
  o.max_batch_tokens = 16;
  o.block_size = 4;
  o.kv_type = KvType::kF32;
  return o;
}

inline std::unique_ptr<Engine> MakeEngine(Model& model, const EngineOptions& o) {
  auto e = Engine::Create(model, o);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return std::move(e).value();
}

inline EngineRequest Greedy(std::vector<int32_t> prompt, int max_tokens, std::string id = "r") {
  EngineRequest r;
  r.id = std::move(id);
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  return r;
}

inline std::vector<int32_t> Ramp(int n, int32_t first = 1, int32_t mod = 60) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back((first + i) % mod + 1);
  return t;
}

// What one sequence of a request produced.
struct Outcome {
  std::vector<int32_t> tokens;
  EngineEvent final_event;
  bool finished = false;
};

// Takes every queued event of `h` into outcomes[index].
inline void Drain(RequestChannel& h, std::vector<Outcome>& outcomes) {
  while (auto e = h.TryPop()) {
    if (static_cast<size_t>(e->index) >= outcomes.size()) outcomes.resize(e->index + 1);
    Outcome& o = outcomes[e->index];
    EXPECT_FALSE(o.finished) << "event after the final one";
    if (e->has_token()) o.tokens.push_back(e->token);
    if (e->is_final()) {
      o.finished = true;
      o.final_event = *e;
    }
  }
}

inline void RunUntilIdle(Engine& e, int max_steps = 10000) {
  for (int i = 0; i < max_steps && e.Step(); ++i) {
  }
}

}  // namespace pagoda::testing
