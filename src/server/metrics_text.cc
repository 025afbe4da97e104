#include "server/metrics_text.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <utility>

#include "base/prometheus_text.h"
#include "base/workload_class.h"

namespace pagoda::server {
namespace {

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

class Writer {
 public:
  explicit Writer(std::string_view model) : labels_("model_name=\"" + PromLabel(std::string(model)) + "\"") {}

  void Gauge(const char* name, const char* help, double v) { Scalar(name, "gauge", help, v); }
  void Counter(const char* name, const char* help, double v) { Scalar(name, "counter", help, v); }

  void Hist(const char* name, const char* help, const Histogram& h) {
    Head(name, "histogram", help);
    int64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += i < h.counts.size() ? h.counts[i] : 0;
      out_ += std::string("pagoda:") + name + "_bucket{" + labels_ + ",le=\"" + Number(h.bounds[i]) + "\"} " +
              std::to_string(cumulative) + "\n";
    }
    out_ += std::string("pagoda:") + name + "_bucket{" + labels_ + ",le=\"+Inf\"} " + std::to_string(h.count) + "\n";
    out_ += std::string("pagoda:") + name + "_sum{" + labels_ + "} " + Number(h.sum) + "\n";
    out_ += std::string("pagoda:") + name + "_count{" + labels_ + "} " + std::to_string(h.count) + "\n";
  }

  // One metric of `type`, a series per (label value, value).
  void Labeled(const char* name, const char* type, const char* help, const char* label,
               std::initializer_list<std::pair<const char*, double>> series) {
    Head(name, type, help);
    for (const auto& [value, v] : series) {
      out_ += std::string("pagoda:") + name + "{" + labels_ + "," + label + "=\"" + value + "\"} " + Number(v) + "\n";
    }
  }

  // One gauge, a series per workload class (label workload_class).
  void ClassGauge(const char* name, const char* help, const std::array<int64_t, kWorkloadClassCount>& v) {
    Head(name, "gauge", help);
    for (int c = kWorkloadClassCount - 1; c >= 0; --c) {
      out_ += std::string("pagoda:") + name + "{" + labels_ + ",workload_class=\"" +
              WorkloadClassName(static_cast<WorkloadClass>(c)) + "\"} " + std::to_string(v[c]) + "\n";
    }
  }

  std::string Take() { return std::move(out_); }

 private:
  void Head(const char* name, const char* type, const char* help) {
    out_ += std::string("# HELP pagoda:") + name + " " + help + "\n";
    out_ += std::string("# TYPE pagoda:") + name + " " + type + "\n";
  }
  void Scalar(const char* name, const char* type, const char* help, double v) {
    Head(name, type, help);
    out_ += std::string("pagoda:") + name + "{" + labels_ + "} " + Number(v) + "\n";
  }

  std::string labels_;
  std::string out_;
};

}  // namespace

std::string RenderPrometheus(const EngineStats& s, std::string_view model_name) {
  Writer w(model_name);
  w.Gauge("num_requests_running", "Sequences holding KV cache blocks.", static_cast<double>(s.requests_running));
  w.Gauge("num_requests_waiting", "Sequences waiting to be scheduled.", static_cast<double>(s.requests_waiting));
  w.ClassGauge("num_requests_running_by_class", "Sequences holding KV cache blocks, by workload class.",
               s.requests_running_by_class);
  w.ClassGauge("num_requests_waiting_by_class",
               "Sequences waiting to be scheduled, by workload class.",
               s.requests_waiting_by_class);
  w.Gauge("kv_cache_usage_perc", "KV cache usage; 1 means 100 percent.", s.kv_usage);
  w.Gauge("kv_cache_capacity_tokens", "Tokens the KV cache holds at its element type (--kv-cache-dtype).",
          static_cast<double>(s.kv_capacity_tokens));
  w.Counter("prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
            static_cast<double>(s.prefix_cache_queries));
  w.Counter("prefix_cache_hits_total", "Prompt tokens served from the prefix cache.",
            static_cast<double>(s.prefix_cache_hits));
  w.Counter("prompt_tokens_total", "Prompt tokens processed.", static_cast<double>(s.prompt_tokens_total));
  w.Counter("generation_tokens_total", "Tokens generated.", static_cast<double>(s.generation_tokens_total));
  w.Counter("request_success_total", "Requests finished.", static_cast<double>(s.requests_finished_total));
  w.Counter("request_cancelled_total", "Requests cancelled by the client.",
            static_cast<double>(s.requests_cancelled_total));
  w.Counter("request_failed_total", "Requests ended by an error.", static_cast<double>(s.requests_failed_total));
  w.Counter("request_rejected_total", "Requests refused with a full queue.",
            static_cast<double>(s.requests_rejected_total));
  w.Counter("num_preemptions_total", "Sequences preempted for KV cache space.",
            static_cast<double>(s.preemptions_total));
  w.Counter("num_preemptions_class_total", "Sequences preempted to make room for a higher workload class.",
            static_cast<double>(s.preemptions_class_total));
  w.Counter("num_preemptions_share_total", "Sequences preempted for a tenant under its fair share of the slots.",
            static_cast<double>(s.preemptions_share_total));
  w.Counter("num_steps_interrupted_total",
            "Engine steps of only lower-class work abandoned mid-forward for an arriving real-time request.",
            static_cast<double>(s.steps_interrupted_total));
  w.Counter("kv_cache_integrity_failures_total", "Sequences stopped because their KV cache pages changed under them.",
            static_cast<double>(s.kv_integrity_failures_total));
  for (const EngineStats::OffloadTier& t : s.kv_offload_tiers) {
    // vLLM-style names with the tier in the name: kv_offload_disk_*, kv_offload_redis_*.
    const std::string p = "kv_offload_" + t.name + "_";
    const std::string in = " in the " + t.name + " offload tier";
    auto gauge = [&](const char* name, const std::string& help, double v) {
      w.Gauge((p + name).c_str(), help.c_str(), v);
    };
    auto counter = [&](const char* name, const std::string& help, double v) {
      w.Counter((p + name).c_str(), help.c_str(), v);
    };
    gauge("blocks", "KV blocks stored" + in + " (redis: written or seen by this process).",
          static_cast<double>(t.blocks));
    gauge("bytes", "Bytes of the KV blocks stored" + in + ".", static_cast<double>(t.bytes));
    gauge("queue_depth", "Evicted KV blocks waiting for the writer of the " + t.name + " tier.",
          static_cast<double>(t.queued));
    counter("writes_total", "KV blocks written" + in + ".", static_cast<double>(t.writes));
    counter("write_bytes_total", "Bytes written" + in + ".", static_cast<double>(t.write_bytes));
    counter("dropped_total", "Evicted KV blocks not written" + in + " (queue full, already stored, tier down).",
            static_cast<double>(t.dropped));
    counter("hits_tokens_total", "Prompt tokens restored" + in + " instead of computed.",
            static_cast<double>(t.restored_tokens));
    counter("read_bytes_total", "Bytes read back" + in + ".", static_cast<double>(t.read_bytes));
    counter("read_seconds_total", "Seconds spent reading KV blocks back" + in + ".", t.read_seconds);
    counter("corrupt_total", "KV blocks refused by their checksum or header" + in + " (recomputed).",
            static_cast<double>(t.corrupt));
  }
  w.Hist("iteration_tokens_total", "Tokens per engine step.", s.iteration_tokens);
  w.Hist("time_to_first_token_seconds", "Time to first token in seconds.", s.time_to_first_token);
  w.Hist("inter_token_latency_seconds", "Time between output tokens in seconds.", s.inter_token_latency);
  w.Hist("e2e_request_latency_seconds", "End-to-end request latency in seconds.", s.e2e_request_latency);
  w.Hist("request_queue_time_seconds", "Time spent waiting in the queue in seconds.", s.request_queue_time);
  w.Hist("request_prompt_tokens", "Prompt tokens per finished request.", s.request_prompt_tokens);
  w.Hist("request_generation_tokens", "Generated tokens per finished request.", s.request_generation_tokens);
  w.Hist("request_max_num_generation_tokens", "The most tokens one sequence of a finished request generated (n > 1: the longest).",
         s.request_max_generation_tokens);
  w.Hist("request_prefill_time_seconds", "Time from first admission to first token per request, in seconds.",
         s.request_prefill_time);
  w.Hist("request_decode_time_seconds", "Time from first to last token per request, in seconds.",
         s.request_decode_time);
  return w.Take();
}

std::string RenderPrometheus(const http::ServerStats& s, std::string_view model_name) {
  Writer w(model_name);
  w.Counter("tls_handshake_failures_total",
            "TLS handshakes that failed or timed out (plain HTTP to the TLS port, a bad client hello, a client "
            "refusing the certificate).",
            static_cast<double>(s.tls_handshake_failures));
  return w.Take();
}

std::string RenderKvTransferMetrics(std::string_view model_name, const char* role, const KvTransferSendStats& sent,
                                   const kvtransfer::InboxStats* received) {
  Writer w(model_name);
  w.Labeled("serve_role", "gauge", "This replica's --role (prefill, decode or both) as a label; always 1.", "role",
            {{role, 1}});
  w.Labeled("kv_transfer_sent_total", "counter", "Prefill legs whose KV transfer ended, by outcome.", "outcome",
            {{"ok", static_cast<double>(sent.ok.load())}, {"failed", static_cast<double>(sent.failed.load())}});
  w.Counter("kv_transfer_sent_blocks_total", "KV blocks sent to decode replicas.",
            static_cast<double>(sent.blocks.load()));
  w.Counter("kv_transfer_sent_bytes_total", "Bytes of KV block records sent to decode replicas.",
            static_cast<double>(sent.bytes.load()));
  w.Counter("kv_transfer_sent_seconds_total", "Seconds from connect to acknowledgement of the transfers sent.",
            static_cast<double>(sent.nanos.load()) * 1e-9);
  if (received != nullptr) {
    const kvtransfer::InboxStats& r = *received;
    w.Labeled("kv_transfer_received_total", "counter", "KV transfers received from prefill replicas, by outcome.",
              "outcome", {{"ok", static_cast<double>(r.transfers)}, {"refused", static_cast<double>(r.refused_transfers)}});
    w.Counter("kv_transfer_received_blocks_total", "KV blocks received and kept in the memory tier.",
              static_cast<double>(r.blocks));
    w.Counter("kv_transfer_converted_blocks_total", "Received KV blocks converted from the prefill replica's KV type.",
              static_cast<double>(r.converted));
    w.Counter("kv_transfer_refused_blocks_total", "Received KV block records refused (checksum, layout, another model).",
              static_cast<double>(r.refused));
    w.Counter("kv_transfer_received_bytes_total", "Bytes of KV block records received.", static_cast<double>(r.bytes));
  }
  return w.Take();
}

}  // namespace pagoda::server
