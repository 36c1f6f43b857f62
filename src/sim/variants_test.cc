#include "sim/variants.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace xpool::sim {
namespace {

// Fleets: A 8 nodes × 8 GPUs (64), B 8 × 2 (16), C 2 × 4 (8); 88 GPUs.
std::vector<TraceNode> Nodes() {
  std::vector<TraceNode> nodes;
  auto add = [&](int count, int gpus, const std::string& model) {
    for (int i = 0; i < count; ++i) {
      nodes.push_back({model + std::to_string(i), 96000, 393216, gpus, model});
    }
  };
  add(8, 8, "A");
  add(8, 2, "B");
  add(2, 4, "C");
  add(2, 0, "");  // CPU-only nodes are no fleet
  return nodes;
}

// 1000 sharing pods (0.1 GPU each), 60 single whole-GPU pods, 10 8-GPU pods, 30 CPU-only pods.
std::vector<TracePod> Pods() {
  std::vector<TracePod> pods;
  auto add = [&](int count, int gpus, int64_t milli) {
    for (int i = 0; i < count; ++i) {
      TracePod p;
      p.name = "p" + std::to_string(pods.size());
      p.cpu_milli = 4000;
      p.memory_mib = 16384;
      p.num_gpu = gpus;
      p.gpu_milli = milli;
      pods.push_back(p);
    }
  };
  add(1000, 1, 100);
  add(60, 1, 1000);
  add(10, 8, 1000);
  add(30, 0, 0);
  return pods;
}

std::vector<TracePod> Apply(const std::string& name) {
  Result<Variant> v = ParseVariant(name);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  if (!v.ok()) return {};
  Result<std::vector<TracePod>> pods = ApplyVariant(Pods(), Nodes(), *v);
  EXPECT_TRUE(pods.ok()) << pods.status().ToString();
  return pods.ok() ? *pods : std::vector<TracePod>{};
}

// Constrained pods by their first model.
std::map<std::string, int> FirstModels(const std::vector<TracePod>& pods) {
  std::map<std::string, int> out;
  for (const TracePod& p : pods) {
    if (!p.gpu_spec.empty()) ++out[p.gpu_spec.size() == 1 ? p.gpu_spec[0] : "list"];
  }
  return out;
}

int Constrained(const std::vector<TracePod>& pods) {
  int n = 0;
  for (const TracePod& p : pods) n += p.gpu_spec.empty() ? 0 : 1;
  return n;
}

TEST(VariantsTest, NamesRoundTrip) {
  for (const char* name :
       {"spec:share=25:pop=fleet:lists=0:seed=7", "spec:share=5:pop=uniform:lists=100:seed=1",
        "spec:share=40:pop=one:focus=G3:skew=70:lists=30:seed=99", "spec:share=12:pop=small:lists=0:seed=3",
        "multi:share=20:gpus=mix:seed=3", "multi:share=5:gpus=8:seed=11"}) {
    SCOPED_TRACE(name);
    Result<Variant> v = ParseVariant(name);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(VariantName(*v), name);
  }
  Result<Variant> reordered = ParseVariant("spec:seed=7:lists=0:pop=fleet:share=25");
  ASSERT_TRUE(reordered.ok());
  EXPECT_EQ(VariantName(*reordered), "spec:share=25:pop=fleet:lists=0:seed=7");
}

TEST(VariantsTest, BadNamesAreErrors) {
  for (const char* name : {"", "spec", "spec:share=25:pop=fleet:lists=0", "spec:share=101:pop=fleet:lists=0:seed=1",
                           "spec:share=25:pop=big:lists=0:seed=1", "spec:share=25:pop=one:lists=0:seed=1",
                           "spec:share=25:pop=fleet:focus=A:skew=5:lists=0:seed=1", "multi:share=20:gpus=3:seed=1",
                           "multi:share=20:gpus=2:lists=5:seed=1", "spec:share=25:share=20:pop=fleet:lists=0:seed=1",
                           "spec:share:pop=fleet:lists=0:seed=1", "other:share=1"}) {
    SCOPED_TRACE(name);
    Result<Variant> v = ParseVariant(name);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(VariantsTest, SameSeedReproducesAndSeedsDiffer) {
  for (const char* base : {"spec:share=25:pop=fleet:lists=30:seed=", "multi:share=30:gpus=mix:seed="}) {
    SCOPED_TRACE(base);
    const std::vector<TracePod> a = Apply(std::string(base) + "5");
    const std::vector<TracePod> b = Apply(std::string(base) + "5");
    const std::vector<TracePod> c = Apply(std::string(base) + "6");
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a.size(), c.size());
    int same = 0, differ = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      same += a[i].gpu_spec == b[i].gpu_spec && a[i].num_gpu == b[i].num_gpu ? 1 : 0;
      differ += a[i].gpu_spec != c[i].gpu_spec || a[i].num_gpu != c[i].num_gpu ? 1 : 0;
    }
    EXPECT_EQ(same, static_cast<int>(a.size()));
    EXPECT_GT(differ, 10);
  }
}

TEST(VariantsTest, ShareSetsHowManyGpuPodsAreConstrained) {
  for (int share : {5, 20, 40}) {
    SCOPED_TRACE(share);
    const std::vector<TracePod> pods = Apply("spec:share=" + std::to_string(share) + ":pop=fleet:lists=0:seed=3");
    EXPECT_EQ(Constrained(pods), (1070 * share + 50) / 100);
    const std::vector<TracePod> base = Pods();
    for (size_t i = 0; i < pods.size(); ++i) {
      EXPECT_EQ(pods[i].name, base[i].name);
      EXPECT_EQ(pods[i].num_gpu, base[i].num_gpu);
      EXPECT_EQ(pods[i].cpu_milli, base[i].cpu_milli);
      if (base[i].num_gpu == 0) {
        EXPECT_TRUE(pods[i].gpu_spec.empty());
      }
    }
  }
}

TEST(VariantsTest, PopularityShapesWhichModelsAreNamed) {
  const std::map<std::string, int> fleet = FirstModels(Apply("spec:share=10:pop=fleet:lists=0:seed=4"));
  EXPECT_GT(fleet.at("A"), 2 * fleet.at("B"));
  EXPECT_GT(fleet.at("B"), fleet.at("C"));
  const std::map<std::string, int> small = FirstModels(Apply("spec:share=10:pop=small:lists=0:seed=4"));
  EXPECT_GT(small.at("C"), small.at("B"));
  EXPECT_GT(small.at("B"), 2 * small.at("A"));
  const std::map<std::string, int> uniform = FirstModels(Apply("spec:share=10:pop=uniform:lists=0:seed=4"));
  EXPECT_GT(uniform.at("C"), 2 * fleet.at("C"));
  EXPECT_LT(uniform.at("A"), fleet.at("A"));
  const std::map<std::string, int> one = FirstModels(Apply("spec:share=10:pop=one:focus=B:skew=80:lists=0:seed=4"));
  EXPECT_GT(one.at("B"), 3 * (one.at("A") + one.at("C")) / 2);
}

TEST(VariantsTest, AModelTakesNoMoreThanItsShareOfTheDemand) {
  // small at 40 %: C (8 of 88 GPUs) is the most wanted; the list asks for 240 GPUs, so C takes at most 8 × 240 /
  // 88 ≈ 21.8 GPUs of constrained demand as a first model and the rest moves on to B and A.
  const std::vector<TracePod> pods = Apply("spec:share=40:pop=small:lists=0:seed=4");
  int64_t c_milli = 0;
  for (const TracePod& p : pods) {
    if (p.gpu_spec == std::vector<std::string>{"C"}) c_milli += PodGpuMilli(p);
  }
  EXPECT_LE(c_milli, 8 * 1000 * 240 / 88);
  EXPECT_GT(c_milli, 8 * 1000 * 240 / 88 - 1000);
  EXPECT_EQ(Constrained(pods), (1070 * 40 + 50) / 100);
}

TEST(VariantsTest, ListsPercentChoosesListsOfTwoToFiveModels) {
  for (int pct : {0, 100}) {
    SCOPED_TRACE(pct);
    const std::vector<TracePod> pods = Apply("spec:share=30:pop=uniform:lists=" + std::to_string(pct) + ":seed=8");
    std::set<size_t> sizes;
    for (const TracePod& p : pods) {
      if (!p.gpu_spec.empty() && p.num_gpu == 1) sizes.insert(p.gpu_spec.size());
    }
    const std::set<size_t> want = pct == 0 ? std::set<size_t>{1} : std::set<size_t>{2, 3};  // 3 models here
    EXPECT_EQ(sizes, want);
  }
  const std::vector<TracePod> mixed = Apply("spec:share=30:pop=uniform:lists=30:seed=8");
  int lists = 0;
  for (const TracePod& p : mixed) lists += p.gpu_spec.size() > 1 ? 1 : 0;
  EXPECT_GT(lists, Constrained(mixed) * 2 / 10);
  EXPECT_LT(lists, Constrained(mixed) * 4 / 10);
}

TEST(VariantsTest, OnlyModelsThatCanHostThePodAreNamed) {
  const std::vector<TracePod> pods = Apply("spec:share=100:pop=small:lists=100:seed=2");
  for (const TracePod& p : pods) {
    if (p.num_gpu == 8) {
      EXPECT_EQ(p.gpu_spec, std::vector<std::string>{"A"}) << p.name;
    }
  }
}

TEST(VariantsTest, UnknownFocusModelIsAnError) {
  Result<Variant> v = ParseVariant("spec:share=10:pop=one:focus=Z:skew=60:lists=0:seed=1");
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(ApplyVariant(Pods(), Nodes(), *v).ok());
  EXPECT_FALSE(ApplyVariant(Pods(), {{"cpu", 64000, 1024, 0, ""}}, Variant{}).ok());
}

TEST(VariantsTest, MultiScalesSinglePodsToTheirGpuCount) {
  const std::vector<TracePod> base = Pods();
  const std::vector<TracePod> pods = Apply("multi:share=50:gpus=4:seed=1");
  int converted = 0;
  for (size_t i = 0; i < pods.size(); ++i) {
    if (pods[i].num_gpu == base[i].num_gpu) {
      EXPECT_EQ(pods[i].cpu_milli, base[i].cpu_milli);
      continue;
    }
    ++converted;
    EXPECT_EQ(base[i].num_gpu, 1);
    EXPECT_EQ(base[i].gpu_milli, 1000);
    EXPECT_EQ(pods[i].num_gpu, 4);
    EXPECT_EQ(pods[i].cpu_milli, 4 * base[i].cpu_milli);
    EXPECT_EQ(pods[i].memory_mib, 4 * base[i].memory_mib);
  }
  EXPECT_EQ(converted, 30);
  std::set<int> counts;
  for (const TracePod& p : Apply("multi:share=100:gpus=mix:seed=1")) {
    if (p.gpu_milli == 1000) counts.insert(p.num_gpu);
  }
  EXPECT_EQ(counts, (std::set<int>{2, 4, 8}));
}

TEST(VariantsTest, MultiCapsCpuAndMemoryAtTheLargestHost) {
  std::vector<TracePod> pods = Pods();
  for (TracePod& p : pods) p.cpu_milli = 20000;  // × 8 = 160 cores, more than any node's 96
  Result<std::vector<TracePod>> out = ApplyVariant(pods, Nodes(), *ParseVariant("multi:share=100:gpus=8:seed=1"));
  ASSERT_TRUE(out.ok());
  for (size_t i = 1000; i < 1060; ++i) {
    EXPECT_EQ((*out)[i].num_gpu, 8);
    EXPECT_EQ((*out)[i].cpu_milli, 96000);
    EXPECT_EQ((*out)[i].memory_mib, 8 * 16384);
  }
}

TEST(VariantsTest, MigSizesSharedPodsToTheirCoveringProfile) {
  std::vector<TracePod> pods = Pods();
  for (int64_t milli : {50, 300, 500, 900}) {
    TracePod p = pods.front();
    p.gpu_milli = milli;
    pods.push_back(p);
  }
  Result<Variant> all = ParseVariant("mig:share=100:model=A100-80GB:seed=3");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(VariantName(*all), "mig:share=100:model=A100-80GB:seed=3");
  Result<std::vector<TracePod>> sized = ApplyVariant(pods, Nodes(), *all);
  ASSERT_TRUE(sized.ok()) << sized.status().ToString();
  const std::vector<TracePod>& out = *sized;
  // 1/7 = 142 (1g), 3/7 = 428 (3g), 4/7 = 571 (4g), and 0.9 needs the whole GPU (there is no 6g).
  const size_t n = out.size();
  EXPECT_EQ(out[n - 4].gpu_milli, 142);
  EXPECT_EQ(out[n - 3].gpu_milli, 428);
  EXPECT_EQ(out[n - 2].gpu_milli, 571);
  EXPECT_EQ(out[n - 1].gpu_milli, 1000);
  for (size_t i = 0; i < n; ++i) {
    if (pods[i].gpu_milli == 100) {
      EXPECT_EQ(out[i].gpu_milli, 142) << i;  // every sharing pod at share=100
    }
    if (pods[i].gpu_milli == 0 || pods[i].gpu_milli == 1000) {
      EXPECT_EQ(out[i].gpu_milli, pods[i].gpu_milli) << i;
    }
    EXPECT_EQ(out[i].num_gpu, pods[i].num_gpu) << i;
  }
  // share=S resizes S % of the sharing pods, chosen by the seed; the A30's 4 slices round 0.1 up to 1/4.
  auto resized = [&](const std::string& name) {  // the pods whose request changed
    Result<Variant> v = ParseVariant(name);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    Result<std::vector<TracePod>> r = ApplyVariant(pods, Nodes(), *v);
    EXPECT_TRUE(r.ok());
    std::vector<int> which;
    for (size_t i = 0; i < pods.size() && r.ok(); ++i) {
      if ((*r)[i].gpu_milli != pods[i].gpu_milli) which.push_back(static_cast<int>(i));
    }
    return which;
  };
  EXPECT_EQ(resized("mig:share=25:model=A100-80GB:seed=3").size(), 251u);  // 25 % of 1,004 sharing pods
  EXPECT_NE(resized("mig:share=25:model=A100-80GB:seed=3"), resized("mig:share=25:model=A100-80GB:seed=4"));
  Result<Variant> a30 = ParseVariant("mig:share=100:model=A30-24GB:seed=3");
  ASSERT_TRUE(a30.ok()) << a30.status().ToString();
  Result<std::vector<TracePod>> quarters = ApplyVariant(pods, Nodes(), *a30);
  ASSERT_TRUE(quarters.ok());
  EXPECT_EQ(quarters->front().gpu_milli, 250);
  EXPECT_EQ(ParseVariant("mig:share=10:model=T4:seed=1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseVariant("mig:share=10:model=A30-24GB:gpus=2:seed=1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseVariant("mig:share=10:seed=1").status().code(), StatusCode::kInvalidArgument);
}

TEST(VariantsTest, FamiliesDrawTheirParametersAndReproduce) {
  for (const std::string& family : FamilyNames()) {
    SCOPED_TRACE(family);
    Result<std::vector<Variant>> a = FamilyVariants(family, Nodes(), 30, 1);
    Result<std::vector<Variant>> b = FamilyVariants(family, Nodes(), 30, 1);
    Result<std::vector<Variant>> c = FamilyVariants(family, Nodes(), 30, 2);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    ASSERT_EQ(a->size(), 30u);
    std::set<std::string> names;
    for (size_t i = 0; i < a->size(); ++i) {
      const Variant& v = (*a)[i];
      EXPECT_EQ(VariantName(v), VariantName((*b)[i]));
      names.insert(VariantName(v));
      Result<Variant> back = ParseVariant(VariantName(v));
      ASSERT_TRUE(back.ok()) << VariantName(v);
      EXPECT_EQ(VariantName(*back), VariantName(v));
      EXPECT_EQ(v.kind == VariantKind::kMulti, family == "multi");
      EXPECT_GE(v.share_percent, 5);
      EXPECT_LE(v.share_percent, family == "multi" ? 30 : 40);
      if (family == "spec-fleet") {
        EXPECT_EQ(v.popularity, Popularity::kFleet);
      }
      if (family == "spec-small") {
        EXPECT_EQ(v.popularity, Popularity::kSmall);
      }
      if (family == "spec-lists") {
        EXPECT_EQ(v.lists_percent, 100);
      }
      if (family == "spec-one" || family == "spec-uniform") {
        EXPECT_EQ(v.lists_percent, 0);
      }
      if (v.popularity == Popularity::kOne) {
        EXPECT_TRUE(v.focus == "A" || v.focus == "B" || v.focus == "C");
      }
    }
    EXPECT_GT(names.size(), 25u);
    EXPECT_NE(VariantName((*a)[0]), VariantName((*c)[0]));
  }
  Result<std::vector<Variant>> unknown = FamilyVariants("spec-nothing", Nodes(), 3, 1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("known: spec-uniform, "), std::string::npos) << unknown.status().message();
}

}  // namespace
}  // namespace xpool::sim
