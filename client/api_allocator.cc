// C entry points for custom allocators (SPEC section 7).
#include "acl/acl_rt_allocator.h"
#include "client/allocator_registry.h"
#include "client/api_support.h"

using acl_client::AllocatorDesc;
using acl_client::AllocatorRegistry;
using acl_client::Api;
using acl_client::Connected;
using acl_client::NullArgument;
using acl_client::ResolveStream;
using acl_client::Transport;

namespace {

// Sets one field of a live descriptor; NULL values are refused.
template <typename Value>
aclError SetField(aclrtAllocatorDesc desc, Value value, const char* api,
                  Value AllocatorDesc::*field) {
  return Api([&]() -> absl::Status {
    if (value == nullptr) return NullArgument(api, "the value");
    return AllocatorRegistry::Get().UpdateDesc(desc, api,
                                               [&](AllocatorDesc& d) { d.*field = value; });
  });
}

}  // namespace

extern "C" {

aclrtAllocatorDesc aclrtAllocatorCreateDesc(void) { return AllocatorRegistry::Get().CreateDesc(); }

aclError aclrtAllocatorDestroyDesc(aclrtAllocatorDesc allocatorDesc) {
  return Api([&] { return AllocatorRegistry::Get().DestroyDesc(allocatorDesc); });
}

aclError aclrtAllocatorSetObjToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocator allocator) {
  return SetField(allocatorDesc, allocator, "aclrtAllocatorSetObjToDesc", &AllocatorDesc::obj);
}

aclError aclrtAllocatorSetAllocFuncToDesc(aclrtAllocatorDesc allocatorDesc,
                                          aclrtAllocatorAllocFunc func) {
  return SetField(allocatorDesc, func, "aclrtAllocatorSetAllocFuncToDesc", &AllocatorDesc::alloc);
}

aclError aclrtAllocatorSetFreeFuncToDesc(aclrtAllocatorDesc allocatorDesc,
                                         aclrtAllocatorFreeFunc func) {
  return SetField(allocatorDesc, func, "aclrtAllocatorSetFreeFuncToDesc", &AllocatorDesc::free);
}

aclError aclrtAllocatorSetAllocAdviseFuncToDesc(aclrtAllocatorDesc allocatorDesc,
                                                aclrtAllocatorAllocAdviseFunc func) {
  return SetField(allocatorDesc, func, "aclrtAllocatorSetAllocAdviseFuncToDesc",
                  &AllocatorDesc::alloc_advise);
}

aclError aclrtAllocatorSetGetAddrFromBlockFuncToDesc(aclrtAllocatorDesc allocatorDesc,
                                                     aclrtAllocatorGetAddrFromBlockFunc func) {
  return SetField(allocatorDesc, func, "aclrtAllocatorSetGetAddrFromBlockFuncToDesc",
                  &AllocatorDesc::get_addr_from_block);
}

aclError aclrtAllocatorRegister(aclrtStream stream, aclrtAllocatorDesc allocatorDesc) {
  return Api([&]() -> absl::Status {
    if (stream == nullptr) return NullArgument("aclrtAllocatorRegister", "stream");
    if (allocatorDesc == nullptr) return NullArgument("aclrtAllocatorRegister", "allocatorDesc");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveStream(stream, "aclrtAllocatorRegister"));
    ACL_RETURN_IF_ERROR(AllocatorRegistry::Get().Register(id, allocatorDesc));
    return transport->SetStreamAllocator(id, true);
  });
}

aclError aclrtAllocatorGetByStream(aclrtStream stream, aclrtAllocatorDesc* allocatorDesc,
                                   aclrtAllocator* allocator, aclrtAllocatorAllocFunc* allocFunc,
                                   aclrtAllocatorFreeFunc* freeFunc,
                                   aclrtAllocatorAllocAdviseFunc* allocAdviseFunc,
                                   aclrtAllocatorGetAddrFromBlockFunc* getAddrFromBlockFunc) {
  return Api([&]() -> absl::Status {
    if (stream == nullptr) return NullArgument("aclrtAllocatorGetByStream", "stream");
    if (allocatorDesc == nullptr) {
      return NullArgument("aclrtAllocatorGetByStream", "allocatorDesc");
    }
    ACL_ASSIGN_OR_RETURN(AllocatorRegistry::Registration registration,
                         AllocatorRegistry::Get().Find(acl_client::HandleId(stream)));
    *allocatorDesc = registration.desc_handle;
    if (allocator != nullptr) *allocator = registration.copy.obj;
    if (allocFunc != nullptr) *allocFunc = registration.copy.alloc;
    if (freeFunc != nullptr) *freeFunc = registration.copy.free;
    if (allocAdviseFunc != nullptr) *allocAdviseFunc = registration.copy.alloc_advise;
    if (getAddrFromBlockFunc != nullptr) {
      *getAddrFromBlockFunc = registration.copy.get_addr_from_block;
    }
    return absl::OkStatus();
  });
}

aclError aclrtAllocatorUnregister(aclrtStream stream) {
  return Api([&]() -> absl::Status {
    if (!AllocatorRegistry::Get().Unregister(acl_client::HandleId(stream))) {
      return absl::OkStatus();  // nothing registered: still a success
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    return transport->SetStreamAllocator(acl_client::HandleId(stream), false);
  });
}

}  // extern "C"
