#include "scheduler/mig/geometry_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace xpool {
namespace {

const MigModel& ModelNamed(std::string_view name) {
  const MigModel* model = MigModelNamed(name);
  EXPECT_NE(model, nullptr) << "no model " << name;
  return model != nullptr ? *model : AllMigModels()[0];
}

// A GPU built from "profile@start" instances, busy ones marked with a trailing '*': Gpu("A100-80GB", {"4g.40gb@0*"}).
MigGpu Gpu(std::string_view model, std::vector<std::string> instances = {}) {
  MigGpu gpu;
  gpu.model = &ModelNamed(model);
  for (std::string s : instances) {
    MigInstance i;
    i.busy = s.ends_with('*');
    if (i.busy) s.pop_back();
    const size_t at = s.find('@');
    i.placement = {MigProfileIndex(*gpu.model, s.substr(0, at)), std::stoi(s.substr(at + 1))};
    EXPECT_GE(i.placement.profile, 0) << s;
    gpu.instances.push_back(i);
  }
  return gpu;
}

// "gpu:profile@start", sorted, for comparing plans without depending on their order.
std::vector<std::string> Show(const std::vector<MigGpu>& gpus, const std::vector<MigInstanceRef>& refs) {
  std::vector<std::string> out;
  for (const MigInstanceRef& r : refs) {
    const MigModel& m = *gpus[static_cast<size_t>(r.gpu)].model;
    out.push_back(std::to_string(r.gpu) + ":" + std::string(m.profiles[static_cast<size_t>(r.placement.profile)].name) +
                  "@" + std::to_string(r.placement.start));
  }
  std::sort(out.begin(), out.end());
  return out;
}

using Names = std::vector<std::string>;

TEST(GeometryPlannerTest, Table) {
  struct Row {
    std::string name;
    std::vector<MigGpu> gpus;
    std::vector<MigDemand> demand;
    Names reuse, destroy, create;
    std::vector<MigDemand> unmet;
  };
  const std::string a80 = "A100-80GB";
  const std::vector<Row> rows = {
      {"empty GPU, whole-GPU profile", {Gpu(a80)}, {{"7g.80gb", 1}}, {}, {}, {"0:7g.80gb@0"}, {}},
      {"empty GPU, mixed demand packed best in demand order",
       {Gpu(a80)},
       {{"3g.40gb", 1}, {"1g.10gb", 4}},
       {},
       {},
       {"0:1g.10gb@0", "0:1g.10gb@1", "0:1g.10gb@2", "0:1g.10gb@3", "0:3g.40gb@4"},
       {}},
      {"idle instances beside a busy one make room",
       {Gpu(a80, {"4g.40gb@0*", "1g.10gb@4", "1g.10gb@5", "1g.10gb@6"})},
       {{"3g.40gb", 1}},
       {},
       {"0:1g.10gb@4", "0:1g.10gb@5", "0:1g.10gb@6"},
       {"0:3g.40gb@4"},
       {}},
      {"never destroy a busy instance",
       {Gpu(a80, {"4g.40gb@0*", "1g.10gb@4*", "1g.10gb@5", "1g.10gb@6"})},
       {{"3g.40gb", 1}},
       {},
       {},
       {},
       {{"3g.40gb", 1}}},
      {"a GPU entirely busy is left alone", {Gpu(a80, {"7g.80gb@0*"})}, {{"1g.10gb", 1}}, {}, {}, {}, {{"1g.10gb", 1}}},
      {"an idle instance of the profile is reused, then the slot that fragments least",
       {Gpu(a80, {"3g.40gb@4*", "1g.10gb@0"})},
       {{"1g.10gb", 2}},
       {"0:1g.10gb@0"},
       {},
       {"0:1g.10gb@1"},
       {}},
      {"a GPU in use is filled before an empty one is cut",
       {Gpu(a80, {"3g.40gb@0*"}), Gpu(a80)},
       {{"3g.40gb", 1}},
       {},
       {},
       {"0:3g.40gb@4"},
       {}},
      {"an idle GPU is repartitioned for the demand",
       {Gpu(a80, {"1g.10gb@0", "1g.10gb@1", "1g.10gb@2", "1g.10gb@3", "1g.10gb@4", "1g.10gb@5", "1g.10gb@6"})},
       {{"7g.80gb", 1}},
       {},
       {"0:1g.10gb@0", "0:1g.10gb@1", "0:1g.10gb@2", "0:1g.10gb@3", "0:1g.10gb@4", "0:1g.10gb@5", "0:1g.10gb@6"},
       {"0:7g.80gb@0"},
       {}},
      {"repartitioning destroys as little as it can",
       {Gpu(a80, {"3g.40gb@0", "3g.40gb@4"})},
       {{"1g.10gb", 1}},
       {},
       {"0:3g.40gb@4"},
       {"0:1g.10gb@4"},
       {}},
      {"reuse without changes", {Gpu(a80, {"2g.20gb@0", "1g.10gb@6*"})}, {{"2g.20gb", 1}}, {"0:2g.20gb@0"}, {}, {}, {}},
      {"earlier demand wins: whole GPU first",
       {Gpu(a80)},
       {{"7g.80gb", 1}, {"1g.10gb", 7}},
       {},
       {},
       {"0:7g.80gb@0"},
       {{"1g.10gb", 7}}},
      {"earlier demand wins: small instances first",
       {Gpu(a80)},
       {{"1g.10gb", 7}, {"7g.80gb", 1}},
       {},
       {},
       {"0:1g.10gb@0", "0:1g.10gb@1", "0:1g.10gb@2", "0:1g.10gb@3", "0:1g.10gb@4", "0:1g.10gb@5", "0:1g.10gb@6"},
       {{"7g.80gb", 1}}},
      {"1g.10gb spans two slots on an A100 40GB",
       {Gpu("A100-SXM4-40GB")},
       {{"1g.10gb", 5}},
       {},
       {},
       {"0:1g.10gb@0", "0:1g.10gb@2", "0:1g.10gb@4", "0:1g.10gb@6"},
       {{"1g.10gb", 1}}},
      {"a profile goes only where the model has it",
       {Gpu("A100-SXM4-40GB"), Gpu("H200-141GB")},
       {{"1g.18gb", 1}},
       {},
       {},
       {"1:1g.18gb@0"},
       {}},
      {"a profile no GPU has stays unmet", {Gpu(a80)}, {{"1g.18gb", 2}}, {}, {}, {}, {{"1g.18gb", 2}}},
      {"no demand, no change", {Gpu(a80, {"1g.10gb@0"})}, {}, {}, {}, {}, {}},
      {"memory and compute: the smallest covering profile of each model",
       {Gpu("A100-SXM4-40GB"), Gpu("H200-141GB")},
       {{"", 1, 8 * 1024, 0}, {"", 1, 30 * 1024, 0}, {"", 1, 0, 400}},
       {},
       {},
       {"0:1g.10gb@0", "0:3g.20gb@4", "1:1g.35gb@0"},
       {}},
      {"memory asked reuses an idle instance of its covering profile",
       {Gpu(a80, {"1g.20gb@0", "1g.10gb@2"})},
       {{"", 1, 12 * 1024, 0}},
       {"0:1g.20gb@0"},
       {},
       {},
       {}},
      {"memory no profile covers stays unmet",
       {Gpu(a80)},
       {{"", 2, 90 * 1024, 0}},
       {},
       {},
       {},
       {{"", 2, 90 * 1024, 0}}},
      {"A30: half and quarter",
       {Gpu("A30-24GB")},
       {{"2g.12gb", 1}, {"1g.6gb", 2}},
       {},
       {},
       {"0:1g.6gb@2", "0:1g.6gb@3", "0:2g.12gb@0"},
       {}},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    Result<MigPlan> plan = PlanMigGeometry(r.gpus, r.demand);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(Show(r.gpus, plan->reuse), r.reuse);
    EXPECT_EQ(Show(r.gpus, plan->destroy), r.destroy);
    EXPECT_EQ(Show(r.gpus, plan->create), r.create);
    EXPECT_EQ(plan->unmet, r.unmet);
    ASSERT_EQ(plan->served.size(), r.demand.size());
    for (size_t i = 0; i < r.demand.size(); ++i) {
      const auto unmet = std::find_if(r.unmet.begin(), r.unmet.end(), [&](const MigDemand& u) {
        return u.profile == r.demand[i].profile && u.memory_mib == r.demand[i].memory_mib &&
               u.compute_milli == r.demand[i].compute_milli;
      });
      EXPECT_EQ(plan->served[i], r.demand[i].count - (unmet == r.unmet.end() ? 0 : unmet->count)) << "entry " << i;
    }
    EXPECT_TRUE(ValidateMigPlan(r.gpus, *plan).ok()) << ValidateMigPlan(r.gpus, *plan).ToString();
  }
}

// fill_only changes only GPUs in use: what their free slices cannot take stays unmet, the idle GPU untouched.
TEST(GeometryPlannerTest, FillOnlyLeavesGpusNothingRunsOnAlone) {
  const std::vector<MigGpu> gpus = {Gpu("A100-80GB"), Gpu("A100-80GB", {"4g.40gb@0*"})};
  const std::vector<MigDemand> demand = {{"1g.10gb", 4}};
  Result<MigPlan> fill = PlanMigGeometry(gpus, demand, /*fill_only=*/true);
  ASSERT_TRUE(fill.ok()) << fill.status().ToString();
  EXPECT_EQ(Show(gpus, fill->create), (std::vector<std::string>{"1:1g.10gb@4", "1:1g.10gb@5", "1:1g.10gb@6"}));
  EXPECT_EQ(fill->unmet, (std::vector<MigDemand>{{"1g.10gb", 1}}));
  EXPECT_TRUE(ValidateMigPlan(gpus, *fill).ok());
  Result<MigPlan> full = PlanMigGeometry(gpus, demand);
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(full->unmet.empty());  // the idle GPU takes the fourth
}

TEST(GeometryPlannerTest, RefusesBadInput) {
  std::vector<MigGpu> gpus = {MigGpu{}};
  EXPECT_EQ(PlanMigGeometry(gpus, {}).status().code(), StatusCode::kInvalidArgument);
  gpus = {Gpu("A100-80GB", {"4g.40gb@0", "3g.40gb@0"})};  // overlapping
  EXPECT_NE(PlanMigGeometry(gpus, {}).status().message().find("gpu 0"), std::string::npos);
  gpus = {Gpu("A100-80GB")};
  const std::vector<MigDemand> negative = {{"1g.10gb", -1}};
  EXPECT_EQ(PlanMigGeometry(gpus, negative).status().code(), StatusCode::kInvalidArgument);
}

TEST(GeometryPlannerTest, ValidatePlanCatchesBadPlans) {
  const std::vector<MigGpu> gpus = {Gpu("A100-80GB", {"4g.40gb@0*", "1g.10gb@4"})};
  MigPlan plan;
  plan.destroy = {{0, gpus[0].instances[0].placement}};
  EXPECT_NE(ValidateMigPlan(gpus, plan).message().find("busy"), std::string::npos);
  plan = MigPlan{};
  plan.create = {{0, {MigProfileIndex(*gpus[0].model, "3g.40gb"), 4}}};  // overlaps the idle 1g at 4
  EXPECT_NE(ValidateMigPlan(gpus, plan).message().find("slot"), std::string::npos);
  plan.destroy = {{0, gpus[0].instances[1].placement}};
  EXPECT_TRUE(ValidateMigPlan(gpus, plan).ok());
  plan.reuse = plan.destroy;
  EXPECT_NE(ValidateMigPlan(gpus, plan).message().find("reused"), std::string::npos);
}

// A random valid geometry: random profiles at random starts, kept where they fit; some busy.
MigGpu RandomGpu(std::mt19937_64& rng) {
  const auto models = AllMigModels();
  MigGpu gpu;
  gpu.model = &models[rng() % models.size()];
  const int tries = static_cast<int>(rng() % 10);
  std::vector<MigPlacement> geometry;
  for (int t = 0; t < tries; ++t) {
    const int p = static_cast<int>(rng() % gpu.model->profiles.size());
    const auto& starts = gpu.model->profiles[static_cast<size_t>(p)].starts;
    const int s = starts[rng() % starts.size()];
    if (!MigPlacementFits(*gpu.model, geometry, p, s)) continue;
    geometry.push_back({p, s});
    gpu.instances.push_back(MigInstance{{p, s}, rng() % 10 < 3});
  }
  return gpu;
}

// Every plan is valid for the models' placement rules, destroys no busy instance, leaves nothing it could still
// serve, and accounts for the demand: what is reused or created plus what is unmet is what was asked for, and only
// demanded profiles are created.
TEST(GeometryPlannerTest, EveryPlanIsValidProperty) {
  std::vector<std::string> names;
  for (const MigModel& m : AllMigModels()) {
    for (const MigProfile& p : m.profiles) names.emplace_back(p.name);
  }
  size_t reused = 0, destroyed = 0, created = 0, unmet_plans = 0;  // the rounds exercise every kind of step
  for (uint64_t seed : {1u, 7u, 2024u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    for (int round = 0; round < 300; ++round) {
      std::vector<MigGpu> gpus(1 + rng() % 4);
      for (MigGpu& g : gpus) g = RandomGpu(rng);
      std::vector<MigDemand> demand(rng() % 5);
      for (MigDemand& d : demand) {
        d = {names[rng() % names.size()], static_cast<int>(rng() % 6)};
        if (rng() % 4 == 0) {  // given as memory and compute instead
          d.profile.clear();
          d.memory_mib = static_cast<int64_t>(rng() % 50) * 1024;
          d.compute_milli = static_cast<int64_t>(rng() % 4) * 250;
        }
      }
      Result<MigPlan> plan = PlanMigGeometry(gpus, demand);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      ASSERT_TRUE(ValidateMigPlan(gpus, *plan).ok())
          << "round " << round << ": " << ValidateMigPlan(gpus, *plan).ToString();
      for (size_t g = 0; g < gpus.size(); ++g) {
        const std::vector<MigInstance> after = InstancesAfter(gpus[g], static_cast<int>(g), *plan);
        for (const MigInstance& i : gpus[g].instances) {
          if (!i.busy) continue;
          EXPECT_NE(std::find_if(after.begin(), after.end(),
                                 [&](const MigInstance& a) { return a.busy && a.placement == i.placement; }),
                    after.end())
              << "round " << round << ": busy instance lost";
        }
      }
      // A fixed point: once the plan is applied and its instances taken, planning for what it left unmet
      // changes nothing.
      std::vector<MigGpu> next = gpus;
      for (size_t g = 0; g < gpus.size(); ++g) {
        next[g].instances = InstancesAfter(gpus[g], static_cast<int>(g), *plan);
        for (MigInstance& i : next[g].instances) {
          const MigInstanceRef ref{static_cast<int>(g), i.placement};
          const auto taken = [&](const std::vector<MigInstanceRef>& refs) {
            return std::find(refs.begin(), refs.end(), ref) != refs.end();
          };
          if (taken(plan->reuse) || taken(plan->create)) i.busy = true;
        }
      }
      reused += plan->reuse.size();
      destroyed += plan->destroy.size();
      created += plan->create.size();
      unmet_plans += plan->unmet.empty() ? 0 : 1;
      Result<MigPlan> again = PlanMigGeometry(next, plan->unmet);
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      EXPECT_TRUE(again->reuse.empty() && again->destroy.empty() && again->create.empty()) << "round " << round;
      EXPECT_EQ(again->unmet, plan->unmet) << "round " << round;
      int asked = 0, unmet = 0;
      for (const MigDemand& d : demand) asked += d.count;
      for (const MigDemand& d : plan->unmet) unmet += d.count;
      EXPECT_EQ(static_cast<int>(plan->reuse.size() + plan->create.size()) + unmet, asked) << "round " << round;
      int served = 0;
      for (int n : plan->served) served += n;
      EXPECT_EQ(served + unmet, asked) << "round " << round;
      for (const MigInstanceRef& c : plan->create) {
        const MigModel& model = *gpus[static_cast<size_t>(c.gpu)].model;
        EXPECT_TRUE(std::any_of(demand.begin(), demand.end(),
                                [&](const MigDemand& d) { return MigDemandProfile(model, d) == c.placement.profile; }));
      }
    }
  }
  EXPECT_GT(reused, 0u);
  EXPECT_GT(destroyed, 0u);
  EXPECT_GT(created, 0u);
  EXPECT_GT(unmet_plans, 0u);
}

}  // namespace
}  // namespace xpool
