#include "daemon/server/log_limiter.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "daemon/server/text_sanitizer.h"

namespace acld::server {
namespace {

// Longest line a client can cause (after escaping).
constexpr size_t kMaxLineBytes = 2048;

struct Registry {
  absl::Mutex mu;
  std::map<SessionId, std::shared_ptr<SessionLog>> logs ABSL_GUARDED_BY(mu);
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

uint64_t LogLimiter::TakeSuppressed(absl::Time now, absl::Duration* over) {
  const uint64_t suppressed = suppressed_;
  *over = suppressed > 0 ? now - first_suppressed_ : absl::ZeroDuration();
  suppressed_ = 0;
  return suppressed;
}

RateLimitedLog::RateLimitedLog(std::string subject, LogLimiter::Options options)
    : subject_(std::move(subject)), limiter_(options) {}

RateLimitedLog::~RateLimitedLog() {
  absl::Duration over;
  uint64_t suppressed;
  {
    absl::MutexLock lock(&mu_);
    suppressed = limiter_.TakeSuppressed(absl::Now(), &over);
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
  if (decision.allow && decision.suppressed > 0) {
    spdlog::log(level, "{}: suppressed {} log lines in the last {}", subject_, decision.suppressed,
                absl::FormatDuration(absl::Trunc(decision.over, absl::Milliseconds(100))));
  }
  return decision.allow;
}

void RateLimitedLog::Write(spdlog::level::level_enum level, absl::string_view message) {
  spdlog::log(level, "{}: {}", subject_, SanitizeText(message, kMaxLineBytes));
}

SessionLog::SessionLog(SessionId session, LogLimiter::Options options)
    : RateLimitedLog(absl::StrCat("session ", session), options) {}

std::shared_ptr<SessionLog> SessionLog::Open(SessionId session, LogLimiter::Options options) {
  auto log = std::make_shared<SessionLog>(session, options);
  Registry& registry = Logs();
  absl::MutexLock lock(&registry.mu);
  registry.logs[session] = log;
  return log;
}

void SessionLog::Close(SessionId session) {
  std::shared_ptr<SessionLog> closing;  // its summary is logged outside the lock
  Registry& registry = Logs();
  absl::MutexLock lock(&registry.mu);
  auto it = registry.logs.find(session);
  if (it == registry.logs.end()) return;
  closing = std::move(it->second);
  registry.logs.erase(it);
}

std::shared_ptr<RateLimitedLog> SessionLog::For(SessionId session) {
  static auto* unregistered =
      new std::shared_ptr<RateLimitedLog>(std::make_shared<RateLimitedLog>("unregistered session"));
  Registry& registry = Logs();
  absl::MutexLock lock(&registry.mu);
  auto it = registry.logs.find(session);
  return it != registry.logs.end() ? it->second : *unregistered;
}

}  // namespace acld::server
