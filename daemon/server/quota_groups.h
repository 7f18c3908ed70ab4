// Quota groups as acld serves them (docs/groups.md): for each group, its
// directory <dir of --socket>/groups/<id>/ holding its own runtime socket
// (acld.sock) and identity socket (acld.sock.peer), and its record kept in
// --state_dir (group_store.h).
//
// Membership comes from the socket a process connected through, never from
// anything the process says: a session that opens on a group's identity
// socket, or whose gRPC connection a group's runtime socket accepted with a
// token of that group's desk, is the group's. groups/ is mode 0711 (nobody
// can list the ids) and ids are 128 random bits.
//
// A group's directory is removed only when the group is deleted: containers
// have it bind-mounted, and a directory created anew would be invisible to
// them. When acld stops, the sockets go and the directories stay; when it
// starts, it listens in them again. Each group costs acld two threads (its
// identity desk and its acceptor), hence the cap on their number.
#ifndef ACLD_DAEMON_SERVER_QUOTA_GROUPS_H_
#define ACLD_DAEMON_SERVER_QUOTA_GROUPS_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/quota_group.h"
#include "daemon/server/group_store.h"
#include "daemon/server/peer_credentials.h"
#include "daemon/server/runtime_acceptor.h"
#include "daemon/server/runtime_service.h"

namespace acld::server {

struct QuotaGroupsOptions {
  std::string socket_path;  // the host's runtime socket: groups/ is beside it
  mode_t socket_mode = 0666;
  gid_t socket_gid = static_cast<gid_t>(-1);  // -1: acld's
  std::string state_dir;  // empty: groups last as long as acld does
  int32_t host_devices = 0;
  size_t max_groups = 128;
  // On each group's runtime socket (RuntimeAcceptor; 0: no limit).
  size_t max_connections_per_uid = 0;
  // What stands between each group's runtime socket and gRPC (may be null).
  FrameGate* gate = nullptr;
};

// A group as the admin API shows it.
struct GroupView {
  GroupRecord record;
  std::shared_ptr<QuotaGroup> group;  // its usage
  std::string directory;
  size_t pending_identity_connections = 0;  // its desk's, not answered yet
  uint64_t identity_busy = 0;                // its desk's, told to come back
};

class QuotaGroups {
 public:
  // Opens the session of a process that handed its channel to a group's
  // identity socket (RuntimeService::OpenDirect).
  using DirectOpener = std::function<absl::StatusOr<std::function<void(UniqueFd)>>(
      const PeerCredentials& peer, uint32_t protocol_version, ReceivedMemory channel,
      const Entrance& entrance)>;
  // Takes a connection a group's runtime socket accepted (to gRPC).
  using HandOff = std::function<void(int fd)>;

  QuotaGroups(QuotaGroupsOptions options, DirectOpener open, HandOff hand_off);
  ~QuotaGroups();

  // Loads the groups kept in --state_dir and listens in their directories.
  // A group that cannot be restored (its devices gone, its directory not
  // acld's) is logged and left out; its record stays in the file.
  absl::Status Restore();

  // A new group (INVALID_ARGUMENT for a bad spec or labels,
  // RESOURCE_EXHAUSTED past the cap) with its sockets listening.
  absl::StatusOr<GroupView> Create(QuotaGroupSpec spec, GroupLabels labels);
  // Ends the sessions of a retired group; returns how many.
  using SessionEnder = std::function<uint32_t(const QuotaGroup& group)>;
  // Retires the group (no session joins it any more), ends its sessions
  // with `end_sessions`, closes its sockets and removes its directory.
  // Returns how many sessions ended.
  absl::StatusOr<uint32_t> Delete(const std::string& id, const SessionEnder& end_sessions);
  absl::StatusOr<GroupView> Label(const std::string& id, const GroupLabels& set,
                                  const std::vector<std::string>& remove);
  // Every group, or the one with `id` (NOT_FOUND when none).
  absl::StatusOr<std::vector<GroupView>> List(const std::string& id = "") const;

  // Where a gRPC connection came in, if a group's runtime socket accepted it.
  std::optional<Entrance> EntranceOf(int fd) const;
  // The uid that made connection `fd`, if a group's runtime socket accepted it.
  std::optional<uid_t> PeerUid(int fd) const;
  // Cuts the connections of `process` that groups' runtime sockets accepted
  // (SameProcess: a pid another process has taken since is not cut).
  void ShutdownConnections(const PeerCredentials& process) const;

  // Stops every group's sockets and removes the socket files; the
  // directories stay. Idempotent.
  void Close();

 private:
  struct Served;

  // Listens in `record`'s directory (creating it when missing).
  absl::StatusOr<std::shared_ptr<Served>> Serve(const GroupRecord& record);
  // groups/ beside the runtime socket, mode 0711, created when missing.
  absl::StatusOr<std::string> GroupsDirectory() const;
  std::string DirectoryOf(const std::string& id) const;
  // Writes every group's record to --state_dir (when set).
  absl::Status SaveLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  GroupView ViewOf(const Served& served) const;

  const QuotaGroupsOptions options_;
  const DirectOpener open_;
  const HandOff hand_off_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Served>> groups_ ABSL_GUARDED_BY(mu_);
  // Groups being deleted: gone from groups_ (no new session, not listed),
  // but ShutdownConnections still reaches their connections while their
  // sessions end.
  std::vector<std::shared_ptr<Served>> deleting_ ABSL_GUARDED_BY(mu_);
  // Restored records acld could not serve, kept in the file as they were.
  std::vector<GroupRecord> unserved_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_QUOTA_GROUPS_H_
