#include "client/remote_transport.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "client/busy_retry.h"
#include "client/spoken_protocol.h"
#include "client/peer_token.h"
#include "proto/acl/protocol.h"
#include "client/process_info.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/peer_socket.h"

namespace acl_client {
namespace {

constexpr char kHowToFix[] =
    "start acld (bazel-bin/daemon/acld --socket=<path>), or set ACLD_ADDRESS=unix:<path> to "
    "its socket, or ACLD_ADDRESS=embedded to run the runtime in this process";

absl::Status Unreachable(const std::string& socket_path, absl::string_view why) {
  return acld::AclStatus(
      ACL_ERROR_RT_SOCKET_CLOSE,
      absl::StrCat("cannot reach acld at unix:", socket_path, ": ", why, "; ", kHowToFix));
}

// How long acld may take to answer once something listens on its socket: a
// busy host (20 processes starting at once beside a compiler on two cores, or
// 1,024 at once) makes it slow, not absent, and aclInit must not fail for that.
constexpr absl::Duration kAnswerTimeout = absl::Seconds(30);

// How a daemon older than protocol 4 refuses a session request on its
// identity socket (daemon/server/peer_credentials.cc of those versions).
constexpr char kNotUnderstood[] = "request not understood";

// Whether anything listens on the Unix socket at `path` now. A connect() to
// it is refused at once when nothing does, and is taken into the listen
// backlog when something does, however busy (a full backlog says EAGAIN to a
// non-blocking socket: busy, not absent). So a stale socket file fails aclInit
// at once instead of after kAnswerTimeout (on the gRPC path: the identity
// socket's own connect says the same for a session opened there).
absl::Status CheckSomethingListens(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) return absl::InvalidArgumentError("path too long");
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(std::strerror(errno));
  const int result = connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const int error = errno;
  close(fd);
  if (result == 0 || error == EAGAIN || error == EINPROGRESS) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("nothing listens there (", std::strerror(error), ")"));
}

}  // namespace

RemoteTransport::RemoteTransport(std::unique_ptr<SessionChannel> channel,
                                 const std::string& socket_path)
    : channel_(std::move(channel)), bulk_(socket_path, channel_.get(), kAnswerTimeout) {}

absl::StatusOr<std::unique_ptr<RemoteTransport>> RemoteTransport::Connect(
    const std::string& socket_path, Carrier carrier, CallbackDispatcher* callbacks,
    const acld::InitSettings* initialize) {
  // A missing socket file is the common case ("acld is not running"): say so
  // without waiting for gRPC's connection attempts.
  struct stat info {};
  if (stat(socket_path.c_str(), &info) != 0) {
    return Unreachable(socket_path, std::strerror(errno));
  }
  if (carrier == Carrier::kSharedMemory) {
    // Its connect() to the identity socket fails at once, too, when nothing
    // listens (a stale socket file): no separate look first, which would make
    // acld's gRPC server accept, and drop, one more connection per process.
    absl::StatusOr<std::unique_ptr<RemoteTransport>> direct =
        ConnectDirect(socket_path, callbacks, initialize);
    // A daemon older than protocol 4 does not open sessions there: gRPC then.
    if (direct.ok() || direct.status().message().find(kNotUnderstood) == std::string::npos) {
      return direct;
    }
  }
  absl::Status listening = CheckSomethingListens(socket_path);
  if (!listening.ok()) return Unreachable(socket_path, listening.message());
  // acld serves a bounded number of each user's streams before their Hello
  // and refuses the rest: many processes of one user starting at once.
  return RetryWhileBusy<std::unique_ptr<RemoteTransport>>(
      kAnswerTimeout,
      [](const absl::Status& status) {
        return acld::AclCodeOf(status) == ACL_ERROR_RT_OVER_LIMIT &&
               absl::StrContains(status.message(), acld::kWaitingForHello);
      },
      [&](absl::Time) { return ConnectOverGrpc(socket_path, carrier, callbacks); });
}

absl::StatusOr<std::unique_ptr<RemoteTransport>> RemoteTransport::ConnectOverGrpc(
    const std::string& socket_path, Carrier carrier, CallbackDispatcher* callbacks) {
  absl::StatusOr<std::unique_ptr<SessionChannel>> channel =
      SessionChannel::Open(socket_path, callbacks, kAnswerTimeout);
  if (!channel.ok()) return Unreachable(socket_path, channel.status().message());
  std::unique_ptr<RemoteTransport> transport(new RemoteTransport(*std::move(channel), socket_path));

  absl::StatusOr<std::string> token =
      FetchPeerToken(acld::PeerSocketPath(socket_path), kAnswerTimeout);
  if (!token.ok()) return Unreachable(socket_path, token.status().message());
  // A channel that cannot be set up leaves the session on the stream.
  std::unique_ptr<ClientRing> ring;
  if (carrier == Carrier::kSharedMemory) {
    absl::StatusOr<std::unique_ptr<ClientRing>> created =
        ClientRing::Create(acld::PeerSocketPath(socket_path), kAnswerTimeout);
    if (created.ok()) ring = *std::move(created);
  }
  absl::StatusOr<codec::SessionInfo> opened = codec::SessionOpenedOf(transport->channel_->Call(
      codec::Hello(*token, getpid(), getuid(), ProcessCommandLine(),
                   ring != nullptr ? ring->ticket() : ""),
      kAnswerTimeout));
  if (!opened.ok()) {
    // Over one of acld's caps: say which (the daemon names it and its flag).
    if (acld::AclCodeOf(opened.status()) == ACL_ERROR_RT_OVER_LIMIT) return opened.status();
    return Unreachable(socket_path,
                       absl::StrCat(opened.status().message(), " (this libascendcl speaks protocol "
                                    "version ", kSpokenProtocolVersion, ")"));
  }
  if (opened->ring && ring != nullptr) transport->channel_->UseRing(std::move(ring));
  transport->session_ = *std::move(opened);
  transport->channel_->Post(codec::ClientFeatures());
  return transport;
}

absl::StatusOr<std::unique_ptr<RemoteTransport>> RemoteTransport::ConnectDirect(
    const std::string& socket_path, CallbackDispatcher* callbacks,
    const acld::InitSettings* initialize) {
  SessionChannel::Opening opening;
  opening.posts.push_back(codec::ClientFeatures());
  if (initialize != nullptr) opening.call = codec::Initialize(*initialize);
  absl::StatusOr<std::unique_ptr<SessionChannel>> channel =
      SessionChannel::OpenDirect(socket_path, callbacks, kAnswerTimeout, std::move(opening));
  if (!channel.ok()) {
    if (!absl::IsFailedPrecondition(channel.status())) {
      return Unreachable(socket_path, channel.status().message());
    }
    // acld refused: "<path> refused: <aclError> <reason>".
    absl::string_view refusal = channel.status().message();
    int32_t code = ACL_ERROR_RT_SOCKET_CLOSE;
    const size_t at = refusal.find(" refused: ");
    if (at != absl::string_view::npos) {
      refusal.remove_prefix(at + std::strlen(" refused: "));
      const size_t space = refusal.find(' ');
      if (space != absl::string_view::npos &&
          absl::SimpleAtoi(refusal.substr(0, space), &code)) {
        refusal.remove_prefix(space + 1);
      }
    }
    if (code == ACL_ERROR_RT_OVER_LIMIT) {
      return acld::AclStatus(code, absl::StrCat("acld at unix:", socket_path,
                                                " refused this process's session: ", refusal));
    }
    return Unreachable(socket_path, absl::StrCat(refusal, " (this libascendcl speaks protocol "
                                                 "version ", kSpokenProtocolVersion, ")"));
  }
  std::unique_ptr<RemoteTransport> transport(new RemoteTransport(*std::move(channel), socket_path));
  absl::StatusOr<codec::SessionInfo> opened = codec::SessionOpenedOf(transport->channel_->Finish(
      transport->channel_->Expect(acld::kSessionOpenedCallId), kAnswerTimeout));
  if (!opened.ok()) return Unreachable(socket_path, opened.status().message());
  transport->session_ = *std::move(opened);
  transport->opening_initialize_ = transport->channel_->TakeOpeningCall();
  if (transport->opening_initialize_ != nullptr) transport->opening_settings_ = *initialize;
  return transport;
}

RemoteTransport::~RemoteTransport() { Close(); }

void RemoteTransport::Close() { channel_->Close(); }

void RemoteTransport::ForkedChild() { channel_->ForkedChild(); }

// --- lifecycle ---

absl::StatusOr<uint64_t> RemoteTransport::InitCount() {
  return codec::InitCountOf(channel_->Call(codec::InitCount()));
}

absl::StatusOr<uint64_t> RemoteTransport::AddInitReference() {
  return codec::InitCountOf(channel_->Call(codec::AddInitReference()));
}

absl::Status RemoteTransport::Initialize(const acld::InitSettings& settings) {
  if (std::shared_ptr<SessionChannel::PendingCall> sent = std::exchange(opening_initialize_, nullptr)) {
    // acld applied it (or refused it) before anything later: its answer first.
    absl::Status answered = channel_->Finish(sent).status();
    if (settings == opening_settings_) return answered;
  }
  return channel_->Call(codec::Initialize(settings)).status();
}

absl::Status RemoteTransport::AbortInit() { return channel_->Call(codec::AbortInit()).status(); }

absl::StatusOr<uint64_t> RemoteTransport::DropInitReference() {
  return codec::InitCountOf(channel_->Call(codec::DropInitReference()));
}

absl::Status RemoteTransport::Finalize() { return channel_->Call(codec::Finalize()).status(); }

// --- devices, contexts, streams, events ---

absl::StatusOr<acld::ContextInfo> RemoteTransport::SetDevice(int32_t device_id) {
  return codec::ContextOf(channel_->Call(codec::SetDevice(device_id)));
}

absl::Status RemoteTransport::ResetDevice(int32_t device_id, bool force) {
  return channel_->Call(codec::ResetDevice(device_id, force)).status();
}

absl::Status RemoteTransport::SynchronizeDevice(int32_t device_id, int32_t timeout_ms) {
  return channel_->Call(codec::SynchronizeDevice(device_id, timeout_ms)).status();
}

absl::StatusOr<acld::ContextInfo> RemoteTransport::CreateContext(int32_t device_id) {
  return codec::ContextOf(channel_->Call(codec::CreateContext(device_id)));
}

absl::Status RemoteTransport::DestroyContext(uint64_t context) {
  return channel_->Call(codec::DestroyContext(context)).status();
}

absl::StatusOr<uint64_t> RemoteTransport::CreateStream(uint64_t context, uint32_t priority,
                                                       uint32_t flags, bool saturate_floats) {
  return codec::HandleOf(
      channel_->Call(codec::CreateStream(context, priority, flags, saturate_floats)));
}

absl::Status RemoteTransport::DestroyStream(uint64_t stream, bool force) {
  return channel_->Call(codec::DestroyStream(stream, force)).status();
}

absl::Status RemoteTransport::SynchronizeStream(uint64_t stream, int32_t timeout_ms) {
  return channel_->Call(codec::SynchronizeStream(stream, timeout_ms)).status();
}

absl::StatusOr<bool> RemoteTransport::StreamIdle(uint64_t stream) {
  return codec::StreamIdleOf(channel_->Call(codec::StreamQuery(stream)));
}

absl::Status RemoteTransport::AbortStream(uint64_t stream) {
  return channel_->Call(codec::AbortStream(stream)).status();
}

absl::Status RemoteTransport::StopStream(uint64_t stream) {
  return channel_->Call(codec::StopStream(stream)).status();
}

absl::Status RemoteTransport::SetStreamFailureMode(uint64_t stream, uint64_t mode) {
  return channel_->Call(codec::SetStreamFailureMode(stream, mode)).status();
}

absl::Status RemoteTransport::SetStreamAllocator(uint64_t stream, bool registered) {
  return channel_->Call(codec::SetStreamAllocator(stream, registered)).status();
}

absl::StatusOr<uint64_t> RemoteTransport::LaunchKernel(uint64_t stream, uint64_t thread,
                                                       const acld::KernelRequest& kernel) {
  return channel_->Submit(stream, [&](acl::v1::AsyncOp& op) {
    codec::SetLaunchKernel(stream, thread, kernel, op);
  });
}

absl::StatusOr<uint64_t> RemoteTransport::LoadBinary(int32_t device_id, absl::string_view binary) {
  return bulk_.LoadBinary(device_id, binary);
}

absl::Status RemoteTransport::UnloadBinary(uint64_t binary) {
  return channel_->Call(codec::UnloadBinary(binary)).status();
}

absl::StatusOr<uint64_t> RemoteTransport::GetFunction(uint64_t binary, const std::string& name) {
  return codec::HandleOf(channel_->Call(codec::GetFunction(binary, name)));
}

absl::StatusOr<uint64_t> RemoteTransport::LaunchFunction(uint64_t stream, uint64_t thread,
                                                         const acld::FunctionLaunch& launch) {
  // Placeholders' bytes travel in the batch too: they count toward its size.
  size_t payload_bytes = launch.args.size();
  for (const acld::Placeholder& placeholder : launch.placeholders) {
    payload_bytes += placeholder.data.size();
  }
  return channel_->Submit(codec::LaunchFunction(stream, thread, launch), payload_bytes);
}

absl::StatusOr<uint64_t> RemoteTransport::MemsetAsync(uint64_t stream, uint64_t thread,
                                                      const acld::MemsetRequest& memset) {
  return channel_->Submit(codec::MemsetAsync(stream, thread, memset));
}

absl::StatusOr<uint64_t> RemoteTransport::ValueWaitAsync(uint64_t stream, uint64_t thread,
                                                         const acld::ValueWaitRequest& wait) {
  return channel_->Submit(codec::ValueWaitAsync(stream, thread, wait));
}

absl::StatusOr<uint64_t> RemoteTransport::OverflowAsync(uint64_t stream, uint64_t thread,
                                                        const acld::OverflowRequest& overflow) {
  return channel_->Submit(codec::OverflowAsync(stream, thread, overflow));
}

absl::StatusOr<uint64_t> RemoteTransport::RandomAsync(uint64_t stream, uint64_t thread,
                                                      const acld::RandomRequest& random) {
  return channel_->Submit(codec::RandomAsync(stream, thread, random));
}

absl::StatusOr<uint64_t> RemoteTransport::ReduceAsync(uint64_t stream, uint64_t thread,
                                                      const acld::ReduceRequest& reduce) {
  return channel_->Submit(codec::ReduceAsync(stream, thread, reduce));
}

absl::StatusOr<uint64_t> RemoteTransport::RecordEvent(uint64_t event, uint64_t stream,
                                                      uint64_t thread) {
  return channel_->Submit(codec::RecordEvent(stream, thread, event));
}

absl::StatusOr<uint64_t> RemoteTransport::ResetEvent(uint64_t event, uint64_t stream,
                                                     uint64_t thread) {
  return channel_->Submit(codec::ResetEvent(stream, thread, event));
}

absl::StatusOr<uint64_t> RemoteTransport::StreamWaitEvent(uint64_t stream, uint64_t event,
                                                          uint64_t thread) {
  return channel_->Submit(codec::WaitEvent(stream, thread, event));
}

absl::StatusOr<uint64_t> RemoteTransport::RecordNotify(uint64_t notify, uint64_t stream,
                                                       uint64_t thread) {
  return channel_->Submit(codec::RecordNotify(stream, thread, notify));
}

absl::StatusOr<uint64_t> RemoteTransport::WaitAndResetNotify(uint64_t notify, uint64_t stream,
                                                             uint32_t timeout_s, uint64_t thread) {
  return channel_->Submit(codec::WaitNotify(stream, thread, notify, timeout_s));
}

absl::StatusOr<uint64_t> RemoteTransport::CreateNotify(int32_t device_id) {
  return codec::HandleOf(channel_->Call(codec::CreateNotify(device_id)));
}

absl::Status RemoteTransport::DestroyNotify(uint64_t notify) {
  return channel_->Call(codec::DestroyNotify(notify)).status();
}

absl::StatusOr<uint64_t> RemoteTransport::CreateEvent(int32_t device_id, uint32_t flags) {
  return codec::HandleOf(channel_->Call(codec::CreateEvent(device_id, flags)));
}

absl::Status RemoteTransport::DestroyEvent(uint64_t event) {
  return channel_->Call(codec::DestroyEvent(event)).status();
}

absl::Status RemoteTransport::SynchronizeEvent(uint64_t event, int32_t timeout_ms) {
  return channel_->Call(codec::SynchronizeEvent(event, timeout_ms)).status();
}

absl::StatusOr<acld::EventStatus> RemoteTransport::QueryEvent(uint64_t event) {
  return codec::EventStatusOf(channel_->Call(codec::QueryEvent(event)));
}

absl::StatusOr<float> RemoteTransport::EventElapsedMs(uint64_t start, uint64_t end) {
  return codec::ElapsedMsOf(channel_->Call(codec::EventElapsedTime(start, end)));
}

absl::StatusOr<uint64_t> RemoteTransport::EventTimestampUs(uint64_t event) {
  return codec::TimestampUsOf(channel_->Call(codec::EventTimestamp(event)));
}

absl::StatusOr<uint64_t> RemoteTransport::LaunchCallback(uint64_t stream, uint64_t thread,
                                                         uint64_t callback_id, bool block) {
  return channel_->Submit(codec::HostCallback(stream, thread, callback_id, block));
}

void RemoteTransport::AcknowledgeCallback(uint64_t callback_id) {
  // After everything the callback itself submitted, so its work comes first.
  channel_->Post(codec::CallbackDone(callback_id));
}

// --- memory ---

absl::StatusOr<std::string> RemoteTransport::ExportMemory(uint64_t address, uint64_t size,
                                                          uint64_t flags) {
  return codec::SharingKeyOf(channel_->Call(codec::ExportMemory(address, size, flags)));
}

absl::Status RemoteTransport::SetImportPids(const std::string& key,
                                            const std::vector<int32_t>& pids) {
  return channel_->Call(codec::SetImportPids(key, pids)).status();
}

absl::Status RemoteTransport::SetExportAttribute(const std::string& key, int32_t type,
                                                 uint64_t value) {
  return channel_->Call(codec::SetExportAttribute(key, type, value)).status();
}

absl::StatusOr<uint64_t> RemoteTransport::ImportMemory(const std::string& key) {
  channel_->ReadBeforeCalls();  // its revocation notices come first
  return codec::DeviceAddressOf(channel_->Call(codec::ImportMemory(key)));
}

absl::Status RemoteTransport::CloseMemoryKey(const std::string& key) {
  return channel_->Call(codec::CloseMemoryKey(key)).status();
}

absl::StatusOr<uint64_t> RemoteTransport::MallocPhysical(int32_t device_id, uint64_t size,
                                                         bool huge_pages) {
  return codec::HandleOf(channel_->Call(codec::MallocPhysical(device_id, size, huge_pages)));
}

absl::StatusOr<uint64_t> RemoteTransport::RetainPhysical(uint64_t address) {
  return codec::HandleOf(channel_->Call(codec::RetainPhysical(address)));
}

absl::StatusOr<acld::PhysicalProperties> RemoteTransport::PhysicalProperties(uint64_t handle) {
  return codec::PhysicalPropertiesOf(channel_->Call(codec::PhysicalProperties(handle)));
}

absl::StatusOr<bool> RemoteTransport::MemoryAccess(uint64_t address, int32_t device_id) {
  return codec::MemoryAccessOf(channel_->Call(codec::MemoryAccess(address, device_id)));
}

absl::Status RemoteTransport::FreePhysical(uint64_t handle) {
  return channel_->Call(codec::FreePhysical(handle)).status();
}

absl::StatusOr<uint64_t> RemoteTransport::ReserveAddresses(int32_t device_id, uint64_t size) {
  return codec::DeviceAddressOf(channel_->Call(codec::ReserveAddresses(device_id, size)));
}

absl::Status RemoteTransport::ReleaseAddresses(uint64_t address) {
  return channel_->Call(codec::ReleaseAddresses(address)).status();
}

absl::Status RemoteTransport::MapMemory(uint64_t address, uint64_t size, uint64_t offset,
                                        uint64_t handle, bool accessible) {
  return channel_->Call(codec::MapMemory(address, size, offset, handle, accessible)).status();
}

absl::Status RemoteTransport::UnmapMemory(uint64_t address) {
  return channel_->Call(codec::UnmapMemory(address)).status();
}

absl::Status RemoteTransport::SetMemoryAccess(uint64_t address, uint64_t size, int32_t device_id,
                                              bool readwrite) {
  return channel_->Call(codec::SetMemoryAccess(address, size, device_id, readwrite)).status();
}

absl::StatusOr<uint64_t> RemoteTransport::ExportPhysical(uint64_t handle, bool pid_validation) {
  return codec::HandleOf(channel_->Call(codec::ExportPhysical(handle, pid_validation)));
}

absl::Status RemoteTransport::SetShareablePids(uint64_t shareable,
                                               const std::vector<int32_t>& pids) {
  return channel_->Call(codec::SetShareablePids(shareable, pids)).status();
}

absl::StatusOr<uint64_t> RemoteTransport::ImportPhysical(uint64_t shareable, int32_t device_id) {
  channel_->ReadBeforeCalls();  // its revocation notices come first
  return codec::HandleOf(channel_->Call(codec::ImportPhysical(shareable, device_id)));
}

absl::StatusOr<std::string> RemoteTransport::ShareNotify(uint64_t notify, bool pid_validation) {
  return codec::SharingKeyOf(channel_->Call(codec::ShareNotify(notify, pid_validation)));
}

absl::Status RemoteTransport::SetNotifyImportPids(uint64_t notify,
                                                  const std::vector<int32_t>& pids) {
  return channel_->Call(codec::SetNotifyImportPids(notify, pids)).status();
}

absl::StatusOr<acld::SharedNotifyInfo> RemoteTransport::ImportNotify(const std::string& key) {
  return codec::SharedNotifyOf(channel_->Call(codec::ImportNotify(key)));
}

absl::StatusOr<std::string> RemoteTransport::ShareEvent(uint64_t event) {
  return codec::SharingKeyOf(channel_->Call(codec::ShareEvent(event)));
}

absl::StatusOr<acld::SharedEventInfo> RemoteTransport::OpenSharedEvent(const std::string& key) {
  return codec::SharedEventOf(channel_->Call(codec::OpenSharedEvent(key)));
}

absl::StatusOr<int32_t> RemoteTransport::PeerPid() {
  return codec::PeerPidOf(channel_->Call(codec::PeerPid()));
}

absl::StatusOr<uint64_t> RemoteTransport::Malloc(int32_t device_id, uint64_t size) {
  return codec::DeviceAddressOf(channel_->Call(codec::Malloc(device_id, size)));
}

absl::Status RemoteTransport::Free(uint64_t address) {
  return channel_->Call(codec::Free(address)).status();
}

absl::Status RemoteTransport::Copy(const HostCopy& copy) { return bulk_.Copy(copy); }

absl::StatusOr<uint64_t> RemoteTransport::CopyAsync(uint64_t stream, uint64_t thread,
                                                    const HostCopy& copy) {
  return bulk_.CopyAsync(stream, thread, copy);
}

absl::Status RemoteTransport::Memset(const acld::MemsetRequest& memset) {
  return channel_->Call(codec::Memset(memset)).status();
}

absl::StatusOr<acld::MemInfo> RemoteTransport::GetMemInfo(int32_t device_id) {
  return codec::MemInfoOf(channel_->Call(codec::GetMemInfo(device_id)));
}

absl::StatusOr<acld::Utilization> RemoteTransport::GetUtilization(int32_t device_id) {
  return codec::UtilizationOf(channel_->Call(codec::GetUtilization(device_id)));
}

absl::StatusOr<acld::ObjectsAvailable> RemoteTransport::GetObjectsAvailable(int32_t device_id) {
  return codec::ObjectsAvailableOf(channel_->Call(codec::GetObjectsAvailable(device_id)));
}

absl::StatusOr<void*> RemoteTransport::MallocHost(uint64_t size) { return bulk_.MallocHost(size); }

absl::Status RemoteTransport::FreeHost(void* pointer) { return bulk_.FreeHost(pointer); }

}  // namespace acl_client
