#pragma once
// NodeBuilder: a fluent way to describe nodes in tests, benchmarks and simulated agents.
//   Node n = MakeNode("n1").WithCpu(96000).WithMemory(786432).WithGpus(8, "A100", 81920).Build();
// A value-type builder; thread-compatible.
#include <string>
#include <utility>

#include "model/device.h"

namespace xpool {

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name) {
    node_.name = std::move(name);
    node_.cpu_milli = 64000;
    node_.memory_mib = 262144;
  }
  NodeBuilder& WithCpu(int64_t milli) {
    node_.cpu_milli = milli;
    return *this;
  }
  NodeBuilder& WithMemory(int64_t mib) {
    node_.memory_mib = mib;
    return *this;
  }
  NodeBuilder& WithLabel(std::string key, std::string value) {
    node_.labels[std::move(key)] = std::move(value);
    return *this;
  }
  // Appends `count` devices of one model; uuids are "<node>-gpu<i>". NUMA node = i * numa_nodes / total.
  NodeBuilder& WithGpus(int count, std::string model, int64_t memory_mib, Vendor vendor = Vendor::kNvidia) {
    for (int i = 0; i < count; ++i) {
      Device d;
      d.vendor = vendor;
      d.model = model;
      d.index = static_cast<int>(node_.devices.size());
      d.uuid = node_.name + "-gpu" + std::to_string(d.index);
      d.memory_mib = memory_mib;
      d.max_sharers = ProfileFor(vendor).default_max_sharers;
      node_.devices.push_back(std::move(d));
    }
    return *this;
  }
  // Spreads the devices evenly over `numa_nodes` NUMA nodes, in index order.
  NodeBuilder& WithNumaNodes(int numa_nodes) {
    const int n = static_cast<int>(node_.devices.size());
    for (int i = 0; i < n; ++i) node_.devices[i].numa_node = i * numa_nodes / n;
    return *this;
  }
  NodeBuilder& WithMaxSharers(int max_sharers) {
    for (Device& d : node_.devices) d.max_sharers = max_sharers;
    return *this;
  }
  // Sets a link score between two devices (creating the table on first use).
  NodeBuilder& WithLink(int a, int b, int score) {
    if (node_.links.empty()) node_.links = LinkTable(static_cast<int>(node_.devices.size()));
    node_.links.Set(a, b, score);
    return *this;
  }
  NodeBuilder& Simulated() {
    node_.simulated = true;
    return *this;
  }
  Node Build() const { return node_; }

 private:
  Node node_;
};

inline NodeBuilder MakeNode(std::string name) { return NodeBuilder(std::move(name)); }

}  // namespace xpool
