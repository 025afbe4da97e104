// JSON views of control-plane records: seconds for times, no hash, ever.
#include "control/admin_json.h"

#include <gtest/gtest.h>

namespace pagoda::control {
namespace {

TEST(AdminJsonTest, KeyViewHasNoHashAndSaysWhetherTheKeyIsActive) {
  tenancy::ApiKey k;
  k.id = "key_0123456789abcdef";
  k.tenant_id = "acme";
  k.name = "ci";
  k.hash = std::string(64, 'a');
  k.models = {"llama"};
  k.created_at = 1'000'500;
  k.expires_at = 2'000'000;
  const auto j = KeyJson(k, 1'500'000);
  EXPECT_EQ(j.dump().find(k.hash), std::string::npos);
  EXPECT_FALSE(j.contains("hash"));
  EXPECT_FALSE(j.contains("key"));
  EXPECT_EQ(j["status"], "active");
  EXPECT_EQ(j["created_at"], 1000);
  EXPECT_EQ(j["expires_at"], 2000);
  EXPECT_TRUE(j["revoked_at"].is_null());
  EXPECT_EQ(KeyJson(k, 2'000'000)["status"], "expired");
  k.revoked_at = 1'200'000;
  EXPECT_EQ(KeyJson(k, 1'500'000)["status"], "revoked");
}

TEST(AdminJsonTest, TenantViewShowsNullForNoDedicatedDeployment) {
  tenancy::Tenant t;
  t.id = "acme";
  t.name = "Acme";
  t.plan = tenancy::PlanKind::kProvisioned;
  const auto j = TenantJson(t);
  EXPECT_EQ(j["plan"], "provisioned");
  EXPECT_TRUE(j["dedicated_deployment"].is_null());
  EXPECT_TRUE(j["created_at"].is_null());
  t.dedicated_deployment = "acme-dep";
  EXPECT_EQ(TenantJson(t)["dedicated_deployment"], "acme-dep");
}

TEST(AdminJsonTest, ListsWrapItemsInAnOpenAiListObject) {
  const auto j = ListJson(nlohmann::json::array({1, 2}));
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(ListJson(nlohmann::json())["data"], nlohmann::json::array());
  EXPECT_EQ(LimitJson({tenancy::LimitScope::kKey, "key_1", "m", {1, 2, 3}})["scope"], "key");
  EXPECT_EQ(PriceJson({"m", 1, 0.5, 2, 3})["cached_input_per_mtok"], 0.5);
  EXPECT_EQ(ReservationJson({"acme", "m", 10})["tokens_per_second"], 10.0);
}

}  // namespace
}  // namespace pagoda::control
