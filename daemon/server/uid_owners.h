// Whom a uid's processes are counted as, for every per-uid limit.
//
// A user with subordinate uids (/etc/subuid, as rootless containers use) can
// run processes as each of them. Counted by the kernel's uid alone, each
// would be a tenant of its own, and one user's thousands of them together
// could fill what is bounded for everyone (pending identity connections,
// tickets, sessions: docs/security.md). So a uid inside a subordinate range
// counts as the user who owns the range. The kernel's uid stays the
// process's identity everywhere else (tokens, whitelists, SameProcess).
//
// Only a user's ranges: one owned by root or a service account (uid below
// the system's first user uid, UID_MIN) is a pool the service carves up
// among tenants of their own (LXD's containers, a kubelet's pods, rootful
// podman's --userns=auto), and each of its uids stays a tenant of its own.
// A user's range that takes in uids of other users (a directory's uids
// above 100000) merges them with the owner, who can become them anyway
// (newuidmap).
#ifndef ACLD_DAEMON_SERVER_UID_OWNERS_H_
#define ACLD_DAEMON_SERVER_UID_OWNERS_H_

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace acld::server {

class UidOwners {
 public:
  using UidOfName = std::function<std::optional<uint32_t>(const std::string& name)>;

  // No ranges: every uid counts as itself.
  UidOwners() = default;

  // /etc/subuid's lines, "owner:first:count", the owner a user name or a
  // uid. Skipped (skipped() counts them): lines that do not parse, names
  // `uid_of` does not know, owners below `first_user_uid` (a service's
  // pool, above), and ranges that overlap one starting lower.
  static UidOwners Parse(absl::string_view text, const UidOfName& uid_of,
                         uint32_t first_user_uid = kDefaultFirstUserUid);
  // The file at `path`, names resolved by the system's user database, users
  // from UID_MIN of /etc/login.defs on. A missing file has no ranges; an
  // unreadable or oversized one is an error.
  static absl::StatusOr<UidOwners> Read(const std::string& path);
  // Debian's UID_MIN, where /etc/login.defs does not say.
  static constexpr uint32_t kDefaultFirstUserUid = 1000;

  // The owner of the range `uid` is in, else `uid`.
  uint32_t CountedAs(uint32_t uid) const;
  size_t ranges() const { return ranges_.size(); }
  size_t skipped() const { return skipped_; }

  // The table acld counts by: none until set. Read where a process's
  // identity is taken (once per connection or session, kept with it, so
  // that what was charged is given back to the same tenant after a reload).
  static std::shared_ptr<const UidOwners> Host();
  static void SetHost(std::shared_ptr<const UidOwners> owners);
  // Host()->CountedAs(uid).
  static uint32_t HostCountedAs(uint32_t uid) { return Host()->CountedAs(uid); }

 private:
  struct Range {
    uint32_t first = 0;
    uint64_t end = 0;  // one past the last uid
    uint32_t owner = 0;
  };
  std::vector<Range> ranges_;  // by first, disjoint
  size_t skipped_ = 0;
};

// Keeps UidOwners::Host() in step with a file (--subuid_file): Refresh()
// reads it again when it changed (its inode, size or times), so a range an
// administrator adds counts without a restart.
class UidOwnersFile {
 public:
  explicit UidOwnersFile(std::string path) : path_(std::move(path)) {}
  // Whether the host's table was replaced: read again when the file
  // changed, or whatever it looks like when `force`d (SIGHUP: the user
  // database may answer for names it could not resolve before). Logs what
  // it read, or why it kept the table it had.
  bool Refresh(bool force = false);

 private:
  std::string path_;
  std::optional<struct stat> seen_;
};

// Calls `refresh` (UidOwnersFile::Refresh) on a thread of its own: every
// `every`, and at once after ReadNow (SIGHUP). Owner names resolve through
// the user database (NSS: LDAP, sssd), which can hang; the thread that
// answers SIGTERM must never wait for it.
class UidOwnersWatcher {
 public:
  UidOwnersWatcher(std::function<void(bool force)> refresh, absl::Duration every);
  // Waits for a read under way (acld's shutdown watchdog bounds a hung one).
  ~UidOwnersWatcher();
  UidOwnersWatcher(const UidOwnersWatcher&) = delete;
  UidOwnersWatcher& operator=(const UidOwnersWatcher&) = delete;

  // The next read is forced, and starts now unless one is under way.
  void ReadNow();

 private:
  void Run();
  bool Asked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || forced_; }

  const std::function<void(bool force)> refresh_;
  const absl::Duration every_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool forced_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_UID_OWNERS_H_
