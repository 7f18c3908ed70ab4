// C entry points for memory (SPEC section 5). Device pointers are the
// daemon's opaque addresses; every access is checked by the daemon against the
// calling process's own allocations.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "acl/acl_rt.h"
#include "client/api_support.h"
#include "proto/acl/acl_status.h"

using acl_client::Api;
using acl_client::ClientRuntime;
using acl_client::Connected;
using acl_client::CurrentThreadId;
using acl_client::HandleId;
using acl_client::HostCopy;
using acl_client::NullArgument;
using acl_client::ResolveStream;
using acl_client::ToHandle;
using acl_client::Transport;
using Direction = acld::CopyDirection;

namespace {

// A pointer into this process's own device memory, or into a device's address
// window. Without a session no device memory exists: every pointer is a host
// pointer.
bool OnDevice(const void* pointer) {
  if (ClientRuntime::Get().handles().InAllocation(HandleId(pointer))) return true;
  absl::StatusOr<Transport*> transport = ClientRuntime::Get().transport();
  if (!transport.ok()) return false;
  for (const acld::AddressRange& window : (*transport)->DeviceAddresses()) {
    if (window.Contains(HandleId(pointer))) return true;
  }
  return false;
}

absl::Status Invalid(const std::string& message) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM, message);
}

// A validated copy, or nullopt for a host-to-host copy (done in the process).
absl::StatusOr<std::optional<HostCopy>> PlanCopy(void* dst, size_t dest_max, const void* src,
                                                 size_t count, const aclrtMemcpyKind& kind,
                                                 const char* api) {
  if (dst == nullptr) return NullArgument(api, "dst");
  if (src == nullptr) return NullArgument(api, "src");
  if (count > dest_max) {
    return Invalid(absl::StrCat(api, ": count ", count, " is larger than destMax ", dest_max));
  }
  const bool dst_device = OnDevice(dst);
  const bool src_device = OnDevice(src);
  bool want_dst_device, want_src_device;
  switch (acl_client::RawEnum(kind)) {
    case ACL_MEMCPY_HOST_TO_HOST:
      want_dst_device = false, want_src_device = false;
      break;
    case ACL_MEMCPY_HOST_TO_DEVICE:
    case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE:
      want_dst_device = true, want_src_device = false;
      break;
    case ACL_MEMCPY_DEVICE_TO_HOST:
      want_dst_device = false, want_src_device = true;
      break;
    case ACL_MEMCPY_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE:
      want_dst_device = true, want_src_device = true;
      break;
    case ACL_MEMCPY_DEFAULT:
      want_dst_device = dst_device, want_src_device = src_device;
      break;
    default:
      return Invalid(absl::StrCat(api, ": unknown copy kind ", acl_client::RawEnum(kind)));
  }
  if (dst_device != want_dst_device || src_device != want_src_device) {
    return Invalid(absl::StrCat(api, ": copy kind ", acl_client::RawEnum(kind),
                                " does not match the ", src_device ? "device" : "host",
                                " source and the ", dst_device ? "device" : "host",
                                " destination"));
  }
  if (!dst_device && !src_device) return std::optional<HostCopy>();
  HostCopy copy;
  copy.count = count;
  if (dst_device && src_device) {
    copy.direction = Direction::kDeviceToDevice;
    copy.device_dst = HandleId(dst);
    copy.device_src = HandleId(src);
  } else if (dst_device) {
    copy.direction = Direction::kHostToDevice;
    copy.device_dst = HandleId(dst);
    copy.host_src = src;
  } else {
    copy.direction = Direction::kDeviceToHost;
    copy.device_src = HandleId(src);
    copy.host_dst = dst;
  }
  return std::optional<HostCopy>(copy);
}

// A copy between two devices' memory runs on `device` (the current one, or
// its stream's) and needs peer access from it to the other device
// (aclrtDeviceEnablePeerAccess); to both, when neither is `device`.
absl::Status CheckPeerAccess(const HostCopy& copy, int32_t device, const char* api) {
  if (copy.direction != Direction::kDeviceToDevice) return absl::OkStatus();
  const acl_client::HandleTable& handles = ClientRuntime::Get().handles();
  const std::optional<int32_t> dst = handles.AllocationDevice(copy.device_dst);
  const std::optional<int32_t> src = handles.AllocationDevice(copy.device_src);
  // Memory not of this process's allocations is for acld to refuse.
  if (!dst.has_value() || !src.has_value() || *dst == *src) return absl::OkStatus();
  for (int32_t other : {*dst, *src}) {
    if (other == device || handles.PeerEnabled(device, other)) continue;
    return Invalid(absl::StrCat(api, ": a copy between devices ", *src, " and ", *dst,
                                " on device ", device, " needs peer access from device ", device,
                                " to device ", other, " (aclrtDeviceEnablePeerAccess)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<acld::MemsetRequest> PlanMemset(void* dev_ptr, size_t max_count, int32_t value,
                                               size_t count, const char* api) {
  if (dev_ptr == nullptr) return NullArgument(api, "devPtr");
  if (!OnDevice(dev_ptr)) return Invalid(absl::StrCat(api, ": devPtr is not a device address"));
  if (count > max_count) {
    return Invalid(absl::StrCat(api, ": count ", count, " is larger than maxCount ", max_count));
  }
  return acld::MemsetRequest{HandleId(dev_ptr), max_count, value, count};
}

bool KnownPolicy(uint32_t policy) {
  const uint32_t base = policy & 0xFF;
  const uint32_t flags = policy & ~0xFFu;
  const uint32_t known_flags = ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH |
                               ACL_MEM_ACCESS_USER_SPACE_READONLY;
  return base <= ACL_MEM_MALLOC_HUGE1G_ONLY_P2P && (flags & ~known_flags) == 0;
}

}  // namespace

extern "C" {

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return Api([&]() -> absl::Status {
    if (devPtr == nullptr) return NullArgument("aclrtMalloc", "devPtr");
    if (size == 0) return Invalid("aclrtMalloc: size must be > 0");
    const uint32_t raw_policy = static_cast<uint32_t>(acl_client::RawEnum(policy));
    if (!KnownPolicy(raw_policy)) {
      return Invalid(absl::StrCat("aclrtMalloc: unknown policy ", raw_policy));
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, ClientRuntime::Get().RequireContext());
    ACL_ASSIGN_OR_RETURN(uint64_t address, transport->Malloc(context.device, size));
    ClientRuntime::Get().handles().AddAllocation(address, size, context.device);
    *devPtr = ToHandle(address);
    return absl::OkStatus();
  });
}

aclError aclrtFree(void* devPtr) {
  return Api([&]() -> absl::Status {
    if (devPtr == nullptr) return NullArgument("aclrtFree", "devPtr");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    // Out of the table before the free: once it is freed, another thread's
    // aclrtMalloc may get the same address, and that entry must stay.
    acl_client::HandleTable& handles = ClientRuntime::Get().handles();
    const uint64_t address = HandleId(devPtr);
    const auto removed = handles.RemoveAllocation(address);  // nullopt: not in the table
    absl::Status freed = transport->Free(address);
    // Not freed: nobody else can have the address, and it is still ours.
    if (!freed.ok() && removed.has_value()) {
      handles.AddAllocation(address, removed->size, removed->device);
    }
    return freed;
  });
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  return Api([&]() -> absl::Status {
    if (hostPtr == nullptr) return NullArgument("aclrtMallocHost", "hostPtr");
    if (size == 0) return Invalid("aclrtMallocHost: size must be > 0");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(*hostPtr, transport->MallocHost(size));
    return absl::OkStatus();
  });
}

aclError aclrtFreeHost(void* hostPtr) {
  return Api([&]() -> absl::Status {
    if (hostPtr == nullptr) return NullArgument("aclrtFreeHost", "hostPtr");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    return transport->FreeHost(hostPtr);
  });
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                     aclrtMemcpyKind kind) {
  return Api([&]() -> absl::Status {
    ACL_ASSIGN_OR_RETURN(std::optional<HostCopy> copy,
                         PlanCopy(dst, destMax, src, count, kind, "aclrtMemcpy"));
    if (!copy.has_value()) {
      std::memmove(dst, src, count);
      return absl::OkStatus();
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    if (copy->direction == Direction::kDeviceToDevice) {
      ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, ClientRuntime::Get().RequireContext());
      ACL_RETURN_IF_ERROR(CheckPeerAccess(*copy, context.device, "aclrtMemcpy"));
    }
    return transport->Copy(*copy);
  });
}

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count,
                          aclrtMemcpyKind kind, aclrtStream stream) {
  return Api([&]() -> absl::Status {
    ACL_ASSIGN_OR_RETURN(std::optional<HostCopy> copy,
                         PlanCopy(dst, destMax, src, count, kind, "aclrtMemcpyAsync"));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t stream_id, ResolveStream(stream, "aclrtMemcpyAsync"));
    if (!copy.has_value()) {
      // Host to host: the bytes are the process's own; order it after the stream's work.
      ACL_RETURN_IF_ERROR(acl_client::CheckNotOwnCallback(stream_id, "aclrtMemcpyAsync"));
      ACL_RETURN_IF_ERROR(transport->SynchronizeStream(stream_id, -1));
      std::memmove(dst, src, count);
      return absl::OkStatus();
    }
    const std::optional<int32_t> stream_device = ClientRuntime::Get().handles().StreamDevice(stream_id);
    if (stream_device.has_value()) {
      ACL_RETURN_IF_ERROR(CheckPeerAccess(*copy, *stream_device, "aclrtMemcpyAsync"));
    }
    return acl_client::Enqueued(transport->CopyAsync(stream_id, CurrentThreadId(), *copy));
  });
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  return Api([&]() -> absl::Status {
    // Host memory from aclrtMallocHost is set here, as CANN allows.
    if (devPtr != nullptr && count <= maxCount && !OnDevice(devPtr)) {
      absl::StatusOr<Transport*> transport = Connected();
      if (transport.ok() && (*transport)->IsHostMemory(devPtr, count)) {
        std::memset(devPtr, value, count);
        return absl::OkStatus();
      }
    }
    ACL_ASSIGN_OR_RETURN(acld::MemsetRequest memset,
                         PlanMemset(devPtr, maxCount, value, count, "aclrtMemset"));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    return transport->Memset(memset);
  });
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count,
                          aclrtStream stream) {
  return Api([&]() -> absl::Status {
    ACL_ASSIGN_OR_RETURN(acld::MemsetRequest memset,
                         PlanMemset(devPtr, maxCount, value, count, "aclrtMemsetAsync"));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t stream_id, ResolveStream(stream, "aclrtMemsetAsync"));
    return acl_client::Enqueued(transport->MemsetAsync(stream_id, CurrentThreadId(), memset));
  });
}

aclError aclrtReduceAsync(void* dst, const void* src, uint64_t count, aclrtReduceKind kind,
                          aclDataType type, aclrtStream stream, void* reserve) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtReduceAsync";
    if (dst == nullptr) return NullArgument(kApi, "dst");
    if (src == nullptr) return NullArgument(kApi, "src");
    if (reserve != nullptr) return Invalid(absl::StrCat(kApi, ": reserve must be NULL"));
    const int raw_kind = acl_client::RawEnum(kind);
    if (raw_kind < ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM || raw_kind > ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL) {
      return Invalid(absl::StrCat(kApi, ": ", raw_kind, " is not an aclrtReduceKind"));
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t stream_id, ResolveStream(stream, kApi));
    const acld::ReduceRequest reduce{reinterpret_cast<uintptr_t>(dst),
                                     reinterpret_cast<uintptr_t>(src), count, raw_kind,
                                     acl_client::RawEnum(type)};
    return acl_client::Enqueued(transport->ReduceAsync(stream_id, CurrentThreadId(), reduce));
  });
}

aclError aclrtValueWrite(void* devAddr, uint64_t value, uint32_t flag, aclrtStream stream) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtValueWrite";
    if (devAddr == nullptr) return NullArgument(kApi, "devAddr");
    if (flag != 0) return Invalid(absl::StrCat(kApi, ": flag must be 0"));
    if (HandleId(devAddr) % 8 != 0) return Invalid(absl::StrCat(kApi, ": devAddr must be 8-byte aligned"));
    if (!OnDevice(devAddr)) return Invalid(absl::StrCat(kApi, ": devAddr is not a device address"));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t stream_id, ResolveStream(stream, kApi));
    // An 8-byte copy in stream order: its bytes are taken now.
    HostCopy write;
    write.direction = Direction::kHostToDevice;
    write.device_dst = HandleId(devAddr);
    write.host_src = &value;
    write.count = sizeof(value);
    return acl_client::Enqueued(transport->CopyAsync(stream_id, CurrentThreadId(), write));
  });
}

aclError aclrtValueWait(void* devAddr, uint64_t value, uint32_t flag, aclrtStream stream) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtValueWait";
    if (devAddr == nullptr) return NullArgument(kApi, "devAddr");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t stream_id, ResolveStream(stream, kApi));
    return acl_client::Enqueued(transport->ValueWaitAsync(
        stream_id, CurrentThreadId(), acld::ValueWaitRequest{HandleId(devAddr), value, flag}));
  });
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t* free, size_t* total) {
  return Api([&]() -> absl::Status {
    if (free == nullptr || total == nullptr) return NullArgument("aclrtGetMemInfo", "free/total");
    const int raw_attr = acl_client::RawEnum(attr);
    if (raw_attr < 0 || raw_attr > ACL_MEM_P2P_HUGE1G) {
      return Invalid(absl::StrCat("aclrtGetMemInfo: unknown attribute ", raw_attr));
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, ClientRuntime::Get().RequireContext());
    // The sim device has one kind of memory: every attribute reports it.
    ACL_ASSIGN_OR_RETURN(acld::MemInfo info, transport->GetMemInfo(context.device));
    *free = info.free;
    *total = info.total;
    return absl::OkStatus();
  });
}

}  // extern "C"
