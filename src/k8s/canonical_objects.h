#pragma once
// What the API server does to the quantities of an object it stores: each one is parsed and written back in
// canonical form (quantity.h: 8000 → "8k", 1073741824 → "1Gi", 1000m → "1"; a JSON number becomes a string).
// The test doubles of the API server (FakeKubeApi, tests/k8s' FakeApiServer) run every object through this, so
// the extender, webhook and device plugin tests read what production reads.
//
// The fields rewritten: containers' and init containers' resources.limits / .requests, spec.overhead,
// status.capacity, status.allocatable. A malformed quantity (which the real API server refuses with 422) is
// left as it was and reported as InvalidArgument naming the field; the others are still rewritten.
// Stateless functions; thread-safe.
#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "k8s/kube_objects.h"

namespace xpool::k8s {

// A Pod or Node object as JSON; the first malformed quantity is the error, e.g.
//   spec.containers[0].resources.limits[nvidia.com/gpumem]: Invalid value: "lots": is not a quantity (...)
Status CanonicalizeQuantities(nlohmann::json* object);
// The limits and requests of a parsed pod's containers and init containers.
Status CanonicalizeQuantities(PodInfo* pod);

}  // namespace xpool::k8s
