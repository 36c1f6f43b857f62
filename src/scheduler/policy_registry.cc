// The policy registry: one row per policy name. To add a policy, include its header and add one row to kPolicies.
#include <array>
#include <string>

#include "scheduler/policy.h"
#include "scheduler/policy/best_fit.h"

namespace xpool {
namespace {

struct PolicyRow {
  std::string_view name;
  std::unique_ptr<PlacementPolicy> (*make)();
  std::string_view summary;
};

template <typename P>
std::unique_ptr<PlacementPolicy> Make() {
  return std::make_unique<P>();
}

constexpr PolicyRow kPolicies[] = {
    {"best-fit", &Make<BestFitPolicy>, "FGD paper's BestFit: least CPU+GPU leftover on the node"},
};

}  // namespace

Result<std::unique_ptr<PlacementPolicy>> MakePolicy(std::string_view name) {
  for (const PolicyRow& row : kPolicies) {
    if (row.name == name) return row.make();
  }
  std::string known;
  for (const PolicyRow& row : kPolicies) {
    if (!known.empty()) known += ", ";
    known += row.name;
  }
  return InvalidArgumentError("unknown policy \"" + std::string(name) + "\" (known: " + known + ")");
}

std::vector<std::string_view> PolicyNames() {
  std::vector<std::string_view> names;
  for (const PolicyRow& row : kPolicies) names.push_back(row.name);
  return names;
}

}  // namespace xpool
