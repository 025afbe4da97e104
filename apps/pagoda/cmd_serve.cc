// pagoda serve: the OpenAI-compatible HTTP server (src/server) over one model.
// Flags -> EngineOptions / ServeOptions; the listening address and the KV
// capacity go to stderr. Prompts, keys and the tenant secret are never logged.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "cli_util.h"
#include "commands.h"
#include "http/tls_files.h"
#include "kvevents/publisher.h"
#include "model/model_fingerprint.h"
#include "model_loading.h"
#include "control/control_plane.h"
#include "server/openai_server.h"
#include "tenancy/signed_headers.h"
#include "tokenizer/chat_template.h"

namespace pagoda::cli {
namespace {

// "536870912", "512MiB", "2GiB", "512M", "1.5G" (binary units).
Result<int64_t> ParseBytes(const std::string& s) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    return InvalidArgument("--kv-cache-memory: expected bytes like 536870912 or 512MiB, got '" + s + "'");
  }
  std::string unit = s.substr(used);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  double mul = 1;
  if (unit.empty() || unit == "b") mul = 1;
  else if (unit == "k" || unit == "kib" || unit == "kb") mul = 1024.0;
  else if (unit == "m" || unit == "mib" || unit == "mb") mul = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib" || unit == "gb") mul = 1024.0 * 1024 * 1024;
  else return InvalidArgument("--kv-cache-memory: unknown unit '" + unit + "'");
  if (!(v > 0)) return InvalidArgument("--kv-cache-memory must be positive");
  return static_cast<int64_t>(v * mul);
}

// ZeroMQ endpoints Pagoda binds: tcp://HOST:PORT (PORT may be * for an
// ephemeral one) or ipc://PATH.
Status CheckEndpoint(const std::string& flag, const std::string& v) {
  const bool tcp = v.rfind("tcp://", 0) == 0 && v.find(':', 6) != std::string::npos && v.size() > 6;
  const bool ipc = v.rfind("ipc://", 0) == 0 && v.size() > 6;
  if (tcp || ipc) return Status::Ok();
  return InvalidArgument(flag + ": expected tcp://HOST:PORT or ipc://PATH, got '" + v + "'");
}

}  // namespace

int CmdServe(int argc, char** argv) {
  CLI::App app("OpenAI-compatible HTTP server (chat/completions, completions, models, metrics)", "serve");
  std::string model_path, host = "127.0.0.1", api_key, kv_memory, model_name;
  int port = 8000, threads = DefaultThreadCount(), http_threads = 2, drain_seconds = 30;
  double request_timeout_s = 0;
  int32_t n_ctx = 0;
  EngineOptions eo;
  bool no_prefix_cache = false;
  std::string kv_type = "f16";
  app.add_option("-m,--model", model_path, "GGUF model (default: the built-in random-weight demo model)");
  app.add_option("--host", host, "address to listen on");
  app.add_option("--port", port, "port (0: ephemeral)")->check(CLI::Range(0, 65535));
  app.add_option("--api-key", api_key, "require 'Authorization: Bearer KEY' under /v1/");
  http::TlsFiles tls;
  app.add_option("--tls-cert", tls.cert_file,
                 "serve https: PEM certificate (then its chain); needs --tls-key; SIGHUP reloads both");
  app.add_option("--tls-key", tls.key_file, "serve https: the certificate's PEM private key (unencrypted)");
  app.add_option("--served-model-name", model_name, "model id in the API (default: the file's stem)");
  app.add_option("-t,--threads", threads, "compute threads (default: all cores)");
  app.add_option("--http-threads", http_threads, "HTTP I/O threads")->check(CLI::Range(1, 64));
  app.add_option("-c,--ctx-size", n_ctx, "context size (default: min(training context, 4096))");
  app.add_option("--kv-cache-memory", kv_memory, "KV cache budget, bytes or e.g. 512MiB (default: max-running x ctx)");
  app.add_option("--kv-cache-dtype", kv_type,
                 std::string("KV cache element type: ") + kernels::KvTypeChoices() + " (default f16; fp8_e4m3 holds ~2x the tokens)");
  app.add_option("--max-batch-tokens", eo.max_batch_tokens, "token budget of one engine step")->check(CLI::PositiveNumber);
  app.add_option("--max-running", eo.max_running, "sequences decoded together")->check(CLI::PositiveNumber);
  app.add_option("--max-waiting", eo.max_waiting, "queued sequences before 429")->check(CLI::PositiveNumber);
  app.add_option("--realtime-reserve", eo.realtime_reserve,
                 "sequence slots (and that share of the KV cache) kept free for realtime-class requests; "
                 "default 0")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-prefix-cache", no_prefix_cache, "disable prefix caching");
  std::vector<std::string> kv_offload;
  std::string kv_offload_dir;
  app.add_option("--kv-offload", kv_offload,
                 "KV offload tiers (docs/KV_OFFLOAD.md), comma-separated or repeated: disk=SIZE keeps evicted "
                 "prefix blocks under --kv-offload-dir, at most SIZE (e.g. disk=20GiB); redis=URL shares them "
                 "with every replica through that Redis (redis://[:password@]host[:port][/db]; give it a flag "
                 "of its own when the URL holds a comma)")
      ->take_all();
  app.add_option("--kv-offload-dir", kv_offload_dir, "directory of the disk offload tier (survives restarts)");
  std::string role = "both";
  std::string kv_transfer_listen;
  double kv_transfer_timeout_s = 10;
  app.add_option("--role", role,
                 "prefill/decode disaggregation (docs/KV_OFFLOAD.md): prefill computes prompts and streams their KV "
                 "to a decode replica; decode receives KV (needs --kv-transfer-listen); both (default) does either")
      ->check(CLI::IsMember({"prefill", "decode", "both"}));
  app.add_option("--kv-transfer-listen", kv_transfer_listen,
                 "HOST:PORT where prefill replicas' KV transfers are received (into the memory offload tier; "
                 "a trusted network only: the stream is not encrypted)");
  app.add_option("--kv-transfer-timeout", kv_transfer_timeout_s,
                 "seconds a KV transfer may stall (connect, any wait for the peer) before it is given up (default 10)")
      ->check(CLI::PositiveNumber);
  std::string kv_integrity = kv::IntegrityModeName(eo.kv_integrity);
  app.add_option("--kv-integrity", kv_integrity,
                 "KV page integrity check before every step: check (default) or off (a no-op)")
      ->check(CLI::IsMember({"off", "check"}));
  // Test-only and hidden from --help: plants one KV page fault so the e2e
  // tests can see the integrity error end to end; needs PAGODA_TESTING=1.
  std::string testing_kv_fault;
  app.add_option("--testing-kv-fault", testing_kv_fault, "TESTS ONLY: reuse|retag|swap")
      ->check(CLI::IsMember({"reuse", "retag", "swap"}))
      ->group("");
  app.add_option("--drain-timeout", drain_seconds, "seconds SIGTERM lets requests finish")->check(CLI::NonNegativeNumber);
  app.add_option("--request-timeout", request_timeout_s,
                 "seconds a generation request may take from arrival, queue included (0: no limit); past it: 504")
      ->check(CLI::Range(0.0, 31'536'000.0));
  kvevents::PublisherOptions kv_events;
  kv_events.endpoint.clear();
  app.add_option("--kv-events", kv_events.endpoint,
                 "publish KV cache events (vLLM's format) on this ZeroMQ PUB endpoint, bound: tcp://HOST:PORT");
  app.add_option("--kv-events-replay", kv_events.replay_endpoint,
                 "ZeroMQ ROUTER endpoint (bound) serving replays of the last KV event batches");
  app.add_option("--kv-events-topic", kv_events.topic, "topic frame of every KV event message (default: none, as vLLM)");
  std::string tenant_secret_env, scheduling = "auto";
  app.add_option("--tenant-secret-env", tenant_secret_env,
                 "name of the environment variable holding the secret the gateway signs tenant headers with "
                 "(docs/CONTROL_PLANE_SIGNING.md); without it tenant headers are ignored");
  app.add_option("--scheduling", scheduling,
                 "admission policy: fcfs, fair (VTC fair share between tenants inside priority bands), or auto "
                 "(default: fair with --tenant-secret-env, else fcfs); docs/SCHEDULING.md")
      ->check(CLI::IsMember({"auto", "fcfs", "fair"}));
  bool no_share_preemption = false;
  app.add_flag("--no-share-preemption", no_share_preemption,
               "with fair scheduling: never preempt a tenant over its share of the slots for one under it "
               "(a waiting tenant then waits for a slot to free); docs/SCHEDULING.md");
  std::string db, counters, admin_key_env, key_pepper_env;
  bool allow_insecure_keys = false;
  app.add_option("--db", db,
                 "run the control plane here: tenants, API keys, limits and usage in this store "
                 "(sqlite:///PATH.db or a path, or postgresql://...; docs/CONTROL_PLANE.md)");
  app.add_option("--counters", counters, "with --db: rate-limit counters elsewhere (redis://HOST:PORT)");
  app.add_option("--admin-key-env", admin_key_env,
                 "with --db: environment variable holding the admin key for /admin/ (unset: admin API off)");
  app.add_option("--key-pepper-env", key_pepper_env, "with --db: environment variable holding the key-hash pepper");
  app.add_flag("--allow-insecure-keys", allow_insecure_keys,
               "accept API and admin keys over plain HTTP (loopback use, or TLS ended in front)");
  std::string data_dir;
  int batch_in_flight = 64;
  int64_t max_file_mib = 100;
  app.add_option("--data-dir", data_dir,
                 "turn on the Files and Batch APIs: uploads and batch outputs live in this directory "
                 "(batch state in --db, else DIR/batch.db); docs/BATCH.md");
  app.add_option("--batch-in-flight", batch_in_flight, "with --data-dir: batch lines running at once")
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-file-mib", max_file_mib, "with --data-dir: largest upload, MiB")->check(CLI::Range(1, 4096));
  std::string decode_weights;
  AddDecodeWeightsOption(app, &decode_weights);
  std::string device = "cpu";
  AddDeviceOption(app, &device);
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;
  if (Status s = CheckDevice(device); !s.ok()) return Fail(s);
  const auto model_options = ModelOptionsFromFlags(decode_weights);
  if (!model_options.ok()) return Fail(model_options.status());
  if (threads <= 0 || threads > 1024) return Fail("--threads must be between 1 and 1024");
  if (tls.enabled()) {
    if (tls.cert_file.empty() || tls.key_file.empty()) return Fail("--tls-cert and --tls-key go together");
    // Before the model loads: a certificate problem should not wait for it.
    if (Status s = http::CheckTlsFiles(tls); !s.ok()) return Fail(s);
  }
  // CLI::Range lets NaN through (every comparison with it is false).
  if (std::isnan(request_timeout_s)) return Fail("--request-timeout must be a number of seconds, not nan");
  if (!kv_memory.empty()) {
    auto bytes = ParseBytes(kv_memory);
    if (!bytes.ok()) return Fail(bytes.status());
    eo.kv_memory_bytes = *bytes;
  }
  eo.prefix_caching = !no_prefix_cache;
  if (!kv_offload.empty() || !kv_offload_dir.empty()) {
    std::vector<std::string> items;
    for (const std::string& arg : kv_offload) {
      if (arg.rfind("redis=", 0) == 0) {
        items.push_back(arg);  // a URL may hold commas
        continue;
      }
      size_t from = 0;
      for (;;) {
        const size_t comma = arg.find(',', from);
        items.push_back(arg.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
        if (comma == std::string::npos) break;
        from = comma + 1;
      }
    }
    bool disk = false;
    for (const std::string& item : items) {
      if (item.rfind("memory=", 0) == 0 && eo.kv_offload_memory_bytes == 0) {
        auto bytes = ParseBytes(item.substr(7));
        if (!bytes.ok()) return Fail(bytes.status().WithContext("--kv-offload memory"));
        if (*bytes <= 0) return Fail("--kv-offload memory: the size must be positive");
        eo.kv_offload_memory_bytes = *bytes;
      } else if (item.rfind("disk=", 0) == 0 && !disk) {
        auto bytes = ParseBytes(item.substr(5));
        if (!bytes.ok()) return Fail(bytes.status().WithContext("--kv-offload disk"));
        eo.kv_offload_disk_bytes = *bytes;
        disk = true;
      } else if (item.rfind("redis=", 0) == 0 && eo.kv_offload_redis_url.empty() && item.size() > 6) {
        eo.kv_offload_redis_url = item.substr(6);
      } else {
        return Fail("--kv-offload: expected memory=SIZE, disk=SIZE and/or redis=URL, each once, got '" +
                    (item.rfind("redis=", 0) == 0 ? std::string("redis=...") : item) + "'");
      }
    }
    if (disk && kv_offload_dir.empty()) return Fail("--kv-offload disk=SIZE needs --kv-offload-dir DIR");
    if (!disk && !kv_offload_dir.empty()) return Fail("--kv-offload-dir needs --kv-offload disk=SIZE");
    if (no_prefix_cache) return Fail("--kv-offload keeps prefix-cache blocks; it cannot go with --no-prefix-cache");
    eo.kv_offload_dir = kv_offload_dir;
  }
  if (!kv_transfer_listen.empty() && eo.kv_offload_memory_bytes == 0) {
    eo.kv_offload_memory_bytes = int64_t{1} << 30;  // received blocks wait in the memory tier
  }
  if (!kv_transfer_listen.empty() && no_prefix_cache) {
    return Fail("--kv-transfer-listen hands received blocks to the prefix cache; it cannot go with --no-prefix-cache");
  }
  if (role == "prefill" && no_prefix_cache) {
    return Fail("--role prefill sends the prefix cache's blocks; it cannot go with --no-prefix-cache");
  }
  eo.kv_integrity = *kv::ParseIntegrityMode(kv_integrity);
  if (!testing_kv_fault.empty()) {
    const char* testing = std::getenv("PAGODA_TESTING");
    if (testing == nullptr || std::string(testing) != "1") {
      return Fail("--testing-kv-fault corrupts the KV cache on purpose; it is for tests and needs PAGODA_TESTING=1");
    }
    eo.testing_kv_fault = testing_kv_fault == "reuse"   ? KvFault::kReuse
                          : testing_kv_fault == "retag" ? KvFault::kRetag
                                                        : KvFault::kSwap;
  }
  if (kv_events.endpoint.empty() && (!kv_events.replay_endpoint.empty() || !kv_events.topic.empty())) {
    return Fail("--kv-events-replay and --kv-events-topic need --kv-events");
  }
  if (!kv_events.endpoint.empty()) {
    if (Status s = CheckEndpoint("--kv-events", kv_events.endpoint); !s.ok()) return Fail(s);
    if (!kv_events.replay_endpoint.empty()) {
      if (Status s = CheckEndpoint("--kv-events-replay", kv_events.replay_endpoint); !s.ok()) return Fail(s);
    }
    if (no_prefix_cache) return Fail("--kv-events reports the prefix cache, which --no-prefix-cache turns off");
  }
  // The secret comes from the environment only (never a flag value or a
  // file), and is never printed.
  std::string tenant_secret;
  if (!tenant_secret_env.empty()) {
    const char* v = std::getenv(tenant_secret_env.c_str());
    if (v == nullptr || *v == '\0') {
      return Fail("--tenant-secret-env: environment variable " + tenant_secret_env + " is not set or empty");
    }
    tenant_secret = v;
    if (tenant_secret.size() < tenancy::kMinSecretBytes) {
      return Fail("--tenant-secret-env: the secret in " + tenant_secret_env + " must be at least " +
                  std::to_string(tenancy::kMinSecretBytes) + " bytes");
    }
  }
  if (db.empty() && (!counters.empty() || !admin_key_env.empty() || !key_pepper_env.empty())) {
    return Fail("--counters, --admin-key-env and --key-pepper-env need --db");
  }
  auto from_env = [](const std::string& var, std::string* out) -> bool {
    if (var.empty()) return true;
    const char* v = std::getenv(var.c_str());
    if (v == nullptr || *v == '\0') return false;
    *out = v;
    return true;
  };
  control::ControlPlaneOptions control_options;
  std::string admin_key;
  control_options.store_url = db;
  control_options.counters_url = counters;
  control_options.allow_insecure_keys = allow_insecure_keys;
  control_options.signing_secret = tenant_secret;
  if (!from_env(admin_key_env, &admin_key)) {
    return Fail("--admin-key-env: environment variable " + admin_key_env + " is not set or empty");
  }
  if (!from_env(key_pepper_env, &control_options.key_pepper)) {
    return Fail("--key-pepper-env: environment variable " + key_pepper_env + " is not set or empty");
  }
  eo.scheduling = scheduling == "fair" || (scheduling == "auto" && (!tenant_secret.empty() || !db.empty()))
                      ? SchedulingMode::kFair
                      : SchedulingMode::kFcfs;
  eo.fair_share.preempt_for_share = !no_share_preemption;
  if (const auto t = kernels::ParseKvType(kv_type)) {
    eo.kv_type = *t;
  } else {
    return Fail("--kv-cache-dtype: unknown type '" + kv_type + "' (expected " + kernels::KvTypeChoices() + ")");
  }

  ThreadPool pool(threads);
  auto loaded = LoadModelAndTokenizer(model_path, pool, /*need_tokenizer=*/true, *model_options);
  if (!loaded.ok()) return Fail(loaded.status());
  Model& model = *loaded->model;
  uint64_t weights_fingerprint = 0;
  if (!eo.kv_offload_dir.empty() || !eo.kv_offload_redis_url.empty() || eo.kv_offload_memory_bytes > 0 ||
      role != "both" || !kv_transfer_listen.empty()) {
    // KV from another file, or from other decode weights, must never be adopted.
    eo.model_fingerprint = ModelFingerprint(*loaded->file, decode_weights.empty() ? "" : "decode-weights=" + decode_weights);
    // Prompt blocks are computed with the file's own weights whatever the
    // decode copies (the engine shares only prompt positions): what P/D
    // transfers carry and accept.
    weights_fingerprint = decode_weights.empty() ? eo.model_fingerprint : ModelFingerprint(*loaded->file);
  }
  const int64_t ctx_train = model.config().n_ctx_train;
  if (n_ctx <= 0) n_ctx = static_cast<int32_t>(std::min<int64_t>(ctx_train > 0 ? ctx_train : 4096, 4096));
  eo.n_ctx = n_ctx;

  server::ServeOptions so;
  so.host = host;
  so.port = static_cast<uint16_t>(port);
  so.api_key = api_key;
  so.tls_cert_file = tls.cert_file;
  so.tls_key_file = tls.key_file;
  so.model_id = !model_name.empty() ? model_name : std::filesystem::path(loaded->file->path()).stem().string();
  so.io_threads = http_threads;
  so.drain_timeout = std::chrono::seconds(drain_seconds);
  so.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(request_timeout_s * 1000.0));
  so.tenant_secret = std::move(tenant_secret);
  so.control = std::move(control_options);
  so.admin_key = std::move(admin_key);
  so.batch_data_dir = data_dir;
  so.batch.lines_in_flight = batch_in_flight;
  so.batch.max_file_bytes = max_file_mib << 20;
  so.role = role == "prefill" ? server::ServeRole::kPrefill
            : role == "decode" ? server::ServeRole::kDecode
                               : server::ServeRole::kBoth;
  so.kv_transfer_listen = kv_transfer_listen;
  so.kv_transfer_timeout = std::chrono::milliseconds(static_cast<int64_t>(kv_transfer_timeout_s * 1000.0));
  so.kv_transfer_fingerprint = weights_fingerprint;
  // Outlives the server (and its engine, which publishes into it).
  std::unique_ptr<kvevents::Publisher> publisher;
  if (!kv_events.endpoint.empty()) {
    auto p = kvevents::Publisher::Create(kv_events);
    if (!p.ok()) {
      const bool replay = p.status().message().find("replay endpoint") != std::string::npos;
      return Fail(std::string(replay ? "--kv-events-replay: " : "--kv-events: ") + p.status().message());
    }
    publisher = std::move(*p);
    eo.kv_event_sink = [p = publisher.get()](kvevents::EventBatch&& b) { p->Publish(std::move(b)); };
    std::fprintf(stderr, "pagoda: KV events on %s%s%s\n", publisher->endpoint().c_str(),
                 publisher->replay_endpoint().empty() ? "" : ", replay on ", publisher->replay_endpoint().c_str());
  }
  const std::string tmpl = ChatTemplateSource(loaded->file->metadata());
  auto srv = server::OpenAiServer::Create(model, *loaded->tokenizer, tmpl, eo, so);
  if (!srv.ok()) return Fail(srv.status());
  if ((*srv)->kv_capacity_tokens() < n_ctx) {
    return Fail("--kv-cache-memory holds " + std::to_string((*srv)->kv_capacity_tokens()) + " tokens of " +
                kernels::KvTypeName(eo.kv_type) + " KV cache, less than one full context of " + std::to_string(n_ctx) +
                " tokens: raise --kv-cache-memory or lower --ctx-size");
  }
  if (Status s = (*srv)->Start(); !s.ok()) return Fail(s);
  std::fprintf(stderr,
               "pagoda: serving %s (%s, ctx %d) on %s://%s:%u; KV cache %lld tokens (%s); %d threads; %s "
               "scheduling%s%s\n",
               so.model_id.c_str(), model.config().arch.c_str(), n_ctx, tls.enabled() ? "https" : "http",
               host.c_str(), (*srv)->port(),
               static_cast<long long>((*srv)->kv_capacity_tokens()), kernels::KvTypeName(eo.kv_type), threads,
               SchedulingModeName(eo.scheduling), so.tenant_secret.empty() ? "" : "; signed tenant headers",
               api_key.empty() ? "" : "; API key required");
  if ((*srv)->kv_transfer_port() != 0) {
    std::fprintf(stderr, "pagoda: role %s; KV transfers received on port %u\n", role.c_str(),
                 (*srv)->kv_transfer_port());
  } else if (role != "both") {
    std::fprintf(stderr, "pagoda: role %s\n", role.c_str());
  }
  std::fflush(stderr);
  (*srv)->RunUntilSignal();
  std::fprintf(stderr, "pagoda: server stopped\n");
  return 0;
}

}  // namespace pagoda::cli
