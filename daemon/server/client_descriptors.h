// Descriptors that come from clients, and the sockets clients connect on.
//
// acld must never be the one whose close() of a client's file waits. A TCP
// socket its client set to linger, with bytes a peer never reads, holds its
// last close for as long as the client said (measured: a plain recv() and a
// close() each waited the whole linger); a file on the client's own FUSE
// mount holds close() until that server answers, which it may never do. A
// descriptor a client attaches (SCM_RIGHTS) to bytes acld reads becomes
// acld's to drop: on the reading thread when a read without room for it
// discards it, or on whichever thread closes the socket it still waits in.
// One user could so freeze the identity socket, the frame gate (every gRPC
// session) or a channel pool thread for everyone.
//
// So, on every socket a client reaches:
// - where acld expects no descriptor, the socket refuses them
//   (SO_PASSRIGHTS, Linux 6.16 on; accepted sockets inherit it from their
//   listener), and reads take any that come anyway (older kernels) with
//   ReceiveBytes rather than letting the kernel drop them;
// - every descriptor taken from a client goes through CloseReceived: a
//   socket is emptied the same way and closed without lingering, a file of a
//   kind whose close cannot wait is closed at once, anything else on a
//   thread of its own (the slow closer), where only it may wait;
// - a client's connection is shut, emptied of the descriptors it carries,
//   then closed (CloseConnection).
#ifndef ACLD_DAEMON_SERVER_CLIENT_DESCRIPTORS_H_
#define ACLD_DAEMON_SERVER_CLIENT_DESCRIPTORS_H_

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace acld::server {

// Makes `socket` (a listening or connected Unix socket) refuse descriptors
// sent to it, where the kernel can (Linux 6.16 on); nothing otherwise.
void RefuseDescriptors(int socket);

// recv() on a client's socket where acld expects no descriptor: any that
// came along are closed with CloseReceived. Returns as recv() does.
ssize_t ReceiveBytes(int socket, void* buffer, size_t size, int flags);

// Closes a descriptor a client handed over, never waiting on what the client
// controls (above).
void CloseReceived(int fd);

// Gives `take` each descriptor (SCM_RIGHTS) a received `message` carried, in
// order; each is then the taker's.
void TakeCarried(msghdr& message, const std::function<void(int fd)>& take);

// Closes a client's connection (a Unix stream socket acld accepted): shut,
// emptied of the descriptors still queued in it, closed.
void CloseConnection(int fd);

// Received descriptors waiting for the slow closer now (queued, or in a
// close that has not returned: one its sender holds), and closed there so
// far; past kMaxSlowCloses waiting, more are kept open (and counted), never
// closed where they could hold a thread that serves others.
struct SlowCloses {
  uint64_t waiting = 0;
  uint64_t closed = 0;
  uint64_t kept_open = 0;
};
inline constexpr size_t kMaxSlowCloses = 1024;
inline constexpr int kMaxSlowCloserThreads = 16;
SlowCloses SlowCloseCounts();

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_CLIENT_DESCRIPTORS_H_
