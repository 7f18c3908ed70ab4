#include "client/error_state.h"

#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "proto/acl/acl_status.h"

namespace acl_client {
namespace {

std::atomic<bool> process_level{false};

struct ProcessMessage {
  absl::Mutex mu;
  std::string text ABSL_GUARDED_BY(mu);
};

ProcessMessage& process_message() {
  static ProcessMessage* message = new ProcessMessage;  // outlives static destructors
  return *message;
}

thread_local std::string thread_message;
thread_local aclError last_error = ACL_SUCCESS;
thread_local std::string returned_message;  // what the last Take handed out

}  // namespace

void SetProcessLevelErrorMessages(bool enabled) {
  process_level.store(enabled, std::memory_order_relaxed);
}

aclError ReportStatus(const absl::Status& status) {
  const int32_t code = acld::AclCodeOf(status);
  if (code == 0) return ACL_SUCCESS;
  last_error = code;
  std::string text = absl::StrCat("[acld] error ", code, ": ", status.message());
  if (process_level.load(std::memory_order_relaxed)) {
    ProcessMessage& message = process_message();
    absl::MutexLock lock(&message.mu);
    message.text = std::move(text);
  } else {
    thread_message = std::move(text);
  }
  return code;
}

aclError TakeLastError() {
  const aclError code = last_error;
  last_error = ACL_SUCCESS;
  return code;
}

aclError PeekLastError() { return last_error; }

const char* TakeRecentErrorMessage() {
  if (process_level.load(std::memory_order_relaxed)) {
    ProcessMessage& message = process_message();
    absl::MutexLock lock(&message.mu);
    returned_message = std::move(message.text);
    message.text.clear();
  } else {
    returned_message = std::move(thread_message);
    thread_message.clear();
  }
  return returned_message.empty() ? nullptr : returned_message.c_str();
}

}  // namespace acl_client
