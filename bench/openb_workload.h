#pragma once
// The openb-shaped cluster and pod stream the benchmarks share (placement_bench.cc,
// queue_bench.cc):
//   OpenbCluster():      the 1,213 GPU nodes of Alibaba's openb trace, read from
//                        $XPOOL_TRACE_DIR/alibaba-gpu-v2023/openb_node_list_gpu_node.csv when
//                        present, otherwise generated with the same per-model counts and CPU /
//                        memory / GPU mix.
//   OpenbShapedStream(): requests shaped like openb's pods: 38 % share one GPU at 50-810 milli
//   (most often 810,
//                        470, 320, 650), the rest take 1-8 whole GPUs (1: 88 %, 2: 4 %, 4: 4 %, 8:
//                        4 %); CPU and memory in proportion. Fixed seed.
// Header-only, benchmark code only; functions are pure apart from reading the trace file.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "model/cluster_state.h"
#include "model/node_builder.h"
#include "scheduler/policy.h"

namespace xpool::bench {

struct NodeShape {
  int64_t cpu_milli;
  int64_t memory_mib;
  int gpus;
  std::string model;
  int count;
};

inline int64_t GpuMemoryMib(const std::string& model) {
  if (model == "T4" || model == "P100" || model == "V100M16") return 16384;
  if (model == "A10") return 24576;
  return 32768;  // V100M32, G2, G3 (undisclosed; the trace's pods ask no GPU memory)
}

// The openb GPU node list's composition (1,213 nodes, 6,212 GPUs), by (cpu, memory, gpus, model).
inline const std::vector<NodeShape>& OpenbShapes() {
  static const std::vector<NodeShape> shapes = {
      {96000, 393216, 8, "G2", 549},     {104000, 524288, 2, "T4", 387},    {16000, 122880, 2, "P100", 107},
      {128000, 786432, 8, "G3", 39},     {32000, 131072, 4, "V100M16", 28}, {64000, 262144, 2, "P100", 22},
      {96000, 786432, 8, "V100M32", 21}, {8000, 32768, 1, "V100M16", 19},   {96000, 393216, 4, "T4", 17},
      {48000, 376832, 4, "V100M32", 9},  {64000, 262144, 8, "V100M16", 7},  {8000, 61440, 1, "P100", 3},
      {8000, 61440, 2, "P100", 2},       {128000, 1048576, 1, "A10", 2},    {82000, 344064, 8, "V100M16", 1},
  };
  return shapes;
}

inline Node MakeGpuNode(const std::string& name, int64_t cpu, int64_t memory, int gpus, const std::string& model) {
  NodeBuilder b = MakeNode(name).WithCpu(cpu).WithMemory(memory);
  if (gpus > 0) b.WithGpus(gpus, model, GpuMemoryMib(model));
  return b.Build();
}

// Reads the trace's node list; empty when absent or malformed.
inline std::vector<Node> ReadOpenbNodes() {
  const char* dir = std::getenv("XPOOL_TRACE_DIR");
  if (dir == nullptr) return {};
  std::ifstream in(std::string(dir) + "/alibaba-gpu-v2023/openb_node_list_gpu_node.csv");
  if (!in) return {};
  std::vector<Node> nodes;
  std::string line;
  std::getline(in, line);  // sn,cpu_milli,memory_mib,gpu,model
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string name, cpu, memory, gpus, model;
    if (!std::getline(ss, name, ',') || !std::getline(ss, cpu, ',') || !std::getline(ss, memory, ',') ||
        !std::getline(ss, gpus, ',')) {
      return {};
    }
    std::getline(ss, model, ',');
    nodes.push_back(
        MakeGpuNode(name, std::atoll(cpu.c_str()), std::atoll(memory.c_str()), std::atoi(gpus.c_str()), model));
  }
  return nodes;
}

inline ClusterState OpenbCluster() {
  ClusterState state;
  std::vector<Node> nodes = ReadOpenbNodes();
  if (nodes.empty()) {
    int i = 0;
    for (const NodeShape& s : OpenbShapes()) {
      for (int k = 0; k < s.count; ++k) {
        nodes.push_back(MakeGpuNode("openb-" + std::to_string(i++), s.cpu_milli, s.memory_mib, s.gpus, s.model));
      }
    }
  }
  for (Node& n : nodes) (void)state.AddNode(std::move(n));
  return state;
}
// A fixed-seed stream shaped like openb's pods (see the file comment).
inline std::vector<TaskRequest> OpenbShapedStream(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::uniform_int_distribution<int> pct(0, 99);
  const int64_t common_share[] = {810, 470, 320, 650};
  std::vector<TaskRequest> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    TaskRequest r;
    r.device_count = 1;
    if (pct(rng) < 38) {
      const int p = pct(rng);
      r.device_compute_milli = p < 60 ? common_share[p % 4] : 50 + 10 * std::uniform_int_distribution<int>(0, 76)(rng);
      r.cpu_milli = 1000 * std::uniform_int_distribution<int>(2, 8)(rng);
      r.memory_mib = 4096 * std::uniform_int_distribution<int>(1, 6)(rng);
    } else {
      const int p = pct(rng);
      r.device_count = p < 88 ? 1 : p < 92 ? 2 : p < 96 ? 4 : 8;
      r.device_compute_milli = 1000;
      r.cpu_milli = r.device_count * 1000 * std::uniform_int_distribution<int>(4, 12)(rng);
      r.memory_mib = r.device_count * 8192 * std::uniform_int_distribution<int>(1, 4)(rng);
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace xpool::bench
