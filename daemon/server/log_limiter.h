// Log lines a client can cause, rate-limited so that no process floods the
// daemon's log: a token bucket per subject (a session, or one kind of
// refusal), and a summary line of what was left out. A session's lines also
// take from its tenant's bucket (all sessions of a uid or quota group), so
// that opening sessions over and over, each with a fresh bucket, floods
// nothing either.
//
//   session 7: call failed with 107000: ...
//   session 7: suppressed 1234 log lines in the last 12.5s
//   uid 1000: suppressed 5678 log lines in the last 3s
//
// Every line is sanitized (text_sanitizer.h): client-chosen text inside it
// cannot forge lines or carry terminal escapes.
#ifndef ACLD_DAEMON_SERVER_LOG_LIMITER_H_
#define ACLD_DAEMON_SERVER_LOG_LIMITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/core/session_id.h"
#include "daemon/core/tenant.h"
#include "spdlog/spdlog.h"

namespace acld::server {

// A token bucket: `per_second` lines on average, up to `burst` at once.
// Not thread-safe (RateLimitedLog locks around it).
class LogLimiter {
 public:
  struct Options {
    double per_second = 20;
    double burst = 50;
  };
  // What to do with one line.
  struct Decision {
    bool allow = false;
    // When allowed after a quiet spell: how many lines were left out since
    // the last summary, and over how long (log the summary first).
    uint64_t suppressed = 0;
    absl::Duration over;
  };

  explicit LogLimiter(Options options, absl::Time now = absl::Now());
  Decision Take(absl::Time now);
  // Lines left out and not summarized yet (taken: the count restarts).
  uint64_t TakeSuppressed(absl::Time now, absl::Duration* over);
  // Lines left out elsewhere that this limiter's summary is to count.
  void CountSuppressed(uint64_t lines, absl::Time now);
  // Whether its bucket is full again (forgetting it then gives no one a
  // burst it would not have had; what it left out is summarized as it goes).
  bool Refilled(absl::Time now) const;

 private:
  const Options options_;
  double tokens_;
  absl::Time refilled_;
  uint64_t suppressed_ = 0;
  absl::Time first_suppressed_;
};

// Lines about one subject ("session 7", "refused sessions"), limited. A line
// is logged only when `also` (if any) lets it through too; what `also` left
// out is summarized by `also`.
class RateLimitedLog {
 public:
  explicit RateLimitedLog(std::string subject, LogLimiter::Options options = {},
                          std::shared_ptr<RateLimitedLog> also = nullptr);
  // Logs the summary of lines left out since the last one.
  ~RateLimitedLog();
  RateLimitedLog(const RateLimitedLog&) = delete;
  RateLimitedLog& operator=(const RateLimitedLog&) = delete;

  // "<subject>: <formatted>", sanitized, unless over the rate.
  template <typename... Args>
  void Info(fmt::format_string<Args...> format, Args&&... args) {
    Emit(spdlog::level::info, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Warn(fmt::format_string<Args...> format, Args&&... args) {
    Emit(spdlog::level::warn, format, std::forward<Args>(args)...);
  }
  bool Refilled(absl::Time now);

 private:
  void CountSuppressed(uint64_t lines);
  // Takes a token: true when a line may be logged now (a pending summary is
  // logged first).
  bool Allow(spdlog::level::level_enum level);
  template <typename... Args>
  void Emit(spdlog::level::level_enum level, fmt::format_string<Args...> format, Args&&... args) {
    if (!spdlog::should_log(level) || !Allow(level)) return;
    Write(level, fmt::format(format, std::forward<Args>(args)...));
  }
  void Write(spdlog::level::level_enum level, absl::string_view message);

  const std::string subject_;
  const std::shared_ptr<RateLimitedLog> also_;
  absl::Mutex mu_;
  LogLimiter limiter_ ABSL_GUARDED_BY(mu_);
};

// A session's log. RuntimeService opens one per session; whoever logs about
// the session finds it by id:
//
//   SessionLog::For(session)->Info("call failed with {}: {}", code, message);
class SessionLog : public RateLimitedLog {
 public:
  // What all sessions of one tenant may log together.
  static constexpr LogLimiter::Options kTenantRate{/*per_second=*/20, /*burst=*/100};

  SessionLog(SessionId session, LogLimiter::Options options,
             std::shared_ptr<RateLimitedLog> tenant);

  // Registers the log of a session that opens (replacing any earlier one),
  // whose lines also count to `tenant`'s.
  static std::shared_ptr<SessionLog> Open(SessionId session, const Tenant& tenant,
                                          LogLimiter::Options options = {},
                                          LogLimiter::Options tenant_options = kTenantRate);
  // Forgets it; its summary is logged when the last holder lets go.
  static void Close(SessionId session);
  // The session's log; one shared by every unregistered session otherwise.
  static std::shared_ptr<RateLimitedLog> For(SessionId session);
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_LOG_LIMITER_H_
