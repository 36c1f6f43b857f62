#pragma once
// The flags `xpool server` (server_command.cc) and `xpool up` (up_command.cc) share, defined once so that their
// names, defaults and help stay the same in both. Header-only; stateless.
#include "common/flags.h"
#include "server/server.h"

namespace xpool::cli {

// The HTTP transport's connection limits and deadlines (docs/api.md, "Connections and limits").
inline void AddHttpServerFlags(FlagSet& flags, server::ServerOptions* options) {
  flags.String("http-transport", &options->http_transport,
               "epoll (default: an event loop with deadlines and connection caps) or threads (cpp-httplib, a "
               "worker per open connection; for comparison)");
  flags.Int("max-connections", &options->max_connections, "HTTP connections open at once (default 10000)");
  flags.Int("max-connections-per-client", &options->max_connections_per_client,
            "HTTP connections open at once from one client address (default 1024); past either cap: 503");
  flags.Int("header-timeout-ms", &options->header_timeout_ms,
            "a request head must arrive within this (default 10000); else 408 and the connection is closed");
  flags.Int("body-timeout-ms", &options->body_timeout_ms,
            "a request body must arrive within this after its head (default 30000); else 408");
  flags.Int("idle-timeout-ms", &options->idle_timeout_ms,
            "keep-alive connections idle this long close (default 30000)");
  flags.Int("write-timeout-ms", &options->write_timeout_ms,
            "an answer the client reads none of for this long is dropped with its connection (default 10000)");
}

// --node-timeout, --min-runtime, --max-suspensions-per-hour, --agent-nice, --web-dir and the HTTP flags, into
// `options`.
inline void AddSharedServerFlags(FlagSet& flags, server::ServerOptions* options) {
  flags.Int("node-timeout", &options->node_timeout_s, "seconds without a heartbeat before a node is lost (default 30)");
  flags.Int("min-runtime", &options->min_runtime_s,
            "seconds a job runs before it may be suspended for others (default 600)");
  flags.Int("max-suspensions-per-hour", &options->max_suspensions_per_hour, "suspensions per job per hour (default 3)");
  flags.Int("agent-nice", &options->agent_nice,
            "nice value 0..19 of the agents' gRPC calls, below the API's requests (default 10; 0 = the same)");
  flags.String("web-dir", &options->web_dir, "Studio's built web UI (default: BIN/../web, else the build's web/)");
  AddHttpServerFlags(flags, options);
}

}  // namespace xpool::cli
