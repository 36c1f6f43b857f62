// The policy registry: one row per policy name. To add a policy, include its header and add one row to kPolicies.
#include <array>
#include <string>

#include "scheduler/policy.h"
#include "scheduler/policy/best_fit.h"
#include "scheduler/policy/binpack_spread.h"
#include "scheduler/policy/dot_product.h"
#include "scheduler/policy/fgd.h"
#include "scheduler/policy/gpu_clustering.h"
#include "scheduler/policy/gpu_packing.h"
#include "scheduler/policy/random.h"
#include "scheduler/policy/topology.h"
#include "scheduler/policy/xpool_default.h"

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

template <PackMode kNode, PackMode kDevice>
std::unique_ptr<PlacementPolicy> MakePack() {
  constexpr std::string_view kNames[2][2] = {{"binpack", "binpack-spread"}, {"spread-binpack", "spread"}};
  return std::make_unique<BinpackSpreadPolicy>(kNames[static_cast<int>(kNode)][static_cast<int>(kDevice)], kNode,
                                               kDevice);
}

constexpr PolicyRow kPolicies[] = {
    {"best-fit", &Make<BestFitPolicy>, "FGD paper's BestFit: least CPU+GPU leftover on the node"},
    {"binpack", &MakePack<PackMode::kBinpack, PackMode::kBinpack>, "HAMi: fullest node, fullest devices"},
    {"spread", &MakePack<PackMode::kSpread, PackMode::kSpread>, "HAMi: emptiest node, emptiest devices"},
    {"binpack-spread", &MakePack<PackMode::kBinpack, PackMode::kSpread>,
     "HAMi's default: fullest node, emptiest devices"},
    {"spread-binpack", &MakePack<PackMode::kSpread, PackMode::kBinpack>, "emptiest node, fullest devices"},
    {"topology", &Make<TopologyPolicy>, "best-linked devices (NVLink) for multi-device replicas"},
    {"fgd", &Make<FgdPolicy>, "FGD (ATC'23): least fragmentation growth against the learned workload"},
    {"dot-product", &Make<DotProductPolicy>, "FGD paper's DotProd: smallest free·request dot product"},
    {"gpu-packing", &Make<GpuPackingPolicy>, "FGD paper's GpuPacking: shared GPUs, then used nodes, then idle"},
    {"gpu-clustering", &Make<GpuClusteringPolicy>, "FGD paper's GpuClustering: keep equal GPU shares together"},
    {"random", &Make<RandomPolicy>, "a uniformly random feasible node (seeded)"},
    {"default", &Make<DefaultPolicy>, "xpool's own: exact fragmentation descent, online target, best-fit ties"},
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
