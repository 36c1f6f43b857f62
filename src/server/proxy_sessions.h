#pragma once
// ProxySessions: how a browser tab, which cannot send an Authorization header, opens an interactive job through
// the server's proxy (InteractiveProxy). An authenticated call (POST /api/v1/jobs/{id}/proxy-session) gets a
// one-time code for one job; the proxy exchanges it, once and within code_ttl, for a session whose id it sets
// as an HttpOnly cookie scoped to that job's proxy path; the session lasts session_ttl.
//
// Codes and sessions are random (GenerateToken: 256 bits), kept in memory only, by their SHA-256: a server
// restart ends them (the user clicks Open again). At most max_entries of each; expired ones are dropped as new
// ones come. Owned by the Server. Thread-safe (one mutex).
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"

namespace xpool::server {

struct ProxySessionOptions {
  TimeMicros code_ttl = 60 * kMicrosPerSecond;
  TimeMicros session_ttl = 12 * 3600 * kMicrosPerSecond;
  size_t max_entries = 10000;
};

class ProxySessions {
 public:
  explicit ProxySessions(Clock& clock, ProxySessionOptions options = {});

  struct Code {
    std::string code;
    TimeMicros expires_us = 0;
  };
  // A one-time code for `job`'s proxy. ResourceExhausted past max_entries live codes.
  Result<Code> CreateCode(JobId job);
  // Spends `code` (for `job`, not expired) and returns a new session id for the cookie, valid session_ttl.
  // Unauthenticated when the code is unknown, spent, expired or for another job.
  Result<std::string> Redeem(const std::string& code, JobId job);
  // OK when `session` is a live session for `job`; Unauthenticated otherwise.
  Status Check(const std::string& session, JobId job);
  TimeMicros session_ttl() const { return options_.session_ttl; }

 private:
  struct Entry {
    JobId job;
    TimeMicros expires_us = 0;
  };
  // Drops expired entries of `map` when it is full; false when it is still full.
  bool MakeRoomLocked(std::unordered_map<std::string, Entry>& map, TimeMicros now);

  Clock& clock_;
  const ProxySessionOptions options_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> codes_;     // by SHA-256 hex; guarded by mu_
  std::unordered_map<std::string, Entry> sessions_;  // by SHA-256 hex; guarded by mu_
};

}  // namespace xpool::server
