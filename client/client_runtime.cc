#include "client/client_runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "client/stream_state_callbacks.h"
#include "client/transport_factory.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/lock_order_checks.h"

namespace acl_client {
namespace {

// The thread's current context (aclrtSetDevice / aclrtSetCurrentContext).
thread_local std::optional<acld::ContextInfo> current;
thread_local uint64_t last_task_id = 0;

}  // namespace

void SetThreadLastTaskId(uint64_t task_id) { last_task_id = task_id; }

uint64_t ThreadLastTaskId() { return last_task_id; }

ClientRuntime& ClientRuntime::Get() {
  static ClientRuntime* runtime = [] {
    acld::MatchLockOrderChecksToBuild();
    auto* created = new ClientRuntime;
    std::atexit([] { Get().Disconnect(); });
    pthread_atfork(nullptr, nullptr, [] { Get().ForkedChild(); });
    return created;
  }();
  return *runtime;
}

void ClientRuntime::ForkedChild() {
  // Only this thread survives the fork: no lock may be taken (another thread
  // may have held it), and the parent's session — its threads, its mapped
  // channel (not inherited) — is not the child's. The child keeps the objects
  // untouched and refuses every call that needs a session.
  Transport* transport = transport_.load(std::memory_order_acquire);
  if (transport == nullptr) return;
  transport->ForkedChild();
  session_parent_.store(getppid(), std::memory_order_release);
}

ClientRuntime::ClientRuntime()
    : lifecycle_([this](const acld::InitSettings* initialize) { return transport(initialize); },
                 [this] { handles_.Clear(); }) {}

absl::StatusOr<Transport*> ClientRuntime::transport(const acld::InitSettings* initialize) {
  if (const pid_t parent = session_parent_.load(std::memory_order_acquire); parent != 0) {
    return acld::AclStatus(
        ACL_ERROR_RT_SOCKET_CLOSE,
        absl::StrCat("this process (pid ", getpid(), ") was forked from pid ", parent,
                     ", whose session with the runtime it cannot use; a forked child gets a "
                     "session of its own only by exec'ing a program that calls aclInit"));
  }
  Transport* ready = transport_.load(std::memory_order_acquire);
  if (ready != nullptr) return ready;
  absl::MutexLock lock(&connect_mu_);
  if (owned_transport_ == nullptr) {
    absl::StatusOr<std::unique_ptr<Transport>> created = CreateTransport(&callbacks_, initialize);
    if (!created.ok()) return created.status();
    owned_transport_ = *std::move(created);
    Transport* connected = owned_transport_.get();
    callbacks_.SetAcknowledge([connected](uint64_t id) { connected->AcknowledgeCallback(id); });
    transport_.store(connected, std::memory_order_release);
  }
  return owned_transport_.get();
}

std::optional<acld::ContextInfo> ClientRuntime::current_context() {
  if (!current.has_value()) return std::nullopt;
  // The context may have been destroyed, reset or finalized meanwhile.
  std::optional<acld::ContextInfo> live = handles_.FindContext(current->context);
  if (!live.has_value()) current.reset();
  return live;
}

void ClientRuntime::set_current_context(const acld::ContextInfo& context) { current = context; }

absl::StatusOr<acld::ContextInfo> ClientRuntime::SetDevice(int32_t device_id) {
  absl::StatusOr<Transport*> connected = transport();
  if (!connected.ok()) return connected.status();
  absl::StatusOr<acld::ContextInfo> context = (*connected)->SetDevice(device_id);
  if (!context.ok()) return context.status();
  handles_.AddDeviceReference(device_id);
  if (handles_.AddContext(*context)) {
    // The device's default context and stream came with this first reference.
    StreamStateCallbacks::Get().Notify({context->default_stream}, ACL_RT_STREAM_STATE_CREATE_POST);
  }
  current = *context;
  return context;
}

absl::StatusOr<acld::ContextInfo> ClientRuntime::RequireContext() {
  std::optional<acld::ContextInfo> context = current_context();
  if (context.has_value()) return *context;
  std::optional<int32_t> default_device = lifecycle_.default_device();
  if (default_device.has_value()) return SetDevice(*default_device);
  return acld::AclStatus(ACL_ERROR_RT_CONTEXT_NULL,
                         "this thread has no current context; call aclrtSetDevice or "
                         "aclrtSetCurrentContext first");
}

void ClientRuntime::Disconnect() {
  // A forked child's copy of its parent's session is not its own to close.
  if (session_parent_.load(std::memory_order_acquire) != 0) return;
  absl::MutexLock lock(&connect_mu_);
  // Other threads may still hold the pointer: end the session, keep the object.
  if (owned_transport_ != nullptr) owned_transport_->Close();
}

}  // namespace acl_client
