#pragma once
// The flags `xpool server` (server_command.cc) and `xpool up` (up_command.cc) share, defined once so that their
// names, defaults and help stay the same in both. Header-only; stateless.
#include "common/flags.h"
#include "server/server.h"

namespace xpool::cli {

// --node-timeout, --min-runtime, --max-suspensions-per-hour and --web-dir, into `options`.
inline void AddSharedServerFlags(FlagSet& flags, server::ServerOptions* options) {
  flags.Int("node-timeout", &options->node_timeout_s, "seconds without a heartbeat before a node is lost (default 30)");
  flags.Int("min-runtime", &options->min_runtime_s,
            "seconds a job runs before it may be suspended for others (default 600)");
  flags.Int("max-suspensions-per-hour", &options->max_suspensions_per_hour, "suspensions per job per hour (default 3)");
  flags.String("web-dir", &options->web_dir, "Studio's built web UI (default: BIN/../web, else the build's web/)");
}

}  // namespace xpool::cli
