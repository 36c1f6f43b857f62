#pragma once
// Prometheus text exposition helpers shared by the extender's and the device plugin's /metrics (private to
// src/k8s): label escaping, the labels that identify one device so its series join with DCGM's and HAMi's, and
// milli-units written as a decimal ratio without floating point. Stateless functions; thread-safe.
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace xpool::k8s::internal {

// A label value with Prometheus' escapes (\\, \", \n).
std::string PromLabel(const std::string& value);

// node, nodeid (HAMi), Hostname (DCGM), deviceuuid (HAMi), UUID (DCGM), deviceidx (HAMi), model, gpu (DCGM: the
// index), device (DCGM: "nvidia<index>") — without braces. The server's device series carry the same labels.
std::string DeviceLabels(const std::string& node, const std::string& uuid, int index, const std::string& model);

// podnamespace, podname, poduid, container — without braces; `pod_key` is "namespace/name".
std::string PodLabels(const std::string& pod_key, const std::string& pod_uid, const std::string& container);

// "1.234" for 1234 milli-units (a ratio of a whole device).
std::string MilliText(int64_t milli);

// "# HELP name help\n# TYPE name type\n".
std::string PromHeader(const std::string& name, const std::string& help, const std::string& type = "gauge");

// Checks text against the exposition format's rules that Prometheus (and `promtool check metrics`) enforce:
// every line a HELP, a TYPE or a sample `name{label="value",...} number`; names and label names well formed;
// label values properly escaped; each family's TYPE given once, before its samples; no series twice.
// InvalidArgument naming the line otherwise. For tests: it needs no promtool (the e2e tests also run promtool
// where it is installed, tests/k8s/promtool_check.h).
Status CheckExposition(std::string_view text);

}  // namespace xpool::k8s::internal
