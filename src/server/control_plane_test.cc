#include "server/control_plane.h"

#include <gtest/gtest.h>

#include "server/control_plane_test_fixture.h"

namespace xpool::server {
namespace {

TEST_F(ControlPlaneTest, QueuedWithAReasonWhenThereAreNoNodes) {
  JobRecord j = Submit(Spec("a", 1));
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(StateOf(j.id), JobState::kQueued);
  EXPECT_EQ(control_->PendingReason(j.id), "no nodes in the cluster yet");
}

TEST_F(ControlPlaneTest, ANodeComesBackWithAnotherDeviceListOnlyWhileNoDeviceIsAllocated) {
  // An agent restarted with another MIG geometry reports another device list.
  const auto devices_of_n1 = [&] {
    for (const NodeView& n : control_->Nodes()) {
      if (n.node.name == "n1") return n.node.devices.size();
    }
    return size_t{0};
  };
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build()).ok());
  JobRecord a = Submit(Spec("a", 1));
  EXPECT_EQ(control_->RunPass(true), 1);
  const Node cut = MakeNode("n1").WithGpus(3, "A100 MIG 2g.20gb", 20480).Simulated().Build();
  const Status refused = control_->RegisterNode(cut);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("device count (1 to 3) while node n1 device 0 is allocated"), std::string::npos)
      << refused.message();
  EXPECT_EQ(devices_of_n1(), 1u);
  Open();  // nothing of the refused description was persisted
  EXPECT_EQ(devices_of_n1(), 1u);
  EXPECT_TRUE(control_->CheckConsistency().ok());
  ASSERT_TRUE(control_->Cancel(a.id, "done").ok());
  ASSERT_TRUE(control_->RegisterNode(cut).ok());
  EXPECT_EQ(devices_of_n1(), 3u);
  JobRecord b = Submit(Spec("b", 3));
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(b.id), JobState::kRunning);
  EXPECT_EQ(DeviceMemoryUsed(), 3 * 1024);
  Open();  // the new description and what it holds come back from the store
  EXPECT_EQ(devices_of_n1(), 3u);
  EXPECT_EQ(DeviceMemoryUsed(), 3 * 1024);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

TEST_F(ControlPlaneTest, PlacesOnARegisteredNodeAndCommitsToTheStore) {
  JobRecord j = Submit(Spec("a", 1));
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(2, "A100", 81920).Simulated().Build()).ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(j.id), JobState::kRunning);  // simulated node: started without an agent
  auto allocations = store_->JobAllocations(j.id);
  ASSERT_TRUE(allocations.ok());
  ASSERT_EQ(allocations->size(), 1u);
  EXPECT_EQ((*allocations)[0].node, "n1");
  EXPECT_EQ(DeviceMemoryUsed(), 1024);
  EXPECT_EQ(control_->JobsOnNode("n1"), std::vector<JobId>{j.id});
  EXPECT_TRUE(control_->JobsOnNode("n2").empty());
  EXPECT_TRUE(control_->CheckConsistency().ok());
  ASSERT_TRUE(control_->Cancel(j.id, "done").ok());
  EXPECT_TRUE(control_->JobsOnNode("n1").empty());
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

// The server's policy learns the workload from submitted jobs (fgd and default read a target learned from
// arrivals): after many whole-GPU jobs that require the H800 model, an unconstrained one keeps the only H800 free for
// them and goes to the A100 node, though the H800 node comes first and a policy without a target would tie them.
TEST_F(ControlPlaneTest, ThePolicyLearnsTheWorkloadFromSubmittedJobs) {
  ASSERT_TRUE(control_->RegisterNode(MakeNode("h800").WithGpus(1, "H800", 81920).Simulated().Build()).ok());
  ASSERT_TRUE(control_->RegisterNode(MakeNode("a100").WithGpus(1, "A100", 81920).Simulated().Build()).ok());
  for (int i = 0; i < 20; ++i) {
    JobSpec s = Spec("needs-h800-" + std::to_string(i), 1, 1, 50, 100);
    s.resources.gpu_type = {"H800"};
    JobRecord j = Submit(s);
    ASSERT_TRUE(control_->Cancel(j.id, "only its arrival counts").ok());
  }
  JobRecord any = Submit(Spec("any", 1, 1, 50, 100));
  EXPECT_EQ(control_->RunPass(true), 1);
  auto allocations = store_->JobAllocations(any.id);
  ASSERT_TRUE(allocations.ok());
  ASSERT_EQ(allocations->size(), 1u);
  EXPECT_EQ((*allocations)[0].node, "a100");
}

TEST_F(ControlPlaneTest, GangIsAllOrNothing) {
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build()).ok());
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n2").WithGpus(1, "A100", 81920).Simulated().Build()).ok());
  JobRecord big = Submit(Spec("big", 1, /*replicas=*/3, 50, /*gpucores=*/100));
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(StateOf(big.id), JobState::kQueued);
  EXPECT_NE(control_->PendingReason(big.id).find("replica 3 of 3"), std::string::npos)
      << control_->PendingReason(big.id);
  EXPECT_EQ(DeviceMemoryUsed(), 0);  // the two replicas that fitted were rolled back
  JobRecord pair = Submit(Spec("pair", 1, /*replicas=*/2, 50, /*gpucores=*/100));
  EXPECT_EQ(control_->RunPass(false), 1);
  EXPECT_EQ(StateOf(pair.id), JobState::kRunning);
  EXPECT_EQ(DeviceMemoryUsed(), 2 * 81920);  // gpucores 100 = the whole device, memory included
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

TEST_F(ControlPlaneTest, HigherPriorityGoesFirstThenSubmitOrder) {
  JobRecord low = Submit(Spec("low", 1, 1, 10, 100));
  clock_.Advance(1000);
  JobRecord high = Submit(Spec("high", 1, 1, 90, 100));
  clock_.Advance(1000);
  JobRecord normal = Submit(Spec("normal", 1, 1, 50, 100));
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build()).ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(high.id), JobState::kRunning);
  EXPECT_EQ(StateOf(low.id), JobState::kQueued);
  EXPECT_FALSE(control_->PendingReason(low.id).empty());
  // Cancelling the running job frees the device for the next in order: normal, not low.
  ASSERT_TRUE(control_->Cancel(high.id, "test").ok());
  EXPECT_EQ(StateOf(high.id), JobState::kCancelled);
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(normal.id), JobState::kRunning);
  EXPECT_EQ(StateOf(low.id), JobState::kQueued);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

// A pass books a placement, lets go of its lock and then commits: when the store refuses the commit, the
// booking is undone and the job waits in the queue with the store's reason; the next pass places it.
TEST_F(ControlPlaneTest, AFailedPlacementCommitPutsTheJobBackInTheQueue) {
  JobRecord j = Submit(Spec("a", 1));
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(2, "A100", 81920).Simulated().Build()).ok());
  auto* sql = dynamic_cast<store_internal::SqlStore*>(store_.get());
  ASSERT_NE(sql, nullptr);
  ASSERT_TRUE(sql->QueryForTesting("PRAGMA query_only = ON").ok());
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(StateOf(j.id), JobState::kQueued);
  EXPECT_EQ(control_->queue_length(), 1u);
  EXPECT_NE(control_->PendingReason(j.id).find("the store is unavailable"), std::string::npos)
      << control_->PendingReason(j.id);
  EXPECT_EQ(DeviceMemoryUsed(), 0);
  EXPECT_TRUE(control_->JobsOnNode("n1").empty());
  EXPECT_TRUE(control_->CheckConsistency().ok());

  ASSERT_TRUE(sql->QueryForTesting("PRAGMA query_only = OFF").ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(j.id), JobState::kRunning);
  EXPECT_EQ(DeviceMemoryUsed(), 1024);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

TEST_F(ControlPlaneTest, AFailedCommitRequeuesWithThePriorityChangedWhileItWasInFlight) {
  JobRecord a = Submit(Spec("a", 1, 1, 50, /*gpucores=*/100));  // all of the one device
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build()).ok());
  auto* sql = dynamic_cast<store_internal::SqlStore*>(store_.get());
  ASSERT_NE(sql, nullptr);
  const int placed = ControlPlaneTestPeer::BookThenCommit(*control_, [&] {
    ASSERT_TRUE(control_->SetPriority(a.id, 90, "admin").ok());        // while the commit is in flight
    ASSERT_TRUE(sql->QueryForTesting("PRAGMA query_only = ON").ok());  // and then the store refuses it
  });
  EXPECT_EQ(placed, 0);
  EXPECT_EQ(StateOf(a.id), JobState::kQueued);
  EXPECT_EQ(ControlPlaneTestPeer::QueuedPriority(*control_, a.id), 90);
  EXPECT_TRUE(control_->CheckConsistency().ok());
  // The queue orders by the new priority: a (90) goes before b (70) on the one device.
  ASSERT_TRUE(sql->QueryForTesting("PRAGMA query_only = OFF").ok());
  JobRecord b = Submit(Spec("b", 1, 1, 70, /*gpucores=*/100));
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(a.id), JobState::kRunning);
  EXPECT_EQ(StateOf(b.id), JobState::kQueued);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

TEST_F(ControlPlaneTest, CancelTwiceIsRefused) {
  JobRecord j = Submit(Spec("a", 0));
  ASSERT_TRUE(control_->Cancel(j.id, "x").ok());
  auto again = control_->Cancel(j.id, "x");
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(control_->queue_length(), 0u);
}

TEST_F(ControlPlaneTest, SuspendAndResume) {
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build()).ok());
  JobRecord j = Submit(Spec("a", 1));
  JobRecord waiting = Submit(Spec("b", 4));
  EXPECT_EQ(control_->RunPass(true), 1);
  // Only a running job can be suspended: 409 with the reason.
  auto queued = control_->Suspend(waiting.id);
  EXPECT_EQ(queued.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(queued.status().message().find("is queued; only a running job can be suspended"), std::string::npos)
      << queued.status().message();
  auto s = control_->Suspend(j.id);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->state, JobState::kSuspended);  // simulated node: at once
  EXPECT_EQ(DeviceMemoryUsed(), 0);
  EXPECT_EQ(control_->Suspend(j.id).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(StateOf(j.id), JobState::kSuspended);  // held by hand: not scheduled again until resumed
  auto r = control_->Resume(j.id);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->state, JobState::kQueued);
  EXPECT_EQ(r->restart_count, 1);
  EXPECT_EQ(r->submitted_us, j.submitted_us);
  EXPECT_EQ(control_->RunPass(false), 1);
  EXPECT_EQ(StateOf(j.id), JobState::kRunning);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

TEST_F(ControlPlaneTest, HigherPriorityPreemptsOnASimulatedNode) {
  options_.min_runtime = 0;
  Open();
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build()).ok());
  JobRecord low = Submit(Preemptible(Spec("low", 1, 1, 10, 100)));
  EXPECT_EQ(control_->RunPass(true), 1);
  clock_.Advance(kMicrosPerSecond);
  JobRecord high = Submit(Spec("high", 1, 1, 90, 100));
  EXPECT_EQ(control_->RunPass(false), 1);
  EXPECT_EQ(StateOf(high.id), JobState::kRunning);
  auto after = store_->GetJob(low.id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->state, JobState::kQueued);  // suspended and back in the queue, keeping its place
  EXPECT_EQ(after->restart_count, 1);
  EXPECT_EQ(after->submitted_us, low.submitted_us);
  // The decision and its reason are events on both jobs.
  EXPECT_TRUE(HasEvent(high.id, "suspends job " + low.id.ToString())) << "preemptor event";
  EXPECT_TRUE(HasEvent(low.id, "suspended for job " + high.id.ToString())) << "victim event";
  EXPECT_TRUE(control_->CheckConsistency().ok());
  // When the high job ends, the low one runs again.
  ASSERT_TRUE(control_->Finish(high.id, JobState::kSucceeded, "done").ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(low.id), JobState::kRunning);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

TEST_F(ControlPlaneTest, PreemptionWaitsForTheAgentAndPicksNoSecondVictim) {
  options_.min_runtime = 0;
  Open();
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Build()).ok());
  JobRecord low = Submit(Preemptible(Spec("low", 1, 1, 10, 100)));
  EXPECT_EQ(control_->RunPass(true), 1);
  ASSERT_TRUE(control_->TaskStarted(low.id, clock_.NowMicros()).ok());
  EXPECT_EQ(StateOf(low.id), JobState::kRunning);
  JobRecord high = Submit(Spec("high", 1, 1, 90, 100));
  EXPECT_EQ(control_->RunPass(false), 0);
  EXPECT_EQ(StateOf(low.id), JobState::kSuspending);  // the agent is asked to checkpoint it
  EXPECT_EQ(StateOf(high.id), JobState::kQueued);
  EXPECT_NE(control_->PendingReason(high.id).find("waiting for job " + low.id.ToString()), std::string::npos)
      << control_->PendingReason(high.id);
  EXPECT_EQ(control_->RunPass(true), 0);  // no second round while the victim is still suspending
  EXPECT_EQ(StateOf(high.id), JobState::kQueued);
  // Persisted "why pending": visible in the store (so after a restart too).
  auto stored = store_->GetJob(high.id);
  ASSERT_TRUE(stored.ok());
  EXPECT_NE(stored->pending_reason.find("waiting for job"), std::string::npos);
  Open();  // a restart while the victim checkpoints: the preemptor still waits for it
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(StateOf(low.id), JobState::kSuspending);
  ASSERT_TRUE(control_->SuspendDone(low.id, "checkpointed and exited 0").ok());
  auto after = store_->GetJob(low.id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->state, JobState::kQueued);
  EXPECT_EQ(after->restart_count, 1);
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(high.id), JobState::kScheduled);
  EXPECT_EQ(StateOf(low.id), JobState::kQueued);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

TEST_F(ControlPlaneTest, MinRuntimeProtectsAYoungJob) {
  options_.min_runtime = 600 * kMicrosPerSecond;
  Open();
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build()).ok());
  JobRecord low = Submit(Preemptible(Spec("low", 1, 1, 10, 100)));
  EXPECT_EQ(control_->RunPass(true), 1);
  JobRecord high = Submit(Spec("high", 1, 1, 90, 100));
  EXPECT_EQ(control_->RunPass(false), 0);
  EXPECT_EQ(StateOf(low.id), JobState::kRunning);
  clock_.Advance(601 * kMicrosPerSecond);
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(high.id), JobState::kRunning);
}

TEST_F(ControlPlaneTest, TenantAtItsLimitWaitsWithTheReason) {
  TenantQuota quota;
  quota.devices = 1;
  ASSERT_TRUE(store_->UpdateTenantQuota(tenant_, quota).ok());
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(4, "A100", 81920).Simulated().Build()).ok());
  JobRecord a = Submit(Spec("a", 1, 1, 50, 100));
  JobRecord b = Submit(Spec("b", 1, 1, 50, 100));
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(a.id), JobState::kRunning);
  EXPECT_EQ(StateOf(b.id), JobState::kQueued);
  EXPECT_NE(control_->PendingReason(b.id).find("at its gpu limit"), std::string::npos) << control_->PendingReason(b.id);
}

TEST_F(ControlPlaneTest, TenantUnderItsGuaranteePreemptsAnOverGuaranteeTenantAtEqualPriority) {
  options_.min_runtime = 0;
  Open();
  auto vip = store_->CreateTenant("vip", false, TenantQuota{}, clock_.NowMicros());
  ASSERT_TRUE(vip.ok()) << vip.status().ToString();
  TenantQuota one_device;
  one_device.devices = 1;
  ASSERT_TRUE(store_->UpdateTenantGuarantee(vip->id, one_device).ok());
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(2, "A100", 81920).Simulated().Build()).ok());
  JobRecord a = Submit(Preemptible(Spec("a", 1, 1, 50, 100)));
  JobRecord b = Submit(Preemptible(Spec("b", 1, 1, 50, 100)));
  EXPECT_EQ(control_->RunPass(true), 2);
  clock_.Advance(kMicrosPerSecond);
  // Same priority, but "vip" stays within its guarantee while "team" runs above its own (none).
  auto v = control_->Submit(vip->id, Spec("v", 1, 1, 50, 100));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(control_->RunPass(false), 1);
  EXPECT_EQ(StateOf(v->id), JobState::kRunning);
  const int requeued = (StateOf(a.id) == JobState::kQueued) + (StateOf(b.id) == JobState::kQueued);
  EXPECT_EQ(requeued, 1) << "exactly one victim";
  EXPECT_TRUE(control_->CheckConsistency().ok());

  // Without the guarantee the same job waits: equal priority never preempts.
  ASSERT_TRUE(control_->Cancel(v->id, "test").ok());
  EXPECT_EQ(control_->RunPass(true), 1);  // the victim runs again
  ASSERT_TRUE(store_->UpdateTenantGuarantee(vip->id, TenantQuota{}).ok());
  clock_.Advance(kMicrosPerSecond);
  auto w = control_->Submit(vip->id, Spec("w", 1, 1, 50, 100));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(control_->RunPass(false), 0);
  EXPECT_EQ(StateOf(w->id), JobState::kQueued);
  EXPECT_EQ(StateOf(a.id), JobState::kRunning);
  EXPECT_EQ(StateOf(b.id), JobState::kRunning);
}

TEST_F(ControlPlaneTest, LostNodeRequeuesItsJobs) {
  options_.node_timeout = 30 * kMicrosPerSecond;
  Open();
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Build()).ok());
  JobRecord j = Submit(Spec("a", 1));
  EXPECT_EQ(control_->RunPass(true), 1);
  ASSERT_TRUE(control_->TaskStarted(j.id, clock_.NowMicros()).ok());
  clock_.Advance(10 * kMicrosPerSecond);
  control_->CheckNodeTimeouts();
  EXPECT_EQ(StateOf(j.id), JobState::kRunning);  // not silent long enough
  clock_.Advance(31 * kMicrosPerSecond);
  control_->CheckNodeTimeouts();
  auto after = store_->GetJob(j.id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->state, JobState::kQueued);
  EXPECT_EQ(after->restart_count, 1);
  EXPECT_EQ(after->submitted_us, j.submitted_us);
  EXPECT_EQ(DeviceMemoryUsed(), 0);
  EXPECT_TRUE(HasEvent(j.id, "node n1 lost"));
  EXPECT_FALSE(control_->GetNode("n1")->node.ready);
  EXPECT_EQ(control_->RunPass(true), 0);  // nowhere to go while the node is lost
  ASSERT_TRUE(control_->Heartbeat("n1").ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(j.id), JobState::kScheduled);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

// Fencing: a silent node is NotReady at the node timeout, but its jobs wait the margin more (its tasks stop
// themselves at the node timeout); a node that reports inside the margin keeps them.
TEST_F(ControlPlaneTest, LostNodesJobsWaitForTheFenceMargin) {
  options_.node_timeout = 30 * kMicrosPerSecond;
  options_.fence_margin = 5 * kMicrosPerSecond;
  Open();
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Build()).ok());
  JobRecord j = Submit(Spec("a", 1));
  EXPECT_EQ(control_->RunPass(true), 1);
  ASSERT_TRUE(control_->TaskStarted(j.id, clock_.NowMicros()).ok());
  clock_.Advance(31 * kMicrosPerSecond);
  control_->CheckNodeTimeouts();
  EXPECT_FALSE(control_->GetNode("n1")->node.ready);
  EXPECT_EQ(StateOf(j.id), JobState::kRunning);  // inside the margin
  ASSERT_TRUE(control_->Heartbeat("n1").ok());   // back in time: it keeps its job
  EXPECT_TRUE(control_->GetNode("n1")->node.ready);
  clock_.Advance(34 * kMicrosPerSecond);
  control_->CheckNodeTimeouts();
  EXPECT_EQ(StateOf(j.id), JobState::kRunning);
  clock_.Advance(2 * kMicrosPerSecond);  // 36 s silent: past timeout + margin
  control_->CheckNodeTimeouts();
  EXPECT_EQ(StateOf(j.id), JobState::kQueued);
  EXPECT_EQ(store_->GetJob(j.id)->restart_count, 1);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

TEST_F(ControlPlaneTest, RebuildRestoresAllocationsAndQueue) {
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(2, "A100", 81920).Simulated().Build()).ok());
  JobRecord placed = Submit(Spec("a", 1));
  EXPECT_EQ(control_->RunPass(true), 1);
  JobRecord waiting = Submit(Spec("b", 4));
  EXPECT_EQ(control_->RunPass(true), 0);
  Open();  // a fresh control plane over the same database, as after a restart
  EXPECT_EQ(DeviceMemoryUsed(), 1024);
  EXPECT_EQ(control_->queue_length(), 1u);
  EXPECT_TRUE(control_->CheckConsistency().ok());
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_FALSE(control_->PendingReason(waiting.id).empty());
  EXPECT_EQ(StateOf(placed.id), JobState::kRunning);
}

// An MPS server serves one uid at a time and tasks run as their tenant's uid (docs/agent.md, "MPS mode"): a device
// in MPS mode takes one tenant's tasks at a time, also after a restart, and the other tenant's job runs once the
// device is empty.
TEST_F(ControlPlaneTest, AnMpsDeviceRunsOneTenantsTasksAtATime) {
  Node n1 = MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build();
  n1.devices[0].mode = DeviceMode::kMps;
  ASSERT_TRUE(control_->RegisterNode(n1).ok());
  auto lab = store_->CreateTenant("lab", false, TenantQuota{}, clock_.NowMicros());
  ASSERT_TRUE(lab.ok()) << lab.status().ToString();
  JobRecord a = Submit(Spec("a", 1, 1, 50, 30));
  JobRecord c = Submit(Spec("c", 1, 1, 50, 30));
  EXPECT_EQ(control_->RunPass(true), 2);  // one tenant's two tasks share the device
  auto b = control_->Submit(lab->id, Spec("b", 1, 1, 50, 30));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(StateOf(b->id), JobState::kQueued);
  EXPECT_NE(control_->PendingReason(b->id).find("MPS devices in use by another tenant"), std::string::npos)
      << control_->PendingReason(b->id);
  EXPECT_TRUE(control_->CheckConsistency().ok());

  Open();  // the device's tenant comes back with the allocations
  EXPECT_TRUE(control_->CheckConsistency().ok());
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(StateOf(b->id), JobState::kQueued);
  ASSERT_TRUE(control_->Cancel(a.id, "done").ok());
  EXPECT_EQ(control_->RunPass(true), 0);  // c still holds it
  ASSERT_TRUE(control_->Cancel(c.id, "done").ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(b->id), JobState::kRunning);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

// A store from before one tenant held an MPS device at a time may have two tenants' tasks on one: a restart keeps
// both, and the device takes one tenant's tasks again once it is empty.
TEST_F(ControlPlaneTest, ARestartKeepsTwoTenantsTasksThatShareAnMpsDevice) {
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build()).ok());
  auto lab = store_->CreateTenant("lab", false, TenantQuota{}, clock_.NowMicros());
  auto ops = store_->CreateTenant("ops", false, TenantQuota{}, clock_.NowMicros());
  ASSERT_TRUE(lab.ok() && ops.ok());
  JobRecord a = Submit(Spec("a", 1, 1, 50, 30));
  auto b = control_->Submit(lab->id, Spec("b", 1, 1, 50, 30));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(control_->RunPass(true), 2);  // a shared device takes both
  Node mps = MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build();
  mps.devices[0].mode = DeviceMode::kMps;
  ASSERT_TRUE(store_->UpsertNode(mps, clock_.NowMicros()).ok());  // as an older server left it

  Open();
  EXPECT_EQ(StateOf(a.id), JobState::kRunning);
  EXPECT_EQ(StateOf(b->id), JobState::kRunning);
  EXPECT_EQ(DeviceMemoryUsed(), 2 * 1024);
  EXPECT_TRUE(control_->CheckConsistency().ok());
  auto c = control_->Submit(ops->id, Spec("c", 1, 1, 50, 30));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(control_->RunPass(true), 0);
  ASSERT_TRUE(control_->Cancel(a.id, "done").ok());
  ASSERT_TRUE(control_->Cancel(b->id, "done").ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(c->id), JobState::kRunning);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

// A higher-priority job of another tenant takes an MPS device by suspending every task of the tenant holding it:
// one victim would leave the device to that tenant still.
TEST_F(ControlPlaneTest, PreemptionEmptiesAnMpsDeviceForAnotherTenant) {
  options_.min_runtime = 0;
  Open();
  Node n1 = MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build();
  n1.devices[0].mode = DeviceMode::kMps;
  ASSERT_TRUE(control_->RegisterNode(n1).ok());
  auto lab = store_->CreateTenant("lab", false, TenantQuota{}, clock_.NowMicros());
  ASSERT_TRUE(lab.ok()) << lab.status().ToString();
  JobRecord low1 = Submit(Preemptible(Spec("low1", 1, 1, 10, 30)));
  JobRecord low2 = Submit(Preemptible(Spec("low2", 1, 1, 10, 30)));
  EXPECT_EQ(control_->RunPass(true), 2);
  clock_.Advance(kMicrosPerSecond);
  auto high = control_->Submit(lab->id, Spec("high", 1, 1, 90, 30));
  ASSERT_TRUE(high.ok()) << high.status().ToString();
  EXPECT_EQ(control_->RunPass(false), 1);
  EXPECT_EQ(StateOf(high->id), JobState::kRunning);
  EXPECT_EQ(StateOf(low1.id), JobState::kQueued);
  EXPECT_EQ(StateOf(low2.id), JobState::kQueued);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

// While a preemptor of another tenant waits for its victims to leave an MPS device, the victims' tenant gets no
// new task there: one would keep the device from the preemptor (an MPS device serves one tenant at a time).
TEST_F(ControlPlaneTest, AnMpsDeviceAwaitingItsPreemptorTakesNoNewTaskOfTheVictimsTenant) {
  options_.min_runtime = 0;
  Open();
  Node n1 = MakeNode("n1").WithGpus(1, "A100", 81920).Build();
  n1.devices[0].mode = DeviceMode::kMps;
  ASSERT_TRUE(control_->RegisterNode(n1).ok());
  auto lab = store_->CreateTenant("lab", false, TenantQuota{}, clock_.NowMicros());
  ASSERT_TRUE(lab.ok()) << lab.status().ToString();
  JobRecord low = Submit(Preemptible(Spec("low", 1, 1, 10, 30)));
  EXPECT_EQ(control_->RunPass(true), 1);
  ASSERT_TRUE(control_->TaskStarted(low.id, clock_.NowMicros()).ok());
  clock_.Advance(kMicrosPerSecond);
  auto high = control_->Submit(lab->id, Spec("high", 1, 1, 90, 30));
  ASSERT_TRUE(high.ok()) << high.status().ToString();
  EXPECT_EQ(control_->RunPass(false), 0);
  EXPECT_EQ(StateOf(low.id), JobState::kSuspending);
  JobRecord more = Submit(Spec("more", 1, 1, 10, 30));  // the victims' tenant: fits beside it, but must not
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(StateOf(more.id), JobState::kQueued);
  ASSERT_TRUE(control_->SuspendDone(low.id, "checkpointed and exited 0").ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(high->id), JobState::kScheduled);
  EXPECT_EQ(StateOf(more.id), JobState::kQueued);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

TEST_F(ControlPlaneTest, NodeChecks) {
  EXPECT_EQ(control_->Heartbeat("nope").code(), StatusCode::kNotFound);
  EXPECT_EQ(control_->SetCordoned("nope", true).code(), StatusCode::kNotFound);
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Build()).ok());
  EXPECT_EQ(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", -1).Build()).code(),
            StatusCode::kInvalidArgument);  // ValidateNode: negative memory
  ASSERT_TRUE(control_->SetCordoned("n1", true).ok());
  JobRecord j = Submit(Spec("a", 1));
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_FALSE(control_->PendingReason(j.id).empty());
  ASSERT_TRUE(control_->SetCordoned("n1", false).ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(j.id), JobState::kScheduled);  // a real (non-simulated) node waits for its agent
}

}  // namespace
TEST_F(ControlPlaneTest, AdminPriorityChangeReordersTheQueueAndDecidesPreemption) {
  options_.min_runtime = 0;
  Open();
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build()).ok());
  // Re-ordering: c (low, earlier) and d (normal) wait behind x; raising c puts it first.
  JobRecord x = Submit(Spec("x", 1, 1, 50, 100));
  EXPECT_EQ(control_->RunPass(true), 1);
  JobRecord c = Submit(Spec("c", 1, 1, 10, 100));
  clock_.Advance(1000);
  JobRecord d = Submit(Spec("d", 1, 1, 50, 100));
  EXPECT_EQ(control_->RunPass(true), 0);
  auto raised = control_->SetPriority(c.id, 90, "admin");
  ASSERT_TRUE(raised.ok()) << raised.status().ToString();
  EXPECT_EQ(raised->priority, 90);
  EXPECT_TRUE(HasEvent(c.id, "priority 10 -> 90 by admin"));
  ASSERT_TRUE(control_->Finish(x.id, JobState::kSucceeded, "done").ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(c.id), JobState::kRunning);
  EXPECT_EQ(StateOf(d.id), JobState::kQueued);
  ASSERT_TRUE(control_->Cancel(c.id, "test").ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(d.id), JobState::kRunning);

  // Preemption: a running preemptible job lowered below a waiting one becomes its victim; a waiting job raised
  // above a running one preempts it.
  ASSERT_TRUE(control_->Cancel(d.id, "test").ok());
  JobRecord a = Submit(Preemptible(Spec("a", 1, 1, 50, 100)));
  EXPECT_EQ(control_->RunPass(true), 1);
  clock_.Advance(kMicrosPerSecond);
  JobRecord b = Submit(Preemptible(Spec("b", 1, 1, 50, 100)));
  EXPECT_EQ(control_->RunPass(false), 0);  // equal priority never preempts
  ASSERT_TRUE(control_->SetPriority(b.id, 60, "admin").ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(b.id), JobState::kRunning);
  EXPECT_EQ(StateOf(a.id), JobState::kQueued);
  EXPECT_TRUE(HasEvent(a.id, "suspended for job " + b.id.ToString()));
  clock_.Advance(kMicrosPerSecond);
  ASSERT_TRUE(control_->SetPriority(b.id, 5, "ops").ok());  // held job: the next pass sees it at 5
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(a.id), JobState::kRunning);
  EXPECT_EQ(StateOf(b.id), JobState::kQueued);
  EXPECT_TRUE(HasEvent(b.id, "priority 60 -> 5 by ops"));
  EXPECT_TRUE(control_->CheckConsistency().ok());

  // Bad input: out of range, unknown job, finished job; an unchanged priority records nothing.
  EXPECT_EQ(control_->SetPriority(a.id, 101, "admin").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(control_->SetPriority(a.id, -1, "admin").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(control_->SetPriority(JobId(999), 1, "admin").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(control_->SetPriority(x.id, 1, "admin").status().code(), StatusCode::kFailedPrecondition);
  const size_t events = store_->JobEvents(a.id)->size();
  EXPECT_TRUE(control_->SetPriority(a.id, 50, "admin").ok());
  EXPECT_EQ(store_->JobEvents(a.id)->size(), events);
}

TEST_F(ControlPlaneTest, SuspensionCapAndMinRuntimeSurviveARestart) {
  options_.min_runtime = 0;
  options_.max_suspensions_per_hour = 1;
  Open();
  ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Simulated().Build()).ok());
  JobRecord low = Submit(Preemptible(Spec("low", 1, 1, 10, 100)));
  EXPECT_EQ(control_->RunPass(true), 1);
  clock_.Advance(kMicrosPerSecond);
  JobRecord high1 = Submit(Spec("high1", 1, 1, 90, 100));
  EXPECT_EQ(control_->RunPass(false), 1);  // low suspended once: the cap
  ASSERT_TRUE(control_->Finish(high1.id, JobState::kSucceeded, "done").ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(low.id), JobState::kRunning);
  clock_.Advance(kMicrosPerSecond);
  Open();  // a restart: the suspension is counted from the store
  JobRecord high2 = Submit(Spec("high2", 1, 1, 90, 100));
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(StateOf(low.id), JobState::kRunning);
  EXPECT_EQ(StateOf(high2.id), JobState::kQueued);
  clock_.Advance(3600 * kMicrosPerSecond);  // an hour later the cap no longer holds
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(high2.id), JobState::kRunning);
  ASSERT_TRUE(control_->Finish(high2.id, JobState::kSucceeded, "done").ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(low.id), JobState::kRunning);

  // Min-runtime counts from the last start as the store has it, across a restart too.
  options_.min_runtime = 600 * kMicrosPerSecond;
  options_.max_suspensions_per_hour = 3;
  clock_.Advance(300 * kMicrosPerSecond);
  Open();
  JobRecord high3 = Submit(Spec("high3", 1, 1, 90, 100));
  EXPECT_EQ(control_->RunPass(true), 0);  // low started 300 s ago
  EXPECT_EQ(StateOf(low.id), JobState::kRunning);
  clock_.Advance(301 * kMicrosPerSecond);
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(StateOf(high3.id), JobState::kRunning);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

}  // namespace xpool::server
