#pragma once
// HttpKubeApi: KubeApi over HTTP(S) to a real API server (in-cluster service account, or a URL and token), and
// to the fake API server of the tests. Each call uses its own connection, so calls from many threads never share
// a client. Thread-safe.
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "k8s/kube_api.h"

namespace xpool::k8s {

struct KubeApiConfig {
  std::string server;   // "https://10.96.0.1:443", "http://127.0.0.1:8080"
  std::string token;    // bearer token; "" = none
  std::string ca_file;  // CA bundle for https; "" = system default
  bool insecure_skip_verify = false;
  int64_t timeout_seconds = 10;        // connect and read timeout of ordinary calls
  int64_t watch_timeout_seconds = 60;  // the server ends each watch after this (then it is re-opened)
};

// The in-cluster configuration: KUBERNETES_SERVICE_HOST/PORT and the pod's service-account token and CA.
// FailedPrecondition when not running in a pod.
Result<KubeApiConfig> InClusterConfig();

std::unique_ptr<KubeApi> MakeHttpKubeApi(KubeApiConfig config);

}  // namespace xpool::k8s
