#include "k8s/scheduler_service.h"

namespace xpool::k8s {

Result<std::unique_ptr<SchedulerService>> SchedulerService::Start(SchedulerServiceOptions options,
                                                                  std::unique_ptr<KubeApi> api) {
  std::string host;
  int port = 0;
  RETURN_IF_ERROR(ParseListenAddress(options.listen, &host, &port));
  std::string prefix = options.url_prefix.empty() ? "/" : options.url_prefix;
  if (prefix.front() != '/') prefix = "/" + prefix;
  if (prefix.back() != '/') prefix += '/';

  std::unique_ptr<SchedulerService> s(new SchedulerService());
  s->api_ = std::move(api);
  ASSIGN_OR_RETURN(s->cluster_, KubeCluster::Create(options.cluster, RealClock::Instance()));
  s->extender_ = std::make_unique<Extender>(*s->cluster_, *s->api_, s->sync_);
  s->watcher_ = std::make_unique<ClusterWatcher>(*s->api_, *s->cluster_, s->sync_, options.watch);
  if (options.time_share) {
    s->time_share_ = std::make_unique<TimeShareLoop>(*s->api_, *s->cluster_, s->sync_, *options.time_share);
    s->extender_->SetTimeShare(s->time_share_.get());
  }

  Extender* e = s->extender_.get();
  s->server_.Post(prefix + "filter", [e](std::string_view body) { return e->Filter(body); });
  s->server_.Post(prefix + "prioritize", [e](std::string_view body) { return e->Prioritize(body); });
  s->server_.Post(prefix + "bind", [e](std::string_view body) { return e->Bind(body); });
  s->server_.Post(prefix + "preempt", [e](std::string_view body) { return e->Preempt(body); });
  // Health and metrics: on the verbs' server, or on a server of their own (the verbs then stay on loopback).
  std::string metrics_host;
  int metrics_port = 0;
  const bool separate = !options.metrics_listen.empty();
  if (separate) RETURN_IF_ERROR(ParseListenAddress(options.metrics_listen, &metrics_host, &metrics_port));
  HttpServer& observe = separate ? s->metrics_server_ : s->server_;
  observe.Get("/healthz", [](std::string_view) { return HttpReply{200, "ok\n", "text/plain"}; });
  const SyncState* sync = &s->sync_;
  observe.Get("/readyz", [sync](std::string_view) {
    Status st = sync->Check();
    return st.ok() ? HttpReply{200, "ok\n", "text/plain"} : HttpReply{503, st.message() + "\n", "text/plain"};
  });
  observe.Get("/metrics", [e](std::string_view) { return HttpReply{200, e->Metrics(), "text/plain; version=0.0.4"}; });
  s->watcher_->Start();
  Result<int> bound = s->server_.Start(host, port, options.tls_cert, options.tls_key);
  if (!bound.ok()) {
    s->watcher_->Stop();
    return bound.status();
  }
  s->port_ = *bound;
  if (s->time_share_) s->time_share_->Start();
  if (separate) {
    Result<int> metrics = s->metrics_server_.Start(metrics_host, metrics_port);
    if (!metrics.ok()) {
      s->Stop();
      return metrics.status();
    }
    s->metrics_port_ = *metrics;
  }
  return s;
}

void SchedulerService::Stop() {
  if (time_share_) time_share_->Stop();
  metrics_server_.Stop();
  server_.Stop();
  if (watcher_) watcher_->Stop();
}

}  // namespace xpool::k8s
