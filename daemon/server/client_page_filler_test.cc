#include "daemon/server/client_page_filler.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "daemon/core/process_clock.h"
#include "daemon/server/server_test_support.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

constexpr uint64_t kSize = 8 << 20;
constexpr uint64_t kPage = 4096;

// A memfd as a libascendcl before protocol version 5 handed it over: sized,
// sealed for good, no page allocated.
int OlderClientMemfd(uint64_t size) {
  const int fd = memfd_create("older-client", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
  EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
  return fd;
}

// A client process that maps the memfd whole and waits; on 'u' it unmaps it,
// on 'a' it maps anonymous memory in its place.
class Client {
 public:
  Client(int fd, uint64_t size) {
    int address_pipe[2];
    EXPECT_EQ(pipe(address_pipe), 0);
    EXPECT_EQ(pipe(command_), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(address_pipe[0]);
      close(command_[1]);
      void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      const uint64_t address = base == MAP_FAILED ? 0 : reinterpret_cast<uint64_t>(base);
      if (write(address_pipe[1], &address, sizeof(address)) != sizeof(address)) _exit(1);
      char command;
      while (read(command_[0], &command, 1) == 1) {
        if (command == 'u') munmap(base, size);
        if (command == 'a') {
          mmap(base, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        }
        if (write(address_pipe[1], &command, 1) != 1) _exit(1);
      }
      _exit(0);
    }
    close(address_pipe[1]);
    close(command_[0]);
    answers_ = address_pipe[0];
    EXPECT_EQ(read(answers_, &address_, sizeof(address_)), static_cast<ssize_t>(sizeof(address_)));
  }
  ~Client() {
    close(command_[1]);  // EOF: it exits
    close(answers_);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  void Unmap() { Tell('u'); }
  void MapOtherMemoryInItsPlace() { Tell('a'); }
  pid_t pid() const { return pid_; }
  uint64_t address() const { return address_; }
  // Shared memory pages the client's memory map holds, in KiB.
  uint64_t RssShmemKib() const {
    std::ifstream status(absl::StrCat("/proc/", pid_, "/status"));
    std::string line;
    while (std::getline(status, line)) {
      absl::string_view value = line;
      if (!absl::ConsumePrefix(&value, "RssShmem:")) continue;
      value = absl::StripAsciiWhitespace(absl::StripSuffix(value, "kB"));
      value = absl::StripAsciiWhitespace(value);
      uint64_t kib = 0;
      return absl::SimpleAtoi(value, &kib) ? kib : 0;
    }
    return 0;
  }

 private:
  void Tell(char command) {
    ASSERT_EQ(write(command_[1], &command, 1), 1);
    ASSERT_EQ(read(answers_, &command, 1), 1);
  }

  pid_t pid_ = -1;
  int command_[2] = {-1, -1};
  int answers_ = -1;
  uint64_t address_ = 0;
};

// Whether the file has a page past its first, which the look at the
// client's mapping read (in the client's memory map) to know it reaches it.
bool FileHasDataPastItsFirstPage(int fd) { return lseek(fd, kPage, SEEK_DATA) >= 0; }

// Each scene's own sender: one's refusals never reach the next.
std::atomic<int> scenes{0};

// An older client's memfd, a client process that maps it, and acld's own
// mapping of it (`base`), its holes filled from the client's.
class Scene {
 public:
  explicit Scene(uint64_t size, std::function<void()> on_given_up = nullptr)
      : size(size), fd(OlderClientMemfd(size)), client(fd, size) {
    base = static_cast<uint8_t*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    EXPECT_NE(base, MAP_FAILED);
    absl::StatusOr<ClientMapping> mapping =
        FindClientMapping(client.pid(), ProcessStartTicks(client.pid()).value_or(0), fd, size);
    if (!mapping.ok()) {
      status = mapping.status();
      return;
    }
    EXPECT_EQ(mapping->address, client.address());
    absl::StatusOr<std::unique_ptr<FilledFromClient>> watched =
        FillFromClient(base, size, *std::move(mapping), absl::StrCat("test scene ", ++scenes),
                       std::move(on_given_up));
    status = watched.status();
    if (watched.ok()) filled = *std::move(watched);
  }
  ~Scene() {
    filled.reset();  // before the unmap, as acld does
    munmap(base, size);
    close(fd);
  }
  // No userfaultfd here (it needs privileges).
  bool unavailable() const { return absl::StrContains(status.message(), "userfaultfd"); }

  const uint64_t size;
  const int fd;
  Client client;
  uint8_t* base = nullptr;
  std::unique_ptr<FilledFromClient> filled;
  absl::Status status;
};

#define WATCH_OR_SKIP(scene)                                        \
  if ((scene).unavailable()) GTEST_SKIP() << (scene).status.message(); \
  ASSERT_TRUE((scene).status.ok()) << (scene).status.message()

TEST(ClientPageFillerTest, HolesAcldMeetsAreFilledThroughTheClientsOwnMapping) {
  const FillingCounts counted = CountFilling();
  Scene scene(kSize);
  WATCH_OR_SKIP(scene);
  // What aclctl's status shows: the mapping filled, the process's memory open.
  EXPECT_EQ(CountFilling().regions, counted.regions + 1);
  EXPECT_EQ(CountFilling().client_memories, counted.client_memories + 1);
  const uint64_t before = scene.client.RssShmemKib();

  // acld writes the whole memory (a copy from a device): every page it meets
  // is a hole, filled in the client's memory map (and so its cgroup).
  std::memset(scene.base, 0x5a, kSize);
  EXPECT_GE(scene.filled->fills(), kSize / kFillBytes);
  const uint64_t after = scene.client.RssShmemKib();
  ASSERT_GE(after, before);
  EXPECT_GE(after - before, (kSize - kPage) / 1024);  // its first page was read already
  uint8_t byte = 0;
  ASSERT_EQ(pread(scene.fd, &byte, 1, kSize - 1), 1);
  EXPECT_EQ(byte, 0x5a);

  // The client punches a hole: acld's next access there is filled again.
  // (Its first page included, read as acld looked at the client's mapping.)
  const uint64_t fills = scene.filled->fills();
  ASSERT_EQ(fallocate(scene.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1 << 20), 0);
  EXPECT_EQ(scene.base[0], 0);
  EXPECT_EQ(scene.filled->fills(), fills + 1);
  EXPECT_FALSE(scene.filled->given_up());

  // Let go (the filler's thread may hold the region a moment longer).
  scene.filled.reset();
  EXPECT_TRUE(
      Eventually([&] { return CountFilling().client_memories == counted.client_memories; }));
  EXPECT_EQ(CountFilling().regions, counted.regions);
}

TEST(ClientPageFillerTest, MemoryOfNoWholeNumberOfPagesIsFilledToItsLastPage) {
  Scene scene(3 * 4096 - 10);  // a session channel's size need not be whole pages
  WATCH_OR_SKIP(scene);
  std::memset(scene.base, 0x5a, scene.size);
  EXPECT_EQ(scene.filled->fills(), 1u);
  EXPECT_FALSE(scene.filled->given_up());
}

TEST(ClientPageFillerTest, MemoryTheClientNoLongerMapsIsGivenUpWithoutAPageOfAcldsInIt) {
  std::atomic<int> given_up{0};
  const FillingCounts before = CountFilling();
  Scene scene(kSize, [&] { ++given_up; });
  WATCH_OR_SKIP(scene);
  scene.client.Unmap();

  // The access under way ends in memory of acld's own; the file gets no
  // page from acld, and the owner hears of it once.
  std::memset(scene.base, 0x5a, kSize);
  EXPECT_TRUE(scene.filled->given_up());
  EXPECT_EQ(CountFilling().regions, before.regions) << "aclctl counts it as filled still";
  EXPECT_FALSE(FileHasDataPastItsFirstPage(scene.fd));
  std::memset(scene.base, 0x5b, kSize);
  // Told on the filler's thread, just after the access went on.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (given_up.load() == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(given_up.load(), 1);
}

// The client maps other memory where it mapped the memfd: a fill reads that
// and leaves the hole. acld gives up at once rather than meet it again
// (each such fill could take almost kSealWait).
TEST(ClientPageFillerTest, AFillThatLeavesTheHoleIsGivenUpAtOnce) {
  Scene scene(kSize);
  WATCH_OR_SKIP(scene);
  scene.client.MapOtherMemoryInItsPlace();
  scene.base[kFillBytes] = 1;
  EXPECT_TRUE(scene.filled->given_up());
  EXPECT_EQ(scene.filled->fills(), 1u);
  EXPECT_FALSE(FileHasDataPastItsFirstPage(scene.fd));
}

TEST(ClientPageFillerTest, AClientThatKeepsPunchingHolesIsGivenUp) {
  Scene scene(kSize);
  WATCH_OR_SKIP(scene);
  // Each round: the client punches the page out, acld touches it again.
  for (int round = 0; round < 128 && !scene.filled->given_up(); ++round) {
    ASSERT_EQ(fallocate(scene.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), 0);
    scene.base[0] = 1;
  }
  EXPECT_TRUE(scene.filled->given_up());
  EXPECT_LE(scene.filled->fills(), 2 * (kSize / kFillBytes) + 32 + 1);
}

TEST(ClientPageFillerTest, OnlyTheProcessThatMapsTheMemoryWholeIsAskedToFillIt) {
  const int fd = OlderClientMemfd(kSize);
  Client client(fd, kSize);
  const uint64_t started = ProcessStartTicks(client.pid()).value_or(0);
  // Larger than the client maps it.
  EXPECT_FALSE(FindClientMapping(client.pid(), started, fd, 2 * kSize).ok());
  // A process that took the pid since (another start time).
  EXPECT_FALSE(FindClientMapping(client.pid(), started + 1, fd, kSize).ok());
  // A process that does not map it (this one).
  EXPECT_FALSE(FindClientMapping(getpid(), ProcessStartTicks(getpid()).value_or(0), fd, kSize).ok());
  // A process whose start acld does not know.
  EXPECT_FALSE(FindClientMapping(client.pid(), 0, fd, kSize).ok());
  // Another file the client does not map.
  const int other = OlderClientMemfd(kSize);
  EXPECT_FALSE(FindClientMapping(client.pid(), started, other, kSize).ok());
  absl::StatusOr<ClientMapping> found = FindClientMapping(client.pid(), started, fd, kSize);
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->address, client.address());
  close(other);
  close(fd);
}

}  // namespace
}  // namespace acld::server
