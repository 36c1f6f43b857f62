#include "server/proxy_sessions.h"

#include "store/token.h"

namespace xpool::server {

ProxySessions::ProxySessions(Clock& clock, ProxySessionOptions options) : clock_(clock), options_(options) {}

bool ProxySessions::MakeRoomLocked(std::unordered_map<std::string, Entry>& map, TimeMicros now) {
  if (map.size() < options_.max_entries) return true;
  std::erase_if(map, [now](const auto& kv) { return kv.second.expires_us <= now; });
  return map.size() < options_.max_entries;
}

Result<ProxySessions::Code> ProxySessions::CreateCode(JobId job) {
  ASSIGN_OR_RETURN(std::string code, GenerateToken());
  const TimeMicros now = clock_.NowMicros();
  std::lock_guard lock(mu_);
  if (!MakeRoomLocked(codes_, now)) return ResourceExhaustedError("too many proxy sessions being opened; retry later");
  codes_[Sha256Hex(code)] = Entry{job, now + options_.code_ttl};
  return Code{code, now + options_.code_ttl};
}

Result<std::string> ProxySessions::Redeem(const std::string& code, JobId job) {
  const Status refused = UnauthenticatedError(
      "this link to the job's proxy has expired or was used already; open the job again (Studio's Open button)");
  const TimeMicros now = clock_.NowMicros();
  {
    std::lock_guard lock(mu_);
    auto it = codes_.find(Sha256Hex(code));
    if (it == codes_.end()) return refused;
    const Entry e = it->second;
    codes_.erase(it);  // one use, whatever the outcome
    if (e.job != job || e.expires_us <= now) return refused;
  }
  ASSIGN_OR_RETURN(std::string session, GenerateToken());
  std::lock_guard lock(mu_);
  if (!MakeRoomLocked(sessions_, now)) return ResourceExhaustedError("too many proxy sessions; retry later");
  sessions_[Sha256Hex(session)] = Entry{job, now + options_.session_ttl};
  return session;
}

Status ProxySessions::Check(const std::string& session, JobId job) {
  const TimeMicros now = clock_.NowMicros();
  std::lock_guard lock(mu_);
  auto it = sessions_.find(Sha256Hex(session));
  if (it == sessions_.end() || it->second.job != job) return UnauthenticatedError("no valid proxy session");
  if (it->second.expires_us <= now) {
    sessions_.erase(it);
    return UnauthenticatedError("the proxy session has expired; open the job again");
  }
  return Status::Ok();
}

}  // namespace xpool::server
