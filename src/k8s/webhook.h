#pragma once
// The mutating admission webhook (`xpool k8s webhook`): AdmissionReview v1 in, AdmissionReview v1 out.
//
// For a Pod that asks for any managed resource (every vendor profile's names):
//   - the requests and annotations are validated with the extender's own mapping (PodToDemand); a malformed one
//     is denied with the same clear message the filter would give;
//   - a pod that pins itself to a node (spec.nodeName) or names another scheduler is denied (xpool must place
//     it to account for the devices);
//   - otherwise schedulerName is set to xpool's with a JSON patch (nothing to patch when it already is).
// Other objects and pods without managed resources are allowed unchanged. Anything the webhook cannot read is
// denied (fail closed), and the Helm chart registers it with failurePolicy: Fail for the same reason.
// Stateless; thread-safe.
#include <string>
#include <string_view>

#include "k8s/http_server.h"

namespace xpool::k8s {

struct WebhookOptions {
  std::string scheduler_name = "xpool-scheduler";
};

// Handles one POSTed AdmissionReview. A body that is not an AdmissionReview with a request is HTTP 400.
HttpReply HandleAdmissionReview(std::string_view body, const WebhookOptions& options);

// Standard base64 (the AdmissionResponse's patch field), exposed for tests.
std::string Base64Encode(std::string_view data);
std::string Base64Decode(std::string_view data);

}  // namespace xpool::k8s
