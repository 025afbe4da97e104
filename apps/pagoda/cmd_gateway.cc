// pagoda gateway: many replicas behind one OpenAI endpoint (src/gateway).
// Flags -> GatewayOptions; the config file holds everything else (schema in
// docs/GATEWAY.md). A bad config is fatal with its line and problem.
// `pagoda gateway rollout ...` is the admin client (cmd_gateway_rollout.cc).
#include <cstdio>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "gateway/gateway.h"

namespace pagoda::cli {

int CmdGateway(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "rollout") return CmdGatewayRollout(argc - 1, argv + 1);
  CLI::App app("OpenAI-compatible gateway in front of many replicas (routing, health, aliases, admin API)",
               "gateway");
  gateway::GatewayOptions options;
  int drain_seconds = 30;
  app.add_option("-c,--config", options.config_path, "gateway config (TOML)")->required();
  app.add_option("--listen", options.listen_override, "HOST:PORT to listen on (overrides [gateway] listen)");
  app.add_option("--tls-cert", options.tls_cert_override,
                 "https: PEM certificate (overrides [gateway] tls_cert; needs --tls-key); reloads reread it");
  app.add_option("--tls-key", options.tls_key_override, "https: its PEM private key (overrides [gateway] tls_key)");
  app.add_option("--drain-seconds", drain_seconds, "on SIGTERM, let requests in flight finish for this long")
      ->check(CLI::Range(0, 3600));
  int batch_in_flight = 256;
  int64_t max_file_mib = 100;
  app.add_option("--data-dir", options.batch_data_dir,
                 "turn on the Files and Batch APIs: uploads and outputs live in this directory (batch state in "
                 "[control]'s store, else DIR/batch.db); lines are spread over the replicas; docs/BATCH.md");
  app.add_option("--batch-in-flight", batch_in_flight, "with --data-dir: batch lines running at once")
      ->check(CLI::Range(1, 65536));
  app.add_option("--max-file-mib", max_file_mib, "with --data-dir: largest upload, MiB")->check(CLI::Range(1, 4096));
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;
  options.batch.lines_in_flight = batch_in_flight;
  options.batch.max_file_bytes = max_file_mib << 20;
  auto gw = gateway::Gateway::Create(options);
  if (!gw.ok()) return Fail(gw.status());
  if (Status st = (*gw)->Start(); !st.ok()) return Fail(st);
  std::fprintf(stderr, "pagoda gateway: listening on port %u\n", static_cast<unsigned>((*gw)->port()));
  (*gw)->RunUntilSignal(std::chrono::seconds(drain_seconds));
  return 0;
}

}  // namespace pagoda::cli
