#include "client/lifecycle.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "client/error_state.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace acl_client {
namespace {

acld::InitSettings ToInitSettings(const InitConfig& config) {
  acld::InitSettings settings;
  settings.config_content = config.content;
  settings.default_device = config.default_device;
  settings.settings = acld::ShownInitSettings(config.settings);
  return settings;
}

}  // namespace

Lifecycle::Lifecycle(TransportProvider transport, std::function<void()> on_finalized)
    : transport_(std::move(transport)), on_finalized_(std::move(on_finalized)) {}

absl::Status Lifecycle::Init(const char* config_path) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::optional<InitConfig> config;
  acld::InitSettings settings;
  auto read_config = [&]() -> absl::Status {
    absl::StatusOr<InitConfig> read = ReadInitConfig(config_path);
    if (!read.ok()) return read.status();
    config = *std::move(read);
    settings = ToInitSettings(*config);
    return absl::OkStatus();
  };
  // A process that is not initialized (initialized_ says so without asking
  // acld) reads its config before it needs its session: a session that
  // opens now carries the Initialize as it opens, which spares aclInit a
  // round trip (docs/performance.md, session 29).
  if (!initialized_) ACL_RETURN_IF_ERROR(read_config());
  absl::StatusOr<Transport*> transport = transport_(initialized_ ? nullptr : &settings);
  if (!transport.ok()) return transport.status();

  // The aclInit of a process initialized already adds a reference, and says
  // so; nullopt when the count was 0 (nothing added).
  auto add_reference = [&]() -> std::optional<absl::Status> {
    absl::StatusOr<uint64_t> count = (*transport)->AddInitReference();
    if (!count.ok()) return count.status();
    if (*count == 0) return std::nullopt;
    return acld::AclStatus(ACL_ERROR_REPEAT_INITIALIZE,
                           absl::StrCat("aclInit: the process is already initialized; its "
                                        "reference count is now ",
                                        *count));
  };
  // Whether it is, initialized_ says without asking acld: a process's first
  // aclInit makes one round trip fewer (docs/performance.md, session 28).
  if (initialized_) {
    if (std::optional<absl::Status> repeated = add_reference()) return *repeated;
    ACL_RETURN_IF_ERROR(read_config());
  }
  absl::Status initialized = (*transport)->Initialize(settings);
  // initialized_ fell behind acld's count (acld applied an Initialize whose
  // answer came after the caller stopped waiting): a repeated aclInit after
  // all.
  if (!initialized_ && acld::AclCodeOf(initialized) == ACL_ERROR_REPEAT_INITIALIZE) {
    if (std::optional<absl::Status> repeated = add_reference()) return *repeated;
  }
  if (!initialized.ok()) return initialized;
  initialized_ = true;
  config_ = *std::move(config);
  SetProcessLevelErrorMessages(config_.err_msg_mode == 1);

  for (const auto& entry : init_callbacks_.InOrder(kInitNotifyOrder)) {
    const aclError result =
        entry.callback(config_.content.c_str(), config_.content.size(), entry.user_data);
    if (result != ACL_SUCCESS) {
      (*transport)->AbortInit().IgnoreError();  // the session may be gone; nothing else to undo
      initialized_ = false;
      return acld::AclStatus(
          result, absl::StrCat("aclInit: the init callback of type ", entry.type, " returned ",
                               result, "; the process stays uninitialized"));
    }
  }
  return absl::OkStatus();
}

absl::Status Lifecycle::RunFinalizeCallbacks() {
  for (const auto& entry : finalize_callbacks_.InOrder(kFinalizeNotifyOrder)) {
    const aclError result = entry.callback(entry.user_data);
    if (result != ACL_SUCCESS) {
      return acld::AclStatus(
          result, absl::StrCat("finalize callback of type ", entry.type, " returned ", result,
                               "; the process stays initialized"));
    }
  }
  return absl::OkStatus();
}

absl::Status Lifecycle::FullFinalize(Transport& transport) {
  absl::Status callbacks = RunFinalizeCallbacks();
  if (!callbacks.ok()) return callbacks;
  absl::Status finalized = transport.Finalize();
  if (!finalized.ok()) return finalized;
  initialized_ = false;
  on_finalized_();
  return absl::OkStatus();
}

absl::Status Lifecycle::Finalize() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  absl::StatusOr<Transport*> transport = transport_(nullptr);
  if (!transport.ok()) return transport.status();
  absl::StatusOr<uint64_t> count = (*transport)->InitCount();
  if (!count.ok()) return count.status();
  if (*count == 0) {
    return acld::AclStatus(ACL_ERROR_REPEAT_FINALIZE,
                           "aclFinalize: the process is not initialized (never, or finalized "
                           "already)");
  }
  return FullFinalize(**transport);
}

absl::Status Lifecycle::FinalizeReference(uint64_t* ref_count) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  absl::StatusOr<Transport*> transport = transport_(nullptr);
  if (!transport.ok()) return transport.status();
  absl::StatusOr<uint64_t> count = (*transport)->InitCount();
  if (!count.ok()) return count.status();
  if (ref_count != nullptr) *ref_count = *count;
  if (*count == 0) {
    return acld::AclStatus(ACL_ERROR_REPEAT_FINALIZE,
                           "aclFinalizeReference: the reference count is already 0");
  }
  if (*count > 1) {
    absl::StatusOr<uint64_t> remaining = (*transport)->DropInitReference();
    if (!remaining.ok()) return remaining.status();
    if (ref_count != nullptr) *ref_count = *remaining;
    return absl::OkStatus();
  }
  absl::Status finalized = FullFinalize(**transport);
  if (finalized.ok() && ref_count != nullptr) *ref_count = 0;
  return finalized;
}

absl::Status Lifecycle::RegisterInitCallback(aclRegisterCallbackType type,
                                             aclInitCallbackFunc callback, void* user_data) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  absl::Status registered = init_callbacks_.Register(type, callback, user_data);
  if (!registered.ok()) return registered;
  // A module loaded after aclInit still learns the config, at once (CANN
  // ignores the callback's result here).
  if (initialized_) callback(config_.content.c_str(), config_.content.size(), user_data);
  return absl::OkStatus();
}

absl::Status Lifecycle::UnregisterInitCallback(aclRegisterCallbackType type,
                                               aclInitCallbackFunc callback) {
  return init_callbacks_.Unregister(type, callback);
}

absl::Status Lifecycle::RegisterFinalizeCallback(aclRegisterCallbackType type,
                                                 aclFinalizeCallbackFunc callback,
                                                 void* user_data) {
  return finalize_callbacks_.Register(type, callback, user_data);
}

absl::Status Lifecycle::UnregisterFinalizeCallback(aclRegisterCallbackType type,
                                                   aclFinalizeCallbackFunc callback) {
  return finalize_callbacks_.Unregister(type, callback);
}

std::optional<int32_t> Lifecycle::default_device() const {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (!initialized_) return std::nullopt;
  return config_.default_device;
}

}  // namespace acl_client
