#include "scheduler/policy/binpack_spread.h"

#include "scheduler/device_choice.h"

namespace xpool {
namespace {

constexpr int64_t kPpm = 1'000'000;

int64_t Fraction(int64_t used, int64_t total) { return total > 0 ? used * kPpm / total : 0; }

}  // namespace

int64_t NodeUsagePpm(const ClusterState& state, int node) {
  const Node& n = state.node(node);
  const NodeUsage& u = state.usage(node);
  if (n.devices.empty()) return Fraction(u.cpu_milli, n.cpu_milli) + Fraction(u.memory_mib, n.memory_mib);
  int64_t used = 0, total = 0, used_compute = 0, total_compute = 0, used_memory = 0, total_memory = 0;
  for (size_t d = 0; d < n.devices.size(); ++d) {
    used += u.devices[d].sharers;
    total += n.devices[d].max_sharers;
    used_compute += u.devices[d].compute_milli;
    total_compute += n.devices[d].compute_milli;
    used_memory += u.devices[d].memory_mib;
    total_memory += n.devices[d].memory_mib;
  }
  return Fraction(used, total) + Fraction(used_compute, total_compute) + Fraction(used_memory, total_memory);
}

int64_t DeviceUsagePpm(const ClusterState& state, int node, int device) {
  const Device& d = state.node(node).devices[device];
  const DeviceUsage& u = state.usage(node).devices[device];
  return Fraction(u.sharers, d.max_sharers) + Fraction(u.compute_milli, d.compute_milli) +
         Fraction(u.memory_mib, d.memory_mib);
}

int64_t BinpackSpreadPolicy::NodeOrderKey(const ClusterState& state, int node) const {
  const int64_t usage = NodeUsagePpm(state, node);
  return node_mode_ == PackMode::kBinpack ? -usage : usage;
}

bool BinpackSpreadPolicy::Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate,
                                Rng& /*rng*/, int64_t* score, std::vector<int>* chosen_devices) {
  const int node = candidate.node;
  const bool pack = device_mode_ == PackMode::kBinpack;
  if (!TakeDevicesByKey(
          state, request, candidate,
          [&](int d) {
            const int64_t v = DeviceUsagePpm(state, node, d);
            return pack ? -v : v;
          },
          chosen_devices)) {
    return false;
  }
  *score = -NodeOrderKey(state, node);
  return true;
}

}  // namespace xpool
