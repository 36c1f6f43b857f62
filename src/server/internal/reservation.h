#pragma once
// Reservations for preemptors (kube-scheduler's "nominated node"): a job that suspended victims to make room
// waits for them to checkpoint and leave; meanwhile the room they free is held for it, so that neither its
// victims (back in the queue) nor any other waiting job takes it. The control plane books the free part of each
// waiting preemptor's planned allocations into its state for a pass's duration (FreePartOf), and books the preemptor
// itself at the planned allocations as soon as its last victim has left. Pure functions; thread-safe.
#include <vector>

#include "model/cluster_state.h"

namespace xpool::server::internal {

// The part of `planned` that is free in `state` now: cpu and memory up to what the node has free, each device
// grant up to the device's free memory and compute (grants with nothing free dropped, and those on a device in MPS
// mode another user's tasks still hold). Booking it (Apply) holds that room; what the victims still hold is held
// by them.
Allocation FreePartOf(const ClusterState& state, const Allocation& planned);

// For each device `planned` names that is in MPS mode and still held by another user's tasks (the victims
// leaving): allocations that take what is left of it as that user's — its free memory and compute, then every
// free place for a sharer — so that no further task of theirs lands there before the preemptor (an MPS device
// serves one user at a time: one more would keep it from the preemptor). Empty when there is none.
std::vector<Allocation> MpsDevicesKeptFor(const ClusterState& state, const Allocation& planned);

}  // namespace xpool::server::internal
