// aclrtRandomNumAsync: CANN's task description turned into a request; the
// daemon checks the memory and the device draws the numbers
// (hal/random_numbers.h; how the sim draws them: docs/api-compat.md).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "acl/acl.h"
#include "client/api_support.h"
#include "client/client_runtime.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/random_task_shape.h"
#include "proto/acl/status_macros.h"

namespace {

constexpr const char* kApi = "aclrtRandomNumAsync";

absl::StatusOr<acld::RandomParameter> ParameterOf(const aclrtRandomParaInfo& info,
                                                  const char* name) {
  if (info.isAddr > 1) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(kApi, ": ", name, ".isAddr is ", int{info.isAddr},
                                        "; it is 0 (a value) or 1 (an address)"));
  }
  acld::RandomParameter parameter;
  parameter.at_device = info.isAddr == 1;
  parameter.size = info.size;
  // valueOrAddr holds the value's bytes, little-endian, or an address (8 bytes).
  std::memcpy(&parameter.value, info.valueOrAddr, sizeof(parameter.value));
  return parameter;
}

absl::Status RandomNumAsync(const aclrtRandomNumTaskInfo* task, aclrtStream stream,
                            void* reserve) {
  if (task == nullptr) return acl_client::NullArgument(kApi, "taskInfo");
  if (reserve != nullptr) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat(kApi, ": reserve must be NULL"));
  }
  if (task->randomResultAddr == nullptr) return acl_client::NullArgument(kApi, "randomResultAddr");
  if (task->randomCounterAddr == nullptr) {
    return acl_client::NullArgument(kApi, "randomCounterAddr");
  }
  acld::RandomRequest request;
  request.function = acl_client::RawEnum(task->randomNumFuncParaInfo.funcType);
  request.data_type = acl_client::RawEnum(task->dataType);
  request.device_result = reinterpret_cast<uintptr_t>(task->randomResultAddr);
  request.device_counter = reinterpret_cast<uintptr_t>(task->randomCounterAddr);
  request.device_workspace = reinterpret_cast<uintptr_t>(task->randomParaAddr);
  ACL_ASSIGN_OR_RETURN(request.seed, ParameterOf(task->randomSeed, "randomSeed"));
  ACL_ASSIGN_OR_RETURN(request.count, ParameterOf(task->randomNum, "randomNum"));
  const auto& info = task->randomNumFuncParaInfo.paramInfo;
  switch (request.function) {
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK: {
      ACL_ASSIGN_OR_RETURN(request.first,
                           ParameterOf(info.dropoutBitmaskInfo.dropoutRation, "dropoutRation"));
      break;
    }
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS: {
      ACL_ASSIGN_OR_RETURN(request.first, ParameterOf(info.uniformDisInfo.min, "min"));
      ACL_ASSIGN_OR_RETURN(request.second, ParameterOf(info.uniformDisInfo.max, "max"));
      break;
    }
    default: {  // the normal distributions (an unknown function fails the shape check)
      ACL_ASSIGN_OR_RETURN(request.first, ParameterOf(info.normalDisInfo.mean, "mean"));
      ACL_ASSIGN_OR_RETURN(request.second, ParameterOf(info.normalDisInfo.stddev, "stddev"));
      break;
    }
  }
  ACL_RETURN_IF_ERROR(acld::CheckRandomTaskShape(
      {request.function, request.data_type, request.seed.size, request.count.size,
       request.first.size, request.second.size}));
  ACL_ASSIGN_OR_RETURN(acl_client::Transport * transport, acl_client::Connected());
  ACL_ASSIGN_OR_RETURN(uint64_t stream_id, acl_client::ResolveStream(stream, kApi));
  return acl_client::Enqueued(
      transport->RandomAsync(stream_id, acl_client::CurrentThreadId(), request));
}

}  // namespace

extern "C" aclError aclrtRandomNumAsync(const aclrtRandomNumTaskInfo* taskInfo,
                                        const aclrtStream stream, void* reserve) {
  return acl_client::Api([&] { return RandomNumAsync(taskInfo, stream, reserve); });
}
