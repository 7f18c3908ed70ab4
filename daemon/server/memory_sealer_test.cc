#include "daemon/server/memory_sealer.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "absl/time/clock.h"
#include "daemon/server/server_test_support.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

constexpr uint64_t kPage = 4096;

// A memfd as libascendcl hands it over: every page written, sealed against
// shrinking and growing.
int ClientMemfd() {
  const int fd = memfd_create("client", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  const char page[kPage] = {1};
  EXPECT_EQ(pwrite(fd, page, kPage, 0), static_cast<ssize_t>(kPage));
  EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  return fd;
}

// A write() into `memfd` from a page that does not come until Release():
// the kernel holds the memfd's inode lock meanwhile, as it does for a page
// of a FUSE mount whose server does not answer.
class HeldWrite {
 public:
  explicit HeldWrite(int memfd) {
    uffd_ = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC));
    if (uffd_ < 0) return;
    uffdio_api api{};
    api.api = UFFD_API;
    if (ioctl(uffd_, UFFDIO_API, &api) != 0) return;
    source_ = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uffdio_register reg{};
    reg.range.start = reinterpret_cast<uint64_t>(source_);
    reg.range.len = kPage;
    reg.mode = UFFDIO_REGISTER_MODE_MISSING;
    if (ioctl(uffd_, UFFDIO_REGISTER, &reg) != 0) return;
    writer_ = std::thread([this, memfd] {
      (void)pwrite(memfd, source_, kPage, 0);  // waits for the page, holding the lock
    });
    // Its fault has reached the userfaultfd: the lock is held now.
    uffd_msg message{};
    armed_ = read(uffd_, &message, sizeof(message)) == sizeof(message);
  }
  bool armed() const { return armed_; }
  void Release() {
    if (!writer_.joinable()) return;
    uffdio_zeropage zero{};
    zero.range.start = reinterpret_cast<uint64_t>(source_);
    zero.range.len = kPage;
    (void)ioctl(uffd_, UFFDIO_ZEROPAGE, &zero);
    writer_.join();
  }
  ~HeldWrite() {
    Release();
    if (source_ != nullptr) munmap(source_, kPage);
    if (uffd_ >= 0) close(uffd_);
  }

 private:
  int uffd_ = -1;
  void* source_ = nullptr;
  std::thread writer_;
  bool armed_ = false;
};

TEST(MemorySealerTest, MemoryItsSenderHoldsIsRefusedWithoutHoldingTheCaller) {
  const int held_memfd = ClientMemfd();
  HeldWrite held(held_memfd);
  if (!held.armed()) GTEST_SKIP() << "no userfaultfd here (it needs privileges)";
  // Released after 10 s at most, so that a sealing that waits fails the test
  // instead of hanging it.
  std::atomic<bool> answered{false};
  std::thread watchdog([&] {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!answered.load() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
    held.Release();
  });
  const MemoryWorkCounts before = CountMemoryWork();  // other tests' refusals stay
  const absl::Time start = absl::Now();
  const absl::Status refused = SealClientMemory(held_memfd, kPage, "uid 4242");
  // What aclctl's status shows meanwhile (the sender still holds it): the
  // sealing runs, late, and its user is refused.
  const MemoryWorkCounts held_now = CountMemoryWork();
  answered = true;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "the caller waited for the sender";
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("could not seal"), std::string::npos) << refused;
  EXPECT_EQ(held_now.running, before.running + 1);
  EXPECT_EQ(held_now.late, before.late + 1);
  EXPECT_EQ(held_now.refused_senders, before.refused_senders + 1);
  // Its next memory is refused at once, even memory nobody holds; another
  // sender's is sealed.
  const int next = ClientMemfd(), others = ClientMemfd();
  EXPECT_FALSE(SealClientMemory(next, kPage, "uid 4242").ok());
  EXPECT_TRUE(SealClientMemory(others, kPage, "uid 4243").ok());
  EXPECT_EQ(fcntl(others, F_GET_SEALS) & F_SEAL_FUTURE_WRITE, F_SEAL_FUTURE_WRITE);
  watchdog.join();
  // Released: the sealing ends, and counts no more (its user stays refused).
  EXPECT_TRUE(Eventually([&] { return CountMemoryWork().running == before.running; }));
  EXPECT_EQ(CountMemoryWork().late, before.late);
  EXPECT_EQ(CountMemoryWork().refused_senders, before.refused_senders + 1);
  for (int fd : {held_memfd, next, others}) close(fd);
}

// Runs that each end in time but slowly, one after another (fills the
// sender's own memory map lock delays), count: past kSlowBudget of them the
// sender is refused as after a late one; quick runs never count.
TEST(MemorySealerTest, ASendersSlowRunsAddUpToARefusal) {
  auto quick = [] { return absl::OkStatus(); };
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(RunForSender("uid 4301", quick).ok());
  auto slow = [] {
    absl::SleepFor(kSlowRun + absl::Milliseconds(5));
    return absl::OkStatus();
  };
  const int most = static_cast<int>(kSlowBudget / kSlowRun) + 2;
  int ran = 0;
  while (ran < most && RunForSender("uid 4302", slow).ok()) ++ran;
  EXPECT_LT(ran, most) << "slow runs never refused";
  const absl::Status refused = RunForSender("uid 4302", quick);
  EXPECT_FALSE(refused.ok());
  EXPECT_TRUE(RunForSender("uid 4303", quick).ok());
}

}  // namespace
}  // namespace acld::server
