#include "daemon/server/log_limiter.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/server/text_sanitizer.h"

namespace acld::server {
namespace {

// Longest line a client can cause (after escaping).
constexpr size_t kMaxLineBytes = 2048;

// A tenant's log is kept after its last session closed until its bucket is
// full again (a tenant that closes everything and starts over gets no fresh
// burst); rested ones are forgotten once there are more than this many.
constexpr size_t kTenantLogsKept = 64;

struct Registry {
  struct TenantLog {
    std::shared_ptr<RateLimitedLog> log;
    size_t sessions = 0;
  };
  absl::Mutex mu;
  std::map<SessionId, std::pair<std::shared_ptr<SessionLog>, Tenant>> logs ABSL_GUARDED_BY(mu);
  // By the tenant itself, not its name: two groups whose public names are
  // alike are two tenants.
  std::map<Tenant, TenantLog> tenants ABSL_GUARDED_BY(mu);
};

Registry& Logs() {
  static Registry* registry = new Registry;
  return *registry;
}

}  // namespace

LogLimiter::LogLimiter(Options options, absl::Time now)
    : options_(options), tokens_(options.burst), refilled_(now) {}

LogLimiter::Decision LogLimiter::Take(absl::Time now) {
  if (now > refilled_) {
    tokens_ = std::min(options_.burst,
                       tokens_ + absl::ToDoubleSeconds(now - refilled_) * options_.per_second);
    refilled_ = now;
  }
  Decision decision;
  if (tokens_ < 1) {
    if (suppressed_++ == 0) first_suppressed_ = now;
    return decision;
  }
  tokens_ -= 1;
  decision.allow = true;
  decision.suppressed = TakeSuppressed(now, &decision.over);
  return decision;
}

void LogLimiter::CountSuppressed(uint64_t lines, absl::Time now) {
  if (suppressed_ == 0) first_suppressed_ = now;
  suppressed_ += lines;
}

bool LogLimiter::Refilled(absl::Time now) const {
  const double tokens = tokens_ + absl::ToDoubleSeconds(now - refilled_) * options_.per_second;
  return tokens >= options_.burst;
}

uint64_t LogLimiter::TakeSuppressed(absl::Time now, absl::Duration* over) {
  const uint64_t suppressed = suppressed_;
  *over = suppressed > 0 ? now - first_suppressed_ : absl::ZeroDuration();
  suppressed_ = 0;
  return suppressed;
}

RateLimitedLog::RateLimitedLog(std::string subject, LogLimiter::Options options,
                               std::shared_ptr<RateLimitedLog> also)
    : subject_(std::move(subject)), also_(std::move(also)), limiter_(options) {}

bool RateLimitedLog::Refilled(absl::Time now) {
  absl::MutexLock lock(&mu_);
  return limiter_.Refilled(now);
}

RateLimitedLog::~RateLimitedLog() {
  absl::Duration over;
  uint64_t suppressed;
  {
    absl::MutexLock lock(&mu_);
    suppressed = limiter_.TakeSuppressed(absl::Now(), &over);
  }
  if (suppressed > 0 && also_ != nullptr && !also_->Allow(spdlog::level::info)) {
    also_->CountSuppressed(suppressed);  // its summary is left out too: `also` says so
    return;
  }
  if (suppressed > 0) {
    spdlog::info("{}: suppressed {} log lines in the last {}", subject_, suppressed,
                 absl::FormatDuration(absl::Trunc(over, absl::Milliseconds(100))));
  }
}

bool RateLimitedLog::Allow(spdlog::level::level_enum level) {
  LogLimiter::Decision decision;
  {
    absl::MutexLock lock(&mu_);
    decision = limiter_.Take(absl::Now());
  }
  if (!decision.allow) return false;
  if (also_ != nullptr && !also_->Allow(level)) {
    // Left out by `also`, which counted the line: it summarizes this log's
    // left-out lines too (a summary is a line like any other).
    also_->CountSuppressed(decision.suppressed);
    return false;
  }
  if (decision.suppressed > 0) {
    spdlog::log(level, "{}: suppressed {} log lines in the last {}", subject_, decision.suppressed,
                absl::FormatDuration(absl::Trunc(decision.over, absl::Milliseconds(100))));
  }
  return true;
}

void RateLimitedLog::CountSuppressed(uint64_t lines) {
  if (lines == 0) return;
  absl::MutexLock lock(&mu_);
  limiter_.CountSuppressed(lines, absl::Now());
}

void RateLimitedLog::Write(spdlog::level::level_enum level, absl::string_view message) {
  spdlog::log(level, "{}: {}", subject_, SanitizeText(message, kMaxLineBytes));
}

SessionLog::SessionLog(SessionId session, LogLimiter::Options options,
                       std::shared_ptr<RateLimitedLog> tenant)
    : RateLimitedLog(absl::StrCat("session ", session), options, std::move(tenant)) {}

std::shared_ptr<SessionLog> SessionLog::Open(SessionId session, const Tenant& tenant,
                                             LogLimiter::Options options,
                                             LogLimiter::Options tenant_options) {
  std::vector<std::shared_ptr<RateLimitedLog>> forgotten;  // summaries outside the lock
  std::shared_ptr<SessionLog> replaced;
  Registry& registry = Logs();
  absl::MutexLock lock(&registry.mu);
  if (registry.tenants.size() >= kTenantLogsKept) {
    const absl::Time now = absl::Now();
    for (auto it = registry.tenants.begin(); it != registry.tenants.end();) {
      // A tenant whose last lines were left out is forgotten too: its
      // summary is logged as its log goes (before, such a tenant was kept
      // for good, and a pod's churn grew the map without bound).
      if (it->second.sessions == 0 && it->second.log->Refilled(now)) {
        forgotten.push_back(std::move(it->second.log));
        it = registry.tenants.erase(it);
      } else {
        ++it;
      }
    }
  }
  Registry::TenantLog& tenant_log = registry.tenants[tenant];
  if (tenant_log.log == nullptr) {
    tenant_log.log = std::make_shared<RateLimitedLog>(tenant.ToString(), tenant_options);
  }
  ++tenant_log.sessions;
  auto log = std::make_shared<SessionLog>(session, options, tenant_log.log);
  auto& entry = registry.logs[session];
  if (entry.first != nullptr) {
    --registry.tenants[entry.second].sessions;
    replaced = std::move(entry.first);
  }
  entry = {log, tenant};
  return log;
}

void SessionLog::Close(SessionId session) {
  std::shared_ptr<SessionLog> closing;  // its summary is logged outside the lock
  Registry& registry = Logs();
  absl::MutexLock lock(&registry.mu);
  auto it = registry.logs.find(session);
  if (it == registry.logs.end()) return;
  closing = std::move(it->second.first);
  --registry.tenants[it->second.second].sessions;
  registry.logs.erase(it);
}

std::shared_ptr<RateLimitedLog> SessionLog::For(SessionId session) {
  static auto* unregistered =
      new std::shared_ptr<RateLimitedLog>(std::make_shared<RateLimitedLog>("unregistered session"));
  Registry& registry = Logs();
  absl::MutexLock lock(&registry.mu);
  auto it = registry.logs.find(session);
  return it != registry.logs.end() ? it->second.first : *unregistered;
}

}  // namespace acld::server
