#include "daemon/server/channel_pool.h"

#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "hal/testing/eventually.h"

namespace acld::server {
namespace {

// A member whose first turn holds its pool thread until released.
class HoldingMember : public ChannelPool::Member {
 public:
  bool Serve() override {
    if (turns_.fetch_add(1) == 0) {
      started_.Notify();
      release_.WaitForNotification();
    }
    return false;
  }
  absl::Notification started_;
  absl::Notification release_;
  std::atomic<int> turns_{0};
};

// The default pool follows the CPUs the process may run on: two at least
// (one thread would be busy whenever any session is), four at most.
TEST(ChannelPoolTest, TheDefaultSizeFollowsTheCpusAllowed) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  const int allowed = CPU_COUNT(&before);
  // At most: a cgroup's CPU quota may lower it.
  EXPECT_LE(ChannelPool::DefaultThreads(), std::clamp(allowed, 2, 4));
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &before)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(ChannelPool::DefaultThreads(), 2);
  ASSERT_EQ(sched_setaffinity(0, sizeof(before), &before), 0);
}

// Whether others wait for a thread is what lets a member poll for its
// client: a member that holds the only thread sees the work queued behind it.
TEST(ChannelPoolTest, TellsWhetherOthersWaitForAThread) {
  ChannelPool pool(/*threads=*/1);
  const int doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(doorbell, 0);
  auto member = std::make_shared<HoldingMember>();
  absl::StatusOr<uint64_t> id = pool.Add(doorbell, member, Tenant());
  ASSERT_TRUE(id.ok()) << id.status();
  member->started_.WaitForNotification();
  EXPECT_FALSE(pool.OthersWaiting());
  std::atomic<bool> ran{false};
  pool.Post([&ran] { ran.store(true); });
  EXPECT_TRUE(pool.OthersWaiting());
  member->release_.Notify();
  EXPECT_TRUE(hal::testing::Eventually([&] { return ran.load(); }));
  EXPECT_TRUE(hal::testing::Eventually([&] { return !pool.OthersWaiting(); }));
  pool.Remove(*id);
  close(doorbell);
}

// A pool thread is poked only when one sleeps: work queued while every
// thread is busy, or just as one goes to sleep, must still run. Bursts from
// outside with pauses (the threads fall asleep between them), and tasks
// that queue more from inside the pool.
TEST(ChannelPoolTest, WorkQueuedWhileThreadsSleepOrAreBusyAllRuns) {
  std::atomic<int> ran{0};
  std::function<void(int)> chain;
  // Destroyed first (its threads joined), before what its tasks use.
  auto pool = std::make_unique<ChannelPool>(/*threads=*/2);
  chain = [&](int left) {
    ran.fetch_add(1);
    if (left > 0) pool->Post([&chain, left] { chain(left - 1); });
  };
  constexpr int kBursts = 50;
  constexpr int kPerBurst = 20;
  for (int burst = 0; burst < kBursts; ++burst) {
    for (int i = 0; i < kPerBurst; ++i) pool->Post([&chain] { chain(2); });
    absl::SleepFor(absl::Microseconds(200 * (burst % 3)));
  }
  EXPECT_TRUE(hal::testing::Eventually([&] { return ran.load() == kBursts * kPerBurst * 3; }))
      << ran.load() << " of " << kBursts * kPerBurst * 3 << " ran";
  pool.reset();
}

// Records the order in which members' turns ran.
class RecordingMember : public ChannelPool::Member {
 public:
  RecordingMember(int name, absl::Mutex* mu, std::vector<int>* order)
      : name_(name), mu_(mu), order_(order) {}
  bool Serve() override {
    absl::MutexLock lock(mu_);
    order_->push_back(name_);
    ++turns_;
    return false;
  }
  std::atomic<int> turns_{0};

 private:
  const int name_;
  absl::Mutex* const mu_;
  std::vector<int>* const order_;
};

// Adds `member` and runs its turns until the next ones queue at the back.
uint64_t AddEstablished(ChannelPool& pool, int doorbell,
                        const std::shared_ptr<RecordingMember>& member) {
  absl::StatusOr<uint64_t> id = pool.Add(doorbell, member, Tenant());
  EXPECT_TRUE(id.ok()) << id.status();
  for (int turn = 1; turn <= ChannelPool::kTurnsAhead + 1; ++turn) {
    EXPECT_TRUE(hal::testing::Eventually([&] { return member->turns_.load() >= turn; }));
    pool.Wake(*id);
  }
  EXPECT_TRUE(hal::testing::Eventually(
      [&] { return member->turns_.load() >= ChannelPool::kTurnsAhead + 2; }));
  return *id;
}

// A process that just opened its session does not wait behind a whole round
// of the others' turns; an established one queues at the back.
TEST(ChannelPoolTest, ANewMembersFirstTurnsGoAheadOfEstablishedOnes) {
  ChannelPool pool(/*threads=*/1);
  int doorbells[3];
  for (int& doorbell : doorbells) {
    doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ASSERT_GE(doorbell, 0);
  }
  absl::Mutex mu;
  std::vector<int> order;
  constexpr int kEstablished = 1, kNew = 2;
  auto established = std::make_shared<RecordingMember>(kEstablished, &mu, &order);
  const uint64_t established_id = AddEstablished(pool, doorbells[0], established);

  // The only thread is held; meanwhile the established member and then a
  // new one have a turn to run.
  auto holder = std::make_shared<HoldingMember>();
  absl::StatusOr<uint64_t> holder_id = pool.Add(doorbells[1], holder, Tenant());
  ASSERT_TRUE(holder_id.ok()) << holder_id.status();
  holder->started_.WaitForNotification();
  {
    absl::MutexLock lock(&mu);
    order.clear();
  }
  pool.Wake(established_id);
  auto fresh = std::make_shared<RecordingMember>(kNew, &mu, &order);
  absl::StatusOr<uint64_t> fresh_id = pool.Add(doorbells[2], fresh, Tenant());
  ASSERT_TRUE(fresh_id.ok()) << fresh_id.status();
  holder->release_.Notify();
  ASSERT_TRUE(hal::testing::Eventually([&] {
    absl::MutexLock lock(&mu);
    return order.size() >= 2;
  }));
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(order, (std::vector<int>{kNew, kEstablished}));
  }
  for (uint64_t id : {established_id, *holder_id, *fresh_id}) pool.Remove(id);
  for (int doorbell : doorbells) close(doorbell);
}

// Members that are all new (a tenant opening session after session) go
// ahead at most kAheadInARow turns in a row: an established member's turn
// still comes.
TEST(ChannelPoolTest, NewMembersGoAheadOnlyAFewTurnsInARow) {
  ChannelPool pool(/*threads=*/1);
  constexpr int kNewMembers = 20;
  std::vector<int> doorbells(kNewMembers + 2);
  for (int& doorbell : doorbells) {
    doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ASSERT_GE(doorbell, 0);
  }
  absl::Mutex mu;
  std::vector<int> order;
  constexpr int kEstablished = -1;
  auto established = std::make_shared<RecordingMember>(kEstablished, &mu, &order);
  std::vector<uint64_t> ids = {AddEstablished(pool, doorbells[0], established)};
  auto holder = std::make_shared<HoldingMember>();
  absl::StatusOr<uint64_t> holder_id = pool.Add(doorbells[1], holder, Tenant());
  ASSERT_TRUE(holder_id.ok()) << holder_id.status();
  ids.push_back(*holder_id);
  holder->started_.WaitForNotification();
  {
    absl::MutexLock lock(&mu);
    order.clear();
  }
  pool.Wake(ids[0]);
  std::vector<std::shared_ptr<RecordingMember>> fresh;
  for (int i = 0; i < kNewMembers; ++i) {
    fresh.push_back(std::make_shared<RecordingMember>(i, &mu, &order));
    absl::StatusOr<uint64_t> id = pool.Add(doorbells[i + 2], fresh.back(), Tenant());
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  holder->release_.Notify();
  ASSERT_TRUE(hal::testing::Eventually([&] {
    absl::MutexLock lock(&mu);
    return order.size() >= kNewMembers + 1u;
  }));
  {
    absl::MutexLock lock(&mu);
    const auto at = std::find(order.begin(), order.end(), kEstablished) - order.begin();
    // The holder's first turn went ahead too: it counts to the run of them.
    EXPECT_LE(at, ChannelPool::kAheadInARow) << "the established member's turn came after "
                                             << at << " new members' turns";
    EXPECT_LT(at, kNewMembers) << "not after all of them";
    EXPECT_EQ(order[0], 0) << "new members go in the order they came";
  }
  for (uint64_t id : ids) pool.Remove(id);
  for (int doorbell : doorbells) close(doorbell);
}

// Rings itself from inside every serve, as another pool thread that saw its
// doorbell would, up to kMaxServes (the test's own bound).
class Ringer : public ChannelPool::Member {
 public:
  static constexpr int kMaxServes = 100000;
  explicit Ringer(ChannelPool* pool) : pool_(pool) {}
  bool Serve() override {
    const uint64_t id = id_.load();
    if (id != 0 && serves_.fetch_add(1) < kMaxServes) pool_->Wake(id);
    return false;
  }
  std::atomic<uint64_t> id_{0};
  std::atomic<int> serves_{0};

 private:
  ChannelPool* const pool_;
};

// A member rung during each of its turns (a client writing its doorbell
// without pause) does not keep the thread from the others.
TEST(ChannelPoolTest, AMemberRungDuringEveryTurnStillLetsOthersRun) {
  ChannelPool pool(/*threads=*/1);
  int doorbells[2];
  for (int& doorbell : doorbells) {
    doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ASSERT_GE(doorbell, 0);
  }
  auto ringer = std::make_shared<Ringer>(&pool);
  absl::StatusOr<uint64_t> ringer_id = pool.Add(doorbells[0], ringer, Tenant());
  ASSERT_TRUE(ringer_id.ok()) << ringer_id.status();
  ringer->id_.store(*ringer_id);
  pool.Wake(*ringer_id);
  ASSERT_TRUE(hal::testing::Eventually([&] { return ringer->serves_.load() > 0; }));

  absl::Mutex mu;
  std::vector<int> order;
  auto other = std::make_shared<RecordingMember>(1, &mu, &order);
  absl::StatusOr<uint64_t> other_id = pool.Add(doorbells[1], other, Tenant());
  ASSERT_TRUE(other_id.ok()) << other_id.status();
  pool.Wake(*other_id);
  ASSERT_TRUE(hal::testing::Eventually([&] { return other->turns_.load() > 0; }));
  EXPECT_LT(ringer->serves_.load(), Ringer::kMaxServes) << "the ringer kept the thread";
  ringer->id_.store(0);  // stops ringing
  for (uint64_t id : {*ringer_id, *other_id}) pool.Remove(id);
  for (int doorbell : doorbells) close(doorbell);
}

// The run queue takes turns between tenants: one tenant's hundred queued
// turns (its sessions' requests) hold another tenant's one back by a turn.
TEST(ChannelPoolTest, TenantsTakeTurnsWhateverTheirQueuedTurns) {
  ChannelPool pool(/*threads=*/1);
  absl::Notification started, release;
  pool.Post([&] {
    started.Notify();
    release.WaitForNotificationWithTimeout(absl::Seconds(30));
  });
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::Mutex mu;
  std::vector<uint32_t> ran;  // the uid of each task, in order
  auto task = [&](uint32_t uid) {
    return [&mu, &ran, uid] {
      absl::MutexLock lock(&mu);
      ran.push_back(uid);
    };
  };
  for (int i = 0; i < 100; ++i) pool.Post(task(1000), Tenant(1000, nullptr));
  pool.Post(task(2000), Tenant(2000, nullptr));
  release.Notify();
  absl::MutexLock lock(&mu);
  auto all_ran = [&ran] { return ran.size() == 101u; };
  ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all_ran), absl::Seconds(30)));
  size_t other_at = 0;
  for (size_t i = 0; i < ran.size(); ++i) {
    if (ran[i] == 2000) other_at = i;
  }
  EXPECT_LE(other_at, 1u) << "it waited behind the other tenant's turns";
}

}  // namespace
}  // namespace acld::server
