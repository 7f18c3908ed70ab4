// Physical memory and virtual addresses (aclrtMallocPhysical,
// aclrtReserveMemAddress, aclrtMapMem, aclrtMemSetAccess and their
// inverses) and sharing physical memory with another process by shareable
// handle (aclrtMemExportToShareableHandle, its whitelist and import). acld
// holds all of it and checks every import against the kernel's word on who
// is asking (daemon/core/physical_memory.h); docs/api-compat.md says what
// programs see.
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "acl/acl.h"
#include "client/api_support.h"
#include "client/client_runtime.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

using acl_client::Api;
using acl_client::ClientRuntime;
using acl_client::Connected;
using acl_client::HandleId;
using acl_client::NullArgument;
using acl_client::ToHandle;
using acl_client::Transport;

namespace {

absl::Status Invalid(const char* api, const std::string& what) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat(api, ": ", what));
}

absl::Status NotSupported(const char* api, const std::string& what) {
  return acld::AclStatus(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, absl::StrCat(api, ": ", what));
}

// Whether an aclrtMemAttr asks for huge pages.
bool HugePages(aclrtMemAttr attribute) {
  return attribute == ACL_HBM_MEM_HUGE || attribute == ACL_MEM_HUGE ||
         attribute == ACL_MEM_P2P_HUGE;
}

// The device a physical memory property names, once the property is one acld
// allocates: pinned device memory of normal or 2 MiB pages (the sim's
// granularity serves both).
absl::StatusOr<int32_t> DeviceOf(Transport& transport, const aclrtPhysicalMemProp& prop,
                                 const char* api) {
  if (prop.handleType != ACL_MEM_HANDLE_TYPE_NONE) {
    return Invalid(api, "prop->handleType must be ACL_MEM_HANDLE_TYPE_NONE");
  }
  if (prop.allocationType != ACL_MEM_ALLOCATION_TYPE_PINNED) {
    return Invalid(api, "prop->allocationType must be ACL_MEM_ALLOCATION_TYPE_PINNED");
  }
  if (prop.location.type != ACL_MEM_LOCATION_TYPE_DEVICE) {
    return NotSupported(api, "acld allocates physical memory on devices only "
                             "(prop->location.type ACL_MEM_LOCATION_TYPE_DEVICE)");
  }
  switch (prop.memAttr) {
    case ACL_HBM_MEM_HUGE:
    case ACL_HBM_MEM_NORMAL:
    case ACL_MEM_NORMAL:
    case ACL_MEM_HUGE:
    case ACL_MEM_P2P_NORMAL:
    case ACL_MEM_P2P_HUGE:
      break;
    case ACL_HBM_MEM_HUGE1G:
    case ACL_HBM_MEM_P2P_HUGE1G:
    case ACL_MEM_HUGE1G:
    case ACL_MEM_P2P_HUGE1G:
      return NotSupported(api, "acld has no 1 GiB pages");
    default:
      return Invalid(api, absl::StrCat("prop->memAttr ", acl_client::RawEnum(prop.memAttr),
                                       " is not an aclrtMemAttr of device physical memory"));
  }
  const int32_t device = static_cast<int32_t>(prop.location.id);
  if (prop.location.id >= static_cast<uint32_t>(transport.DeviceCount())) {
    return acld::AclStatus(ACL_ERROR_RT_INVALID_DEVICEID,
                           absl::StrCat(api, ": prop->location.id ", prop.location.id,
                                        " is not a device (", transport.DeviceCount(), " here)"));
  }
  return device;
}

// CANN's shareable handle types: the default one holds a uint64_t.
absl::Status CheckShareType(aclrtMemSharedHandleType type, const char* api) {
  if (type == ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT) return absl::OkStatus();
  if (type == ACL_MEM_SHARE_HANDLE_TYPE_FABRIC) {
    return NotSupported(api, "fabric handles share with other servers; acld serves one host "
                             "(ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT)");
  }
  return Invalid(api, absl::StrCat("shareType ", acl_client::RawEnum(type),
                                   " is not an aclrtMemSharedHandleType"));
}

absl::Status MapMemory(void* virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle,
                       uint64_t flags, bool accessible, const char* api) {
  if (virPtr == nullptr) return NullArgument(api, "virPtr");
  if (handle == nullptr) return NullArgument(api, "handle");
  if (size == 0) return Invalid(api, "size must be > 0");
  if (flags != 0) return Invalid(api, "flags is reserved and must be 0");
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  return transport->MapMemory(HandleId(virPtr), size, offset, HandleId(handle), accessible);
}

absl::Status ExportPhysical(aclrtDrvMemHandle handle, uint64_t flags, uint64_t* shareable,
                            const char* api) {
  if (handle == nullptr) return NullArgument(api, "handle");
  if (shareable == nullptr) return NullArgument(api, "shareableHandle");
  if (flags > ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION) {
    return Invalid(api, absl::StrCat("flags ", flags,
                                     " is neither ACL_RT_VMM_EXPORT_FLAG_DEFAULT nor "
                                     "ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION"));
  }
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  ACL_ASSIGN_OR_RETURN(uint64_t exported,
                       transport->ExportPhysical(HandleId(handle),
                                                 flags == ACL_RT_VMM_EXPORT_FLAG_DEFAULT));
  *shareable = exported;
  return absl::OkStatus();
}

absl::Status SetShareablePids(uint64_t shareable, int32_t* pid, size_t pidNum, const char* api) {
  if (pid == nullptr) return NullArgument(api, "pid");
  if (pidNum == 0) return Invalid(api, "pidNum must be > 0");
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  return transport->SetShareablePids(shareable, std::vector<int32_t>(pid, pid + pidNum));
}

absl::Status ImportPhysical(uint64_t shareable, int32_t device, aclrtDrvMemHandle* handle,
                            const char* api) {
  if (handle == nullptr) return NullArgument(api, "handle");
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  ACL_ASSIGN_OR_RETURN(uint64_t id, transport->ImportPhysical(shareable, device));
  *handle = ToHandle(id);
  return absl::OkStatus();
}

}  // namespace

extern "C" {

aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp* prop,
                                          aclrtMemGranularityOptions option,
                                          size_t* granularity) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtMemGetAllocationGranularity";
    if (prop == nullptr) return NullArgument(kApi, "prop");
    if (granularity == nullptr) return NullArgument(kApi, "granularity");
    if (option != ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM &&
        option != ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
      return Invalid(kApi, absl::StrCat("option ", acl_client::RawEnum(option),
                                        " is not MINIMUM or RECOMMENDED"));
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(int32_t device, DeviceOf(*transport, *prop, kApi));
    const uint64_t bytes = transport->Features(device).address_granularity;
    if (bytes == 0) {
      return NotSupported(kApi, absl::StrCat("device ", device,
                                             " does not manage virtual addresses"));
    }
    *granularity = bytes;
    return absl::OkStatus();
  });
}

aclError aclrtMallocPhysical(aclrtDrvMemHandle* handle, size_t size,
                             const aclrtPhysicalMemProp* prop, uint64_t flags) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtMallocPhysical";
    if (handle == nullptr) return NullArgument(kApi, "handle");
    if (prop == nullptr) return NullArgument(kApi, "prop");
    if (size == 0) return Invalid(kApi, "size must be > 0");
    if (flags != 0) return Invalid(kApi, "flags is reserved and must be 0");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(int32_t device, DeviceOf(*transport, *prop, kApi));
    ACL_ASSIGN_OR_RETURN(uint64_t id,
                         transport->MallocPhysical(device, size, HugePages(prop->memAttr)));
    *handle = ToHandle(id);
    return absl::OkStatus();
  });
}

aclError aclrtMemRetainAllocationHandle(void* virPtr, aclrtDrvMemHandle* handle) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtMemRetainAllocationHandle";
    if (virPtr == nullptr) return NullArgument(kApi, "virPtr");
    if (handle == nullptr) return NullArgument(kApi, "handle");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t id, transport->RetainPhysical(HandleId(virPtr)));
    *handle = ToHandle(id);
    return absl::OkStatus();
  });
}

aclError aclrtMemGetAllocationPropertiesFromHandle(aclrtDrvMemHandle handle,
                                                   aclrtPhysicalMemProp* prop) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtMemGetAllocationPropertiesFromHandle";
    if (handle == nullptr) return NullArgument(kApi, "handle");
    if (prop == nullptr) return NullArgument(kApi, "prop");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(acld::PhysicalProperties properties,
                         transport->PhysicalProperties(HandleId(handle)));
    *prop = aclrtPhysicalMemProp{};
    prop->handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop->allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    // As CANN reports device memory: in its HBM terms.
    prop->memAttr = properties.huge_pages ? ACL_HBM_MEM_HUGE : ACL_HBM_MEM_NORMAL;
    prop->location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = static_cast<uint32_t>(properties.device);
    return absl::OkStatus();
  });
}

aclError aclrtFreePhysical(aclrtDrvMemHandle handle) {
  return Api([&]() -> absl::Status {
    if (handle == nullptr) return NullArgument("aclrtFreePhysical", "handle");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    return transport->FreePhysical(HandleId(handle));
  });
}

aclError aclrtReserveMemAddress(void** virPtr, size_t size, size_t alignment, void* expectPtr,
                                uint64_t flags) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtReserveMemAddress";
    if (virPtr == nullptr) return NullArgument(kApi, "virPtr");
    if (size == 0) return Invalid(kApi, "size must be > 0");
    if (alignment != 0) return Invalid(kApi, "alignment is reserved and must be 0");
    if (expectPtr != nullptr) {
      return NotSupported(kApi, "acld chooses the address; expectPtr must be NULL");
    }
    if (flags > 1) return Invalid(kApi, "flags must be 0");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, ClientRuntime::Get().RequireContext());
    ACL_ASSIGN_OR_RETURN(uint64_t address, transport->ReserveAddresses(context.device, size));
    *virPtr = ToHandle(address);
    return absl::OkStatus();
  });
}

aclError aclrtReleaseMemAddress(void* virPtr) {
  return Api([&]() -> absl::Status {
    if (virPtr == nullptr) return NullArgument("aclrtReleaseMemAddress", "virPtr");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    return transport->ReleaseAddresses(HandleId(virPtr));
  });
}

aclError aclrtMapMem(void* virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle,
                     uint64_t flags) {
  return Api([&]() -> absl::Status {
    return MapMemory(virPtr, size, offset, handle, flags, /*accessible=*/true, "aclrtMapMem");
  });
}

aclError aclrtMemMapNoAccess(void* virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle,
                             uint64_t flags) {
  return Api([&]() -> absl::Status {
    return MapMemory(virPtr, size, offset, handle, flags, /*accessible=*/false,
                     "aclrtMemMapNoAccess");
  });
}

aclError aclrtUnmapMem(void* virPtr) {
  return Api([&]() -> absl::Status {
    if (virPtr == nullptr) return NullArgument("aclrtUnmapMem", "virPtr");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    return transport->UnmapMemory(HandleId(virPtr));
  });
}

aclError aclrtMemSetAccess(void* virPtr, size_t size, aclrtMemAccessDesc* desc, size_t count) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtMemSetAccess";
    if (virPtr == nullptr) return NullArgument(kApi, "virPtr");
    if (desc == nullptr) return NullArgument(kApi, "desc");
    if (count == 0) return Invalid(kApi, "count must be > 0");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    for (size_t i = 0; i < count; ++i) {
      const aclrtMemAccessDesc& access = desc[i];
      if (access.location.type != ACL_MEM_LOCATION_TYPE_DEVICE) {
        return NotSupported(kApi, "acld gives devices access to device memory, not the host "
                                  "(location.type ACL_MEM_LOCATION_TYPE_DEVICE)");
      }
      bool readwrite;
      switch (access.flags) {
        case ACL_RT_MEM_ACCESS_FLAGS_READWRITE:
          readwrite = true;
          break;
        case ACL_RT_MEM_ACCESS_FLAGS_NONE:
          readwrite = false;
          break;
        case ACL_RT_MEM_ACCESS_FLAGS_READ:
          return NotSupported(kApi, "acld has no read-only mappings (READWRITE or NONE)");
        default:
          return Invalid(kApi, absl::StrCat("flags ", acl_client::RawEnum(access.flags),
                                            " is not an aclrtMemAccessFlags value"));
      }
      ACL_RETURN_IF_ERROR(transport->SetMemoryAccess(
          HandleId(virPtr), size, static_cast<int32_t>(access.location.id), readwrite));
    }
    return absl::OkStatus();
  });
}

aclError aclrtMemGetAccess(void* virPtr, aclrtMemLocation* location, uint64_t* flags) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtMemGetAccess";
    if (virPtr == nullptr) return NullArgument(kApi, "virPtr");
    if (location == nullptr) return NullArgument(kApi, "location");
    if (flags == nullptr) return NullArgument(kApi, "flags");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    // The host never reaches device mappings through acld; a device does
    // once granted (aclrtMapMem, aclrtMemSetAccess).
    bool readwrite = false;
    if (location->type == ACL_MEM_LOCATION_TYPE_DEVICE) {
      ACL_ASSIGN_OR_RETURN(readwrite, transport->MemoryAccess(
                                          HandleId(virPtr), static_cast<int32_t>(location->id)));
    } else if (location->type != ACL_MEM_LOCATION_TYPE_HOST) {
      return Invalid(kApi, "location->type is neither ACL_MEM_LOCATION_TYPE_DEVICE nor _HOST");
    }
    *flags = readwrite ? ACL_RT_MEM_ACCESS_FLAGS_READWRITE : ACL_RT_MEM_ACCESS_FLAGS_NONE;
    return absl::OkStatus();
  });
}

aclError aclrtMemExportToShareableHandle(aclrtDrvMemHandle handle, aclrtMemHandleType handleType,
                                         uint64_t flags, uint64_t* shareableHandle) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtMemExportToShareableHandle";
    if (handleType != ACL_MEM_HANDLE_TYPE_NONE) {
      return Invalid(kApi, "handleType must be ACL_MEM_HANDLE_TYPE_NONE");
    }
    return ExportPhysical(handle, flags, shareableHandle, kApi);
  });
}

aclError aclrtMemExportToShareableHandleV2(aclrtDrvMemHandle handle, uint64_t flags,
                                           aclrtMemSharedHandleType shareType,
                                           void* shareableHandle) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtMemExportToShareableHandleV2";
    ACL_RETURN_IF_ERROR(CheckShareType(shareType, kApi));
    return ExportPhysical(handle, flags, static_cast<uint64_t*>(shareableHandle), kApi);
  });
}

aclError aclrtMemSetPidToShareableHandle(uint64_t shareableHandle, int32_t* pid, size_t pidNum) {
  return Api([&]() -> absl::Status {
    return SetShareablePids(shareableHandle, pid, pidNum, "aclrtMemSetPidToShareableHandle");
  });
}

aclError aclrtMemSetPidToShareableHandleV2(void* shareableHandle,
                                           aclrtMemSharedHandleType shareType, int32_t* pid,
                                           size_t pidNum) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtMemSetPidToShareableHandleV2";
    if (shareableHandle == nullptr) return NullArgument(kApi, "shareableHandle");
    ACL_RETURN_IF_ERROR(CheckShareType(shareType, kApi));
    uint64_t shareable;
    std::memcpy(&shareable, shareableHandle, sizeof(shareable));
    return SetShareablePids(shareable, pid, pidNum, kApi);
  });
}

aclError aclrtMemImportFromShareableHandle(uint64_t shareableHandle, int32_t deviceId,
                                           aclrtDrvMemHandle* handle) {
  return Api([&]() -> absl::Status {
    return ImportPhysical(shareableHandle, deviceId, handle, "aclrtMemImportFromShareableHandle");
  });
}

aclError aclrtMemImportFromShareableHandleV2(void* shareableHandle,
                                             aclrtMemSharedHandleType shareType, uint64_t flags,
                                             aclrtDrvMemHandle* handle) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtMemImportFromShareableHandleV2";
    if (shareableHandle == nullptr) return NullArgument(kApi, "shareableHandle");
    ACL_RETURN_IF_ERROR(CheckShareType(shareType, kApi));
    if (flags != 0) return Invalid(kApi, "flags is reserved and must be 0");
    // V2 imports on the calling thread's current device.
    ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, ClientRuntime::Get().RequireContext());
    uint64_t shareable;
    std::memcpy(&shareable, shareableHandle, sizeof(shareable));
    return ImportPhysical(shareable, context.device, handle, kApi);
  });
}

}  // extern "C"
