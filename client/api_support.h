// Shared plumbing of the C entry points (api_*.cc): status propagation,
// argument checks and handle resolution.
#ifndef ACLD_CLIENT_API_SUPPORT_H_
#define ACLD_CLIENT_API_SUPPORT_H_

#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "acl/acl_base.h"
#include "client/client_runtime.h"
#include "client/error_state.h"
#include "proto/acl/status_macros.h"

namespace acl_client {

// Runs `body` (returning absl::Status) and reports its result as an aclError.
template <typename Body>
aclError Api(Body body) {
  return ReportStatus(body());
}

absl::Status NullArgument(const char* api, const char* argument);

// The integer a C caller passed for an enum parameter. A C program may pass
// any int; reading an out-of-range value as the C++ enum type would be
// undefined, so the bytes are read as an int instead.
template <typename Enum>
int RawEnum(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized");
  int raw;
  std::memcpy(&raw, &value, sizeof(raw));
  return raw;
}

inline uint64_t HandleId(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }
inline void* ToHandle(uint64_t id) { return reinterpret_cast<void*>(static_cast<uintptr_t>(id)); }

// The connected transport (or the reason there is none).
absl::StatusOr<Transport*> Connected();

// A stream handle of this process; NULL means the current context's default stream.
absl::StatusOr<uint64_t> ResolveStream(const void* stream, const char* api);
// What this process created `stream` with (NULL: the current context's
// default stream); ACL_ERROR_INVALID_PARAM for a stream it does not have.
absl::StatusOr<StreamFacts> StreamFactsOf(const void* stream, const char* api);
// The core limits a kernel launched on `stream` (a resolved id) runs under:
// the stream's, else the process's on its device; 0 where none is set
// (api_core_limits.cc).
acld::CoreLimits CoreLimitsOfStream(uint64_t stream);
// An event handle of this process.
absl::StatusOr<uint64_t> ResolveEvent(const void* event, const char* api);
// A notify handle of this process.
absl::StatusOr<uint64_t> ResolveNotify(const void* notify, const char* api);

// -1 forever, 0 poll, > 0 milliseconds; anything else is refused.
absl::Status CheckTimeout(int32_t timeout_ms, const char* api);

// An event made by aclrtCreateEventExWithFlag may not be reset or queried
// with aclrtQueryEvent, and may be waited for only when made with
// ACL_EVENT_SYNC (ACL_ERROR_INVALID_PARAM otherwise).
enum class EventUse { kReset, kQuery, kWait };
absl::Status CheckEventUse(uint64_t event, EventUse use, const char* api);

// ACL_ERROR_RT_INVALID_DEVICEID unless `device_id` is one of the transport's devices.
absl::Status CheckDeviceExists(Transport& transport, int32_t device_id, const char* api);

// The result of an asynchronous call: remembers its task id for
// aclrtGetThreadLastTaskId.
absl::Status Enqueued(const absl::StatusOr<uint64_t>& task_id);
// Whether this process set saturation mode on `device` (aclrtSetDeviceSatMode,
// client/api_float_overflow.cc): its new streams there saturate.
bool SaturatesFloats(int32_t device);

// A stream task on a handle (an event, a notify): `resolve(handle, api)`
// checks the handle, then `enqueue(transport, handle_id, stream_id)`.
template <typename Resolve, typename Enqueue>
absl::Status EnqueueOnStream(const void* handle, const void* stream, const char* api,
                             Resolve resolve, Enqueue enqueue) {
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  ACL_ASSIGN_OR_RETURN(uint64_t handle_id, resolve(handle, api));
  ACL_ASSIGN_OR_RETURN(uint64_t stream_id, ResolveStream(stream, api));
  return Enqueued(enqueue(*transport, handle_id, stream_id));
}

// Refuses to wait for `stream` from inside one of its own callbacks (which
// would wait for itself); `stream` 0 means any stream (device-wide waits).
absl::Status CheckNotOwnCallback(uint64_t stream, const char* api);

// The result of a synchronization: a reported failure returns once the
// exception callback has seen it.
absl::Status Synchronized(absl::Status status);

}  // namespace acl_client

#endif  // ACLD_CLIENT_API_SUPPORT_H_
