#include "scheduler/internal/score_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace xpool::scheduler_internal {
namespace {

// Property test: random moves of nodes between states; after each, the live slots agree with a plain map from
// state to its nodes (each live state in exactly one slot, its nodes ascending, free slots reused), and each
// occupied slot is listed once, in its capacity's partition.
TEST(LiveStatesTest, SlotsFollowRandomMoves) {
  Rng rng(5);
  constexpr int kNodes = 40;
  constexpr uint32_t kStates = 12;
  LiveStates live;
  live.Reset(kNodes);
  std::vector<int> state_of(kNodes, -1);
  for (int step = 0; step < 2000; ++step) {
    const int node = std::uniform_int_distribution<int>(0, kNodes - 1)(rng);
    const uint32_t state = std::uniform_int_distribution<uint32_t>(0, kStates - 1)(rng);
    Capacity c;
    c.free_cpu = state;  // the capacity travels with the state
    c.idle = static_cast<int>(state % 3);
    c.best_share = 250 * (state % 5);
    live.Move(node, state, c);
    state_of[node] = static_cast<int>(state);
    std::map<uint32_t, std::set<int>> expected;
    for (int n = 0; n < kNodes; ++n) {
      if (state_of[n] >= 0) expected[state_of[n]].insert(n);
    }
    std::map<uint32_t, std::set<int>> seen;
    for (int s = 0; s < live.size(); ++s) {
      const LiveStates::Slot& slot = live.slot(s);
      if (slot.count == 0) {
        EXPECT_EQ(slot.state, LiveStates::kNoState);
        continue;
      }
      ASSERT_EQ(seen.count(slot.state), 0u) << "state in two slots, step " << step;
      const std::vector<int>& nodes = live.nodes(s);
      ASSERT_EQ(static_cast<int>(nodes.size()), slot.count);
      EXPECT_TRUE(std::is_sorted(nodes.begin(), nodes.end()));
      EXPECT_EQ(live.first_node(s), nodes.front());
      EXPECT_EQ(live.last_node(s), nodes.back());
      EXPECT_EQ(slot.capacity.free_cpu, static_cast<int64_t>(slot.state));
      for (int n : nodes) EXPECT_EQ(live.slot_of(n), s);
      seen[slot.state] = std::set<int>(nodes.begin(), nodes.end());
    }
    ASSERT_EQ(seen, expected) << "step " << step;
    for (uint32_t st = 0; st < kStates + 2; ++st) EXPECT_EQ(live.holds(st), expected.count(st) > 0) << step;
    std::multiset<int> listed;
    for (int p = 0; p < kParts; ++p) {
      for (int s : live.part(p)) {
        ASSERT_GT(live.slot(s).count, 0) << "free slot listed, step " << step;
        EXPECT_EQ(CapacityPart(live.slot(s).capacity), p);
        listed.insert(s);
      }
    }
    ASSERT_EQ(listed.size(), seen.size()) << "step " << step;
    ASSERT_EQ(std::set<int>(listed.begin(), listed.end()).size(), listed.size()) << "slot listed twice";
    // Slots are reused: never more slots than states ever live at once (here at most kStates).
    ASSERT_LE(live.size(), static_cast<int>(kStates));
  }
  live.Reset(kNodes);
  for (uint32_t st = 0; st < kStates; ++st) EXPECT_FALSE(live.holds(st));
  for (int s = 0; s < live.size(); ++s) EXPECT_EQ(live.slot(s).count, 0);
  for (int p = 0; p < kParts; ++p) EXPECT_TRUE(live.part(p).empty());
}

}  // namespace
}  // namespace xpool::scheduler_internal
