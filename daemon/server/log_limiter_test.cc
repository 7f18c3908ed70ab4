#include "daemon/server/log_limiter.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "spdlog/sinks/base_sink.h"

namespace acld::server {
namespace {

TEST(LogLimiterTest, BurstThenRate) {
  const absl::Time start = absl::UnixEpoch() + absl::Hours(1000);
  LogLimiter limiter({/*per_second=*/20, /*burst=*/50}, start);
  int allowed = 0;
  for (int i = 0; i < 1000; ++i) allowed += limiter.Take(start).allow;
  EXPECT_EQ(allowed, 50);
  // One second later: 20 more, and the first says what was left out.
  const absl::Time later = start + absl::Seconds(1);
  LogLimiter::Decision first = limiter.Take(later);
  EXPECT_TRUE(first.allow);
  EXPECT_EQ(first.suppressed, 950u);
  EXPECT_EQ(first.over, absl::Seconds(1));
  allowed = 1;
  for (int i = 0; i < 100; ++i) allowed += limiter.Take(later).allow;
  EXPECT_EQ(allowed, 20);
  absl::Duration over;
  EXPECT_EQ(limiter.TakeSuppressed(later, &over), 81u);
  EXPECT_EQ(limiter.TakeSuppressed(later, &over), 0u);
  // Never more than the burst after a long quiet time.
  allowed = 0;
  for (int i = 0; i < 100; ++i) allowed += limiter.Take(later + absl::Hours(1)).allow;
  EXPECT_EQ(allowed, 50);
}

// Collects what spdlog writes.
class CaptureSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::vector<std::string> lines;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    lines.emplace_back(msg.payload.data(), msg.payload.size());
  }
  void flush_() override {}
};

class SessionLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sink_ = std::make_shared<CaptureSink>();
    previous_ = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink_));
  }
  void TearDown() override { spdlog::set_default_logger(previous_); }

  std::shared_ptr<CaptureSink> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

TEST_F(SessionLogTest, AFloodIsCutAndSummarized) {
  SessionLog::Open(7, Tenant(7, nullptr), {/*per_second=*/1, /*burst=*/5});
  for (int i = 0; i < 1000; ++i) SessionLog::For(7)->Info("call {} failed", i);
  ASSERT_EQ(sink_->lines.size(), 5u);
  EXPECT_EQ(sink_->lines[0], "session 7: call 0 failed");
  SessionLog::Close(7);
  ASSERT_EQ(sink_->lines.size(), 6u);
  EXPECT_EQ(sink_->lines[5].rfind("session 7: suppressed 995 log lines in the last", 0), 0u)
      << sink_->lines[5];
}

TEST_F(SessionLogTest, ClientTextCannotForgeLines) {
  SessionLog::Open(8, Tenant(8, nullptr));
  SessionLog::For(8)->Info("unknown kernel '{}'", "x\nsession 9 ended\x1b[2J");
  SessionLog::Close(8);
  ASSERT_EQ(sink_->lines.size(), 1u);
  EXPECT_EQ(sink_->lines[0], "session 8: unknown kernel 'x\\x0asession 9 ended\\x1b[2J'");
}

TEST_F(SessionLogTest, UnregisteredSessionsShareOneLimitedLog) {
  for (int i = 0; i < 1000; ++i) SessionLog::For(12345)->Info("line {}", i);
  EXPECT_LE(sink_->lines.size(), 51u);
  EXPECT_GE(sink_->lines.size(), 1u);
}

// A tenant that opens session after session, each with a fresh bucket of its
// own, is still held to its tenant's rate; another tenant is not.
TEST_F(SessionLogTest, ATenantsSessionsShareItsRate) {
  const LogLimiter::Options tenant_rate{/*per_second=*/0.001, /*burst=*/20};
  // Each session past its own burst too: its summary is a line like any other.
  const LogLimiter::Options session_rate{/*per_second=*/0.001, /*burst=*/2};
  for (SessionId session = 100; session < 300; ++session) {
    SessionLog::Open(session, Tenant(9, nullptr), session_rate, tenant_rate)->Info("opened");
    for (int i = 0; i < 10; ++i) SessionLog::For(session)->Info("call failed");
    SessionLog::Close(session);
  }
  EXPECT_EQ(sink_->lines.size(), 20u);
  SessionLog::Open(300, Tenant(10, nullptr), {}, tenant_rate)->Info("opened");
  SessionLog::Close(300);
  ASSERT_EQ(sink_->lines.size(), 21u);
  EXPECT_EQ(sink_->lines.back(), "session 300: opened");
  // The tenant's bucket outlives its sessions: starting over gets no burst.
  SessionLog::Open(301, Tenant(9, nullptr), {}, tenant_rate)->Info("opened");
  SessionLog::Close(301);
  EXPECT_EQ(sink_->lines.size(), 21u);
}

// Public names are the first 8 digits of a group's id: two groups may share
// one, and must not share a bucket through it.
TEST_F(SessionLogTest, GroupsWithAlikeNamesHaveTheirOwnRates) {
  const LogLimiter::Options tenant_rate{/*per_second=*/0.001, /*burst=*/3};
  const auto flooding = std::make_shared<QuotaGroup>("abcdef01" + std::string(56, '1'),
                                                     QuotaGroupSpec{});
  const auto quiet = std::make_shared<QuotaGroup>("abcdef01" + std::string(56, '2'),
                                                  QuotaGroupSpec{});
  ASSERT_EQ(flooding->name(), quiet->name());
  SessionLog::Open(400, Tenant(0, flooding), {}, tenant_rate);
  for (int i = 0; i < 10; ++i) SessionLog::For(400)->Info("call failed");
  ASSERT_EQ(sink_->lines.size(), 3u);
  SessionLog::Open(401, Tenant(0, quiet), {}, tenant_rate)->Info("opened");
  ASSERT_EQ(sink_->lines.size(), 4u);
  EXPECT_EQ(sink_->lines.back(), "session 401: opened");
  SessionLog::Close(400);
  SessionLog::Close(401);
}


// A tenant whose last lines were left out is forgotten once its bucket is
// full again and it has no session (its summary is logged then), like any
// other: such tenants were kept for good before.
TEST_F(SessionLogTest, ATenantWithLinesLeftOutIsForgottenWithItsSummary) {
  const LogLimiter::Options tenant_rate{/*per_second=*/1000, /*burst=*/2};
  SessionLog::Open(500, Tenant(5000, nullptr), {}, tenant_rate);
  for (int i = 0; i < 10; ++i) SessionLog::For(500)->Info("call failed");
  SessionLog::Close(500);
  ASSERT_EQ(sink_->lines.size(), 2u);
  absl::SleepFor(absl::Milliseconds(20));  // its bucket refills
  // Enough other tenants come and go for acld to forget some.
  for (SessionId session = 501; session < 501 + 70; ++session) {
    SessionLog::Open(session, Tenant(static_cast<uint32_t>(6000 + session), nullptr), {},
                     tenant_rate);
    SessionLog::Close(session);
  }
  bool summarized = false;
  for (const std::string& line : sink_->lines) {
    summarized |= line.rfind("uid 5000: suppressed 8 log lines", 0) == 0;
  }
  EXPECT_TRUE(summarized) << "the tenant's left-out lines were never summarized";
}

}  // namespace
}  // namespace acld::server
