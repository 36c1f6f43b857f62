// Seeded property tests for what the Kubernetes components read from outside (plain gtest, no libFuzzer):
//   1. random valid quantities parse to exactly the value they were built from, and their canonical form parses
//      back to the same value and is a fixed point;
//   2. random mutations of valid quantities never crash: they parse (and then round-trip), or are InvalidArgument,
//      and WholeQuantity's message names the field;
//   3. random mutations of a valid AdmissionReview (bytes, and JSON values swapped for other types) never crash:
//      the webhook answers 400, or an AdmissionReview that allows, or denies with a message; the pod inside
//      parses or is InvalidArgument naming the field, and so is its demand.
// A failing case prints its seed, round and input; rerun with that seed to reproduce it.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "k8s/pod_demand.h"
#include "k8s/quantity.h"
#include "k8s/webhook.h"

namespace xpool::k8s {
namespace {

using nlohmann::json;
using Int128 = __int128;
using Rng = std::mt19937_64;

constexpr uint64_t kSeed = 20261202;
constexpr int kRounds = 3000;
constexpr int kReviewRounds = 1000;  // each sends two reviews through the webhook and reads the pod
constexpr Int128 kNano = 1'000'000'000;

int64_t Uniform(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

template <typename T>
const T& Pick(Rng& rng, const std::vector<T>& v) {
  return v[static_cast<size_t>(Uniform(rng, 0, static_cast<int64_t>(v.size()) - 1))];
}

std::string Text(Int128 v) {
  if (v == 0) return "0";
  std::string out;
  const bool negative = v < 0;
  if (negative) v = -v;
  for (; v != 0; v /= 10) out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
  return negative ? "-" + out : out;
}

Int128 Pow(Int128 base, int power) {
  Int128 v = 1;
  for (int i = 0; i < power; ++i) v *= base;
  return v;
}

// A valid quantity and its exact value in nano-units, in one of the three formats.
struct Generated {
  std::string text;
  Int128 nanos;
};

Generated RandomQuantity(Rng& rng) {
  const int64_t mantissa = Uniform(rng, 0, Uniform(rng, 0, 1) == 0 ? 999 : 999'999'999'999);
  const bool negative = Uniform(rng, 0, 9) == 0;
  const Int128 sign = negative ? -1 : 1;
  const std::string prefix = negative ? "-" : Uniform(rng, 0, 9) == 0 ? "+" : "";
  switch (Uniform(rng, 0, 2)) {
    case 0: {  // DecimalSI, possibly with up to 9 fractional digits that stay within nano-units
      static const std::vector<std::pair<std::string, int>> kSuffixes = {
          {"n", -9}, {"u", -6}, {"m", -3}, {"", 0}, {"k", 3}, {"M", 6}, {"G", 9}, {"T", 12}, {"P", 15}};
      const auto& [suffix, exponent] = Pick(rng, kSuffixes);
      const int fraction = static_cast<int>(Uniform(rng, 0, std::min(9 + exponent, 4)));
      std::string digits = Text(mantissa);
      if (fraction > 0) {
        digits.insert(0, static_cast<size_t>(std::max(0, fraction + 1 - static_cast<int>(digits.size()))), '0');
        digits.insert(digits.size() - static_cast<size_t>(fraction), ".");
      }
      return {prefix + digits + suffix, sign * mantissa * Pow(10, 9 + exponent - fraction)};
    }
    case 1: {  // BinarySI: whole numbers, capped at 2^63-1 units as Kubernetes caps them
      static const std::vector<std::string> kSuffixes = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
      const int power = static_cast<int>(Uniform(rng, 0, 5));
      const int64_t small = mantissa % 100'000;
      Int128 units = small * Pow(2, 10 * (power + 1));
      if (units > INT64_MAX) units = INT64_MAX;
      return {prefix + Text(small) + kSuffixes[static_cast<size_t>(power)], sign * units * kNano};
    }
    default: {  // DecimalExponent
      const int exponent = static_cast<int>(Uniform(rng, -9, 15));
      return {prefix + Text(mantissa) + (Uniform(rng, 0, 1) == 0 ? "e" : "E") + std::to_string(exponent),
              sign * mantissa * Pow(10, 9 + exponent)};
    }
  }
}

TEST(K8sFuzzTest, ValidQuantitiesParseExactlyAndRoundTripThroughTheCanonicalForm) {
  Rng rng(kSeed);
  for (int round = 0; round < kRounds; ++round) {
    const Generated g = RandomQuantity(rng);
    SCOPED_TRACE("seed " + std::to_string(kSeed) + " round " + std::to_string(round) + ": " + g.text);
    Result<KubeQuantity> q = KubeQuantity::Parse(g.text);
    ASSERT_TRUE(q.ok()) << q.status().message();
    ASSERT_TRUE(q->nanos() == g.nanos) << Text(q->nanos()) << " != " << Text(g.nanos);
    const std::string canonical = q->Canonical();
    Result<KubeQuantity> again = KubeQuantity::Parse(canonical);
    ASSERT_TRUE(again.ok()) << canonical << ": " << again.status().message();
    EXPECT_TRUE(again->nanos() == g.nanos) << canonical;
    EXPECT_EQ(again->Canonical(), canonical);
    // The whole-number reading agrees with the exact value.
    Result<int64_t> whole = q->WholeUnits();
    EXPECT_EQ(whole.ok(), g.nanos >= 0 && g.nanos % kNano == 0 && g.nanos / kNano <= INT64_MAX) << canonical;
    if (whole.ok()) {
      EXPECT_TRUE(Int128(*whole) * kNano == g.nanos);
    }
  }
}

// One random edit: insert, delete, replace or duplicate, from characters the grammar uses and a few it does not.
std::string Mutate(Rng& rng, std::string s) {
  static const std::string kAlphabet = "0123456789.+-eEinumkKMGTP i\t\"\\{}[],:x\x01\xff";
  const auto at = [&](size_t extra) { return static_cast<size_t>(Uniform(rng, 0, int64_t(s.size() + extra) - 1)); };
  const char c = kAlphabet[static_cast<size_t>(Uniform(rng, 0, int64_t(kAlphabet.size()) - 1))];
  switch (s.empty() ? 0 : Uniform(rng, 0, 3)) {
    case 0:
      s.insert(s.begin() + static_cast<std::ptrdiff_t>(at(1)), c);
      break;
    case 1:
      s.erase(at(0), 1);
      break;
    case 2:
      s[at(0)] = c;
      break;
    default: {
      const size_t from = at(0);
      s.insert(at(1), s.substr(from, static_cast<size_t>(Uniform(rng, 1, 8))));
    }
  }
  return s;
}

TEST(K8sFuzzTest, MutatedQuantitiesParseOrAreRefusedNamingTheField) {
  Rng rng(kSeed + 1);
  int parsed = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::string text = RandomQuantity(rng).text;
    for (int edits = static_cast<int>(Uniform(rng, 1, 4)); edits > 0; --edits) text = Mutate(rng, text);
    SCOPED_TRACE("seed " + std::to_string(kSeed + 1) + " round " + std::to_string(round) + ": \"" + text + "\"");
    Result<KubeQuantity> q = KubeQuantity::Parse(text);
    if (q.ok()) {
      ++parsed;
      Result<KubeQuantity> again = KubeQuantity::Parse(q->Canonical());
      ASSERT_TRUE(again.ok()) << q->Canonical();
      EXPECT_TRUE(again->nanos() == q->nanos()) << q->Canonical();
    } else {
      EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
      EXPECT_FALSE(q.status().message().empty());
    }
    Result<int64_t> whole = WholeQuantity(text, "nvidia.com/gpumem");
    if (!whole.ok()) {
      EXPECT_EQ(whole.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(whole.status().message().rfind("nvidia.com/gpumem \"", 0), 0u) << whole.status().message();
    }
  }
  EXPECT_GT(parsed, kRounds / 20) << "the mutations should leave some quantities valid";
}

json ValidReview() {
  json limits = {{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "8k"}, {"nvidia.com/gpucores", "30"}};
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "p"},
        {"namespace", "ml"},
        {"uid", "u-1"},
        {"annotations", {{"nvidia.com/use-gputype", "A100"}, {"xpool.io/numa-bind", "true"}}}}},
      {"spec",
       {{"initContainers", json::array({{{"name", "init"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}})},
        {"containers", json::array({{{"name", "main"}, {"resources", {{"limits", limits}, {"requests", limits}}}}})},
        {"priority", 10},
        {"terminationGracePeriodSeconds", 30}}}};
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "req-1"},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"namespace", "ml"},
            {"operation", "CREATE"},
            {"object", pod}}}};
}

// JSON text of a mutated value; a string edited into invalid UTF-8 is written with U+FFFD in its place (the
// bytes-level edits below send invalid UTF-8 as it is).
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Every value in `j` (depth first), to pick one to replace.
void Leaves(json& j, std::vector<json*>* out) {
  out->push_back(&j);
  if (j.is_structured()) {
    for (auto& child : j) Leaves(child, out);
  }
}

// The review with one value swapped for another type, a mutated quantity, or removed.
json MutateReview(Rng& rng, json review) {
  std::vector<json*> values;
  Leaves(review, &values);
  json* target = values[static_cast<size_t>(Uniform(rng, 1, int64_t(values.size()) - 1))];
  switch (Uniform(rng, 0, 7)) {
    case 0:
      *target = nullptr;
      break;
    case 1:
      *target = Uniform(rng, -5, 5);
      break;
    case 2:
      *target = 2.5;
      break;
    case 3:
      *target = json::array({1, "x"});
      break;
    case 4:
      *target = json::object({{"a", 1}});
      break;
    case 5:
      *target = Uniform(rng, 0, 1) == 0;
      break;
    case 6:
      *target = Mutate(rng, target->is_string() ? target->get<std::string>() : RandomQuantity(rng).text);
      break;
    default:
      if (target->is_object() && !target->empty()) target->erase(target->begin());
  }
  return review;
}

// What any answer of the webhook must look like.
void CheckAnswer(const std::string& body) {
  const HttpReply r = HandleAdmissionReview(body, WebhookOptions{});
  if (r.status == 400) {
    EXPECT_NE(r.body.find("expected an AdmissionReview"), std::string::npos) << r.body;
    return;
  }
  ASSERT_EQ(r.status, 200) << r.body;
  const json out = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(out.is_object()) << r.body;
  ASSERT_EQ(out["kind"], "AdmissionReview");
  const json& response = out["response"];
  ASSERT_TRUE(response["allowed"].is_boolean()) << r.body;
  if (!response["allowed"].get<bool>()) {
    const std::string message = response["status"]["message"].get<std::string>();
    EXPECT_EQ(message.rfind("xpool: ", 0), 0u) << message;
    EXPECT_GT(message.size(), std::string("xpool: ").size());
  }
}

// A pod that does not parse, or whose demand cannot be read, is refused with the place that is wrong.
void CheckPod(const json& review) {
  const json* object = review.is_object() && review.contains("request") && review["request"].is_object() &&
                               review["request"].contains("object")
                           ? &review["request"]["object"]
                           : nullptr;
  if (object == nullptr) return;
  Result<PodInfo> pod = ParsePod(Dump(*object));
  if (!pod.ok()) {
    EXPECT_EQ(pod.status().code(), StatusCode::kInvalidArgument);
    const std::string m = pod.status().message();
    EXPECT_TRUE(m.rfind("pod", 0) == 0 || m.rfind("metadata", 0) == 0 || m.rfind("spec", 0) == 0) << m;
    return;
  }
  Result<PodDemand> demand = PodToDemand(*pod);
  if (!demand.ok()) {
    EXPECT_EQ(demand.status().code(), StatusCode::kInvalidArgument);
    const std::string m = demand.status().message();
    EXPECT_TRUE(m.rfind("container \"", 0) == 0 || m.rfind("annotation ", 0) == 0) << m;
  }
}

TEST(K8sFuzzTest, MutatedAdmissionReviewsNeverCrashAndAreAnsweredClearly) {
  Rng rng(kSeed + 2);
  const json valid = ValidReview();
  CheckAnswer(valid.dump());
  for (int round = 0; round < kReviewRounds; ++round) {
    json review = valid;
    for (int edits = static_cast<int>(Uniform(rng, 1, 3)); edits > 0; --edits) review = MutateReview(rng, review);
    const std::string text = Dump(review);
    SCOPED_TRACE("seed " + std::to_string(kSeed + 2) + " round " + std::to_string(round) + ": " + text);
    CheckAnswer(text);
    CheckPod(review);
    // The same review with its bytes edited: mostly not JSON any more.
    std::string bytes = text;
    for (int edits = static_cast<int>(Uniform(rng, 1, 3)); edits > 0; --edits) bytes = Mutate(rng, bytes);
    SCOPED_TRACE("bytes: " + bytes);
    CheckAnswer(bytes);
    if (HasFailure()) return;  // one clear failure, not thousands
  }
}

}  // namespace
}  // namespace xpool::k8s
