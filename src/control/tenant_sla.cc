#include "control/tenant_sla.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/prometheus_text.h"

namespace pagoda::control {
namespace {

// Nearest-rank quantile of `v` (sorted in place); 0 when empty.
double Quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

// The steady-clock second of `t`, from 1 (0 marks an empty bucket).
int64_t SecondOf(TenantSla::Clock::time_point t) {
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count() + 1;
}

}  // namespace

void TenantSla::MinuteTokens::Add(Clock::time_point at, int64_t n) {
  const int64_t sec = SecondOf(at);
  const size_t i = static_cast<size_t>(sec % 60);
  if (second[i] != sec) {
    second[i] = sec;
    tokens[i] = 0;
  }
  tokens[i] += n;
}

int64_t TenantSla::MinuteTokens::Sum(Clock::time_point now) const {
  const int64_t sec = SecondOf(now);
  int64_t sum = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (second[i] > sec - 60 && second[i] <= sec) sum += tokens[i];
  }
  return sum;
}

TenantSla::TenantSla(std::chrono::seconds window, size_t max_samples)
    : window_(window), max_samples_(std::max<size_t>(max_samples, 1)) {}
TenantSla::~TenantSla() = default;

void TenantSla::Record(const RequestTiming& t, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  Tenant& s = tenants_[t.tenant];
  Sample sample{now, t.ttft_seconds, t.mean_itl_seconds, t.ok};
  if (s.ring.size() < max_samples_) {
    s.ring.push_back(sample);
  } else {
    s.ring[s.next] = sample;
    s.next = (s.next + 1) % max_samples_;
  }
  if (t.completion_tokens > 0) s.minute[t.model].Add(now, t.completion_tokens);
}

void TenantSla::SetReservation(const std::string& tenant, const std::string& model, double tokens_per_second) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tokens_per_second > 0) {
    reserved_[tenant][model] = tokens_per_second;
  } else if (auto it = reserved_.find(tenant); it != reserved_.end()) {
    it->second.erase(model);
    if (it->second.empty()) reserved_.erase(it);
  }
}

void TenantSla::SetReservationSource(ReservationSource source) {
  std::lock_guard<std::mutex> lock(mu_);
  source_ = std::move(source);
}

void TenantSla::Refresh() const {
  ReservationSource source;
  {
    std::lock_guard<std::mutex> lock(mu_);
    source = source_;
  }
  if (!source) return;
  auto all = source();  // may read the store: not under the lock
  if (!all) return;
  std::map<std::string, Reserved> fresh;
  for (const tenancy::Reservation& r : *all) {
    if (r.tokens_per_second > 0) fresh[r.tenant_id][r.model] = r.tokens_per_second;
  }
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ = std::move(fresh);
}

TenantSla::Figures TenantSla::Compute(const std::string& name, const Tenant* t, const Reserved* reserved,
                                      Clock::time_point now) const {
  Figures f;
  f.tenant = name;
  std::vector<double> ttft, itl;
  int64_t errors = 0;
  static const std::vector<Sample> kNoSamples;
  for (const Sample& s : t != nullptr ? t->ring : kNoSamples) {
    if (now - s.at > window_) continue;
    ++f.requests;
    if (!s.ok) ++errors;
    if (s.ttft >= 0) ttft.push_back(s.ttft);
    if (s.itl >= 0) itl.push_back(s.itl);
  }
  f.ttft_p50 = Quantile(ttft, 0.50);
  f.ttft_p95 = Quantile(ttft, 0.95);
  f.itl_p50 = Quantile(itl, 0.50);
  f.itl_p95 = Quantile(itl, 0.95);
  f.error_rate = f.requests > 0 ? static_cast<double>(errors) / static_cast<double>(f.requests) : 0;
  int64_t minute_tokens = 0;
  if (t != nullptr) {
    for (const auto& [model, m] : t->minute) minute_tokens += m.Sum(now);
  }
  f.tokens_per_second = static_cast<double>(minute_tokens) / 60.0;
  if (reserved) {
    for (const auto& [model, tps] : *reserved) f.reserved_tokens_per_second += tps;
  }
  return f;
}

double TenantSla::TokensPerSecond(const std::string& tenant, const std::string& model, Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return 0;
  int64_t tokens = 0;
  for (const auto& [m, minute] : it->second.minute) {
    if (model.empty() || m == model) tokens += minute.Sum(now);
  }
  return static_cast<double>(tokens) / 60.0;
}

std::vector<TenantSla::Figures> TenantSla::Snapshot(Clock::time_point now) const {
  Refresh();
  std::lock_guard<std::mutex> lock(mu_);
  // Tenants with samples or reservations, in id order.
  std::vector<Figures> out;
  out.reserve(tenants_.size());
  auto t = tenants_.begin();
  auto r = reserved_.begin();
  while (t != tenants_.end() || r != reserved_.end()) {
    if (r == reserved_.end() || (t != tenants_.end() && t->first < r->first)) {
      out.push_back(Compute(t->first, &t->second, nullptr, now));
      ++t;
    } else if (t == tenants_.end() || r->first < t->first) {
      out.push_back(Compute(r->first, nullptr, &r->second, now));
      ++r;
    } else {
      out.push_back(Compute(t->first, &t->second, &r->second, now));
      ++t;
      ++r;
    }
  }
  return out;
}

std::string TenantSla::RenderPrometheus(Clock::time_point now) const {
  const std::vector<Figures> all = Snapshot(now);
  std::ostringstream o;
  auto summary = [&](const char* name, const char* help, double Figures::*p50, double Figures::*p95) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " summary\n";
    for (const Figures& f : all) {
      const std::string t = PromLabel(f.tenant);
      o << name << "{tenant=\"" << t << "\",quantile=\"0.5\"} " << PromNumber(f.*p50) << "\n";
      o << name << "{tenant=\"" << t << "\",quantile=\"0.95\"} " << PromNumber(f.*p95) << "\n";
      o << name << "_count{tenant=\"" << t << "\"} " << f.requests << "\n";
    }
  };
  auto gauge = [&](const char* name, const char* help, double Figures::*v) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n";
    for (const Figures& f : all) o << name << "{tenant=\"" << PromLabel(f.tenant) << "\"} " << PromNumber(f.*v) << "\n";
  };
  summary("pagoda_tenant_ttft_seconds", "Time to first token per tenant over the SLA window.", &Figures::ttft_p50,
          &Figures::ttft_p95);
  summary("pagoda_tenant_itl_seconds", "Mean inter-token latency of each request, per tenant, over the SLA window.",
          &Figures::itl_p50, &Figures::itl_p95);
  gauge("pagoda_tenant_error_rate", "Share of the tenant's requests in the SLA window that failed.",
        &Figures::error_rate);
  gauge("pagoda_tenant_tokens_per_second", "Completion tokens per second over the last minute.",
        &Figures::tokens_per_second);
  gauge("pagoda_tenant_reserved_tokens_per_second", "Provisioned throughput reserved for the tenant.",
        &Figures::reserved_tokens_per_second);
  return o.str();
}

nlohmann::json TenantSla::ToJson(Clock::time_point now) const {
  nlohmann::json arr = nlohmann::json::array();
  for (const Figures& f : Snapshot(now)) {
    arr.push_back({{"tenant", f.tenant},
                   {"requests", f.requests},
                   {"ttft_seconds", {{"p50", f.ttft_p50}, {"p95", f.ttft_p95}}},
                   {"itl_seconds", {{"p50", f.itl_p50}, {"p95", f.itl_p95}}},
                   {"error_rate", f.error_rate},
                   {"tokens_per_second", f.tokens_per_second},
                   {"reserved_tokens_per_second", f.reserved_tokens_per_second},
                   {"throughput_vs_reservation", f.reserved_tokens_per_second > 0
                                                     ? nlohmann::json(f.tokens_per_second / f.reserved_tokens_per_second)
                                                     : nlohmann::json(nullptr)}});
  }
  return {{"object", "list"}, {"window_seconds", window_.count()}, {"data", arr}};
}

}  // namespace pagoda::control
