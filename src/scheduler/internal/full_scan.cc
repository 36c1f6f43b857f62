// The full-scan engine: Schedule() on every call, for policies that promise nothing about their scores (they may
// draw from the rng or keep state between calls).
#include "scheduler/internal/engine.h"

namespace xpool::scheduler_internal {
namespace {

// FullScan: keeps nothing between calls. Owned by one Scheduler; not thread-safe (the policy is not).
class FullScan final : public Engine {
 public:
  explicit FullScan(const EngineContext& context) : context_(context) {}
  bool Schedule(const TaskRequest& request, Rng& rng, ScheduleOutcome* out) override {
    *out = xpool::Schedule(context_.state, request, context_.policy, rng);
    return true;
  }

 private:
  EngineContext context_;
};

}  // namespace

std::unique_ptr<Engine> MakeFullScan(const EngineContext& context) { return std::make_unique<FullScan>(context); }

}  // namespace xpool::scheduler_internal
