#include "tenancy/api_key.h"

#include <gtest/gtest.h>

#include <set>

namespace pagoda::tenancy {
namespace {

TEST(ApiKeyTest, GeneratesDistinctKeysWith256RandomBits) {
  std::set<std::string> secrets, ids;
  for (int i = 0; i < 200; ++i) {
    auto k = GenerateKey();
    ASSERT_TRUE(k.ok());
    EXPECT_EQ(k->secret.size(), 4u + 43u);  // "pgd-" + base64url(32 bytes)
    EXPECT_EQ(k->secret.rfind("pgd-", 0), 0u);
    EXPECT_TRUE(ValidateKeyString(k->secret).ok());
    EXPECT_EQ(k->id.rfind("key_", 0), 0u);
    EXPECT_EQ(k->id.find(k->secret.substr(4, 8)), std::string::npos);
    secrets.insert(k->secret);
    ids.insert(k->id);
  }
  EXPECT_EQ(secrets.size(), 200u);
  EXPECT_EQ(ids.size(), 200u);
}

TEST(ApiKeyTest, HashesWithSha256OrHmacWithAPepper) {
  // FIPS 180-2 test vector.
  EXPECT_EQ(HashKey("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // RFC 4231 test case 2.
  EXPECT_EQ(HashKey("what do ya want for nothing?", "Jefe"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(ApiKeyTest, ComparesHashesOnlyWhenEqualInFull) {
  const std::string a = HashKey("a"), b = HashKey("b");
  EXPECT_TRUE(HashesEqual(a, a));
  EXPECT_FALSE(HashesEqual(a, b));
  EXPECT_FALSE(HashesEqual(a, a.substr(0, 63)));
  EXPECT_FALSE(HashesEqual("", a));
}

TEST(ApiKeyTest, ParsesBearerHeadersAndBareKeys) {
  EXPECT_EQ(*ParseBearer("Bearer pgd-abc"), "pgd-abc");
  EXPECT_EQ(*ParseBearer("bearer   pgd-abc  "), "pgd-abc");
  EXPECT_EQ(*ParseBearer("BEARER\tpgd-abc"), "pgd-abc");
  EXPECT_EQ(*ParseBearer("pgd-abc"), "pgd-abc");
}

TEST(ApiKeyTest, RejectsBadKeyStringsWithoutEchoingThem) {
  const std::string secretish = "pgd-SECRETSECRET";
  for (const std::string& bad :
       {std::string(), std::string("Bearer"), std::string("Bearer    "), secretish + std::string(300, 'x'),
        secretish + std::string("\x00", 1), secretish + "\xc3\xa9", secretish + " tail", secretish + "\x7f"}) {
    auto r = ParseBearer(bad);
    ASSERT_FALSE(r.ok()) << bad.size();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().find("SECRET"), std::string::npos) << r.status().message();
  }
  EXPECT_NE(ParseBearer(std::string(300, 'k')).status().message().find("too long"), std::string::npos);
  EXPECT_NE(ValidateKeyString(std::string(257, 'k')).message().find("257 bytes"), std::string::npos);
  EXPECT_TRUE(ValidateKeyString(std::string(256, 'k')).ok());
}

TEST(ApiKeyTest, RandomIdsHaveThePrefixAndHexDigits) {
  auto id = RandomId("ten_");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->size(), 4u + 16u);
  EXPECT_EQ(id->find_first_not_of("0123456789abcdef", 4), std::string::npos);
  EXPECT_FALSE(RandomId("x", 0).ok());
}

}  // namespace
}  // namespace pagoda::tenancy
