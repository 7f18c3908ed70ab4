// The runtime's built-in device tasks beyond copies and kernels: float
// overflow detection (aclrtGetOverflowStatus and its switches) and random
// numbers (aclrtRandomNumAsync).
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "daemon/core/runtime.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/random_task_shape.h"
#include "proto/acl/status_macros.h"

namespace acld {
namespace {

constexpr const char* kRandomApi = "aclrtRandomNumAsync";

// CANN's randomParaAddr holds a copy of the task's parameters
// (aclrtRandomNumFuncParaInfo). acld reads them from the request and leaves the
// workspace untouched, but holds the caller to CANN's contract for it.
constexpr uint64_t kRandomWorkspaceBytes = sizeof(aclrtRandomNumFuncParaInfo);

// The value's `size` low bytes (size 1..8, checked by the task's shape).
uint64_t LowBytes(uint64_t value, uint32_t size) {
  return size >= 8 ? value : value & ((uint64_t{1} << (8 * size)) - 1);
}

}  // namespace

absl::StatusOr<std::shared_ptr<hal::OverflowStatus>> Runtime::OverflowStatusOf(SessionId id,
                                                                              int32_t device) {
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  std::shared_ptr<hal::OverflowStatus>& status = session->overflow_status[device];
  if (status == nullptr) status = std::make_shared<hal::OverflowStatus>();
  return status;
}

absl::StatusOr<uint64_t> Runtime::EnqueueOverflow(SessionId id, StreamId stream_id,
                                                  uint64_t thread,
                                                  const OverflowRequest& overflow) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  const int32_t device = stream->options().device;
  if (!backend_->device(device).features().float_overflow) {
    return AclStatus(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                     "the stream's device does not detect float overflows");
  }
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<hal::OverflowStatus> status, OverflowStatusOf(id, device));
  switch (overflow.kind) {
    case OverflowRequest::Kind::kSwitchOn:
    case OverflowRequest::Kind::kSwitchOff: {
      std::shared_ptr<hal::OverflowStatus> report =
          overflow.kind == OverflowRequest::Kind::kSwitchOn ? status : nullptr;
      return EnqueueDeviceWork(id, stream, thread, 0, "overflow switch",
                               [report](hal::Stream& device_stream) {
                                 return device_stream.ReportOverflows(report);
                               });
    }
    case OverflowRequest::Kind::kCopyStatus: {
      ACL_ASSIGN_OR_RETURN(ResolvedRange dst,
                           ResolveForStream(id, *stream, overflow.device_dst,
                                            hal::OverflowStatus::kBytes,
                                            "aclrtGetOverflowStatus: outputAddr"));
      auto held = std::make_shared<ResolvedRange>(std::move(dst));
      return EnqueueDeviceWork(id, stream, thread, 0, "overflow status",
                               [held, status](hal::Stream& device_stream) {
                                 return device_stream.CopyOverflowStatus(held->span, status);
                               });
    }
    case OverflowRequest::Kind::kClearStatus:
      return EnqueueDeviceWork(id, stream, thread, 0, "overflow reset",
                               [status](hal::Stream& device_stream) {
                                 return device_stream.ClearOverflowStatus(status);
                               });
  }
  return AclStatus(ACL_ERROR_INVALID_PARAM, "unknown overflow operation");
}

absl::StatusOr<uint64_t> Runtime::EnqueueRandom(SessionId id, StreamId stream_id,
                                                uint64_t thread, const RandomRequest& random) {
  ACL_RETURN_IF_ERROR(CheckRandomTaskShape({random.function, random.data_type, random.seed.size,
                                            random.count.size, random.first.size,
                                            random.second.size}));
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  // Everything the task touches, held until it has run.
  struct Operands {
    hal::RandomNumbers task;
    std::vector<ResolvedRange> ranges;
  };
  auto operands = std::make_shared<Operands>();
  auto resolve = [&](uint64_t address, uint64_t bytes,
                     absl::string_view what) -> absl::StatusOr<ResolvedRange> {
    ACL_ASSIGN_OR_RETURN(ResolvedRange range,
                         ResolveForStream(id, *stream, address, bytes,
                                          absl::StrCat(kRandomApi, ": ", what)));
    operands->ranges.push_back(range);
    return range;
  };
  auto parameter = [&](const RandomParameter& given,
                       absl::string_view what) -> absl::StatusOr<hal::RandomParameter> {
    hal::RandomParameter out;
    out.size = static_cast<uint8_t>(given.size);
    if (!given.at_device) {
      out.value = LowBytes(given.value, given.size);
      return out;
    }
    ACL_ASSIGN_OR_RETURN(ResolvedRange at, resolve(given.value, given.size, what));
    out.at = at.span;
    return out;
  };
  hal::RandomNumbers& task = operands->task;
  task.function = random.function;
  task.data_type = random.data_type;
  ACL_ASSIGN_OR_RETURN(task.seed, parameter(random.seed, "randomSeed"));
  ACL_ASSIGN_OR_RETURN(task.count, parameter(random.count, "randomNum"));
  ACL_ASSIGN_OR_RETURN(task.first, parameter(random.first, "the distribution's first parameter"));
  if (random.function != ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK) {
    ACL_ASSIGN_OR_RETURN(task.second,
                         parameter(random.second, "the distribution's second parameter"));
  }
  // A count held in device memory is checked when the task runs, against what
  // the caller may write from the result address (result_room); one given
  // now, here. At least one byte: the address must be the caller's memory
  // even for no numbers.
  uint64_t result_bytes = 1;
  if (!task.count.at.has_value()) {
    const std::optional<uint64_t> bytes =
        RandomResultBytes(random.function, random.data_type, task.count.value);
    if (!bytes.has_value()) {
      return AclStatus(ACL_ERROR_INVALID_PARAM,
                       absl::StrCat(kRandomApi, ": ", task.count.value, " numbers overflow"));
    }
    result_bytes = std::max<uint64_t>(*bytes, 1);
  }
  ACL_ASSIGN_OR_RETURN(ResolvedRange result,
                       resolve(random.device_result, result_bytes, "randomResultAddr"));
  task.result = result.span;
  task.result_room = result.reachable;
  ACL_ASSIGN_OR_RETURN(ResolvedRange counter,
                       resolve(random.device_counter, 16, "randomCounterAddr"));
  task.counter = counter.span;
  if (random.device_workspace != 0) {
    ACL_RETURN_IF_ERROR(
        resolve(random.device_workspace, kRandomWorkspaceBytes, "randomParaAddr").status());
  }
  return EnqueueDeviceWork(id, stream, thread, 0, "random numbers",
                           [operands](hal::Stream& device_stream) {
                             return device_stream.GenerateRandom(operands->task);
                           });
}

}  // namespace acld
