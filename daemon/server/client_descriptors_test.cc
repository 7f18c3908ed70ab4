#include "daemon/server/client_descriptors.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/server/descriptor_traps.h"
#include "daemon/server/server_test_support.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

// Sends `fd` from `from` into its peer's queue, then closes the sender's copy.
void SendAndDrop(int from, int fd) {
  ASSERT_EQ(SendDescriptor(from, fd), 1) << std::strerror(errno);
  close(fd);
}

// acld's end of a client's connection and the client's.
struct Connection {
  Connection() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends), 0); }
  ~Connection() { close(ends[0]); }
  int client() const { return ends[0]; }
  int acld() const { return ends[1]; }
  int ends[2] = {-1, -1};
};

// The linger is a minute; a close that waited would take it.
constexpr absl::Duration kNoWait = absl::Seconds(20);

TEST(ClientDescriptorsTest, ALingeringSocketQueuedInAConnectionDoesNotHoldItsClose) {
  LingeringSocket trap;
  ASSERT_TRUE(trap.armed());
  Connection connection;
  SendAndDrop(connection.client(), trap.Release());
  const absl::Time start = absl::Now();
  CloseConnection(connection.acld());
  EXPECT_LT(absl::Now() - start, kNoWait);
}

TEST(ClientDescriptorsTest, ALingeringSocketSentWithBytesDoesNotHoldTheRead) {
  LingeringSocket trap;
  Connection connection;
  SendAndDrop(connection.client(), trap.Release());
  const absl::Time start = absl::Now();
  char byte = 0;
  EXPECT_EQ(ReceiveBytes(connection.acld(), &byte, 1, 0), 1);
  EXPECT_EQ(byte, 'x');
  EXPECT_LT(absl::Now() - start, kNoWait);
  close(connection.acld());
}

// The same trap one level down: queued in a Unix socket that is itself
// queued in the connection.
TEST(ClientDescriptorsTest, ALingeringSocketInsideAReceivedSocketDoesNotHoldTheClose) {
  LingeringSocket trap;
  Connection inner;
  SendAndDrop(inner.client(), trap.Release());
  Connection connection;
  const int inner_end = inner.ends[1];
  inner.ends[1] = -1;
  SendAndDrop(connection.client(), inner_end);
  const absl::Time start = absl::Now();
  CloseConnection(connection.acld());
  EXPECT_LT(absl::Now() - start, kNoWait);
}

TEST(ClientDescriptorsTest, AReceivedLingeringSocketIsClosedAtOnce) {
  LingeringSocket trap;
  const absl::Time start = absl::Now();
  CloseReceived(trap.Release());
  EXPECT_LT(absl::Now() - start, kNoWait);
}

// A listening socket is never accept()ed on (its sender may keep it
// blocking, with nothing waiting: the accept would never return): it goes
// to the slow closer, with whatever waits in its backlog.
TEST(ClientDescriptorsTest, AReceivedListeningSocketIsNotAcceptedOn) {
  const int listener = Listen(TempDir() + "/received-listener.sock");  // blocking
  ASSERT_TRUE(Eventually([] { return SlowCloseCounts().waiting == 0; }));  // earlier tests'
  const SlowCloses before = SlowCloseCounts();
  const absl::Time start = absl::Now();
  CloseReceived(listener);
  EXPECT_LT(absl::Now() - start, kNoWait);
  EXPECT_TRUE(Eventually([&] { return SlowCloseCounts().closed == before.closed + 1; }));
}

// A received socket's options are its sender's: with credentials (and a
// pidfd, where the kernel has them) asked for, a message of the most
// descriptors one can carry still fits, so the kernel drops none (the
// lingering one last) on acld's thread.
TEST(ClientDescriptorsTest, AFullMessageInASocketThatAsksForCredentialsIsTakenWhole) {
  LingeringSocket trap;
  ASSERT_TRUE(trap.armed());
  Connection inner;
  const int on = 1;
  ASSERT_EQ(setsockopt(inner.ends[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)), 0);
  (void)setsockopt(inner.ends[1], SOL_SOCKET, 76 /* SO_PASSPIDFD, Linux 6.5 */, &on, sizeof(on));
  int pipe_ends[2];
  ASSERT_EQ(pipe2(pipe_ends, O_CLOEXEC), 0);
  std::vector<int> fds;
  for (int i = 0; i < 252; ++i) fds.push_back(dup(pipe_ends[0]));
  fds.push_back(trap.Release());
  close(pipe_ends[0]);
  close(pipe_ends[1]);
  ASSERT_EQ(SendDescriptors(inner.client(), fds), 1) << std::strerror(errno);
  for (int fd : fds) close(fd);
  const int inner_end = inner.ends[1];
  inner.ends[1] = -1;
  const absl::Time start = absl::Now();
  CloseReceived(inner_end);
  EXPECT_LT(absl::Now() - start, kNoWait);
}

// Memory closes on the caller's thread; a file elsewhere (which might be on a
// client's FUSE mount) on the slow closer's.
TEST(ClientDescriptorsTest, FilesWhoseCloseMayWaitGoToTheSlowCloser) {
  ASSERT_TRUE(Eventually([] { return SlowCloseCounts().waiting == 0; }));  // earlier tests'
  const SlowCloses before = SlowCloseCounts();
  const int memory = memfd_create("client-memory", MFD_CLOEXEC);
  ASSERT_GE(memory, 0);
  CloseReceived(memory);
  EXPECT_EQ(fcntl(memory, F_GETFD), -1) << "closed at once";
  EXPECT_EQ(SlowCloseCounts().closed, before.closed);

  const char* directory = std::getenv("TEST_TMPDIR");
  ASSERT_NE(directory, nullptr);
  const std::string path = std::string(directory) + "/on-disk";
  const int file = open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(file, 0);
  struct statfs fs {};
  ASSERT_EQ(fstatfs(file, &fs), 0);
  if (fs.f_type == TMPFS_MAGIC) {
    close(file);
    GTEST_SKIP() << "TEST_TMPDIR is on tmpfs here";
  }
  CloseReceived(file);
  EXPECT_TRUE(Eventually([&] { return SlowCloseCounts().closed == before.closed + 1; }));
  EXPECT_EQ(SlowCloseCounts().waiting, 0u);
}

// A pipe's last close takes the pipe's lock, which its sender can hold for as
// long as it likes: a splice() from the pipe into a socket nobody reads holds
// it while it waits for room there.
TEST(ClientDescriptorsTest, APipeWhoseLockItsSenderHoldsDoesNotHoldTheClose) {
  int full[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, full), 0);
  ASSERT_EQ(fcntl(full[0], F_SETFL, O_NONBLOCK), 0);
  const std::string chunk(4096, 'x');
  while (write(full[0], chunk.data(), chunk.size()) > 0) {
  }
  ASSERT_EQ(fcntl(full[0], F_SETFL, 0), 0);
  int pipe_ends[2];
  ASSERT_EQ(pipe2(pipe_ends, O_CLOEXEC), 0);
  ASSERT_EQ(write(pipe_ends[1], chunk.data(), chunk.size()), 4096);
  std::thread splicing([&] {
    splice(pipe_ends[0], nullptr, full[0], nullptr, chunk.size(), 0);  // waits for room
  });
  // Room comes only after the close returned, or after 10 s if it waited.
  absl::Notification closed;
  std::thread reader([&] {
    closed.WaitForNotificationWithTimeout(absl::Seconds(10));
    std::string sink(1 << 20, '\0');
    for (int i = 0; i < 64 && read(full[1], sink.data(), sink.size()) > 0; ++i) {
      if (fcntl(full[1], F_SETFL, O_NONBLOCK) != 0) break;
    }
  });
  absl::SleepFor(absl::Milliseconds(200));  // the splice is under way, holding the lock
  const SlowCloses before = SlowCloseCounts();
  const absl::Time start = absl::Now();
  CloseReceived(pipe_ends[1]);  // the write end's only reference: its last close
  const absl::Duration took = absl::Now() - start;
  // Its close hangs on a slow closer thread: later ones are closed on others.
  int other[2];
  ASSERT_EQ(pipe2(other, O_CLOEXEC), 0);
  close(other[0]);
  CloseReceived(other[1]);
  EXPECT_TRUE(Eventually([&] { return SlowCloseCounts().closed >= before.closed + 1; }))
      << "one hanging close held the next";
  // aclctl's status counts the hanging close as waiting.
  EXPECT_EQ(SlowCloseCounts().waiting, before.waiting + 1);
  closed.Notify();
  EXPECT_LT(took, absl::Seconds(5)) << "the close waited for the sender's splice";
  reader.join();
  splicing.join();
  EXPECT_TRUE(Eventually([&] { return SlowCloseCounts().closed >= before.closed + 2; }));
  EXPECT_EQ(SlowCloseCounts().waiting, before.waiting);
  close(pipe_ends[0]);
  close(full[0]);
  close(full[1]);
}

// Where the kernel can (Linux 6.16 on), a socket that expects no descriptor
// refuses them, and connections accepted on it inherit that.
TEST(ClientDescriptorsTest, AListenerThatRefusesDescriptorsPassesTheRefusalOn) {
  const std::string path = TempDir() + "/refusing.sock";
  const int listener = Listen(path);
  RefuseDescriptors(listener);
  int passes = 1;
  socklen_t length = sizeof(passes);
  if (getsockopt(listener, SOL_SOCKET, 83 /* SO_PASSRIGHTS */, &passes, &length) != 0) {
    close(listener);
    GTEST_SKIP() << "this kernel has no SO_PASSRIGHTS (before 6.16)";
  }
  EXPECT_EQ(passes, 0);
  const int client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_TRUE(Connect(client, path));
  int pipe_ends[2];
  ASSERT_EQ(pipe2(pipe_ends, O_CLOEXEC), 0);
  // Before acld accepts it, as a client would send.
  EXPECT_EQ(SendDescriptor(client, pipe_ends[0]), -1);
  EXPECT_EQ(errno, EPERM);
  const char byte = 'x';
  EXPECT_EQ(send(client, &byte, 1, MSG_NOSIGNAL), 1) << "bytes still pass";
  close(pipe_ends[0]);
  close(pipe_ends[1]);
  close(client);
  close(listener);
}

}  // namespace
}  // namespace acld::server
