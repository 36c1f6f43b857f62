// The Helm chart (deploy/helm/xpool), checked without `helm` (Debian has none): every template is rendered by a
// tiny renderer that understands exactly the template subset the chart uses — `{{ .Values.x }}`, `.Release.*`,
// `.Chart.*`, `| quote`, `toYaml … | nindent N`, `toJson …`, `if` / `if not` / `else` / `end` and `range` on their
// own lines;
// `include` (the generated certificate) becomes a placeholder — and anything else fails the test, so the chart
// stays checkable. The rendered documents must parse as YAML and carry what kube-scheduler, the API server and
// Prometheus need; the extender stanza must match the routes and managed resources the code serves.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "k8s/pod_demand.h"
#include "k8s/time_share.h"

namespace xpool::k8s {
namespace {

namespace fs = std::filesystem;

std::string ChartDir() {
  const char* src = std::getenv("XPOOL_SOURCE_DIR");
  return std::string(src != nullptr ? src : ".") + "/deploy/helm/xpool";
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

class MiniHelm {
 public:
  MiniHelm(YAML::Node values, std::string release, std::string ns)
      : values_(std::move(values)), release_(std::move(release)), ns_(std::move(ns)) {}

  // Renders one template; records unsupported constructs in errors().
  std::string Render(const std::string& text) {
    std::vector<std::string> lines;
    std::stringstream ss(text);
    for (std::string line; std::getline(ss, line);) lines.push_back(line);
    size_t i = 0;
    std::string out;
    RenderBlock(lines, &i, YAML::Node(), true, &out);
    if (i != lines.size()) errors_.push_back("unbalanced end at line " + std::to_string(i + 1));
    return out;
  }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  // The inside of "{{- x -}}" → "x" (dashes and spaces stripped); `dash` tells whether it began with "{{-".
  static std::string Inner(const std::string& action, bool* dash) {
    std::string inner = action.substr(2, action.size() - 4);
    *dash = !inner.empty() && inner.front() == '-';
    if (*dash) inner.erase(0, 1);
    if (!inner.empty() && inner.back() == '-') inner.pop_back();
    return Trim(inner);
  }

  // A line holding only an if / else / end / range action; *action is "if .Values.x", "end", ...
  static bool Control(const std::string& line, std::string* action) {
    const std::string t = Trim(line);
    if (t.size() < 4 || t.rfind("{{", 0) != 0 || t.compare(t.size() - 2, 2, "}}") != 0) return false;
    if (t.find("{{", 2) != std::string::npos) return false;
    bool dash = false;
    const std::string inner = Inner(t, &dash);
    const std::string word = inner.substr(0, inner.find(' '));
    if (word != "if" && word != "else" && word != "end" && word != "range") return false;
    *action = inner;
    return true;
  }

  // Renders lines from *i until a matching else/end (returned in *i pointing at it) or the end.
  void RenderBlock(const std::vector<std::string>& lines, size_t* i, const YAML::Node& dot, bool active,
                   std::string* out) {
    while (*i < lines.size()) {
      std::string action;
      if (!Control(lines[*i], &action)) {
        if (active) *out += Line(lines[*i], dot);
        ++*i;
        continue;
      }
      if (action == "end" || action == "else") return;
      ++*i;
      if (action.rfind("if", 0) == 0) {
        const bool cond = Truthy(Condition(Trim(action.substr(2)), dot));
        std::string skipped;
        RenderBlock(lines, i, dot, active && cond, active && cond ? out : &skipped);
        std::string a;
        if (*i < lines.size() && Control(lines[*i], &a) && a == "else") {
          ++*i;
          RenderBlock(lines, i, dot, active && !cond, active && !cond ? out : &skipped);
        }
        ++*i;   // end
      } else {  // range
        const YAML::Node list = Lookup(Trim(action.substr(5)), dot);
        const size_t start = *i;
        size_t after = start;
        std::string skipped;
        RenderBlock(lines, &after, dot, false, &skipped);  // find the end
        if (active && list.IsSequence()) {
          for (const YAML::Node& item : list) {
            size_t j = start;
            RenderBlock(lines, &j, item, true, out);
          }
        }
        *i = after + 1;
      }
    }
  }

  YAML::Node Condition(const std::string& expr, const YAML::Node& dot) {
    if (expr.rfind("not ", 0) == 0) {
      YAML::Node inverted(!Truthy(Lookup(Trim(expr.substr(4)), dot)));
      return inverted;
    }
    return Lookup(expr, dot);
  }

  static bool Truthy(const YAML::Node& n) {
    if (!n || n.IsNull()) return false;
    if (n.IsScalar()) {
      const std::string s = n.Scalar();
      return !s.empty() && s != "false" && s != "0";
    }
    return n.size() > 0;
  }

  YAML::Node Lookup(const std::string& expr, const YAML::Node& dot) {
    if (expr == ".") return dot;
    if (expr == ".Release.Name") return YAML::Node(release_);
    if (expr == ".Release.Namespace") return YAML::Node(ns_);
    if (expr == ".Release.Service") return YAML::Node("Helm");
    if (expr == ".Chart.AppVersion" || expr == ".Chart.Version") return YAML::Node("0.1.0");
    if (expr.rfind(".Values.", 0) != 0) {
      errors_.push_back("unsupported expression: " + expr);
      return YAML::Node();
    }
    YAML::Node node = YAML::Clone(values_);
    std::stringstream path(expr.substr(8));
    for (std::string key; std::getline(path, key, '.');) {
      if (!node.IsMap() || !node[key]) {
        errors_.push_back("missing value: " + expr);
        return YAML::Node();
      }
      node = YAML::Node(node[key]);
    }
    return node;
  }

  std::string Evaluate(const std::string& expr, const YAML::Node& dot) {
    if (expr.rfind("toYaml ", 0) == 0) {
      const size_t bar = expr.find('|');
      const std::string tail = bar == std::string::npos ? "" : Trim(expr.substr(bar + 1));
      if (tail.rfind("nindent ", 0) != 0) {
        errors_.push_back("toYaml without nindent: " + expr);
        return "";
      }
      YAML::Emitter e;
      e << Lookup(Trim(expr.substr(7, bar - 7)), dot);
      const std::string pad(std::stoi(tail.substr(8)), ' ');
      std::string out;
      std::stringstream ss(e.c_str());
      for (std::string l; std::getline(ss, l);) out += "\n" + pad + l;
      return out;
    }
    if (expr.rfind("toJson ", 0) == 0) return ToJson(Lookup(Trim(expr.substr(7)), dot));
    if (expr.rfind("include ", 0) == 0) return "cmVuZGVyZWQtYnktaGVsbQ==";
    const size_t pipe = expr.find('|');
    if (pipe != std::string::npos) {
      if (Trim(expr.substr(pipe + 1)) != "quote") errors_.push_back("unsupported pipe: " + expr);
      return "\"" + Scalar(Lookup(Trim(expr.substr(0, pipe)), dot), expr) + "\"";
    }
    return Scalar(Lookup(expr, dot), expr);
  }

  // As Helm's toJson of values read from YAML: integers and booleans as such, other scalars as strings.
  static std::string ToJson(const YAML::Node& n) {
    if (!n || n.IsNull()) return "null";
    if (n.IsSequence()) {
      std::string out = "[";
      for (size_t i = 0; i < n.size(); ++i) out += (i == 0 ? "" : ",") + ToJson(n[i]);
      return out + "]";
    }
    if (n.IsMap()) {
      std::string out = "{";
      for (auto it = n.begin(); it != n.end(); ++it) {
        out += (out.size() == 1 ? "" : ",") + Quoted(it->first.Scalar()) + ":" + ToJson(it->second);
      }
      return out + "}";
    }
    const std::string s = n.Scalar();
    const bool integer = !s.empty() && s.find_first_not_of("-0123456789") == std::string::npos;
    return integer || s == "true" || s == "false" ? s : Quoted(s);
  }
  static std::string Quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  }

  std::string Scalar(const YAML::Node& n, const std::string& expr) {
    if (n.IsScalar()) return n.Scalar();
    errors_.push_back("not a scalar: " + expr);
    return "";
  }

  std::string Line(const std::string& line, const YAML::Node& dot) {
    std::string out;
    size_t last = 0;
    bool trimmed_line = false;
    for (size_t open = line.find("{{"); open != std::string::npos; open = line.find("{{", last)) {
      const size_t close = line.find("}}", open);
      if (close == std::string::npos) {
        errors_.push_back("unclosed action: " + line);
        break;
      }
      std::string before = line.substr(last, open - last);
      bool dash = false;
      const std::string value = Evaluate(Inner(line.substr(open, close + 2 - open), &dash), dot);
      if (dash) {  // "{{-": eat the whitespace (and the newline) before it
        const size_t keep = before.find_last_not_of(" \t");
        before = keep == std::string::npos ? "" : before.substr(0, keep + 1);
        if (before.empty() && last == 0) trimmed_line = true;
      }
      out += before + value;
      last = close + 2;
    }
    out += line.substr(last);
    if (trimmed_line && !out.empty() && out[0] == '\n') return out.substr(1) + "\n";
    return out + "\n";
  }

  YAML::Node values_;
  std::string release_, ns_;
  std::vector<std::string> errors_;
};

struct Rendered {
  std::vector<YAML::Node> docs;
};

// Renders every template with `values` and parses the results.
Rendered RenderChart(const YAML::Node& values) {
  Rendered out;
  for (const auto& entry : fs::directory_iterator(ChartDir() + "/templates")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().filename().string());
    MiniHelm helm(values, "xpool", "xpool-system");
    const std::string text = helm.Render(ReadFile(entry.path()));
    for (const std::string& e : helm.errors()) ADD_FAILURE() << e;
    std::vector<YAML::Node> docs;
    try {
      docs = YAML::LoadAll(text);
    } catch (const YAML::Exception& e) {
      ADD_FAILURE() << "rendered YAML does not parse: " << e.what() << "\n" << text;
      continue;
    }
    for (const YAML::Node& d : docs) {
      if (!d || d.IsNull()) continue;
      EXPECT_TRUE(d["apiVersion"] && d["kind"] && d["metadata"]["name"]) << text;
      out.docs.push_back(d);
    }
  }
  return out;
}

const YAML::Node* Find(const Rendered& r, const std::string& kind, const std::string& name_suffix) {
  for (const YAML::Node& d : r.docs) {
    const std::string name = d["metadata"]["name"].as<std::string>();
    if (d["kind"].as<std::string>() == kind && name.size() >= name_suffix.size() &&
        name.compare(name.size() - name_suffix.size(), name_suffix.size(), name_suffix) == 0) {
      return &d;
    }
  }
  return nullptr;
}

YAML::Node DefaultValues() { return YAML::LoadFile(ChartDir() + "/values.yaml"); }

TEST(HelmChartTest, ChartAndValuesParse) {
  YAML::Node chart = YAML::LoadFile(ChartDir() + "/Chart.yaml");
  EXPECT_EQ(chart["apiVersion"].as<std::string>(), "v2");
  EXPECT_EQ(chart["name"].as<std::string>(), "xpool");
  EXPECT_TRUE(chart["version"]);
  YAML::Node values = DefaultValues();
  EXPECT_EQ(values["webhook"]["failurePolicy"].as<std::string>(), "Fail");
}

TEST(HelmChartTest, SchedulerConfigurationHasTheExtenderStanza) {
  Rendered r = RenderChart(DefaultValues());
  const YAML::Node* cm = Find(r, "ConfigMap", "-scheduler-config");
  ASSERT_NE(cm, nullptr);
  YAML::Node config = YAML::Load((*cm)["data"]["config.yaml"].as<std::string>());
  EXPECT_EQ(config["kind"].as<std::string>(), "KubeSchedulerConfiguration");
  EXPECT_EQ(config["apiVersion"].as<std::string>(), "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(config["profiles"][0]["schedulerName"].as<std::string>(), "xpool-scheduler");
  const YAML::Node e = config["extenders"][0];
  ASSERT_TRUE(e);
  // The extender serves <urlPrefix>/<verb> (SchedulerService): prefix and port come from the same values.
  EXPECT_EQ(e["urlPrefix"].as<std::string>(), "http://127.0.0.1:8888/scheduler");
  EXPECT_EQ(e["filterVerb"].as<std::string>(), "filter");
  EXPECT_EQ(e["prioritizeVerb"].as<std::string>(), "prioritize");
  EXPECT_EQ(e["bindVerb"].as<std::string>(), "bind");
  EXPECT_EQ(e["preemptVerb"].as<std::string>(), "preempt");
  EXPECT_TRUE(e["nodeCacheCapable"].as<bool>());
  EXPECT_FALSE(e["ignorable"].as<bool>());
  EXPECT_GT(e["weight"].as<int>(), 0);
  std::set<std::string> managed;
  for (const YAML::Node& m : e["managedResources"]) {
    managed.insert(m["name"].as<std::string>());
    EXPECT_TRUE(m["ignoredByScheduler"].as<bool>());
  }
  const std::vector<std::string> names = ManagedResourceNames();
  EXPECT_EQ(managed, std::set<std::string>(names.begin(), names.end()))
      << "values.yaml managedResources must list every vendor profile's resources";
}

TEST(HelmChartTest, WebhookFailsClosedAndReachesTheServedPath) {
  Rendered r = RenderChart(DefaultValues());
  const YAML::Node* mwc = Find(r, "MutatingWebhookConfiguration", "-webhook");
  ASSERT_NE(mwc, nullptr);
  const YAML::Node w = (*mwc)["webhooks"][0];
  EXPECT_EQ(w["failurePolicy"].as<std::string>(), "Fail");
  EXPECT_EQ(w["admissionReviewVersions"][0].as<std::string>(), "v1");
  EXPECT_EQ(w["clientConfig"]["service"]["path"].as<std::string>(), "/mutate");
  EXPECT_FALSE(w["clientConfig"]["caBundle"]) << "written by the certgen Job, never generated at render time";
  const YAML::Node excluded = w["namespaceSelector"]["matchExpressions"][1]["values"];
  EXPECT_EQ(excluded[0].as<std::string>(), "xpool-system") << "never gate its own namespace";
  EXPECT_EQ(Find(r, "Secret", "-webhook-tls"), nullptr) << "the certgen Job creates it once";
  const YAML::Node* dep = Find(r, "Deployment", "-webhook");
  ASSERT_NE(dep, nullptr);
  const YAML::Node cmd = (*dep)["spec"]["template"]["spec"]["containers"][0]["command"];
  EXPECT_EQ(cmd[2].as<std::string>(), "webhook");
}

std::set<std::string> Grants(const YAML::Node& role) {
  std::set<std::string> grants;
  for (const YAML::Node& rule : role["rules"]) {
    std::string names;
    for (const YAML::Node& n : rule["resourceNames"]) names += "/" + n.as<std::string>();
    for (const YAML::Node& res : rule["resources"]) {
      for (const YAML::Node& verb : rule["verbs"]) {
        grants.insert(res.as<std::string>() + names + ":" + verb.as<std::string>());
      }
    }
  }
  return grants;
}

std::set<std::string> Args(const YAML::Node& container) {
  std::set<std::string> args;
  for (const YAML::Node& a : container["command"]) args.insert(a.as<std::string>());
  return args;
}

// kube-scheduler's leader election uses leaderElection.resourceName; system:kube-scheduler grants only the lease
// named "kube-scheduler", so the chart grants the one it configures.
TEST(HelmChartTest, SchedulerCanTakeItsLease) {
  Rendered r = RenderChart(DefaultValues());
  const YAML::Node* cm = Find(r, "ConfigMap", "-scheduler-config");
  ASSERT_NE(cm, nullptr);
  const YAML::Node election = YAML::Load((*cm)["data"]["config.yaml"].as<std::string>())["leaderElection"];
  const std::string lease = election["resourceName"].as<std::string>();
  const std::string ns = election["resourceNamespace"].as<std::string>();
  const YAML::Node* role = Find(r, "Role", "-scheduler-lease");
  ASSERT_NE(role, nullptr);
  EXPECT_EQ((*role)["metadata"]["namespace"].as<std::string>(), ns);
  const std::set<std::string> grants = Grants(*role);
  for (const char* verb : {"get", "update"}) {
    EXPECT_EQ(grants.count("leases/" + lease + ":" + verb), 1u) << verb << " on lease " << lease;
  }
  EXPECT_EQ(grants.count("leases:create"), 1u);
  const YAML::Node* binding = Find(r, "RoleBinding", "-scheduler-lease");
  ASSERT_NE(binding, nullptr);
  EXPECT_EQ((*binding)["roleRef"]["name"].as<std::string>(), (*role)["metadata"]["name"].as<std::string>());
  EXPECT_EQ((*binding)["subjects"][0]["name"].as<std::string>(), "xpool-scheduler");
}

// Certificates are made once by a hook Job (kept on upgrade), the webhook reloads a changed one, an opt-out
// label on a pod or namespace bypasses the webhook, and only kube-scheduler (loopback) can call bind.
TEST(HelmChartTest, WebhookCertificatesSelectorsAndNetworkPolicies) {
  for (const auto& entry : fs::directory_iterator(ChartDir() + "/templates")) {
    const std::string text = ReadFile(entry.path());
    EXPECT_EQ(text.find("genCA"), std::string::npos) << entry.path() << ": no certificate made at render time";
    EXPECT_EQ(text.find("genSignedCert"), std::string::npos) << entry.path();
  }
  Rendered r = RenderChart(DefaultValues());
  const YAML::Node* create = Find(r, "Job", "-certgen-create");
  ASSERT_NE(create, nullptr);
  EXPECT_EQ((*create)["metadata"]["annotations"]["helm.sh/hook"].as<std::string>(), "pre-install,pre-upgrade");
  const YAML::Node create_args = (*create)["spec"]["template"]["spec"]["containers"][0]["args"];
  EXPECT_EQ(create_args[0].as<std::string>(), "create");
  std::set<std::string> args;
  for (const YAML::Node& a : create_args) args.insert(a.as<std::string>());
  EXPECT_EQ(args.count("--secret-name=xpool-webhook-tls"), 1u);
  const YAML::Node* patch = Find(r, "Job", "-certgen-patch");
  ASSERT_NE(patch, nullptr);
  EXPECT_EQ((*patch)["metadata"]["annotations"]["helm.sh/hook"].as<std::string>(), "post-install,post-upgrade");
  args.clear();
  for (const YAML::Node& a : (*patch)["spec"]["template"]["spec"]["containers"][0]["args"]) {
    args.insert(a.as<std::string>());
  }
  EXPECT_EQ(args.count("--webhook-name=xpool-webhook"), 1u);
  EXPECT_EQ(args.count("--patch-mutating=true"), 1u);
  const YAML::Node* certgen_role = Find(r, "ClusterRole", "-certgen");
  ASSERT_NE(certgen_role, nullptr);
  EXPECT_EQ(Grants(*certgen_role).count("mutatingwebhookconfigurations/xpool-webhook:update"), 1u);
  const YAML::Node* secrets = Find(r, "Role", "-certgen");
  ASSERT_NE(secrets, nullptr);
  EXPECT_EQ(Grants(*secrets).count("secrets:create"), 1u);

  const YAML::Node* dep = Find(r, "Deployment", "-webhook");
  ASSERT_NE(dep, nullptr);
  EXPECT_EQ((*dep)["spec"]["replicas"].as<int>(), 2);
  EXPECT_EQ(Args((*dep)["spec"]["template"]["spec"]["containers"][0]).count("--tls-reload-seconds=60"), 1u);

  const YAML::Node* mwc = Find(r, "MutatingWebhookConfiguration", "-webhook");
  ASSERT_NE(mwc, nullptr);
  const YAML::Node w = (*mwc)["webhooks"][0];
  for (const char* selector : {"objectSelector", "namespaceSelector"}) {
    const YAML::Node opt_out = w[selector]["matchExpressions"][0];
    EXPECT_EQ(opt_out["key"].as<std::string>(), "xpool.io/webhook-ignore") << selector;
    EXPECT_EQ(opt_out["operator"].as<std::string>(), "NotIn") << selector;
    EXPECT_EQ(opt_out["values"][0].as<std::string>(), "true") << selector;
  }

  const YAML::Node* sched = Find(r, "Deployment", "-scheduler");
  ASSERT_NE(sched, nullptr);
  const std::set<std::string> extender = Args((*sched)["spec"]["template"]["spec"]["containers"][1]);
  EXPECT_EQ(extender.count("--listen=127.0.0.1:8888"), 1u) << "the verbs on loopback: only kube-scheduler binds";
  EXPECT_EQ(extender.count("--metrics-listen=0.0.0.0:9395"), 1u);
  const YAML::Node* svc = Find(r, "Service", "-scheduler");
  ASSERT_NE(svc, nullptr);
  EXPECT_EQ((*svc)["spec"]["ports"].size(), 1u);
  EXPECT_EQ((*svc)["spec"]["ports"][0]["port"].as<int>(), 9395) << "the Service exposes metrics, not the verbs";
  const YAML::Node* np = Find(r, "NetworkPolicy", "-scheduler");
  ASSERT_NE(np, nullptr);
  EXPECT_EQ((*np)["spec"]["ingress"][0]["ports"].size(), 1u);
  EXPECT_EQ((*np)["spec"]["ingress"][0]["ports"][0]["port"].as<int>(), 9395);
  const YAML::Node* webhook_np = Find(r, "NetworkPolicy", "-webhook");
  ASSERT_NE(webhook_np, nullptr);
  EXPECT_EQ((*webhook_np)["spec"]["ingress"][0]["ports"][0]["port"].as<int>(), 8443);

  YAML::Node values = DefaultValues();
  values["webhook"]["replicas"] = 3;
  values["scheduler"]["replicas"] = 2;
  values["networkPolicy"]["enabled"] = false;
  values["devicePlugin"]["runtimeClassName"] = "nvidia";
  values["devicePlugin"]["cdi"] = true;
  Rendered custom = RenderChart(values);
  EXPECT_EQ((*Find(custom, "Deployment", "-webhook"))["spec"]["replicas"].as<int>(), 3);
  EXPECT_EQ((*Find(custom, "Deployment", "-scheduler"))["spec"]["replicas"].as<int>(), 2);
  EXPECT_EQ(Find(custom, "NetworkPolicy", "-scheduler"), nullptr);
  const YAML::Node* ds = Find(custom, "DaemonSet", "-device-plugin");
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ((*ds)["spec"]["template"]["spec"]["runtimeClassName"].as<std::string>(), "nvidia");
  EXPECT_EQ(Args((*ds)["spec"]["template"]["spec"]["containers"][0]).count("--cdi"), 1u);
  EXPECT_FALSE((*Find(r, "DaemonSet", "-device-plugin"))["spec"]["template"]["spec"]["runtimeClassName"]);
}

TEST(HelmChartTest, DevicePluginDaemonSetByDefault) {
  Rendered r = RenderChart(DefaultValues());
  const YAML::Node* ds = Find(r, "DaemonSet", "-device-plugin");
  ASSERT_NE(ds, nullptr);
  const YAML::Node pod = (*ds)["spec"]["template"]["spec"];
  const YAML::Node c = pod["containers"][0];
  EXPECT_EQ(c["command"][2].as<std::string>(), "device-plugin");
  std::set<std::string> args;
  for (const YAML::Node& a : c["command"]) args.insert(a.as<std::string>());
  EXPECT_EQ(args.count("--split-count=10"), 1u);
  EXPECT_EQ(args.count("--resource-name=nvidia.com/gpu"), 1u);
  EXPECT_EQ(args.count("--device-plugin-dir=/var/lib/kubelet/device-plugins"), 1u);
  EXPECT_EQ(args.count("--preload-file=/usr/local/xpool/ld.so.preload"), 1u);
  EXPECT_EQ(args.count("--shared-region-dir=/var/lib/xpool/containers"), 1u);
  EXPECT_EQ(args.count("--dev-root=/host/dev"), 1u);
  EXPECT_EQ(args.count("--metrics-listen=:9396"), 1u);
  EXPECT_EQ(args.count("--region-sweep-interval=60"), 1u);
  EXPECT_EQ(c["ports"][0]["name"].as<std::string>(), "metrics");
  EXPECT_EQ(c["ports"][0]["containerPort"].as<int>(), 9396);
  EXPECT_EQ(args.count("--cdi"), 0u);
  EXPECT_EQ(c["env"][0]["name"].as<std::string>(), "NODE_NAME");
  EXPECT_EQ(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>(), "spec.nodeName");
  bool socket_dir = false;
  for (const YAML::Node& v : pod["volumes"]) {
    socket_dir |= v["hostPath"]["path"].as<std::string>() == "/var/lib/kubelet/device-plugins";
  }
  EXPECT_TRUE(socket_dir) << "kubelet.sock and the plugin's socket live in the host's device-plugins dir";
  EXPECT_EQ(pod["tolerations"][0]["key"].as<std::string>(), "nvidia.com/gpu");
  const YAML::Node* role = Find(r, "ClusterRole", "-device-plugin");
  ASSERT_NE(role, nullptr);
  std::set<std::string> grants;
  for (const YAML::Node& rule : (*role)["rules"]) {
    for (const YAML::Node& res : rule["resources"]) {
      for (const YAML::Node& verb : rule["verbs"]) grants.insert(res.as<std::string>() + ":" + verb.as<std::string>());
    }
  }
  EXPECT_EQ(grants.count("nodes:patch"), 1u) << "publishes xpool.io/node-devices";
  EXPECT_EQ(grants.count("pods:list"), 1u) << "finds the pod an Allocate is for";
}

TEST(HelmChartTest, SchedulerDeploymentRbacAndOptionalParts) {
  YAML::Node values = DefaultValues();
  values["devicePlugin"]["enabled"] = false;
  Rendered plain = RenderChart(values);
  EXPECT_EQ(Find(plain, "DaemonSet", "-device-plugin"), nullptr);
  EXPECT_EQ(Find(plain, "ServiceMonitor", "-scheduler"), nullptr);
  EXPECT_EQ(Find(plain, "PodMonitor", "-device-plugin"), nullptr);
  const YAML::Node* dep = Find(plain, "Deployment", "-scheduler");
  ASSERT_NE(dep, nullptr);
  const YAML::Node containers = (*dep)["spec"]["template"]["spec"]["containers"];
  EXPECT_EQ(containers[0]["name"].as<std::string>(), "kube-scheduler");
  EXPECT_EQ(containers[1]["command"][2].as<std::string>(), "scheduler");
  EXPECT_EQ(containers[1]["resources"]["requests"]["cpu"].as<std::string>(), "100m");
  const YAML::Node* role = Find(plain, "ClusterRole", "-extender");
  ASSERT_NE(role, nullptr);
  bool binds = false;
  for (const YAML::Node& rule : (*role)["rules"]) {
    for (const YAML::Node& res : rule["resources"]) binds |= res.as<std::string>() == "pods/binding";
  }
  EXPECT_TRUE(binds);
  bool evicts = false;
  for (const YAML::Node& rule : (*role)["rules"]) {
    for (const YAML::Node& res : rule["resources"]) {
      evicts |= res.as<std::string>() == "pods/eviction" && rule["verbs"][0].as<std::string>() == "create";
    }
  }
  EXPECT_TRUE(evicts) << "time-sharing evicts victims past their deadline";
  auto args_of = [](const YAML::Node& deployment) {
    std::set<std::string> out;
    for (const YAML::Node& a : deployment["spec"]["template"]["spec"]["containers"][1]["command"]) {
      out.insert(a.as<std::string>());
    }
    return out;
  };
  const std::set<std::string> args = args_of(*dep);
  EXPECT_EQ(args.count("--min-runtime=600"), 1u);
  EXPECT_EQ(args.count("--max-suspensions-per-hour=3"), 1u);
  EXPECT_EQ(args.count("--scheduler-name=xpool-scheduler"), 1u);
  EXPECT_EQ(args.count("--tenants=/etc/xpool/tenants.json"), 1u);
  EXPECT_EQ(containers[1]["volumeMounts"][0]["mountPath"].as<std::string>(), "/etc/xpool");

  // The tenants of the values reach the extender as the JSON it reads.
  values["scheduler"]["timeSharing"]["tenants"] =
      YAML::Load("[{namespace: team-a, guaranteed: {devices: 2}, quota: {devices: 8, device_memory: 320Gi}}]");
  Rendered with_tenants = RenderChart(values);
  const YAML::Node* config = Find(with_tenants, "ConfigMap", "-scheduler-config");
  ASSERT_NE(config, nullptr);
  Result<TenantConfig> tenants = TenantConfig::Parse((*config)["data"]["tenants.json"].as<std::string>());
  ASSERT_TRUE(tenants.ok()) << tenants.status().ToString();
  ASSERT_NE(tenants->Find("team-a"), nullptr);
  EXPECT_EQ(tenants->Find("team-a")->guaranteed.gpu_compute_milli, 2000);
  EXPECT_EQ(tenants->Find("team-a")->limit.gpu_memory_mib, 320 * 1024);
  values["scheduler"]["timeSharing"]["enabled"] = false;
  const Rendered without = RenderChart(values);
  const YAML::Node* off = Find(without, "Deployment", "-scheduler");
  ASSERT_NE(off, nullptr);
  EXPECT_EQ(args_of(*off).count("--no-time-sharing"), 1u);
  EXPECT_EQ(args_of(*off).count("--tenants=/etc/xpool/tenants.json"), 0u);

  values["devicePlugin"]["enabled"] = true;
  values["metrics"]["serviceMonitor"]["enabled"] = true;
  values["webhook"]["certManager"]["enabled"] = true;
  Rendered full = RenderChart(values);
  const YAML::Node* ds = Find(full, "DaemonSet", "-device-plugin");
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ((*ds)["spec"]["template"]["spec"]["nodeSelector"]["xpool.io/accelerator"].as<std::string>(), "true");
  const YAML::Node* sm = Find(full, "ServiceMonitor", "-scheduler");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ((*sm)["spec"]["endpoints"][0]["path"].as<std::string>(), "/metrics");
  EXPECT_EQ((*sm)["spec"]["endpoints"][0]["port"].as<std::string>(), "metrics");
  const YAML::Node* pm = Find(full, "PodMonitor", "-device-plugin");
  ASSERT_NE(pm, nullptr) << "the device plugins' usage metrics are scraped per pod";
  EXPECT_EQ((*pm)["spec"]["podMetricsEndpoints"][0]["port"].as<std::string>(), "metrics");
  EXPECT_EQ((*pm)["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"].as<std::string>(), "device-plugin");
  EXPECT_NE(Find(full, "Certificate", "-webhook"), nullptr);
  EXPECT_EQ(Find(full, "Secret", "-webhook-tls"), nullptr) << "cert-manager writes the secret";
  const YAML::Node* mwc = Find(full, "MutatingWebhookConfiguration", "-webhook");
  ASSERT_NE(mwc, nullptr);
  EXPECT_FALSE((*mwc)["webhooks"][0]["clientConfig"]["caBundle"]);
  EXPECT_TRUE((*mwc)["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]);
}

}  // namespace
}  // namespace xpool::k8s
