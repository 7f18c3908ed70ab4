// The client's side of the runtime protocol as pure functions: the contract's
// values (proto/acl/transport_types.h) to the requests of
// proto/acl/v1/runtime.proto, and replies back to values. No I/O and no gRPC:
// whatever carries the messages (today the gRPC Session stream of
// session_channel.h) reuses the same encoding.
//
// Replies come from another process and are checked: a reply that lacks the
// result its call expects (a daemon of another version, a corrupted stream)
// becomes ACL_ERROR_RT_INTERNAL_ERROR with a message naming what was missing,
// never a default value passed off as the daemon's answer.
#ifndef ACLD_CLIENT_SESSION_CODEC_H_
#define ACLD_CLIENT_SESSION_CODEC_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/acl/address_range.h"
#include "proto/acl/transport_types.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acl_client::codec {

using acl::v1::AsyncOp;
using acl::v1::ClientMessage;
using acl::v1::Reply;

// --- replies ---------------------------------------------------------------
// Each decoder passes an error through unchanged, so that a call reads
// `return codec::HandleOf(channel.Call(codec::CreateEvent(...)));`.

// The reply's own verdict: OK, or its aclError with the daemon's message.
absl::Status ErrorOf(const Reply& reply);

// What the daemon offers this session, from the answer to Hello.
struct SessionInfo {
  int32_t device_count = 0;
  std::string soc_name;
  std::vector<std::pair<std::string, size_t>> kernels;  // built-in kernels (name, args)
  std::vector<acld::AddressRange> device_addresses;     // by device id
  bool ring = false;  // the session goes on over its shared-memory channel
  std::vector<acld::DeviceFeatures> device_features;  // by device id
};
absl::StatusOr<SessionInfo> SessionOpenedOf(const absl::StatusOr<Reply>& reply);

absl::StatusOr<uint64_t> InitCountOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<uint64_t> HandleOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<acld::ContextInfo> ContextOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<bool> StreamIdleOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<acld::EventStatus> EventStatusOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<float> ElapsedMsOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<uint64_t> TimestampUsOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<uint64_t> DeviceAddressOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<acld::MemInfo> MemInfoOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<std::string> SharingKeyOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<int32_t> PeerPidOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<acld::PhysicalProperties> PhysicalPropertiesOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<bool> MemoryAccessOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<acld::SharedEventInfo> SharedEventOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<acld::SharedNotifyInfo> SharedNotifyOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<acld::Utilization> UtilizationOf(const absl::StatusOr<Reply>& reply);
absl::StatusOr<acld::ObjectsAvailable> ObjectsAvailableOf(const absl::StatusOr<Reply>& reply);
// The bytes a device-to-host copy into the client's own memory brought back.
// Empty when the daemon sent none: a copy that failed on its stream answers
// without bytes and reports the failure at the next synchronization.
absl::StatusOr<std::string> CopiedBytesOf(absl::StatusOr<Reply> reply);

// --- the session -------------------------------------------------------------

// The first message of a session on the gRPC stream (speaks
// acld::kStreamProtocolVersion);
// `ring_ticket` names the shared-memory channel handed over (empty: none).
ClientMessage Hello(const std::string& peer_token, int32_t pid, uint32_t uid,
                    const std::string& command, const std::string& ring_ticket = "");

// --- lifecycle ---------------------------------------------------------------

ClientMessage InitCount();
ClientMessage AddInitReference();
ClientMessage Initialize(const acld::InitSettings& settings);
ClientMessage AbortInit();
ClientMessage DropInitReference();
ClientMessage Finalize();

// --- devices, contexts, streams, events ---------------------------------------

ClientMessage SetDevice(int32_t device_id);
ClientMessage ResetDevice(int32_t device_id, bool force);
ClientMessage SynchronizeDevice(int32_t device_id, int32_t timeout_ms);
ClientMessage CreateContext(int32_t device_id);
ClientMessage DestroyContext(uint64_t context);

ClientMessage CreateStream(uint64_t context, uint32_t priority, uint32_t flags,
                           bool saturate_floats);
ClientMessage DestroyStream(uint64_t stream, bool force);
ClientMessage SynchronizeStream(uint64_t stream, int32_t timeout_ms);
ClientMessage StreamQuery(uint64_t stream);
ClientMessage AbortStream(uint64_t stream);
ClientMessage StopStream(uint64_t stream);
ClientMessage SetStreamFailureMode(uint64_t stream, uint64_t mode);
ClientMessage SetStreamAllocator(uint64_t stream, bool registered);

ClientMessage CreateEvent(int32_t device_id, uint32_t flags);
ClientMessage DestroyEvent(uint64_t event);
ClientMessage SynchronizeEvent(uint64_t event, int32_t timeout_ms);
ClientMessage QueryEvent(uint64_t event);
ClientMessage EventElapsedTime(uint64_t start, uint64_t end);
ClientMessage EventTimestamp(uint64_t event);
ClientMessage CreateNotify(int32_t device_id);
ClientMessage DestroyNotify(uint64_t notify);

// --- kernel binaries ---------------------------------------------------------

ClientMessage LoadBinaryInline(int32_t device_id, absl::string_view binary);
// A binary of `size` bytes at `offset` of the shared memory segment `segment`.
ClientMessage LoadBinaryShared(int32_t device_id, uint64_t size, uint64_t segment, uint64_t offset);
ClientMessage UnloadBinary(uint64_t binary);
ClientMessage GetFunction(uint64_t binary, const std::string& name);

// --- memory ------------------------------------------------------------------

ClientMessage Malloc(int32_t device_id, uint64_t size);
ClientMessage ExportMemory(uint64_t address, uint64_t size, uint64_t flags);
ClientMessage MallocPhysical(int32_t device_id, uint64_t size, bool huge_pages);
ClientMessage RetainPhysical(uint64_t address);
ClientMessage PhysicalProperties(uint64_t handle);
ClientMessage MemoryAccess(uint64_t address, int32_t device_id);
ClientMessage FreePhysical(uint64_t handle);
ClientMessage ReserveAddresses(int32_t device_id, uint64_t size);
ClientMessage ReleaseAddresses(uint64_t address);
ClientMessage MapMemory(uint64_t address, uint64_t size, uint64_t offset, uint64_t handle,
                        bool accessible);
ClientMessage UnmapMemory(uint64_t address);
ClientMessage SetMemoryAccess(uint64_t address, uint64_t size, int32_t device_id, bool readwrite);
ClientMessage ExportPhysical(uint64_t handle, bool pid_validation);
ClientMessage SetShareablePids(uint64_t shareable, const std::vector<int32_t>& pids);
ClientMessage ImportPhysical(uint64_t shareable, int32_t device_id);
ClientMessage SetImportPids(const std::string& key, const std::vector<int32_t>& pids);
ClientMessage SetExportAttribute(const std::string& key, int32_t type, uint64_t value);
ClientMessage ImportMemory(const std::string& key);
ClientMessage CloseMemoryKey(const std::string& key);
ClientMessage PeerPid();
ClientMessage ShareEvent(uint64_t event);
ClientMessage OpenSharedEvent(const std::string& key);
ClientMessage ShareNotify(uint64_t notify, bool pid_validation);
ClientMessage SetNotifyImportPids(uint64_t notify, const std::vector<int32_t>& pids);
ClientMessage ImportNotify(const std::string& key);
ClientMessage Free(uint64_t address);
ClientMessage Memset(const acld::MemsetRequest& memset);
ClientMessage GetMemInfo(int32_t device_id);
ClientMessage GetUtilization(int32_t device_id);
ClientMessage GetObjectsAvailable(int32_t device_id);
ClientMessage RegisterSharedMemory(const std::string& ticket, uint64_t size, bool staging);
ClientMessage UnregisterSharedMemory(uint64_t segment);

// The device side of `count` bytes of a copy, `offset` bytes into it (a copy
// travels whole or in chunks). The caller adds its host side: shared memory
// (SetShared), inline bytes, or none (device-to-device; a device-to-host copy
// answered with the bytes).
acl::v1::CopyRequest CopyRange(acld::CopyDirection direction, uint64_t device_dst,
                               uint64_t device_src, uint64_t offset, uint64_t count);
void SetShared(uint64_t segment, uint64_t offset, acl::v1::CopyRequest& copy);
ClientMessage Copy(acl::v1::CopyRequest copy);
// A device-to-host copy on `stream` whose bytes come back in the reply.
ClientMessage CopyToClient(uint64_t stream, uint64_t thread, acl::v1::CopyRequest copy);

// --- asynchronous work on a stream (batched, no reply) -------------------------

AsyncOp LaunchKernel(uint64_t stream, uint64_t thread, const acld::KernelRequest& kernel);
// The same, written into `op` (a batch's slot: the hottest operation is built
// where it is sent, without a message of its own).
void SetLaunchKernel(uint64_t stream, uint64_t thread, const acld::KernelRequest& kernel,
                     AsyncOp& op);
AsyncOp LaunchFunction(uint64_t stream, uint64_t thread, const acld::FunctionLaunch& launch);
AsyncOp CopyAsync(uint64_t stream, uint64_t thread, acl::v1::CopyRequest copy);
AsyncOp MemsetAsync(uint64_t stream, uint64_t thread, const acld::MemsetRequest& memset);
AsyncOp ReduceAsync(uint64_t stream, uint64_t thread, const acld::ReduceRequest& reduce);
AsyncOp ValueWaitAsync(uint64_t stream, uint64_t thread, const acld::ValueWaitRequest& wait);
AsyncOp OverflowAsync(uint64_t stream, uint64_t thread, const acld::OverflowRequest& overflow);
AsyncOp RandomAsync(uint64_t stream, uint64_t thread, const acld::RandomRequest& random);
AsyncOp RecordEvent(uint64_t stream, uint64_t thread, uint64_t event);
AsyncOp ResetEvent(uint64_t stream, uint64_t thread, uint64_t event);
AsyncOp WaitEvent(uint64_t stream, uint64_t thread, uint64_t event);
AsyncOp RecordNotify(uint64_t stream, uint64_t thread, uint64_t notify);
AsyncOp WaitNotify(uint64_t stream, uint64_t thread, uint64_t notify, uint32_t timeout_s);
AsyncOp HostCallback(uint64_t stream, uint64_t thread, uint64_t callback_id, bool block);

// The process finished a blocking callback (no reply).
ClientMessage CallbackDone(uint64_t callback_id);
// What this library does beyond the protocol version: it answers
// ImportRevoked with RevocationSeen (sent once, first: in the channel before
// acld has it, or after the session opened on the gRPC stream).
ClientMessage ClientFeatures();
ClientMessage RevocationSeen(uint64_t notice);

}  // namespace acl_client::codec

#endif  // ACLD_CLIENT_SESSION_CODEC_H_
