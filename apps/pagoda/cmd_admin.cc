// pagoda admin tenants|keys|limits|plans|prices|usage ...: a thin client of
// the admin API of a running `pagoda serve` or `pagoda gateway`
// (src/control/admin_routes.h; docs/CONTROL_PLANE.md, "Admin API and CLI").
// Tables on stdout by default, the API's JSON with --json, CSV with
// `usage --csv`. The admin key comes from an environment variable
// (--admin-key-env, default PAGODA_ADMIN_KEY), never from a flag value.
// Exit codes: 0 ok; 1 the call failed (unreachable, or the server's 4xx/5xx
// error message on stderr); 2 usage errors.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "admin_client.h"
#include "admin_tables.h"
#include "cli_util.h"
#include "commands.h"

namespace pagoda::cli {
namespace {

using json = nlohmann::json;

constexpr int kUsageError = 2;

struct AdminArgs {
  std::string url, key_env = "PAGODA_ADMIN_KEY", ca_file;
  bool json_out = false;
  std::string id;  // positional: tenant id, key id or model
  // tenants / plans
  std::optional<std::string> name, plan, dedicated_deployment;
  std::optional<double> weight;
  std::optional<bool> share_cache, disabled;
  std::optional<std::string> max_class, default_class;  // tenants (both), keys (max_class)
  // keys
  std::optional<std::string> tenant, key;
  std::vector<std::string> models;
  std::optional<int64_t> expires_at, ttl_seconds, grace_seconds;
  // limits / reservations / usage
  std::optional<std::string> model;
  std::optional<int64_t> rpm, tpm, concurrent;
  std::optional<double> tokens_per_second;
  // prices
  std::optional<double> input, cached_input, output, replica_hour, batch_factor;
  // usage
  std::optional<std::string> group_by, from, to;
  bool csv = false;
};

int UsageFail(const std::string& msg) {
  std::fprintf(stderr, "pagoda admin: %s\n", msg.c_str());
  return kUsageError;
}

// Runs one call and prints its answer: `render` (a table) or, with --json,
// the JSON itself. Returns the exit code; *out gets the JSON when given.
int Show(AdminClient& c, const AdminArgs& a, const std::string& method, const std::string& path,
         const std::map<std::string, std::string>& query, const json& body,
         const std::function<std::string(const json&)>& render, json* out = nullptr) {
  auto r = c.Call(method, path, query, body.is_null() ? "" : body.dump());
  if (!r.ok()) return Fail(r.status());
  if (r->status / 100 != 2) return Fail(AdminClient::ErrorOf(*r));
  const json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded()) return Fail(method + " " + path + ": the answer is not JSON");
  if (out) *out = j;
  std::fputs(a.json_out ? (j.dump(2) + "\n").c_str() : render(j).c_str(), stdout);
  return 0;
}

void Put(json* body, const char* field, const auto& opt) {
  if (opt) (*body)[field] = *opt;
}

// ---- tenants ----

int Tenants(AdminClient& c, const AdminArgs& a, const std::string& action) {
  if (action == "list") return Show(c, a, "GET", "/admin/tenants", {}, nullptr, TenantsTable);
  if (action == "show") return Show(c, a, "GET", "/admin/tenants/" + UrlEncode(a.id), {}, nullptr, TenantsTable);
  json body = json::object();
  Put(&body, "name", a.name);
  Put(&body, "plan", a.plan);
  Put(&body, "weight", a.weight);
  Put(&body, "share_cache_across_keys", a.share_cache);
  Put(&body, "dedicated_deployment", a.dedicated_deployment);
  // "plan": clear the tenant's max class (its plan's applies again).
  if (a.max_class) body["max_class"] = *a.max_class == "plan" ? json(nullptr) : json(*a.max_class);
  Put(&body, "default_class", a.default_class);
  if (action == "create") {
    if (!a.id.empty()) body["id"] = a.id;
    return Show(c, a, "POST", "/admin/tenants", {}, body, TenantsTable);
  }
  Put(&body, "disabled", a.disabled);
  if (body.empty()) return UsageFail("tenants update: nothing to change (give --name, --plan, --weight, ...)");
  return Show(c, a, "PATCH", "/admin/tenants/" + UrlEncode(a.id), {}, body, TenantsTable);
}

// ---- keys ----

int Keys(AdminClient& c, const AdminArgs& a, const std::string& action) {
  if (action == "list") {
    std::map<std::string, std::string> q;
    if (a.tenant) q["tenant"] = *a.tenant;
    return Show(c, a, "GET", "/admin/keys", q, nullptr, KeysTable);
  }
  if (action == "show") return Show(c, a, "GET", "/admin/keys/" + UrlEncode(a.id), {}, nullptr, KeysTable);
  if (action == "revoke") return Show(c, a, "POST", "/admin/keys/" + UrlEncode(a.id) + "/revoke", {}, nullptr, KeysTable);
  json body = json::object();
  std::string path;
  if (action == "create") {
    if (a.expires_at && a.ttl_seconds) return UsageFail("keys create: give --expires-at or --ttl-seconds, not both");
    body["tenant"] = a.id;
    Put(&body, "name", a.name);
    if (!a.models.empty()) body["models"] = a.models;
    Put(&body, "expires_at", a.expires_at);
    Put(&body, "ttl_seconds", a.ttl_seconds);
    Put(&body, "max_class", a.max_class);
    path = "/admin/keys";
  } else {  // rotate
    Put(&body, "grace_seconds", a.grace_seconds);
    path = "/admin/keys/" + UrlEncode(a.id) + "/rotate";
  }
  // The secret: on its own line, once, with the warning on stderr.
  auto render = [&](const json& j) {
    std::string out = KeysTable(j);
    if (action == "rotate" && j.contains("replaces")) {
      out += "Replaces " + j["replaces"].get<std::string>();
      if (j.contains("previous")) out += " (" + j["previous"].value("status", "?") + ", ends " +
                                        TimeText(j["previous"].value("expires_at", json())) + ")";
      out += ".\n";
    }
    out += "\nSecret:\n" + j.value("key", std::string("(missing)")) + "\n";
    return out;
  };
  const int rc = Show(c, a, "POST", path, {}, body, render);
  if (rc == 0) {
    std::fprintf(stderr,
                 "pagoda admin: this is the only time the key's secret is shown; it will not be shown again. "
                 "Store it now.\n");
  }
  return rc;
}

// ---- limits ----

int Limits(AdminClient& c, const AdminArgs& a, const std::string& action) {
  if (action == "list") {
    std::map<std::string, std::string> q;
    if (a.tenant) q["tenant"] = *a.tenant;
    return Show(c, a, "GET", "/admin/limits", q, nullptr, LimitsTable);
  }
  if (a.tenant.has_value() == a.key.has_value()) return UsageFail("limits " + action + ": give --tenant or --key");
  const std::string scope = a.tenant ? "tenant" : "key";
  const std::string id = a.tenant ? *a.tenant : *a.key;
  if (action == "delete") {
    std::map<std::string, std::string> q = {{"scope", scope}, {"id", id}};
    if (a.model) q["model"] = *a.model;
    return Show(c, a, "DELETE", "/admin/limits", q, nullptr, LimitsTable);
  }
  if (!a.rpm && !a.tpm && !a.concurrent) return UsageFail("limits set: give --rpm, --tpm or --concurrent");
  json body = {{"scope", scope}, {"id", id}};
  Put(&body, "model", a.model);
  Put(&body, "rpm", a.rpm);
  Put(&body, "tpm", a.tpm);
  Put(&body, "concurrent", a.concurrent);
  return Show(c, a, "PUT", "/admin/limits", {}, body, LimitsTable);
}

// ---- plans: the tenant's plan kind and weight, and its reservation ----

int Plans(AdminClient& c, const AdminArgs& a, const std::string& action) {
  if (action == "list") {
    json tenants, reservations;
    AdminArgs quiet = a;
    quiet.json_out = false;
    auto none = [](const json&) { return std::string(); };
    if (int rc = Show(c, quiet, "GET", "/admin/tenants", {}, nullptr, none, &tenants)) return rc;
    if (int rc = Show(c, quiet, "GET", "/admin/reservations", {}, nullptr, none, &reservations)) return rc;
    if (a.json_out) {
      std::printf("%s\n", json{{"tenants", tenants}, {"reservations", reservations}}.dump(2).c_str());
    } else {
      std::printf("%s\n%s", TenantsTable(tenants).c_str(), ReservationsTable(reservations).c_str());
    }
    return 0;
  }
  // set
  if (a.model.has_value() != a.tokens_per_second.has_value()) {
    return UsageFail("plans set: --model and --tokens-per-second go together (the reservation)");
  }
  json patch = json::object();
  Put(&patch, "plan", a.plan);
  Put(&patch, "weight", a.weight);
  Put(&patch, "dedicated_deployment", a.dedicated_deployment);
  if (patch.empty() && !a.model) return UsageFail("plans set: give --plan, --weight or a reservation");
  json out = json::object();
  AdminArgs quiet = a;
  quiet.json_out = false;
  if (!patch.empty()) {
    json t;
    const auto table = a.json_out ? std::function<std::string(const json&)>([](const json&) { return ""; })
                                  : std::function<std::string(const json&)>(TenantsTable);
    if (int rc = Show(c, quiet, "PATCH", "/admin/tenants/" + UrlEncode(a.id), {}, patch, table, &t)) return rc;
    out["tenant"] = t;
  }
  if (a.model) {
    json body = {{"tenant", a.id}, {"model", *a.model}, {"tokens_per_second", *a.tokens_per_second}};
    json r;
    const auto table = a.json_out ? std::function<std::string(const json&)>([](const json&) { return ""; })
                                  : std::function<std::string(const json&)>(ReservationsTable);
    if (int rc = Show(c, quiet, "PUT", "/admin/reservations", {}, body, table, &r)) return rc;
    out["reservation"] = r;
  }
  if (a.json_out) std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

// ---- prices ----

int Prices(AdminClient& c, const AdminArgs& a, const std::string& action) {
  if (action == "list") return Show(c, a, "GET", "/admin/prices", {}, nullptr, PricesTable);
  if (action == "delete") return Show(c, a, "DELETE", "/admin/prices", {{"model", a.id}}, nullptr, PricesTable);
  json body = {{"model", a.id}};
  Put(&body, "input_per_mtok", a.input);
  Put(&body, "cached_input_per_mtok", a.cached_input);
  Put(&body, "output_per_mtok", a.output);
  Put(&body, "replica_hour", a.replica_hour);
  Put(&body, "batch_factor", a.batch_factor);
  return Show(c, a, "PUT", "/admin/prices", {}, body, PricesTable);
}

// ---- usage ----

int Usage(AdminClient& c, const AdminArgs& a) {
  std::map<std::string, std::string> q;
  if (a.group_by) q["group_by"] = *a.group_by;
  if (a.from) q["from"] = *a.from;
  if (a.to) q["to"] = *a.to;
  if (a.tenant) q["tenant"] = *a.tenant;
  if (a.key) q["key"] = *a.key;
  if (a.model) q["model"] = *a.model;
  if (!a.csv) return Show(c, a, "GET", "/admin/usage", q, nullptr, UsageTable);
  q["format"] = "csv";
  auto r = c.Call("GET", "/admin/usage", q);
  if (!r.ok()) return Fail(r.status());
  if (r->status / 100 != 2) return Fail(AdminClient::ErrorOf(*r));
  std::fwrite(r->body.data(), 1, r->body.size(), stdout);
  return 0;
}

}  // namespace

int CmdAdmin(int argc, char** argv) {
  CLI::App app("Manage tenants, API keys, limits, plans, prices and usage through a running server's admin API",
               "admin");
  app.fallthrough();  // --url, --json, ... anywhere on the line
  app.require_subcommand(1);
  AdminArgs a;
  app.add_option("--url", a.url, "the server's or gateway's base URL, http[s]://HOST:PORT")
      ->envname("PAGODA_ADMIN_URL");
  app.add_option("--admin-key-env", a.key_env, "environment variable holding the admin key")->capture_default_str();
  app.add_option("--ca-file", a.ca_file, "https: PEM file of the CAs to trust instead of the system store");
  app.add_flag("--json", a.json_out, "print the API's JSON instead of a table");

  std::vector<std::pair<CLI::App*, std::string>> leaves;  // (subcommand, "group action")
  auto group = [&](const char* name, const char* help) {
    CLI::App* g = app.add_subcommand(name, help);
    g->require_subcommand(1);
    return g;
  };
  auto leaf = [&](CLI::App* g, const char* name, const char* help) {
    CLI::App* s = g->add_subcommand(name, help);
    leaves.emplace_back(s, g->get_name() + " " + name);
    return s;
  };
  auto tenant_fields = [&](CLI::App* s) {
    s->add_option("--name", a.name, "display name");
    s->add_option("--plan", a.plan, "serverless | provisioned | dedicated")
        ->check(CLI::IsMember({"serverless", "provisioned", "dedicated"}));
    s->add_option("--weight", a.weight, "fair-share weight (> 0)")->check(CLI::PositiveNumber);
    s->add_option("--share-cache", a.share_cache, "share the prefix cache across the tenant's keys (true|false)");
    s->add_option("--dedicated-deployment", a.dedicated_deployment, "dedicated plan: the tenant's deployment");
    s->add_option("--max-class", a.max_class,
                  "most urgent workload class its keys may use: batch | interactive | realtime | plan (the plan's: "
                  "serverless interactive, else realtime)")
        ->check(CLI::IsMember({"batch", "interactive", "realtime", "plan"}));
    s->add_option("--default-class", a.default_class,
                  "class of requests that name none: batch | interactive | realtime (capped at the max)")
        ->check(CLI::IsMember({"batch", "interactive", "realtime"}));
  };

  CLI::App* tenants = group("tenants", "create, list, show and update tenants");
  CLI::App* t_create = leaf(tenants, "create", "create a tenant (id generated unless given)");
  t_create->add_option("id", a.id, "tenant id: a-z, 0-9, '_' and '-'");
  tenant_fields(t_create);
  t_create->get_option("--name")->required();
  leaf(tenants, "list", "list tenants");
  leaf(tenants, "show", "show one tenant")->add_option("id", a.id, "tenant id")->required();
  CLI::App* t_update = leaf(tenants, "update", "change a tenant");
  t_update->add_option("id", a.id, "tenant id")->required();
  tenant_fields(t_update);
  t_update->add_option("--disabled", a.disabled, "refuse the tenant's requests (true|false)");

  CLI::App* keys = group("keys", "create, list, revoke and rotate API keys");
  CLI::App* k_create = leaf(keys, "create", "issue a key; its secret is printed once");
  k_create->add_option("tenant", a.id, "tenant id")->required();
  k_create->add_option("--name", a.name, "a label for the key");
  k_create->add_option("--models", a.models, "models the key may use, comma-separated (default: all)")
      ->delimiter(',');
  k_create->add_option("--expires-at", a.expires_at, "expiry, unix seconds")->check(CLI::PositiveNumber);
  k_create->add_option("--ttl-seconds", a.ttl_seconds, "expiry, seconds from now")->check(CLI::PositiveNumber);
  k_create->add_option("--max-class", a.max_class,
                       "most urgent workload class the key may use, replacing its tenant's: batch | interactive | "
                       "realtime")
      ->check(CLI::IsMember({"batch", "interactive", "realtime"}));
  leaf(keys, "list", "list keys (never their secrets)")->add_option("--tenant", a.tenant, "only this tenant's");
  leaf(keys, "show", "show one key")->add_option("id", a.id, "key id")->required();
  leaf(keys, "revoke", "revoke a key now")->add_option("id", a.id, "key id")->required();
  CLI::App* k_rotate = leaf(keys, "rotate", "replace a key; the new secret is printed once");
  k_rotate->add_option("id", a.id, "key id")->required();
  k_rotate->add_option("--grace-seconds", a.grace_seconds, "the old key keeps working this long (default 0)")
      ->check(CLI::NonNegativeNumber);

  CLI::App* limits = group("limits", "set, list and delete rate limits");
  auto limit_target = [&](CLI::App* s) {
    s->add_option("--tenant", a.tenant, "a tenant's limits");
    s->add_option("--key", a.key, "a key's limits");
    s->add_option("--model", a.model, "for one model (default: any model)");
  };
  CLI::App* l_set = leaf(limits, "set", "set limits (0 = unlimited; the others keep their values)");
  limit_target(l_set);
  l_set->add_option("--rpm", a.rpm, "requests per minute")->check(CLI::NonNegativeNumber);
  l_set->add_option("--tpm", a.tpm, "tokens per minute")->check(CLI::NonNegativeNumber);
  l_set->add_option("--concurrent", a.concurrent, "requests at once")->check(CLI::NonNegativeNumber);
  leaf(limits, "list", "list limits")->add_option("--tenant", a.tenant, "only this tenant's and its keys'");
  limit_target(leaf(limits, "delete", "delete one limit rule"));

  CLI::App* plans = group("plans", "a tenant's plan, weight and reserved throughput");
  CLI::App* p_set = leaf(plans, "set", "set the plan (and a reservation with --model and --tokens-per-second)");
  p_set->add_option("tenant", a.id, "tenant id")->required();
  p_set->add_option("--plan", a.plan, "serverless | provisioned | dedicated")
      ->check(CLI::IsMember({"serverless", "provisioned", "dedicated"}));
  p_set->add_option("--weight", a.weight, "fair-share weight (> 0)")->check(CLI::PositiveNumber);
  p_set->add_option("--dedicated-deployment", a.dedicated_deployment, "dedicated plan: the tenant's deployment");
  p_set->add_option("--model", a.model, "provisioned: the model of the reservation");
  p_set->add_option("--tokens-per-second", a.tokens_per_second, "provisioned: reserved tokens per second")
      ->check(CLI::PositiveNumber);
  leaf(plans, "list", "every tenant's plan and the reservations");

  CLI::App* prices = group("prices", "prices per model");
  CLI::App* pr_set = leaf(prices, "set", "set a model's prices (per million tokens; per replica-hour)");
  pr_set->add_option("model", a.id, "model name")->required();
  pr_set->add_option("--input", a.input, "input tokens, per million")->required()->check(CLI::NonNegativeNumber);
  pr_set->add_option("--cached-input", a.cached_input, "cached input tokens, per million (default: --input)")
      ->check(CLI::NonNegativeNumber);
  pr_set->add_option("--output", a.output, "output tokens, per million")->required()->check(CLI::NonNegativeNumber);
  pr_set->add_option("--replica-hour", a.replica_hour, "a dedicated replica, per hour")
      ->check(CLI::NonNegativeNumber);
  pr_set->add_option("--batch-factor", a.batch_factor,
                     "multiplier for batch-class token prices, in (0, 1] (default 1; OpenAI's batch discount is 0.5)")
      ->check(CLI::Range(0.0, 1.0));
  leaf(prices, "list", "list prices");
  leaf(prices, "delete", "delete a model's prices")->add_option("model", a.id, "model name")->required();

  CLI::App* usage = app.add_subcommand("usage", "usage and cost, aggregated");
  leaves.emplace_back(usage, "usage");
  usage->add_option("--group-by", a.group_by,
                    "comma-separated: tenant,key,model,day,service_tier (default tenant; none)");
  usage->add_option("--from", a.from, "start: unix seconds or YYYY-MM-DD (UTC)");
  usage->add_option("--to", a.to, "end: unix seconds (exclusive) or YYYY-MM-DD (inclusive)");
  usage->add_option("--tenant", a.tenant, "only this tenant");
  usage->add_option("--key", a.key, "only this key");
  usage->add_option("--model", a.model, "only this model");
  usage->add_flag("--csv", a.csv, "CSV (RFC 4180) instead of a table");

  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;
  std::string command;
  for (const auto& [sub, name] : leaves) {
    if (sub->parsed()) command = name;
  }
  if (command.empty()) return UsageFail("no command (see pagoda admin --help)");
  if (a.url.empty()) return UsageFail("--url is required (or set PAGODA_ADMIN_URL)");
  const char* key = std::getenv(a.key_env.c_str());
  if (key == nullptr || *key == '\0') {
    return UsageFail("the admin key is read from the environment: " + a.key_env + " is not set");
  }
  auto client = AdminClient::Create(a.url, key, a.ca_file);
  if (!client.ok()) return UsageFail(client.status().message());
  AdminClient& c = **client;
  const std::string group_name = command.substr(0, command.find(' '));
  const std::string action = command.find(' ') == std::string::npos ? "" : command.substr(command.find(' ') + 1);
  if (group_name == "tenants") return Tenants(c, a, action);
  if (group_name == "keys") return Keys(c, a, action);
  if (group_name == "limits") return Limits(c, a, action);
  if (group_name == "plans") return Plans(c, a, action);
  if (group_name == "prices") return Prices(c, a, action);
  return Usage(c, a);
}

}  // namespace pagoda::cli
