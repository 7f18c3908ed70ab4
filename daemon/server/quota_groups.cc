#include "daemon/server/quota_groups.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "daemon/server/socket_path.h"
#include "proto/acl/peer_socket.h"
#include "proto/acl/status_macros.h"
#include "spdlog/spdlog.h"

namespace acld::server {
namespace {

constexpr char kGroupsDirectory[] = "groups";
constexpr char kRuntimeSocketName[] = "acld.sock";

std::string DirectoryPart(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Creates `path` with `mode` when missing, checks it is a directory acld may
// keep sockets in (SocketDirectory), not a symlink (the socket directory may
// be sticky and writable by all, as /tmp), and gives it exactly `mode`.
absl::Status MakeDirectory(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create '", path, "': ", std::strerror(errno)));
  }
  ACL_ASSIGN_OR_RETURN(SocketDirectory directory,
                       SocketDirectory::Open(path, SocketDirectory::Links::kRefuse));
  if (fchmod(directory.fd(), mode) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot set the mode of '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Names the group by its public name only: whoever knows an id may join its
// group, and the device plugin logs what acld answers.
absl::Status NoSuchGroup(const std::string& id) {
  return absl::NotFoundError(absl::StrCat("no quota group ", QuotaGroupName(id), "..."));
}

}  // namespace

// A group being served: its limits and its two listening sockets.
struct QuotaGroups::Served {
  GroupRecord record;
  std::shared_ptr<QuotaGroup> group;
  std::shared_ptr<PeerCredentialDesk> desk;
  std::unique_ptr<RuntimeAcceptor> acceptor;
  std::string runtime_socket;
  absl::Mutex close_mu;
  bool closed ABSL_GUARDED_BY(close_mu) = false;

  // Stops both sockets and removes their files, once (a deletion and
  // acld's shutdown may both get here); not from a desk's opener.
  void Close() {
    absl::MutexLock lock(&close_mu);
    if (closed) return;
    closed = true;
    if (acceptor != nullptr) acceptor->Stop();
    if (desk != nullptr) desk->Stop();
    RemoveSocket(runtime_socket);
    RemoveSocket(PeerSocketPath(runtime_socket));
  }
};

QuotaGroups::QuotaGroups(QuotaGroupsOptions options, DirectOpener open, HandOff hand_off)
    : options_(std::move(options)), open_(std::move(open)), hand_off_(std::move(hand_off)) {}

QuotaGroups::~QuotaGroups() { Close(); }

std::string QuotaGroups::DirectoryOf(const std::string& id) const {
  return absl::StrCat(DirectoryPart(options_.socket_path), "/", kGroupsDirectory, "/", id);
}

absl::StatusOr<std::string> QuotaGroups::GroupsDirectory() const {
  const std::string path = absl::StrCat(DirectoryPart(options_.socket_path), "/", kGroupsDirectory);
  // 0711: a process may reach a directory whose id it knows, never list them.
  ACL_RETURN_IF_ERROR(MakeDirectory(path, 0711));
  return path;
}

absl::StatusOr<std::shared_ptr<QuotaGroups::Served>> QuotaGroups::Serve(
    const GroupRecord& record) {
  ACL_RETURN_IF_ERROR(GroupsDirectory().status());
  const std::string directory = DirectoryOf(record.id);
  ACL_RETURN_IF_ERROR(MakeDirectory(directory, 0755));
  auto served = std::make_shared<Served>();
  served->record = record;
  served->group = std::make_shared<QuotaGroup>(record.id, record.spec);
  served->runtime_socket = absl::StrCat(directory, "/", kRuntimeSocketName);
  const std::string peer_path = PeerSocketPath(served->runtime_socket);
  ACL_RETURN_IF_ERROR(PrepareSocketPath(served->runtime_socket));
  ACL_RETURN_IF_ERROR(PrepareSocketPath(peer_path));
  ACL_ASSIGN_OR_RETURN(
      int runtime_fd,
      ListenOnSocketPath(served->runtime_socket, options_.socket_mode, options_.socket_gid));
  absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> desk;
  {
    // As the host's identity socket is made (daemon_server.cc); the umask is
    // the process's for this instant.
    ScopedUmask mask(UmaskFor(options_.socket_mode));
    // Its processes are one tenant here, as on the group's runtime socket.
    PeerDeskOptions desk_options;
    desk_options.as_one_tenant = true;
    desk = PeerCredentialDesk::Listen(peer_path, desk_options);
  }
  if (!desk.ok()) {
    close(runtime_fd);
    served->Close();
    return desk.status();
  }
  served->desk = *std::move(desk);
  absl::Status access = SecureSocket(peer_path, options_.socket_mode, options_.socket_gid);
  if (!access.ok()) {
    close(runtime_fd);
    served->Close();
    return access;
  }
  // The desk's opener holds it weakly: a desk that held itself would never
  // be freed (nor the descriptors its tickets hold) after its group goes.
  served->desk->Serve([open = open_, desk = std::weak_ptr<PeerCredentialDesk>(served->desk),
                       group = served->group](const PeerCredentials& peer, uint32_t version,
                                              ReceivedMemory channel)
                          -> absl::StatusOr<std::function<void(UniqueFd)>> {
    std::shared_ptr<PeerCredentialDesk> serving = desk.lock();
    if (serving == nullptr) return absl::UnavailableError("the quota group was deleted");
    return open(peer, version, std::move(channel), Entrance{std::move(serving), group});
  });
  absl::StatusOr<std::unique_ptr<RuntimeAcceptor>> acceptor = RuntimeAcceptor::Start(
      runtime_fd, absl::StrCat("group ", QuotaGroupName(record.id), " runtime socket"), hand_off_,
      absl::Milliseconds(100), options_.max_connections_per_uid, options_.gate,
      RuntimeAcceptor::Counting::kAsOneTenant);
  if (!acceptor.ok()) {
    served->Close();
    return acceptor.status();
  }
  served->acceptor = *std::move(acceptor);
  return served;
}

absl::Status QuotaGroups::Restore() {
  if (options_.state_dir.empty()) return absl::OkStatus();
  ACL_ASSIGN_OR_RETURN(std::vector<GroupRecord> records, LoadGroups(options_.state_dir));
  absl::MutexLock lock(&mu_);
  for (const GroupRecord& record : records) {
    absl::Status spec = CheckQuotaGroupSpec(record.spec, options_.host_devices);
    if (spec.ok() && groups_.count(record.id) != 0) {
      spec = absl::AlreadyExistsError("its id is in the file twice");
    } else if (spec.ok() && groups_.size() >= options_.max_groups) {
      spec = absl::ResourceExhaustedError(
          absl::StrCat("acld serves at most ", options_.max_groups, " quota groups"));
    }
    absl::StatusOr<std::shared_ptr<Served>> served =
        spec.ok() ? Serve(record) : absl::StatusOr<std::shared_ptr<Served>>(spec);
    if (!served.ok()) {
      // Kept in the file (and its directory kept): a device that comes back
      // or an operator's fix serves it again at the next start.
      spdlog::error("quota group {} is not served: {}", QuotaGroupName(record.id),
                    std::string(served.status().message()));
      if (groups_.count(record.id) == 0) unserved_.push_back(record);
      continue;
    }
    groups_[record.id] = *std::move(served);
  }
  spdlog::info("{} quota groups restored from {}", groups_.size(), options_.state_dir);
  return absl::OkStatus();
}

absl::StatusOr<GroupView> QuotaGroups::Create(QuotaGroupSpec spec, GroupLabels labels) {
  ACL_RETURN_IF_ERROR(CheckQuotaGroupSpec(spec, options_.host_devices));
  ACL_RETURN_IF_ERROR(CheckGroupLabels(labels));
  GroupRecord record;
  ACL_ASSIGN_OR_RETURN(record.id, NewGroupId());
  record.spec = std::move(spec);
  record.labels = std::move(labels);
  record.created_unix_seconds = absl::ToUnixSeconds(absl::Now());
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::UnavailableError("acld is shutting down");
  if (groups_.size() >= options_.max_groups) {
    return absl::ResourceExhaustedError(
        absl::StrCat("acld already has ", options_.max_groups, " quota groups"));
  }
  absl::StatusOr<std::shared_ptr<Served>> serving = Serve(record);
  if (!serving.ok()) {
    rmdir(DirectoryOf(record.id).c_str());  // made for it, if it got that far
    return serving.status();
  }
  std::shared_ptr<Served> served = *std::move(serving);
  groups_[record.id] = served;
  absl::Status saved = SaveLocked();
  if (!saved.ok()) {
    // A group that would not survive a restart is not made.
    groups_.erase(record.id);
    served->Close();
    rmdir(DirectoryOf(record.id).c_str());
    return saved;
  }
  spdlog::info("quota group {} created: {} devices", QuotaGroupName(record.id),
               record.spec.devices.size());
  return ViewOf(*served);
}

absl::StatusOr<uint32_t> QuotaGroups::Delete(const std::string& id,
                                             const SessionEnder& end_sessions) {
  std::shared_ptr<Served> served;
  {
    absl::MutexLock lock(&mu_);
    auto it = groups_.find(id);
    if (it == groups_.end()) return NoSuchGroup(id);
    served = std::move(it->second);
    groups_.erase(it);
    deleting_.push_back(served);
    served->group->Retire();
    absl::Status saved = SaveLocked();
    if (!saved.ok()) spdlog::error("quota group {} deleted but not from the state: {}", QuotaGroupName(id),
                                   std::string(saved.message()));
  }
  // Outside the lock. Its sessions end while its sockets still stand, so
  // that acld can still cut the connections of those that do not read;
  // then stopping joins the desk, which may be opening a session (refused:
  // the group is retired).
  const uint32_t ended = end_sessions(*served->group);
  served->Close();
  // Connections it accepted outlive the socket otherwise, each holding
  // descriptors that nothing counts any more (aclctl shows the host socket's).
  if (served->acceptor != nullptr) {
    served->acceptor->ShutdownConnections([](const PeerCredentials&) { return true; });
  }
  {
    absl::MutexLock lock(&mu_);
    deleting_.erase(std::find(deleting_.begin(), deleting_.end(), served));
  }
  if (rmdir(DirectoryOf(id).c_str()) != 0 && errno != ENOENT) {
    spdlog::warn("quota group {}: cannot remove its directory: {}", QuotaGroupName(id),
                 std::strerror(errno));
  }
  spdlog::info("quota group {} deleted, {} sessions ended", QuotaGroupName(id), ended);
  return ended;
}

absl::StatusOr<GroupView> QuotaGroups::Label(const std::string& id, const GroupLabels& set,
                                             const std::vector<std::string>& remove) {
  absl::MutexLock lock(&mu_);
  auto it = groups_.find(id);
  if (it == groups_.end()) return NoSuchGroup(id);
  GroupLabels labels = it->second->record.labels;
  for (const std::string& key : remove) labels.erase(key);
  for (const auto& [key, value] : set) labels[key] = value;
  ACL_RETURN_IF_ERROR(CheckGroupLabels(labels));
  GroupLabels previous = std::exchange(it->second->record.labels, std::move(labels));
  absl::Status saved = SaveLocked();
  if (!saved.ok()) {
    it->second->record.labels = std::move(previous);
    return saved;
  }
  return ViewOf(*it->second);
}

absl::StatusOr<std::vector<GroupView>> QuotaGroups::List(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  std::vector<GroupView> views;
  for (const auto& [group_id, served] : groups_) {
    if (id.empty() || id == group_id) views.push_back(ViewOf(*served));
  }
  if (!id.empty() && views.empty()) {
    return NoSuchGroup(id);
  }
  return views;
}

GroupView QuotaGroups::ViewOf(const Served& served) const {
  return GroupView{served.record, served.group, DirectoryOf(served.record.id),
                   served.desk->pending_connections(), served.desk->busy_refusals()};
}

std::optional<Entrance> QuotaGroups::EntranceOf(int fd) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, served] : groups_) {
    if (served->acceptor->Holds(fd)) return Entrance{served->desk, served->group};
  }
  return std::nullopt;
}

std::optional<uid_t> QuotaGroups::PeerUid(int fd) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, served] : groups_) {
    std::optional<uid_t> uid = served->acceptor->PeerUid(fd);
    if (uid.has_value()) return uid;
  }
  return std::nullopt;
}

void QuotaGroups::ShutdownConnections(const PeerCredentials& process) const {
  absl::MutexLock lock(&mu_);
  auto cut = [&process](const Served& served) {
    served.acceptor->ShutdownConnections(
        [&process](const PeerCredentials& peer) { return SameProcess(peer, process); });
  };
  for (const auto& [id, served] : groups_) cut(*served);
  for (const auto& served : deleting_) cut(*served);
}

absl::Status QuotaGroups::SaveLocked() const {
  if (options_.state_dir.empty()) return absl::OkStatus();
  std::vector<GroupRecord> records = unserved_;
  for (const auto& [id, served] : groups_) records.push_back(served->record);
  return SaveGroups(options_.state_dir, records);
}

void QuotaGroups::Close() {
  std::map<std::string, std::shared_ptr<Served>> closing;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    closing = groups_;
  }
  for (const auto& [id, served] : closing) served->Close();
}

}  // namespace acld::server
