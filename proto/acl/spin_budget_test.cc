#include "proto/acl/spin_budget.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace acld {
namespace {

constexpr int64_t kShortSleepNs = 20000;

bool Never() { return false; }
bool Always() { return true; }

// A sleep this short teaches the budget to cover it (the trap of two sides
// that both sleep), and a poll that then finds its peer keeps that lesson
// trusted: the next short sleep teaches again.
TEST(SpinBudgetTest, AShortSleepRaisesTheBudgetWhileItsPollsSucceed) {
  SpinBudget budget;
  budget.Slept(kShortSleepNs);
  EXPECT_GE(budget.ns(), kShortSleepNs);
  EXPECT_TRUE(budget.Poll(Always));
  for (int i = 0; i < 20; ++i) ASSERT_FALSE(budget.Poll(Never));  // back to the floor
  ASSERT_EQ(budget.ns(), SpinBudget::kMinNs);
  budget.Slept(kShortSleepNs);
  EXPECT_GE(budget.ns(), kShortSleepNs);
  EXPECT_EQ(budget.sleeps_ignored_left(), 0);
}

// On a busy host sleeps look short while polls that long still fail: each
// failed lesson makes the next sleeps teach nothing, twice as many each time,
// up to a bound; the budget meanwhile stays at what its polls found.
TEST(SpinBudgetTest, LessonsThatPollsRefuteAreIgnoredForLongerEachTime) {
  SpinBudget budget;
  int expected_ignored = 0;
  for (int lesson = 0; lesson < 10; ++lesson) {
    budget.Slept(kShortSleepNs);
    ASSERT_GE(budget.ns(), kShortSleepNs) << "lesson " << lesson;
    for (int i = 0; i < 20; ++i) ASSERT_FALSE(budget.Poll(Never));
    expected_ignored = std::min(2 * expected_ignored + 1, SpinBudget::kMaxSleepsIgnored);
    ASSERT_EQ(budget.sleeps_ignored_left(), expected_ignored) << "lesson " << lesson;
    for (int i = 0; i < expected_ignored; ++i) {
      budget.Slept(kShortSleepNs);
      ASSERT_EQ(budget.ns(), SpinBudget::kMinNs) << "lesson " << lesson << ", sleep " << i;
    }
  }
  EXPECT_EQ(expected_ignored, SpinBudget::kMaxSleepsIgnored);
}

// Polls that succeed again (the peer keeps up once more) shorten what is
// ignored, and a long sleep never teaches, ignored or not.
TEST(SpinBudgetTest, SuccessfulPollsRestoreTrustInSleeps) {
  SpinBudget budget;
  for (int lesson = 0; lesson < 3; ++lesson) {
    while (budget.sleeps_ignored_left() > 0) budget.Slept(kShortSleepNs);
    budget.Slept(kShortSleepNs);
    ASSERT_FALSE(budget.Poll(Never));
  }
  ASSERT_EQ(budget.sleeps_ignored_left(), 7);
  ASSERT_TRUE(budget.Poll(Always));
  EXPECT_EQ(budget.sleeps_ignored_left(), 3);
  ASSERT_TRUE(budget.Poll(Always));
  ASSERT_TRUE(budget.Poll(Always));
  EXPECT_EQ(budget.sleeps_ignored_left(), 0);
  for (int i = 0; i < 20; ++i) ASSERT_FALSE(budget.Poll(Never));
  budget.Slept(SpinBudget::kMaxNs + 1);
  EXPECT_EQ(budget.ns(), SpinBudget::kMinNs);
  budget.Slept(kShortSleepNs);
  EXPECT_GE(budget.ns(), kShortSleepNs);
}

}  // namespace
}  // namespace acld
