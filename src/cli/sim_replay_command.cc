// `xpool sim replay`: the time-based replay of a pod list with real times (src/sim/replay.h).
#include "cli/sim_replay_command.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/flags.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/svg.h"
#include "sim/trace.h"

namespace xpool::cli {
namespace {

int Fail(const Status& s) {
  std::fprintf(stderr, "xpool sim replay: %s\n", s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

Result<bool> OnOff(const std::string& flag, const std::string& value) {
  if (value == "on" || value == "true") return true;
  if (value == "off" || value == "false") return false;
  return InvalidArgumentError("--" + flag + " must be on or off, not \"" + value + "\"");
}

struct Config {
  std::string label;
  sim::ReplayOptions options;
  sim::ReplayResult result;
  double seconds = 0;
};

std::string Describe(const sim::ReplayOptions& o) {
  std::string s = o.share ? "shared GPUs" : "whole GPUs";
  s += o.queue == sim::QueueMode::kFifo ? ", FIFO" : ", priority";
  s += o.preemption && o.queue == sim::QueueMode::kPriority ? " + preemption" : "";
  s += o.moves == MoveRule::kAnyPriority ? " + moves" : o.moves == MoveRule::kLowerPriority ? " + moves<" : "";
  return s;
}

void PrintSummary(const std::vector<Config>& configs) {
  std::printf("%-44s %7s %9s %7s %9s %9s %7s %6s %6s %6s %8s %10s\n", "configuration", "alloc%", "alloc%|q", "req%",
              "queued_h", "makespan", "placed", "never", "susp", "moves", "lostGPUh", "events/s");
  for (const Config& c : configs) {
    const sim::ReplayResult& r = c.result;
    std::printf("%-44s %6.2f%% %8.2f%% %6.2f%% %9.1f %8.1fh %7lld %6lld %6lld %6lld %8.1f %10.0f\n",
                (c.label + " (" + Describe(c.options) + ")").c_str(), r.allocated_pct, r.allocated_pct_queued,
                r.requested_pct, r.queued_s / 3600.0, static_cast<double>(r.makespan_s) / 3600.0,
                static_cast<long long>(r.placed), static_cast<long long>(r.never_placed),
                static_cast<long long>(r.suspensions), static_cast<long long>(r.moves), r.gpu_hours_lost,
                static_cast<double>(r.events) / std::max(c.seconds, 1e-9));
  }
}

void PrintDelays(const Config& c) {
  std::printf("\nqueueing delay (first start - arrival), %s:\n", c.label.c_str());
  std::printf("  %-14s %7s %7s %10s %10s %10s %10s\n", "group", "pods", "placed", "p50_s", "p95_s", "p99_s", "max_s");
  auto row = [](const sim::DelayGroup& g) {
    const sim::DelayStats& d = g.delay;
    std::printf("  %-14s %7lld %7lld %10.1f %10.1f %10.1f %10.1f\n", g.name.c_str(), static_cast<long long>(d.pods),
                static_cast<long long>(d.placed), d.p50_s, d.p95_s, d.p99_s, d.max_s);
  };
  for (const sim::DelayGroup& g : c.result.by_qos) row(g);
  for (const sim::DelayGroup& g : c.result.by_priority) row(g);
  const sim::ReplayResult& r = c.result;
  std::printf("  %lld events, %lld passes in %.2f s; never placed: %lld (%lld never fit, %lld rejected%s%s)\n",
              static_cast<long long>(r.events), static_cast<long long>(r.passes), c.seconds,
              static_cast<long long>(r.never_placed), static_cast<long long>(r.never_fits),
              static_cast<long long>(r.rejected), r.first_reject_reason.empty() ? "" : ": ",
              r.first_reject_reason.c_str());
}

void PrintExplain(const Config& c) {
  const sim::ReplayResult& r = c.result;
  std::printf("\nwhy pods wait, %s: idle GPU while the queue is non-empty, by the queue head's cause\n",
              c.label.c_str());
  std::printf("  %9s %11s  %s\n", "queued_h", "idle_GPU_h", "queue head: why it waits");
  int rows = 0;
  for (const sim::WaitCauseRow& w : r.wait_causes) {
    if (++rows > 20) break;
    std::printf("  %9.1f %11.1f  %s\n", w.queued_s / 3600.0, w.idle_gpu_hours, w.cause.c_str());
  }
  if (r.wait_causes.size() > 20) std::printf("  (%zu more causes)\n", r.wait_causes.size() - 20);
  std::printf(
      "  idle GPU on nodes no waiting pod could use even empty: %.1f GPU-h, so allocation while queued "
      "is at most %.2f %% (measured %.2f %%)\n",
      r.unusable_idle_gpu_hours, r.allocated_pct_queued_bound, r.allocated_pct_queued);
  std::printf("  longest waits:\n  %-16s %-10s %5s %6s %5s %10s  %s\n", "pod", "qos", "gpus", "milli", "cpu", "delay_s",
              "first cause");
  for (const sim::WaitedPod& w : r.longest_waits) {
    std::printf("  %-16s %-10s %5d %6lld %5lld %10.0f%s %s\n", w.name.c_str(), w.qos.c_str(), w.num_gpu,
                static_cast<long long>(w.gpu_milli), static_cast<long long>(w.cpu_milli / 1000), w.delay_s,
                w.started ? " " : "+", w.cause.c_str());
  }
}

// `from_day`: the chart starts that many days after the first arrival (a trace's quiet start left out).
std::string Svg(const std::vector<Config>& configs, const std::string& workload, int nodes, double from_day) {
  sim::LineChart chart;
  chart.title = "GPU allocation over time — " + workload + ", " + std::to_string(nodes) + " nodes";
  const double from_s = from_day * 86400;
  double max_s = 1;
  for (const Config& c : configs) max_s = std::max(max_s, static_cast<double>(c.result.makespan_s) - from_s);
  const bool days = max_s > 4 * 86400;
  const double unit = days ? 86400 : 3600;
  chart.x_label = std::string(days ? "time (days" : "time (hours") + " since the first arrival" +
                  (from_day > 0 ? " + " + std::to_string(static_cast<int64_t>(from_day)) + " days)" : ")");
  chart.max_x = max_s / unit;
  chart.x_tick = chart.max_x > 100 ? 20 : chart.max_x > 20 ? 5 : 1;
  int i = 0;
  for (const Config& c : configs) {
    sim::ChartSeries s{c.label + " allocated", sim::ChartColor(i), false, {}};
    sim::ChartSeries q{c.label + " requested", sim::ChartColor(i), true, {}};
    for (const sim::TimelinePoint& p : c.result.timeline) {
      if (p.time_s < from_s) continue;
      s.points.push_back({(p.time_s - from_s) / unit, p.allocated_pct});
      q.points.push_back({(p.time_s - from_s) / unit, p.requested_pct});
    }
    chart.series.push_back(std::move(s));
    if (!c.options.share) chart.series.push_back(std::move(q));  // equal to allocated when GPUs are shared
    ++i;
  }
  return sim::LineChartSvg(chart);
}

}  // namespace

int RunReplayCommand(const Args& args) {
  FlagSet flags("xpool sim replay",
                "Replays a pod list with its real times: pods arrive at creation_time, run their duration, wait "
                "when they do not fit; queue, quotas and preemption are the server's scheduling pass.");
  std::string cluster_path, workload, policy = "default", queue = "priority", share = "on", preemption = "on",
                                      moves = "any", qos = "", svg, csv;
  int64_t svg_from_day = 0, nodes_count = 0, min_runtime = 600, checkpoint_cost = 0, max_suspensions = 3, speedup = 1,
          seed = 42, points = 2000;
  bool whole_gpu = false, compare = false, explain = false;
  flags.String("cluster", &cluster_path, "node list CSV (sn,cpu_milli,memory_mib,gpu,model)");
  flags.String("workload", &workload, "pod list CSV with times (11 columns)");
  flags.String("policy", &policy, "placement policy (default, fgd, best-fit, ...)");
  flags.String("queue", &queue, "fifo (one priority, arrival order) or priority (by qos)");
  flags.String("share", &share, "on: pods share GPUs as asked; off: every GPU pod takes whole GPUs");
  flags.String("preemption", &preemption, "on: higher priority suspends lower (priority queue only)");
  flags.String("moves", &moves,
               "defragmentation: off, lower (move lower-priority pods only) or any (the default): pods "
               "move (suspend + restart at once elsewhere) to open a node for a pod that fits nowhere");
  flags.String("qos-priority", &qos, "priority per qos, e.g. LS=90,Guaranteed=90,Burstable=50,BE=10 (the default)");
  flags.Int("min-runtime", &min_runtime, "seconds a pod runs before it may be suspended");
  flags.Int("max-suspensions-per-hour", &max_suspensions, "a pod suspended this often in the last hour is spared");
  flags.Int("checkpoint-cost", &checkpoint_cost, "seconds of work a suspended pod loses");
  flags.Bool("whole-gpu", &whole_gpu, "HAI's \"before\": whole GPUs, FIFO, no preemption (sets the three)");
  flags.Bool("explain", &explain, "say why pods wait: idle GPU while queued by cause, the longest waits");
  flags.Bool("compare", &compare, "also run the whole-GPU FIFO \"before\" and show both");
  flags.Int("nodes", &nodes_count, "use only this many nodes, spread evenly over the node list (0: all)");
  flags.Int("speedup", &speedup, "divide arrival times by this (durations kept): more load on the cluster");
  flags.Int("seed", &seed, "seed of the placement policy's random choices");
  flags.Int("points", &points, "points of the allocation-over-time series (CSV, SVG)");
  flags.String("svg", &svg, "write a chart of GPU allocation over time");
  flags.Int("svg-from-day", &svg_from_day, "start the chart this many days after the first arrival");
  flags.String("csv", &csv, "write the allocation-over-time series (time_s,allocated_pct,requested_pct,waiting)");
  int code = 0;
  if (!ParseFlagsOrExit(flags, args, &code)) return code;
  if (cluster_path.empty() || workload.empty()) {
    std::fprintf(stderr, "xpool sim replay: --cluster and --workload are required\n%s", flags.Usage().c_str());
    return 2;
  }
  sim::ReplayOptions o;
  o.policy = policy;
  if (queue != "fifo" && queue != "priority") {
    return Fail(InvalidArgumentError("--queue must be fifo or priority, not \"" + queue + "\""));
  }
  o.queue = queue == "fifo" ? sim::QueueMode::kFifo : sim::QueueMode::kPriority;
  Result<bool> s = OnOff("share", share);
  if (!s.ok()) return Fail(s.status());
  Result<bool> p = OnOff("preemption", preemption);
  if (!p.ok()) return Fail(p.status());
  if (moves != "off" && moves != "lower" && moves != "any") {
    return Fail(InvalidArgumentError("--moves must be off, lower or any, not \"" + moves + "\""));
  }
  o.moves = moves == "any" ? MoveRule::kAnyPriority : moves == "lower" ? MoveRule::kLowerPriority : MoveRule::kOff;
  o.share = *s;
  o.preemption = *p;
  if (!qos.empty()) {
    Result<sim::QosPriorities> q = sim::ParseQosPriorities(qos);
    if (!q.ok()) return Fail(q.status());
    o.qos_priority = *q;
  }
  if (svg_from_day < 0) return Fail(InvalidArgumentError("--svg-from-day must not be negative"));
  if (points < 1 || points > 1000000) return Fail(InvalidArgumentError("--points must be 1..1000000"));
  if (seed < 0) return Fail(InvalidArgumentError("--seed must not be negative"));
  if (max_suspensions < 0 || max_suspensions > 1000000) {
    return Fail(InvalidArgumentError("--max-suspensions-per-hour must be 0..1000000"));
  }
  o.min_runtime_s = min_runtime;
  o.checkpoint_cost_s = checkpoint_cost;
  o.max_suspensions_per_hour = static_cast<int>(max_suspensions);
  o.speedup = speedup;
  o.seed = static_cast<uint64_t>(seed);
  o.max_timeline_points = static_cast<int>(points);
  o.explain = explain;
  if (whole_gpu) {
    if ((flags.WasSet("share") && o.share) || (flags.WasSet("preemption") && o.preemption) ||
        (flags.WasSet("queue") && o.queue != sim::QueueMode::kFifo) ||
        (flags.WasSet("moves") && o.moves != MoveRule::kOff)) {
      return Fail(InvalidArgumentError("--whole-gpu means --share off --preemption off --moves off --queue fifo"));
    }
    o = sim::WholeGpuFifo(o);
  }
  Result<std::vector<sim::TraceNode>> nodes = sim::LoadNodeList(cluster_path);
  if (!nodes.ok()) return Fail(nodes.status());
  if (nodes_count < 0) return Fail(InvalidArgumentError("--nodes must not be negative"));
  Result<ClusterState> cluster = sim::BuildCluster(sim::SpreadNodes(*nodes, static_cast<int>(nodes_count)));
  if (!cluster.ok()) return Fail(cluster.status());
  Result<std::vector<sim::TracePod>> pods = sim::LoadPodList(workload);
  if (!pods.ok()) return Fail(pods.status());

  std::vector<Config> configs;
  if (compare) configs.push_back({"before", sim::WholeGpuFifo(o), {}, 0});
  configs.push_back({compare ? "xpool" : "replay", o, {}, 0});
  for (Config& c : configs) {
    const auto start = std::chrono::steady_clock::now();
    Result<sim::ReplayResult> r = sim::RunReplay(*cluster, *pods, c.options);
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!r.ok()) return Fail(r.status().WithContext(workload));
    c.result = std::move(*r);
  }
  const sim::ReplayResult& first = configs.front().result;
  std::printf(
      "replay of %s on %d nodes (%.0f GPUs), %lld pods, policy %s, speedup %lld, min-runtime %lld s, "
      "checkpoint-cost %lld s\n",
      sim::WorkloadName(workload).c_str(), cluster->node_count(),
      static_cast<double>(first.gpu_capacity_milli) / 1000.0, static_cast<long long>(first.pods), policy.c_str(),
      static_cast<long long>(speedup), static_cast<long long>(min_runtime), static_cast<long long>(checkpoint_cost));
  PrintSummary(configs);
  for (const Config& c : configs) PrintDelays(c);
  if (explain) {
    for (const Config& c : configs) PrintExplain(c);
  }
  if (!csv.empty()) {
    if (Status w = sim::WriteTextFile(csv, sim::TimelineCsv(configs.back().result)); !w.ok()) return Fail(w);
  }
  if (!svg.empty()) {
    if (Status w = sim::WriteTextFile(
            svg, Svg(configs, sim::WorkloadName(workload), cluster->node_count(), static_cast<double>(svg_from_day)));
        !w.ok())
      return Fail(w);
  }
  return 0;
}

}  // namespace xpool::cli
