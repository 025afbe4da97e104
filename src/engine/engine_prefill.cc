// Prefill-only requests (EngineRequest::prefill): pooling the final hidden
// states into an embedding, relevance scores, and the ranking of candidates
// that share a prefix. Engine thread only.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/engine.h"

namespace pagoda {

void Engine::Pool(Sequence& s, int32_t begin, std::span<const float> rows) {
  const int64_t n_embd = model_.config().n_embd;
  // A recompute after preemption starts again from position 0.
  if (begin == 0 || s.pool_sum.empty()) {
    s.pool_sum.assign(static_cast<size_t>(n_embd), 0.0);
    s.n_pooled = 0;
  }
  const int64_t n_rows = static_cast<int64_t>(rows.size()) / n_embd;
  const bool mean = s.request().prefill->pooling == PoolingType::kMean;
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* row = rows.data() + r * n_embd;
    // Mean: the sum in position order; otherwise the one row wanted.
    for (int64_t i = 0; i < n_embd; ++i) s.pool_sum[i] = (mean ? s.pool_sum[i] : 0.0) + row[i];
    ++s.n_pooled;
  }
}

void Engine::FinishPrefill(Sequence& s, const float* logits) {
  EngineEvent ev;
  ev.index = s.index;
  ev.finish = FinishReason::kLength;
  const EngineRequest& r = s.request();
  if (r.prefill) {
    const PrefillTask& t = *r.prefill;
    ev.finish = FinishReason::kStop;
    if (logits != nullptr) {
      // P(yes) over the two answers: a logistic of the logit difference.
      const double d = static_cast<double>(logits[t.score_yes]) - logits[t.score_no];
      ev.score = static_cast<float>(1.0 / (1.0 + std::exp(-d)));
      ev.has_score = true;
    } else {
      const double div = t.pooling == PoolingType::kMean ? std::max(1, s.n_pooled) : 1;
      std::vector<float> pooled(s.pool_sum.size());
      for (size_t i = 0; i < pooled.size(); ++i) pooled[i] = static_cast<float>(s.pool_sum[i] / div);
      if (t.kind == PrefillTask::Kind::kScore) {
        std::vector<float> out(static_cast<size_t>(model_.n_classifier_outputs()));
        if (Status st = model_.Classify(pooled, out); !st.ok()) {
          FinishWithError(&s, FinishReason::kError, std::move(st));
          return;
        }
        ev.score = out[0];
        ev.has_score = true;
      } else {
        if (t.dimensions > 0) pooled.resize(static_cast<size_t>(t.dimensions));
        if (t.normalize) {
          double norm = 0;
          for (float v : pooled) norm += static_cast<double>(v) * v;
          norm = std::sqrt(norm);
          if (norm > 0) {
            for (float& v : pooled) v = static_cast<float>(v / norm);
          }
        }
        ev.embedding = std::move(pooled);
      }
    }
  }
  Finish(&s, std::move(ev));
}

bool Engine::HoldRanked(Sequence& s, EngineEvent& ev) {
  const auto& t = s.request().prefill;
  if (!t || t->suffixes.empty()) return false;
  RequestGroup& g = *s.group;
  g.ranked.push_back(std::move(ev));
  if (static_cast<int32_t>(g.ranked.size()) < s.request().n) return true;
  // All in: best score first, ties by candidate order (a stable ranking).
  std::vector<EngineEvent>& all = g.ranked;
  std::stable_sort(all.begin(), all.end(), [](const EngineEvent& a, const EngineEvent& b) {
    if (a.has_score != b.has_score) return a.has_score;
    if (a.has_score && a.score != b.score) return a.score > b.score;
    return a.index < b.index;
  });
  for (size_t i = 0; i < all.size(); ++i) {
    all[i].rank = static_cast<int32_t>(i);
    // Only the winners' scores leave the engine.
    if (t->top_n > 0 && static_cast<int32_t>(i) >= t->top_n) {
      all[i].has_score = false;
      all[i].score = 0;
    }
    g.channel->Push(std::move(all[i]));
  }
  all.clear();
  return true;
}

}  // namespace pagoda
