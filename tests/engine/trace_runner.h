// Replays a trace of request arrivals through an Engine driven by Step() and
// records, per request, when it was admitted, when its first token came and
// when it finished, all in engine steps (deterministic: no clock). For the
// scheduling-policy tests.
#pragma once

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"

namespace pagoda::testing {

struct Arrival {
  int step = 0;  // submitted just before this step (0-based) runs
  std::string tenant;
  int32_t priority = 0;
  double weight = 1;
  std::vector<int32_t> prompt;
  int max_tokens = 4;
  int n = 1;
};

struct TraceResult {
  std::vector<int> admitted_step;  // per arrival: the step it first entered the running set
  std::vector<int> ttft;           // steps from submission to the first token (1: within its first step)
  std::vector<int> finished_step;
  std::vector<std::vector<int32_t>> tokens;  // sequence 0's
  std::vector<size_t> admission_order;       // arrival indices, in the order they were first admitted
  int steps = 0;
};

inline TraceResult RunTrace(Model& model, const EngineOptions& options, const std::vector<Arrival>& trace,
                            std::unique_ptr<SchedulerPolicy> policy = nullptr, int max_steps = 100000) {
  TraceResult r;
  const size_t n = trace.size();
  r.admitted_step.assign(n, -1);
  r.ttft.assign(n, -1);
  r.finished_step.assign(n, -1);
  r.tokens.assign(n, {});
  auto e = Engine::Create(model, options, std::move(policy));
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  if (!e.ok()) return r;
  Engine& engine = **e;
  std::vector<RequestHandle> handles(n);
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return trace[a].step < trace[b].step; });
  size_t next = 0;
  size_t done = 0;
  std::vector<int> finals(n, 0);
  for (int step = 0; step < max_steps; ++step) {
    for (; next < n && trace[order[next]].step <= step; ++next) {
      const Arrival& a = trace[order[next]];
      EngineRequest req;
      req.id = std::to_string(order[next]);
      req.prompt = a.prompt;
      req.max_tokens = a.max_tokens;
      req.n = a.n;
      req.ignore_eog = true;
      req.sampling.temperature = 0;
      req.tenant = a.tenant;
      req.priority = a.priority;
      req.weight = a.weight;
      auto h = engine.Submit(std::move(req));
      EXPECT_TRUE(h.ok()) << h.status().ToString();
      if (!h.ok()) return r;
      handles[order[next]] = *h;
    }
    const bool ran = engine.Step();
    r.steps = step + 1;
    for (const auto& s : engine.scheduler().running()) {
      const size_t i = std::stoul(s->request().id);
      if (r.admitted_step[i] < 0) {
        r.admitted_step[i] = step;
        r.admission_order.push_back(i);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (!handles[i]) continue;
      while (auto ev = handles[i]->TryPop()) {
        if (ev->index == 0 && ev->has_token()) {
          if (r.tokens[i].empty()) r.ttft[i] = step - trace[i].step + 1;
          r.tokens[i].push_back(ev->token);
        }
        if (ev->is_final()) {
          EXPECT_TRUE(ev->error.ok()) << ev->error.ToString();
          if (++finals[i] == trace[i].n) {
            r.finished_step[i] = step;
            ++done;
          }
        }
      }
    }
    if (!ran && next == n && done == n) break;
  }
  EXPECT_EQ(done, n) << "the trace did not finish in " << max_steps << " steps";
  return r;
}

inline double Median(std::vector<int> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2.0;
}

}  // namespace pagoda::testing
