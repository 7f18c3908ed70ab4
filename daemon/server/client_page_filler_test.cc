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
#include "daemon/core/process_clock.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

constexpr uint64_t kSize = 8 << 20;

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
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
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

// acld's side: its own mapping of the memfd, its holes filled from `client`.
struct Filled {
  uint8_t* base = nullptr;
  std::unique_ptr<FilledFromClient> filled;
};

Filled Watch(int fd, uint64_t size, const Client& client, absl::Status* status,
             std::function<void()> on_given_up = nullptr) {
  Filled result;
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  EXPECT_NE(base, MAP_FAILED);
  result.base = static_cast<uint8_t*>(base);
  absl::StatusOr<ClientMapping> mapping =
      FindClientMapping(client.pid(), ProcessStartTicks(client.pid()).value_or(0), fd, size);
  if (!mapping.ok()) {
    *status = mapping.status();
    return result;
  }
  EXPECT_EQ(mapping->address, client.address());
  absl::StatusOr<std::unique_ptr<FilledFromClient>> filled =
      FillFromClient(base, size, *std::move(mapping), absl::StrCat("test ", fd),
                     std::move(on_given_up));
  if (!filled.ok()) {
    *status = filled.status();
    return result;
  }
  result.filled = *std::move(filled);
  return result;
}

bool FileHasData(int fd) { return lseek(fd, 0, SEEK_DATA) >= 0; }

TEST(ClientPageFillerTest, HolesAcldMeetsAreFilledThroughTheClientsOwnMapping) {
  const int fd = OlderClientMemfd(kSize);
  Client client(fd, kSize);
  absl::Status status;
  Filled acld = Watch(fd, kSize, client, &status);
  if (absl::StrContains(status.message(), "userfaultfd")) GTEST_SKIP() << status.message();
  ASSERT_TRUE(status.ok()) << status.message();
  const uint64_t before = client.RssShmemKib();

  // acld writes the whole memory (a copy from a device): every page it meets
  // is a hole, filled in the client's memory map (and so its cgroup).
  std::memset(acld.base, 0x5a, kSize);
  EXPECT_GE(acld.filled->fills(), kSize / kFillBytes);
  EXPECT_GE(client.RssShmemKib() - before, kSize / 1024);
  uint8_t byte = 0;
  ASSERT_EQ(pread(fd, &byte, 1, kSize - 1), 1);
  EXPECT_EQ(byte, 0x5a);

  // The client punches a hole: acld's next access there is filled again.
  const uint64_t fills = acld.filled->fills();
  ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1 << 20), 0);
  EXPECT_EQ(acld.base[0], 0);
  EXPECT_EQ(acld.filled->fills(), fills + 1);
  EXPECT_FALSE(acld.filled->given_up());
  acld.filled.reset();
  munmap(acld.base, kSize);
  close(fd);
}

TEST(ClientPageFillerTest, MemoryOfNoWholeNumberOfPagesIsFilledToItsLastPage) {
  const uint64_t size = 3 * 4096 - 10;  // a session channel's size need not be whole pages
  const int fd = OlderClientMemfd(size);
  Client client(fd, size);
  absl::Status status;
  Filled acld = Watch(fd, size, client, &status);
  if (absl::StrContains(status.message(), "userfaultfd")) GTEST_SKIP() << status.message();
  ASSERT_TRUE(status.ok()) << status.message();
  std::memset(acld.base, 0x5a, size);
  EXPECT_EQ(acld.filled->fills(), 1u);
  EXPECT_FALSE(acld.filled->given_up());
  acld.filled.reset();
  munmap(acld.base, size);
  close(fd);
}

TEST(ClientPageFillerTest, MemoryTheClientNoLongerMapsIsGivenUpWithoutAPageOfAcldsInIt) {
  const int fd = OlderClientMemfd(kSize);
  Client client(fd, kSize);
  absl::Status status;
  std::atomic<int> given_up{0};
  Filled acld = Watch(fd, kSize, client, &status, [&] { ++given_up; });
  if (absl::StrContains(status.message(), "userfaultfd")) GTEST_SKIP() << status.message();
  ASSERT_TRUE(status.ok()) << status.message();
  client.Unmap();

  // The access under way ends in memory of acld's own; the file gets no
  // page from acld, and the owner hears of it once.
  std::memset(acld.base, 0x5a, kSize);
  EXPECT_TRUE(acld.filled->given_up());
  EXPECT_FALSE(FileHasData(fd));
  std::memset(acld.base, 0x5b, kSize);
  EXPECT_EQ(given_up.load(), 1);
  acld.filled.reset();
  munmap(acld.base, kSize);
  close(fd);
}

// The client maps other memory where it mapped the memfd: a fill reads that
// and leaves the hole. acld gives up at once rather than meet it again
// (each such fill could take almost kSealWait).
TEST(ClientPageFillerTest, AFillThatLeavesTheHoleIsGivenUpAtOnce) {
  const int fd = OlderClientMemfd(kSize);
  Client client(fd, kSize);
  absl::Status status;
  Filled acld = Watch(fd, kSize, client, &status);
  if (absl::StrContains(status.message(), "userfaultfd")) GTEST_SKIP() << status.message();
  ASSERT_TRUE(status.ok()) << status.message();
  client.MapOtherMemoryInItsPlace();
  acld.base[0] = 1;
  EXPECT_TRUE(acld.filled->given_up());
  EXPECT_EQ(acld.filled->fills(), 1u);
  EXPECT_FALSE(FileHasData(fd));
  acld.filled.reset();
  munmap(acld.base, kSize);
  close(fd);
}

TEST(ClientPageFillerTest, AClientThatKeepsPunchingHolesIsGivenUp) {
  const int fd = OlderClientMemfd(kSize);
  Client client(fd, kSize);
  absl::Status status;
  Filled acld = Watch(fd, kSize, client, &status);
  if (absl::StrContains(status.message(), "userfaultfd")) GTEST_SKIP() << status.message();
  ASSERT_TRUE(status.ok()) << status.message();
  // Each round: the client punches the page out, acld touches it again.
  for (int round = 0; round < 128 && !acld.filled->given_up(); ++round) {
    ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), 0);
    acld.base[0] = 1;
  }
  EXPECT_TRUE(acld.filled->given_up());
  EXPECT_LE(acld.filled->fills(), 2 * (kSize / kFillBytes) + 32 + 1);
  acld.filled.reset();
  munmap(acld.base, kSize);
  close(fd);
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
