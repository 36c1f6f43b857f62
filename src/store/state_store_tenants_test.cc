// The StateStore typed suite (fixture: state_store_test_fixture.h): tenants (quotas, guarantees, per-priority
// quotas) and tokens.
#include "store/state_store_test_fixture.h"
#include "store/token.h"

namespace xpool::store_test {
namespace {

TYPED_TEST(StateStoreTest, Tenants) {
  StateStore& s = *this->store_;
  EXPECT_EQ(s.CreateTenant("vision", false, {}, 1).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.CreateTenant("Bad Name", false, {}, 1).status().code(), StatusCode::kInvalidArgument);
  TenantQuota quota{8, 8 * 81920, 8000, 64000, kUnlimited};
  Result<TenantRecord> admin = s.CreateTenant("admin", true, quota, 5);
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  Result<TenantRecord> got = s.GetTenant(admin->id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->name, "admin");
  EXPECT_TRUE(got->admin);
  EXPECT_EQ(got->quota, quota);
  EXPECT_EQ(got->created_us, 5);
  EXPECT_EQ(s.GetTenant(TenantId(999)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.FindTenant("nobody").status().code(), StatusCode::kNotFound);

  Result<std::vector<TenantRecord>> all = s.ListTenants();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "admin");  // by name
  EXPECT_EQ((*all)[1].name, "vision");

  TenantQuota smaller{2, 1024, 1000, 1000, 1024};
  ASSERT_TRUE(s.UpdateTenantQuota(this->tenant_, smaller).ok());
  EXPECT_EQ(s.GetTenant(this->tenant_)->quota, smaller);
  EXPECT_EQ(s.UpdateTenantQuota(TenantId(999), smaller).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.UpdateTenantQuota(this->tenant_, TenantQuota{-5, 0, 0, 0, 0}).code(), StatusCode::kInvalidArgument);

  // Guarantees: none by default; kept apart from the limits; seen through every read path.
  EXPECT_EQ(s.GetTenant(this->tenant_)->guaranteed, TenantQuota{});
  TenantQuota guaranteed{1, 512, 1000, 500, -1};
  ASSERT_TRUE(s.UpdateTenantGuarantee(this->tenant_, guaranteed).ok());
  EXPECT_EQ(s.GetTenant(this->tenant_)->guaranteed, guaranteed);
  EXPECT_EQ(s.GetTenant(this->tenant_)->quota, smaller);
  EXPECT_EQ(s.FindTenant("vision")->guaranteed, guaranteed);
  ASSERT_TRUE(s.AddToken(this->tenant_, "xpt_guarantee_probe", "probe", 1).ok());
  EXPECT_EQ(s.Authenticate("xpt_guarantee_probe")->guaranteed, guaranteed);
  EXPECT_EQ(s.UpdateTenantGuarantee(TenantId(999), guaranteed).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.UpdateTenantGuarantee(this->tenant_, TenantQuota{0, -7, 0, 0, 0}).code(), StatusCode::kInvalidArgument);
}

TYPED_TEST(StateStoreTest, PriorityQuotasAreReplacedAndReadEverywhere) {
  StateStore& s = *this->store_;
  EXPECT_TRUE(s.GetTenant(this->tenant_)->priority_quotas.empty());
  const std::vector<TenantPriorityQuota> quotas = {{80, 100, TenantQuota{8, -1, -1, -1, -1}},
                                                   {0, 49, TenantQuota{-1, -1, 2000, 4000, -1}}};
  ASSERT_TRUE(s.SetTenantPriorityQuotas(this->tenant_, quotas).ok());
  const std::vector<TenantPriorityQuota> sorted = {quotas[1], quotas[0]};  // by min_priority
  EXPECT_EQ(s.GetTenant(this->tenant_)->priority_quotas, sorted);
  EXPECT_EQ(s.FindTenant("vision")->priority_quotas, sorted);
  ASSERT_TRUE(s.AddToken(this->tenant_, "xpt_priority_quota_probe", "probe", 1).ok());
  EXPECT_EQ(s.Authenticate("xpt_priority_quota_probe")->priority_quotas, sorted);
  ASSERT_TRUE(s.CreateTenant("other", false, {}, 1).ok());
  Result<std::vector<TenantRecord>> all = s.ListTenants();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_TRUE((*all)[0].priority_quotas.empty());  // "other"
  EXPECT_EQ((*all)[1].priority_quotas, sorted);    // "vision"

  // Bad input leaves what was there.
  for (const TenantPriorityQuota& bad :
       {TenantPriorityQuota{-1, 10, {}}, TenantPriorityQuota{50, 101, {}}, TenantPriorityQuota{60, 40, {}},
        TenantPriorityQuota{0, 100, TenantQuota{-2, -1, -1, -1, -1}}}) {
    EXPECT_EQ(s.SetTenantPriorityQuotas(this->tenant_, {bad}).code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(s.SetTenantPriorityQuotas(TenantId(999), quotas).code(), StatusCode::kNotFound);
  this->Reopen();
  EXPECT_EQ(this->store_->GetTenant(this->tenant_)->priority_quotas, sorted);
  ASSERT_TRUE(this->store_->SetTenantPriorityQuotas(this->tenant_, {}).ok());
  EXPECT_TRUE(this->store_->GetTenant(this->tenant_)->priority_quotas.empty());
}

TYPED_TEST(StateStoreTest, TokensAreStoredHashedAndAuthenticate) {
  StateStore& s = *this->store_;
  Result<std::string> token = GenerateToken();
  ASSERT_TRUE(token.ok());
  Result<int64_t> id = s.AddToken(this->tenant_, *token, "ci", 10);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  Result<TenantRecord> who = s.Authenticate(*token);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->id, this->tenant_);
  EXPECT_EQ(s.Authenticate(*token + "x").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(s.Authenticate("").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(s.AddToken(this->tenant_, "short", "x", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.AddToken(TenantId(999), *token + "2", "x", 1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.AddToken(this->tenant_, *token, "again", 1).status().code(), StatusCode::kAlreadyExists);

  // Only the hash is in the database.
  auto* sql = dynamic_cast<store_internal::SqlStore*>(&s);
  ASSERT_NE(sql, nullptr);
  Result<store_internal::SqlResult> rows = sql->QueryForTesting("SELECT hash, label FROM tokens");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 1u);
  EXPECT_EQ(*rows->rows[0][0], Sha256Hex(*token));
  EXPECT_EQ(rows->rows[0][0]->find(token->substr(4)), std::string::npos);

  Result<std::vector<TokenRecord>> list = s.ListTokens(this->tenant_);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].label, "ci");
  ASSERT_TRUE(s.RevokeToken(*id).ok());
  EXPECT_EQ(s.Authenticate(*token).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(s.RevokeToken(*id).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace xpool::store_test
