#include "load_agents.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <queue>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "agent/v1/agent.grpc.pb.h"

namespace xpool::load {
namespace {

namespace v1 = xpool::agent::v1;
using Clock = std::chrono::steady_clock;

constexpr int kGpus = 8;
constexpr auto kLongPoll = std::chrono::seconds(2);  // the agent's ChangeWatcher::kLongPollMicros
constexpr auto kRetry = std::chrono::seconds(1);     // after a failed heartbeat

int64_t WallMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Task {
  int64_t job = 0;
  int replica = 0;
  int restart_count = 0;
  int64_t started_us = 0;
  int64_t ends_us = 0;   // when it exits 0
  int64_t ended_us = 0;  // 0 while it runs
  v1::TaskState state = v1::TASK_STATE_RUNNING;
};

// One simulated agent. The fields below `mu` are guarded by it; the call objects (contexts, requests, replies)
// belong to the call in flight, which the flags say.
struct Agent {
  std::string name;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Agent::Stub> stub;
  std::mt19937_64 rng;

  std::mutex mu;
  std::map<std::string, Task> tasks;
  int64_t generation = 0;
  bool beat_in_flight = false;
  bool beat_again = false;  // a change was announced while a heartbeat was in flight
  bool waiting = false;

  std::unique_ptr<grpc::ClientContext> beat_ctx;
  v1::HeartbeatRequest beat_request;
  v1::HeartbeatReply beat_reply;
  Clock::time_point beat_sent;
  std::unique_ptr<grpc::ClientContext> wait_ctx;
  v1::WaitForChangeRequest wait_request;
  v1::WaitForChangeReply wait_reply;
};

void FillNode(int i, v1::Node* node) {
  node->set_name("agent" + std::to_string(i));
  node->set_cpu_milli(96000);
  node->set_memory_mib(786432);
  node->set_simulated(true);
  for (int d = 0; d < kGpus; ++d) {
    v1::Device* dev = node->add_devices();
    dev->set_index(d);
    dev->set_uuid("GPU-" + node->name() + "-" + std::to_string(d));
    dev->set_model(i % 2 ? "A100-SXM4-80GB" : "V100-SXM2-32GB");
    dev->set_vendor("nvidia");
    dev->set_memory_mib(i % 2 ? 81920 : 32768);
    dev->set_compute_milli(1000);
    dev->set_healthy(true);
  }
}

}  // namespace

struct SimulatedAgents::Impl {
  AgentLoadOptions options;
  std::vector<std::unique_ptr<Agent>> agents;

  std::mutex pace_mu;
  std::condition_variable pace_cv;
  std::priority_queue<std::pair<Clock::time_point, size_t>, std::vector<std::pair<Clock::time_point, size_t>>,
                      std::greater<>>
      due;
  bool stopping = false;
  std::thread pacer;

  std::mutex flight_mu;
  std::condition_variable flight_cv;
  int64_t in_flight = 0;

  std::mutex stats_mu;
  AgentLoadStats stats;

  void Schedule(size_t i, Clock::time_point when) {
    std::lock_guard<std::mutex> lock(pace_mu);
    if (stopping) return;
    due.emplace(when, i);
    pace_cv.notify_one();
  }

  bool Enter() {
    std::lock_guard<std::mutex> lock(flight_mu);
    if (stopping) return false;
    ++in_flight;
    return true;
  }
  void Leave() {
    std::lock_guard<std::mutex> lock(flight_mu);
    if (--in_flight == 0) flight_cv.notify_all();
  }

  void Pace() {
    std::unique_lock<std::mutex> lock(pace_mu);
    while (!stopping) {
      if (due.empty()) {
        pace_cv.wait(lock);
        continue;
      }
      const auto when = due.top().first;
      if (when > Clock::now()) {
        pace_cv.wait_until(lock, when);
        continue;
      }
      const size_t i = due.top().second;
      due.pop();
      lock.unlock();
      Beat(i);
      lock.lock();
    }
  }

  // Every task's report, as the agent sends them; a task past its end exits 0 here.
  void BuildRequest(Agent& a) {
    const int64_t now = WallMicros();
    v1::HeartbeatRequest& r = a.beat_request;
    r.Clear();
    r.set_node(a.name);
    for (int d = 0; d < kGpus; ++d) {
      v1::DeviceHealth* h = r.add_devices();
      h->set_index(d);
      h->set_healthy(true);
    }
    int64_t finished = 0;
    for (auto& [id, t] : a.tasks) {
      if (t.ended_us == 0 && now >= t.ends_us) {
        t.ended_us = now;
        t.state = v1::TASK_STATE_SUCCEEDED;
        ++finished;
      }
      v1::TaskReport* report = r.add_tasks();
      report->set_task_id(id);
      report->set_job_id(t.job);
      report->set_replica(t.replica);
      report->set_restart_count(t.restart_count);
      report->set_state(t.state);
      report->set_exit_code(t.ended_us == 0 ? -1 : 0);
      report->set_pid(1000 + t.job);
      report->set_started_at_us(t.started_us);
      report->set_ended_at_us(t.ended_us);
      if (t.ended_us != 0) report->set_log_end(0);
    }
    if (finished > 0) {
      std::lock_guard<std::mutex> lock(stats_mu);
      stats.tasks_finished += finished;
    }
  }

  void Beat(size_t i) {
    Agent& a = *agents[i];
    {
      std::lock_guard<std::mutex> lock(a.mu);
      if (a.beat_in_flight) {
        a.beat_again = true;
        return;
      }
      if (!Enter()) return;
      a.beat_in_flight = true;
      BuildRequest(a);
      a.beat_ctx = std::make_unique<grpc::ClientContext>();
      a.beat_ctx->AddMetadata("authorization", "Bearer " + options.token);
      a.beat_ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      a.beat_sent = Clock::now();
    }
    a.stub->async()->Heartbeat(a.beat_ctx.get(), &a.beat_request, &a.beat_reply,
                               [this, i](grpc::Status s) { OnBeat(i, s); });
  }

  // Reads the wanted tasks: new runs start, stop/suspend end them, and an ended task no longer listed is
  // forgotten (the omission acknowledges its report).
  int64_t ApplyReply(Agent& a) {
    const int64_t now = WallMicros();
    int64_t started = 0;
    std::set<std::string> listed;
    for (const v1::TaskAssignment& t : a.beat_reply.tasks()) {
      listed.insert(t.task_id());
      auto it = a.tasks.find(t.task_id());
      if (t.action() == v1::TaskAssignment::ACTION_RUN) {
        if (it != a.tasks.end() && it->second.restart_count >= t.restart_count()) continue;
        std::uniform_int_distribution<int64_t> ms(options.task_ms_min, options.task_ms_max);
        Task task{t.job_id(), t.replica(), t.restart_count(), now, now + ms(a.rng) * 1000};
        a.tasks[t.task_id()] = task;
        ++started;
      } else if (it != a.tasks.end() && it->second.ended_us == 0) {
        it->second.ended_us = now;
        it->second.state =
            t.action() == v1::TaskAssignment::ACTION_SUSPEND ? v1::TASK_STATE_SUSPENDED : v1::TASK_STATE_STOPPED;
      }
    }
    for (auto it = a.tasks.begin(); it != a.tasks.end();) {
      if (listed.count(it->first) != 0) {
        ++it;
      } else if (it->second.ended_us != 0) {
        it = a.tasks.erase(it);
      } else {
        it->second.ended_us = now;  // no longer wanted: stopped
        it->second.state = v1::TASK_STATE_STOPPED;
        ++it;
      }
    }
    return started;
  }

  void OnBeat(size_t i, const grpc::Status& s) {
    Agent& a = *agents[i];
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - a.beat_sent).count();
    int64_t started = 0;
    bool again = false, wait = false;
    auto next = Clock::now() + kRetry;
    {
      std::lock_guard<std::mutex> lock(a.mu);
      if (s.ok()) {
        started = ApplyReply(a);
        a.generation = a.beat_reply.generation();
        next = Clock::now() + std::chrono::milliseconds(std::max<int64_t>(1, a.beat_reply.heartbeat_interval_ms()));
        wait = !a.waiting && a.generation != 0;
        a.waiting = a.waiting || wait;
      } else if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
        std::fprintf(stderr, "agents: %s: the server forgot the node (%s)\n", a.name.c_str(),
                     s.error_message().c_str());
      }
      again = a.beat_again;
      a.beat_again = false;
      a.beat_in_flight = false;
    }
    {
      std::lock_guard<std::mutex> lock(stats_mu);
      if (s.ok()) {
        stats.heartbeat_ms.push_back(ms);
      } else {
        ++stats.heartbeat_errors;
      }
      stats.tasks_started += started;
    }
    if (wait) Wait(i);
    Schedule(i, again ? Clock::now() : next);
    Leave();
  }

  void Wait(size_t i) {
    Agent& a = *agents[i];
    {
      std::lock_guard<std::mutex> lock(a.mu);
      if (!Enter()) {
        a.waiting = false;
        return;
      }
      a.wait_request.set_node(a.name);
      a.wait_request.set_seen(a.generation);
      a.wait_ctx = std::make_unique<grpc::ClientContext>();
      a.wait_ctx->AddMetadata("authorization", "Bearer " + options.token);
      a.wait_ctx->set_deadline(std::chrono::system_clock::now() + kLongPoll);
    }
    a.stub->async()->WaitForChange(a.wait_ctx.get(), &a.wait_request, &a.wait_reply,
                                   [this, i](grpc::Status s) { OnWait(i, s); });
  }

  // A new generation: heartbeat now (the next reply opens the next wait). The long-poll's deadline: wait again.
  void OnWait(size_t i, const grpc::Status& s) {
    Agent& a = *agents[i];
    bool changed = false, again = false;
    {
      std::lock_guard<std::mutex> lock(a.mu);
      changed = s.ok() && a.wait_reply.generation() != a.wait_request.seen();
      again = s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED || s.error_code() == grpc::StatusCode::CANCELLED ||
              (s.ok() && !changed);
      a.waiting = again;
    }
    if (changed) {
      {
        std::lock_guard<std::mutex> lock(stats_mu);
        ++stats.waits_answered;
      }
      Schedule(i, Clock::now());
    } else if (again) {
      Wait(i);
    }
    Leave();
  }
};

SimulatedAgents::SimulatedAgents(AgentLoadOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

SimulatedAgents::~SimulatedAgents() { Stop(); }

bool SimulatedAgents::Start() {
  Impl& m = *impl_;
  for (int i = 0; i < m.options.agents; ++i) {
    auto a = std::make_unique<Agent>();
    a->name = "agent" + std::to_string(i);
    a->rng.seed(static_cast<uint64_t>(i) + 1);
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own, as a separate process has
    a->channel = grpc::CreateCustomChannel(m.options.target, grpc::InsecureChannelCredentials(), args);
    a->stub = v1::Agent::NewStub(a->channel);
    m.agents.push_back(std::move(a));
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < m.agents.size() && !failed; i = next++) {
        v1::RegisterRequest request;
        FillNode(static_cast<int>(i), request.mutable_node());
        v1::RegisterReply reply;
        grpc::Status s;
        // As the agent does, try again while the server is not reachable yet (10 s at most).
        for (int attempt = 0; attempt < 20; ++attempt) {
          grpc::ClientContext ctx;
          ctx.AddMetadata("authorization", "Bearer " + m.options.token);
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
          s = m.agents[i]->stub->Register(&ctx, request, &reply);
          if (s.error_code() != grpc::StatusCode::UNAVAILABLE) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
        }
        if (!s.ok()) {
          std::fprintf(stderr, "agents: registering %s failed: %s\n", m.agents[i]->name.c_str(),
                       s.error_message().c_str());
          failed = true;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failed) return false;
  // The first heartbeats spread over one second, as agents started at different times.
  const auto now = Clock::now();
  for (size_t i = 0; i < m.agents.size(); ++i) {
    m.Schedule(i, now + std::chrono::microseconds(1'000'000 * static_cast<int64_t>(i) /
                                                  static_cast<int64_t>(m.agents.size())));
  }
  m.pacer = std::thread([&m] { m.Pace(); });
  return true;
}

void SimulatedAgents::Stop() {
  Impl& m = *impl_;
  {
    std::scoped_lock lock(m.pace_mu, m.flight_mu);
    m.stopping = true;
  }
  m.pace_cv.notify_all();
  if (m.pacer.joinable()) m.pacer.join();
  std::unique_lock<std::mutex> lock(m.flight_mu);
  m.flight_cv.wait_for(lock, std::chrono::seconds(15), [&m] { return m.in_flight == 0; });
}

AgentLoadStats SimulatedAgents::Stats() {
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  return impl_->stats;
}

void SimulatedAgents::ResetStats() {
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  impl_->stats = AgentLoadStats{};
}

}  // namespace xpool::load
