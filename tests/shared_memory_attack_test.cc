// A hostile local client against acld's shared memory: it hands over memory
// that could shrink under acld's mapping, shrinks what it registered, uses
// another process's ticket and registers far more than a session may map.
// acld refuses what it must, never faults (SIGBUS), and serves well-behaved
// clients afterwards.
#include <fcntl.h>
#include <linux/falloc.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "daemon/server/socket_path.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/acl/v1/runtime.grpc.pb.h"
#include "tests/acld_fixture.h"
#include "tests/raw_session.h"

namespace acld_test {
namespace {

using acl::v1::ClientMessage;
using acl::v1::Reply;

constexpr uint64_t kPage = 4096;
// As libascendcl seals its memory (client/sealed_memfd.h); it also allocates it.
constexpr int kSealed = F_SEAL_SHRINK | F_SEAL_GROW;

// `allocated`: its pages allocated, as libascendcl's are.
int Memfd(uint64_t bytes, int seals, bool allocated = true) {
  const int fd = memfd_create("attack", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
  if (allocated) {
    EXPECT_TRUE(WriteEveryPage(fd, bytes));
  }
  if (seals != 0) {
    EXPECT_EQ(fcntl(fd, F_ADD_SEALS, seals), 0);
  }
  return fd;
}

// A session spoken by hand over gRPC, as a hostile client would.
class HostileSession : public RawSession {
 public:
  explicit HostileSession(const AcldDaemon& daemon) : RawSession(daemon.socket()) {}

  Reply Register(const std::string& ticket, uint64_t size) {
    ClientMessage message;
    message.mutable_register_shared_memory()->set_ticket(ticket);
    message.mutable_register_shared_memory()->set_size(size);
    return Call(std::move(message));
  }
  Reply Unregister(uint64_t segment) {
    ClientMessage message;
    message.mutable_unregister_shared_memory()->set_segment(segment);
    return Call(std::move(message));
  }
  uint64_t Malloc(uint64_t size) {
    ClientMessage set_device;
    set_device.mutable_set_device()->set_device_id(0);
    EXPECT_EQ(Call(std::move(set_device)).acl_error(), 0);
    ClientMessage message;
    message.mutable_malloc()->set_device_id(0);
    message.mutable_malloc()->set_size(size);
    Reply reply = Call(std::move(message));
    EXPECT_EQ(reply.acl_error(), 0) << reply.error_message();
    return reply.device_address().address();
  }
  // A synchronous copy between device memory and a shared segment.
  Reply Copy(bool to_host, uint64_t device, uint64_t segment, uint64_t offset, uint64_t count) {
    ClientMessage message;
    acl::v1::CopyRequest& copy = *message.mutable_copy();
    copy.set_direction(to_host ? acl::v1::CopyRequest::DEVICE_TO_HOST
                               : acl::v1::CopyRequest::HOST_TO_DEVICE);
    if (to_host) {
      copy.set_device_src(device);
    } else {
      copy.set_device_dst(device);
    }
    copy.mutable_shared()->set_segment(segment);
    copy.mutable_shared()->set_offset(offset);
    copy.set_count(count);
    return Call(std::move(message));
  }
};

// acld survived and serves: aclctl status works and a real client's pinned
// and staged copies pass (the hostile session is still open meanwhile).
void ExpectAcldServes(const AcldDaemon& daemon) {
  ASSERT_TRUE(acld::server::SocketIsLive(daemon.socket())) << "acld died";
  const auto [code, output] = daemon.Aclctl({"status"});
  EXPECT_EQ(code, 0) << output;
  ExpectScenarioPasses({"tests/device_client", "roundtrip", "8"}, daemon.client_env());
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 1; }, absl::Seconds(10)));
}

TEST(SharedMemoryAttackTest, MemoryThatCouldShrinkIsRefused) {
  AcldDaemon daemon;
  HostileSession session(daemon);
  ASSERT_TRUE(session.opened());
  const uint64_t device = session.Malloc(1 << 20);

  // (a) Unsealed: the client could truncate it after registering and ask for
  // a copy into it, and acld would die of SIGBUS. It never gets a ticket.
  const int unsealed = Memfd(1 << 20, 0);
  const std::string refused = AskDesk(session.desk(), "M 1048576\n", unsealed);
  EXPECT_TRUE(absl::StartsWith(refused, "E ")) << refused;
  // Sealed against growth only: refused as well.
  const int grow_sealed = Memfd(1 << 20, F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_TRUE(absl::StartsWith(AskDesk(session.desk(), "M 1048576\n", grow_sealed), "E "));
  // More than the memfd holds.
  const int sealed_small = Memfd(kPage, kSealed);
  EXPECT_TRUE(absl::StartsWith(AskDesk(session.desk(), "M 8192\n", sealed_small), "E "));
  // A plain file on tmpfs (what shm_open makes) cannot be sealed at all.
  const std::string path = daemon.dir() + "/plain";
  const int plain = open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(plain, 0);
  ASSERT_EQ(ftruncate(plain, 1 << 20), 0);
  EXPECT_TRUE(absl::StartsWith(AskDesk(session.desk(), "M 1048576\n", plain), "E "));

  // Without a ticket nothing registers, whatever the request says.
  EXPECT_EQ(session.Register("", 1 << 20).acl_error(), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(session.Register(refused, 1 << 20).acl_error(), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(session.Register(std::string(32, '0'), 1 << 20).acl_error(), ACL_ERROR_INVALID_PARAM);

  // The attack carried through anyway: truncate and copy into it. acld never
  // mapped it, so this is a refusal, not a crash.
  ASSERT_EQ(ftruncate(unsealed, 0), 0);
  EXPECT_NE(session.Copy(true, device, 1, 0, 1 << 20).acl_error(), 0);

  for (int fd : {unsealed, grow_sealed, sealed_small, plain}) close(fd);
  ExpectAcldServes(daemon);
}

TEST(SharedMemoryAttackTest, RegisteredMemoryCannotShrink) {
  AcldDaemon daemon;
  HostileSession session(daemon);
  ASSERT_TRUE(session.opened());
  const uint64_t device = session.Malloc(1 << 20);

  const int fd = Memfd(1 << 20, kSealed);
  Reply registered = session.Share(fd, 1 << 20);
  ASSERT_EQ(registered.acl_error(), 0) << registered.error_message();
  const uint64_t segment = registered.handle().handle();

  // (b) The seal holds: the client cannot shrink what acld maps.
  EXPECT_EQ(ftruncate(fd, 0), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(ftruncate(fd, kPage), -1);
  EXPECT_EQ(errno, EPERM);
  // Removing the seal is impossible too.
  EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), -1);
  // (c) No hole can be punched either: acld's copies would fill it with
  // pages its own memory cgroup pays for, kept for as long as the client
  // keeps the file.
  EXPECT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1 << 20), -1);
  EXPECT_EQ(errno, EPERM);
  struct stat info {};
  ASSERT_EQ(fstat(fd, &info), 0);
  EXPECT_GE(info.st_blocks * 512, 1 << 20) << "every page still allocated";
  Reply copied = session.Copy(true, device, segment, 0, 1 << 20);
  EXPECT_EQ(copied.acl_error(), 0) << copied.error_message();
  copied = session.Copy(false, device, segment, 0, 1 << 20);
  EXPECT_EQ(copied.acl_error(), 0) << copied.error_message();

  // Past the end of what was verified: refused.
  EXPECT_EQ(session.Copy(true, device, segment, 1, 1 << 20).acl_error(), ACL_ERROR_INVALID_PARAM);

  // A ticket is good once.
  const int another = Memfd(1 << 20, kSealed);
  const std::string ticket = AskDesk(session.desk(), "M 1048576\n", another);
  close(another);
  ASSERT_EQ(session.Register(ticket, 1 << 20).acl_error(), 0);
  EXPECT_EQ(session.Register(ticket, 1 << 20).acl_error(), ACL_ERROR_INVALID_PARAM);
  close(fd);
  ExpectAcldServes(daemon);
}

// Memory with holes is refused when it is mapped (acld would allocate the
// pages it touched there).
TEST(SharedMemoryAttackTest, MemoryWithHolesIsRefused) {
  AcldDaemon daemon;
  HostileSession session(daemon);
  ASSERT_TRUE(session.opened());
  const int holes = memfd_create("attack", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(holes, 0);
  ASSERT_EQ(ftruncate(holes, 1 << 20), 0);
  ASSERT_EQ(fcntl(holes, F_ADD_SEALS, kSealed), 0);
  Reply refused = session.Share(holes, 1 << 20);
  EXPECT_EQ(refused.acl_error(), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(refused.error_message().find("written"), std::string::npos)
      << refused.error_message();
  close(holes);
  // Its pages allocated past its end (fallocate's KEEP_SIZE) instead: as many
  // blocks as its size, all of them outside what acld maps.
  const int beyond = memfd_create("attack", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(beyond, 0);
  ASSERT_EQ(ftruncate(beyond, 1 << 20), 0);
  ASSERT_EQ(fallocate(beyond, FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20), 0);
  ASSERT_EQ(fcntl(beyond, F_ADD_SEALS, kSealed), 0);
  EXPECT_EQ(session.Share(beyond, 1 << 20).acl_error(), ACL_ERROR_INVALID_PARAM);
  close(beyond);

  ExpectAcldServes(daemon);
}

// Shared memory pages this process's memory map holds, in KiB.
uint64_t RssShmemKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!absl::StartsWith(line, "RssShmem:")) continue;
    return std::strtoull(line.c_str() + std::strlen("RssShmem:"), nullptr, 10);
  }
  return 0;
}

// Memory an older libascendcl sealed for good (F_SEAL_SEAL) cannot be sealed
// against hole punching. acld fills the holes it meets from the client's own
// mapping (the client's memory map and cgroup get the pages, as its own touch
// would), never itself: memory the client does not map is refused, and
// memory it stops mapping is given up without a page of acld's in it.
TEST(SharedMemoryAttackTest, AnOlderClientsMemoryIsFilledFromItsOwnMappingNeverByAcld) {
  AcldDaemon daemon;
  HostileSession session(daemon);
  ASSERT_TRUE(session.opened());
  constexpr uint64_t kBytes = 4 << 20;
  const uint64_t device = session.Malloc(kBytes);
  const int older = Memfd(kBytes, kSealed | F_SEAL_SEAL, /*allocated=*/false);

  // Handed over, but not mapped here: nothing to fill its holes from.
  Reply unmapped = session.Register(AskDesk(session.desk(), "M 4194304\n", older), kBytes);
  EXPECT_EQ(unmapped.acl_error(), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_NE(unmapped.error_message().find("fill its holes"), std::string::npos)
      << unmapped.error_message();

  void* mine = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, older, 0);
  ASSERT_NE(mine, MAP_FAILED);
  const uint64_t before = RssShmemKib();
  Reply registered = session.Register(AskDesk(session.desk(), "M 4194304\n", older), kBytes);
  ASSERT_EQ(registered.acl_error(), 0) << registered.error_message();
  const uint64_t segment = registered.handle().handle();
  // A copy into it meets nothing but holes (acld read its first page as it
  // found this process's mapping): each is filled in this process's memory
  // map, which this process never touched.
  Reply copied = session.Copy(true, device, segment, 0, kBytes);
  EXPECT_EQ(copied.acl_error(), 0) << copied.error_message();
  const uint64_t after = RssShmemKib();
  ASSERT_GE(after, before);
  EXPECT_GE(after - before, kBytes / 1024);
  // Holes punched after registering are filled the same way.
  ASSERT_EQ(fallocate(older, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, kBytes), 0);
  copied = session.Copy(false, device, segment, 0, kBytes);
  EXPECT_EQ(copied.acl_error(), 0) << copied.error_message();
  // aclctl's status shows what filling holds: this mapping, and this
  // process's memory, kept open for it.
  const acl::v1::StatusReply filling = daemon.Status();
  EXPECT_GE(filling.filled_mappings(), 1u);
  EXPECT_EQ(filling.filled_processes(), 1u);

  // The client stops mapping it and punches it out again: acld's next copy
  // finds nothing to fill from and ends in memory of acld's own, and the
  // session ends (its work queued on that memory must not run). The file
  // gets no page from acld.
  ASSERT_EQ(munmap(mine, kBytes), 0);
  ASSERT_EQ(fallocate(older, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, kBytes), 0);
  (void)session.Copy(true, device, segment, 0, kBytes);
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(10)))
      << "the session did not end";
  EXPECT_LT(lseek(older, 0, SEEK_DATA), 0) << "acld allocated a page of the client's file";
  EXPECT_TRUE(WaitUntil(
      [&] {
        const acl::v1::StatusReply status = daemon.Status();
        return status.filled_mappings() == 0 && status.filled_processes() == 0;
      },
      absl::Seconds(10)))
      << "acld still holds what it filled the session's memory with";
  close(older);
  ASSERT_TRUE(acld::server::SocketIsLive(daemon.socket())) << "acld died";
  ExpectScenarioPasses({"tests/device_client", "roundtrip", "8"}, daemon.client_env());

  // With --map_unsealed_client_memory acld maps it as it comes.
  AcldDaemon trusting({"--map_unsealed_client_memory"});
  HostileSession accepted(trusting);
  ASSERT_TRUE(accepted.opened());
  const int unmapped_older = Memfd(1 << 20, kSealed | F_SEAL_SEAL);
  Reply taken = accepted.Share(unmapped_older, 1 << 20);
  EXPECT_EQ(taken.acl_error(), 0) << taken.error_message();
  close(unmapped_older);
}

TEST(SharedMemoryAttackTest, AnotherProcesssTicketIsUseless) {
  AcldDaemon daemon;
  HostileSession session(daemon);
  ASSERT_TRUE(session.opened());
  int ticket_pipe[2];
  int done_pipe[2];
  ASSERT_EQ(pipe(ticket_pipe), 0);
  ASSERT_EQ(pipe(done_pipe), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Another process of the same user hands memory over; its ticket leaks.
    // It stays alive until the theft was tried: a dead process's tickets
    // expire, which would refuse the theft for another reason.
    close(done_pipe[1]);
    const int fd = memfd_create("attack", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, kPage) != 0 || fcntl(fd, F_ADD_SEALS, kSealed) != 0) _exit(1);
    const std::string ticket = AskDesk(session.desk(), "M 4096\n", fd);
    const bool sent =
        write(ticket_pipe[1], ticket.data(), ticket.size()) == static_cast<ssize_t>(ticket.size());
    close(ticket_pipe[1]);
    char done;
    (void)!read(done_pipe[0], &done, 1);  // EOF when the parent closes its end
    _exit(sent ? 0 : 1);
  }
  close(ticket_pipe[1]);
  close(done_pipe[0]);
  std::string ticket;
  char buffer[64];
  ssize_t n;
  while ((n = read(ticket_pipe[0], buffer, sizeof(buffer))) > 0) ticket.append(buffer, n);
  close(ticket_pipe[0]);
  ASSERT_EQ(ticket.size(), 32u) << ticket;

  Reply stolen = session.Register(ticket, kPage);
  close(done_pipe[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(stolen.acl_error(), ACL_ERROR_RT_NO_PERMISSION) << stolen.error_message();
  ExpectAcldServes(daemon);
}

TEST(SharedMemoryAttackTest, ASessionCannotMapUnboundedMemory) {
  AcldDaemon daemon({"--max_host_memory_per_session=" + std::to_string(32 << 20)});
  HostileSession session(daemon);
  ASSERT_TRUE(session.opened());

  // (c) Segments are mapped up to the per-session limit (here 32 MiB), then
  // refused. Each is a memfd of its own: acld seals what it maps against
  // writable mappings made later, its own included.
  const uint64_t kSixteen = 16ull << 20;
  const int big = Memfd(kSixteen, kSealed), big_too = Memfd(kSixteen, kSealed);
  Reply first = session.Share(big, kSixteen);
  ASSERT_EQ(first.acl_error(), 0) << first.error_message();
  ASSERT_EQ(session.Share(big_too, kSixteen).acl_error(), 0);
  const int small = Memfd(kPage, kSealed);
  Reply over = session.Share(small, kPage);
  EXPECT_EQ(over.acl_error(), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_TRUE(absl::StrContains(over.error_message(), "--max_host_memory_per_session"))
      << over.error_message();
  // Refused before acld maps (or looks at the pages of) it.
  const int huge = Memfd(1ull << 40, kSealed, /*allocated=*/false);
  EXPECT_EQ(session.Share(huge, 1ull << 40).acl_error(), ACL_ERROR_RT_MEMORY_ALLOCATION);
  // Beyond 1 TiB the identity socket refuses outright.
  EXPECT_TRUE(absl::StartsWith(AskDesk(session.desk(), "M 1099511627777\n", huge), "E "));
  ASSERT_EQ(session.Unregister(first.handle().handle()).acl_error(), 0);
  EXPECT_EQ(session.Share(small, kPage).acl_error(), 0);

  // Many small segments: up to the segment limit (4096), then refused
  // (16 MiB and 4095 pages stay within the 32 MiB).
  int registered = 2;  // the second 16 MiB one and the page above
  Reply last;
  while (registered < 5000) {
    const int page = Memfd(kPage, kSealed);
    last = session.Share(page, kPage);
    close(page);
    if (last.acl_error() != 0) break;
    ++registered;
  }
  EXPECT_EQ(registered, 4096);
  EXPECT_EQ(last.acl_error(), ACL_ERROR_RT_MEMORY_ALLOCATION) << last.error_message();
  EXPECT_TRUE(absl::StrContains(last.error_message(), "4096")) << last.error_message();

  for (int fd : {big, big_too, small, huge}) close(fd);
  ExpectAcldServes(daemon);
}

}  // namespace
}  // namespace acld_test
