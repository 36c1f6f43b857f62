#include "sim/trace.h"

#include <fstream>
#include <sstream>

#include "common/units.h"
#include "sim/internal/csv_text.h"

namespace xpool::sim {
namespace {

using internal::ForEachLine;
using internal::SplitFields;

constexpr std::string_view kNodeHeader = "sn,cpu_milli,memory_mib,gpu,model";
constexpr std::string_view kPodHeader5 = "name,cpu_milli,memory_mib,num_gpu,gpu_milli";
constexpr std::string_view kPodHeader11 =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    "scheduled_time";

Status LineError(std::string_view file, int line_no, std::string_view what) {
  return InvalidArgumentError(std::string(file) + ":" + std::to_string(line_no) + ": " + std::string(what));
}

Result<int64_t> IntField(std::string_view value, std::string_view field, std::string_view file, int line_no) {
  Result<int64_t> v = ParseNonNegativeInt(value);
  if (!v.ok()) {
    return LineError(file, line_no,
                     "field " + std::string(field) + ": \"" + std::string(value) + "\" is not a non-negative integer");
  }
  return v;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<Qos> ParseQos(std::string_view s) {
  if (s == "LS") return Qos::kLs;
  if (s == "Guaranteed") return Qos::kGuaranteed;
  if (s == "Burstable") return Qos::kBurstable;
  if (s == "BE") return Qos::kBe;
  return InvalidArgumentError("unknown qos");
}

}  // namespace

std::string_view QosName(Qos qos) {
  switch (qos) {
    case Qos::kLs:
      return "LS";
    case Qos::kGuaranteed:
      return "Guaranteed";
    case Qos::kBurstable:
      return "Burstable";
    case Qos::kBe:
      return "BE";
    case Qos::kUnknown:
      break;
  }
  return "unknown";
}

Result<std::vector<TraceNode>> ParseNodeList(std::string_view text, std::string_view file) {
  std::vector<TraceNode> nodes;
  bool header_seen = false;
  Status s = ForEachLine(text, [&](std::string_view line, int line_no) -> Status {
    if (!header_seen) {
      header_seen = true;
      if (line != kNodeHeader) {
        return LineError(file, line_no, "header must be \"" + std::string(kNodeHeader) + "\"");
      }
      return Status::Ok();
    }
    std::vector<std::string_view> f = SplitFields(line, ',');
    if (f.size() != 5) {
      return LineError(file, line_no, "expected 5 fields, got " + std::to_string(f.size()));
    }
    TraceNode n;
    if (f[0].empty()) return LineError(file, line_no, "field sn: empty");
    n.name = std::string(f[0]);
    ASSIGN_OR_RETURN(n.cpu_milli, IntField(f[1], "cpu_milli", file, line_no));
    ASSIGN_OR_RETURN(n.memory_mib, IntField(f[2], "memory_mib", file, line_no));
    ASSIGN_OR_RETURN(int64_t gpus, IntField(f[3], "gpu", file, line_no));
    if (gpus > 1024) return LineError(file, line_no, "field gpu: more than 1024 GPUs");
    n.gpu_count = static_cast<int>(gpus);
    n.model = std::string(f[4]);
    if (n.gpu_count > 0 && n.model.empty()) return LineError(file, line_no, "field model: empty on a GPU node");
    if (n.cpu_milli == 0) return LineError(file, line_no, "field cpu_milli: must be positive");
    nodes.push_back(std::move(n));
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (!header_seen) return InvalidArgumentError(std::string(file) + ": empty node list");
  return nodes;
}

Result<std::vector<TracePod>> ParsePodList(std::string_view text, std::string_view file) {
  std::vector<TracePod> pods;
  size_t columns = 0;
  Status s = ForEachLine(text, [&](std::string_view line, int line_no) -> Status {
    if (columns == 0) {
      if (line == kPodHeader11) {
        columns = 11;
      } else if (line == kPodHeader5) {
        columns = 5;
      } else {
        return LineError(file, line_no,
                         "header must be \"" + std::string(kPodHeader11) + "\" or its first five columns");
      }
      return Status::Ok();
    }
    std::vector<std::string_view> f = SplitFields(line, ',');
    if (f.size() != columns) {
      return LineError(file, line_no,
                       "expected " + std::to_string(columns) + " fields, got " + std::to_string(f.size()));
    }
    TracePod p;
    if (f[0].empty()) return LineError(file, line_no, "field name: empty");
    p.name = std::string(f[0]);
    ASSIGN_OR_RETURN(p.cpu_milli, IntField(f[1], "cpu_milli", file, line_no));
    ASSIGN_OR_RETURN(p.memory_mib, IntField(f[2], "memory_mib", file, line_no));
    ASSIGN_OR_RETURN(int64_t num_gpu, IntField(f[3], "num_gpu", file, line_no));
    ASSIGN_OR_RETURN(p.gpu_milli, IntField(f[4], "gpu_milli", file, line_no));
    if (num_gpu > 1024) return LineError(file, line_no, "field num_gpu: more than 1024 GPUs");
    p.num_gpu = static_cast<int>(num_gpu);
    if (p.gpu_milli > 1000) return LineError(file, line_no, "field gpu_milli: above 1000 (one whole GPU)");
    if (p.num_gpu > 1 && p.gpu_milli != 1000) {
      return LineError(file, line_no, "field gpu_milli: a multi-GPU pod must ask for whole GPUs (1000)");
    }
    if (p.num_gpu == 0 && p.gpu_milli != 0) {
      return LineError(file, line_no, "field gpu_milli: must be 0 when num_gpu is 0");
    }
    if (p.num_gpu > 0 && p.gpu_milli == 0) {
      return LineError(file, line_no, "field gpu_milli: must be positive when num_gpu is positive");
    }
    if (columns == 11) {
      if (!f[5].empty()) {
        for (std::string_view m : SplitFields(f[5], '|')) {
          if (m.empty())
            return LineError(file, line_no, "field gpu_spec: empty model in \"" + std::string(f[5]) + "\"");
          p.gpu_spec.emplace_back(m);
        }
      }
      Result<Qos> qos = ParseQos(f[6]);
      if (!qos.ok()) return LineError(file, line_no, "field qos: unknown class \"" + std::string(f[6]) + "\"");
      p.qos = *qos;
      p.phase = std::string(f[7]);
      p.has_times = true;
      ASSIGN_OR_RETURN(p.creation_time, IntField(f[8], "creation_time", file, line_no));
      ASSIGN_OR_RETURN(p.deletion_time, IntField(f[9], "deletion_time", file, line_no));
      if (!f[10].empty()) {
        ASSIGN_OR_RETURN(int64_t st, IntField(f[10], "scheduled_time", file, line_no));
        p.scheduled_time = st;
      }
      if (p.deletion_time < p.creation_time) {
        return LineError(file, line_no, "field deletion_time: before creation_time");
      }
    }
    pods.push_back(std::move(p));
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (columns == 0) return InvalidArgumentError(std::string(file) + ": empty pod list");
  return pods;
}

Result<std::vector<TraceNode>> LoadNodeList(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseNodeList(text, path);
}

Result<std::vector<TracePod>> LoadPodList(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParsePodList(text, path);
}

int64_t TraceGpuMemoryMib(std::string_view model) {
  if (model == "V100M32") return 32768;
  if (model == "A10") return 24576;
  if (model == "T4") return 15360;
  return 16384;
}

Result<ClusterState> BuildCluster(const std::vector<TraceNode>& nodes) {
  ClusterState state;
  for (const TraceNode& t : nodes) {
    Node n;
    n.name = t.name;
    n.cpu_milli = t.cpu_milli;
    n.memory_mib = t.memory_mib;
    n.simulated = true;
    for (int i = 0; i < t.gpu_count; ++i) {
      Device d;
      d.model = t.model;
      d.index = i;
      d.uuid = t.name + "-gpu" + std::to_string(i);
      d.memory_mib = TraceGpuMemoryMib(t.model);
      d.max_sharers = 1000;  // the trace limits sharing by compute share only
      n.devices.push_back(std::move(d));
    }
    Result<int> added = state.AddNode(std::move(n));
    if (!added.ok()) return added.status().WithContext("node " + t.name);
  }
  return state;
}

TaskRequest PodRequest(const TracePod& pod) {
  TaskRequest r;
  r.cpu_milli = pod.cpu_milli;
  r.memory_mib = pod.memory_mib;
  r.device_count = pod.num_gpu;
  r.device_compute_milli = pod.num_gpu > 0 ? pod.gpu_milli : 0;
  r.type_include = pod.gpu_spec;
  return r;
}

}  // namespace xpool::sim
