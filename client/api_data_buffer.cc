// aclDataBuffer (CANN's acl_base_rt.h): an address and a size, kept by the
// library for the application. Purely process-local, so it works with or
// without aclInit and a daemon. As CANN documents: the memory described stays
// the caller's (destroying a buffer does not free it), and aclCreateDataBuffer
// takes NULL data only for an empty buffer (size 0). Beyond CANN, a pointer
// that is no live buffer of aclCreateDataBuffer is refused (NULL included)
// instead of being dereferenced.
#include <cstdint>
#include <new>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "acl/acl_base.h"
#include "client/api_support.h"
#include "proto/acl/acl_status.h"

struct aclDataBuffer {
  void* data;
  size_t size;
};

namespace {

using acl_client::Api;
using acl_client::NullArgument;

// The buffers aclCreateDataBuffer made and aclDestroyDataBuffer has not
// destroyed yet; their fields are read and written under the same lock.
class DataBuffers {
 public:
  static DataBuffers& Get() {
    static DataBuffers* buffers = new DataBuffers;  // outlives static destructors
    return *buffers;
  }

  absl::StatusOr<aclDataBuffer*> Create(void* data, size_t size) {
    auto* buffer = new (std::nothrow) aclDataBuffer{data, size};
    if (buffer == nullptr) {
      return acld::AclStatus(ACL_ERROR_BAD_ALLOC, "aclCreateDataBuffer: out of host memory");
    }
    absl::MutexLock lock(&mu_);
    live_.insert(buffer);
    return buffer;
  }

  absl::Status Destroy(const aclDataBuffer* buffer) {
    {
      absl::MutexLock lock(&mu_);
      ACL_RETURN_IF_ERROR(CheckLive(buffer, "aclDestroyDataBuffer"));
      live_.erase(buffer);
    }
    delete buffer;
    return absl::OkStatus();
  }

  absl::Status Update(aclDataBuffer* buffer, void* data, size_t size) {
    absl::MutexLock lock(&mu_);
    ACL_RETURN_IF_ERROR(CheckLive(buffer, "aclUpdateDataBuffer"));
    buffer->data = data;
    buffer->size = size;
    return absl::OkStatus();
  }

  absl::StatusOr<aclDataBuffer> Read(const aclDataBuffer* buffer, const char* api) {
    absl::MutexLock lock(&mu_);
    ACL_RETURN_IF_ERROR(CheckLive(buffer, api));
    return *buffer;
  }

 private:
  absl::Status CheckLive(const aclDataBuffer* buffer, const char* api)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (buffer == nullptr) return NullArgument(api, "dataBuffer");
    if (!live_.contains(buffer)) {
      return acld::AclStatus(
          ACL_ERROR_INVALID_PARAM,
          absl::StrCat(api, ": dataBuffer is not a live buffer of aclCreateDataBuffer"));
    }
    return absl::OkStatus();
  }

  absl::Mutex mu_;
  absl::flat_hash_set<const aclDataBuffer*> live_ ABSL_GUARDED_BY(mu_);
};

// CANN: NULL data describes an empty buffer, whose size must be 0.
absl::Status CheckData(const void* data, size_t size, const char* api) {
  if (data != nullptr || size == 0) return absl::OkStatus();
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                         absl::StrCat(api, ": data is NULL but size is ", size,
                                      " (NULL data describes an empty buffer, of size 0)"));
}

// The buffer's fields, or {NULL, 0} after leaving the reason for
// aclGetRecentErrMsg (the getters return no error code).
aclDataBuffer ReadOrEmpty(const aclDataBuffer* buffer, const char* api) {
  aclDataBuffer fields{nullptr, 0};
  Api([&]() -> absl::Status {
    ACL_ASSIGN_OR_RETURN(fields, DataBuffers::Get().Read(buffer, api));
    return absl::OkStatus();
  });
  return fields;
}

}  // namespace

extern "C" {

aclDataBuffer* aclCreateDataBuffer(void* data, size_t size) {
  aclDataBuffer* created = nullptr;
  Api([&]() -> absl::Status {
    ACL_RETURN_IF_ERROR(CheckData(data, size, "aclCreateDataBuffer"));
    ACL_ASSIGN_OR_RETURN(created, DataBuffers::Get().Create(data, size));
    return absl::OkStatus();
  });
  return created;
}

aclError aclDestroyDataBuffer(const aclDataBuffer* dataBuffer) {
  return Api([&]() -> absl::Status { return DataBuffers::Get().Destroy(dataBuffer); });
}

aclError aclUpdateDataBuffer(aclDataBuffer* dataBuffer, void* data, size_t size) {
  return Api([&]() -> absl::Status { return DataBuffers::Get().Update(dataBuffer, data, size); });
}

void* aclGetDataBufferAddr(const aclDataBuffer* dataBuffer) {
  return ReadOrEmpty(dataBuffer, "aclGetDataBufferAddr").data;
}

// Deprecated in CANN: the low 32 bits of the size, as CANN returns them; a
// size that does not fit also leaves a message naming aclGetDataBufferSizeV2.
uint32_t aclGetDataBufferSize(const aclDataBuffer* dataBuffer) {
  constexpr const char* kApi = "aclGetDataBufferSize";
  const size_t size = ReadOrEmpty(dataBuffer, kApi).size;
  if (size > UINT32_MAX) {
    acl_client::ReportStatus(
        acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                        absl::StrCat(kApi, ": the size ", size,
                                     " does not fit in 32 bits; its low 32 bits are returned "
                                     "(aclGetDataBufferSizeV2 returns the whole size)")));
  }
  return static_cast<uint32_t>(size);
}

size_t aclGetDataBufferSizeV2(const aclDataBuffer* dataBuffer) {
  return ReadOrEmpty(dataBuffer, "aclGetDataBufferSizeV2").size;
}

}  // extern "C"
