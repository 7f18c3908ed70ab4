#include "hal/acl/report_thread.h"

#include <pthread.h>

#include <future>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "hal/acl/vendor_status.h"
#include "proto/acl/status_macros.h"

namespace hal::acl {
namespace {

// How long aclrtProcessReport waits before the loop looks at its stop flag
// (a callback on the control stream wakes it when it stops normally).
constexpr int32_t kReportTimeoutMs = 1000;
// After an aclrtProcessReport failure other than a timeout: do not spin.
constexpr absl::Duration kReportRetryDelay = absl::Milliseconds(10);

// The state of the report thread running on this thread.
thread_local void* report_thread_shared = nullptr;

void* Pack(uint32_t token, uint8_t signal, uint32_t value) {
  const uint64_t packed = (uint64_t{token} << 32) | (uint64_t{signal} << 24) |
                          (value & ReportThread::kMaxValue);
  return reinterpret_cast<void*>(static_cast<uintptr_t>(packed));
}

}  // namespace

absl::StatusOr<std::shared_ptr<ReportThread>> ReportThread::Start(
    std::shared_ptr<DeviceContext> context) {
  const VendorApi& api = context->api();
  ACL_RETURN_IF_ERROR(context->MakeCurrent());
  aclrtStream control = nullptr;
  ACL_RETURN_IF_ERROR(
      CheckVendor(api.aclrtCreateStream(&control), "aclrtCreateStream (report control)"));
  auto shared = std::make_shared<Shared>();
  shared->context = std::move(context);
  std::shared_ptr<ReportThread> thread(new ReportThread(shared));
  thread->control_ = control;
  std::promise<absl::Status> started;
  std::future<absl::Status> result = started.get_future();
  thread->thread_ = std::thread([shared, control, &started, id = &thread->thread_id_] {
    *id = static_cast<uint64_t>(pthread_self());
    absl::Status status = shared->context->MakeCurrent();
    if (status.ok()) {
      status = CheckVendor(shared->context->api().aclrtSubscribeReport(*id, control),
                           "aclrtSubscribeReport (report control)");
    }
    const bool ok = status.ok();
    started.set_value(std::move(status));  // `started` is gone after this
    if (ok) Loop(shared, control, id);
  });
  absl::Status status = result.get();
  if (!status.ok()) {
    thread->thread_.join();
    thread->thread_ = std::thread();
    api.aclrtDestroyStream(control);
    thread->control_ = nullptr;
    return status;
  }
  return thread;
}

void ReportThread::Loop(std::shared_ptr<Shared> shared, aclrtStream control,
                        uint64_t* thread_id) {
  report_thread_shared = shared.get();
  const VendorApi& api = shared->context->api();
  const uint64_t self = *thread_id;  // the object may go while the loop runs
  while (true) {
    {
      absl::MutexLock lock(&shared->mu);
      if (shared->stop) break;
    }
    const aclError code = api.aclrtProcessReport(kReportTimeoutMs);
    if (code != ACL_SUCCESS && !IsReportTimeout(code)) absl::SleepFor(kReportRetryDelay);
  }
  api.aclrtUnSubscribeReport(self, control);
  report_thread_shared = nullptr;
}

void ReportThread::Trampoline(void* user_data) {
  auto* shared = static_cast<Shared*>(report_thread_shared);
  if (shared == nullptr) return;  // not on a report thread: never ours
  const auto packed = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(user_data));
  const auto token = static_cast<uint32_t>(packed >> 32);
  std::shared_ptr<Listener> listener;
  {
    absl::MutexLock lock(&shared->mu);
    auto it = shared->listeners.find(token);
    if (it == shared->listeners.end()) return;  // unsubscribed meanwhile, or the wake-up
    listener = it->second.lock();
  }
  if (listener != nullptr) {
    listener->OnReport(static_cast<uint8_t>(packed >> 24), static_cast<uint32_t>(packed) & kMaxValue);
  }
}

ReportThread::~ReportThread() { Stop(); }

void ReportThread::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&shared_->mu);
    shared_->stop = true;
  }
  if (!thread_.joinable()) return;
  const VendorApi& api = shared_->context->api();
  const bool vendor = shared_->context->MakeCurrent().ok();
  // Wakes the loop at once; without it, it sees the flag within a timeout.
  if (vendor) {
    absl::MutexLock record_lock(&record_mu_);
    api.aclrtLaunchCallback(&Trampoline, Pack(0, 0, 0), ACL_CALLBACK_NO_BLOCK, control_);
  }
  if (std::this_thread::get_id() == thread_.get_id()) {
    thread_.detach();  // the loop ends on its own after this callback
    return;
  }
  thread_.join();
  absl::MutexLock record_lock(&record_mu_);
  if (vendor) api.aclrtDestroyStream(control_);
  control_ = nullptr;
}

absl::StatusOr<uint32_t> ReportThread::Subscribe(aclrtStream stream,
                                                 std::weak_ptr<Listener> listener) {
  uint32_t token;
  {
    absl::MutexLock lock(&shared_->mu);
    token = next_token_++;
    shared_->listeners.emplace(token, std::move(listener));
  }
  absl::Status status = CheckVendor(
      shared_->context->api().aclrtSubscribeReport(thread_id_, stream), "aclrtSubscribeReport");
  if (status.ok()) return token;
  absl::MutexLock lock(&shared_->mu);
  shared_->listeners.erase(token);
  return status;
}

void ReportThread::Unsubscribe(aclrtStream stream, uint32_t token) {
  {
    absl::MutexLock lock(&shared_->mu);
    shared_->listeners.erase(token);
  }
  if (shared_->context->MakeCurrent().ok()) {
    shared_->context->api().aclrtUnSubscribeReport(thread_id_, stream);
  }
}

absl::Status ReportThread::Launch(aclrtStream stream, uint32_t token, uint8_t signal,
                                  uint32_t value) const {
  return CheckVendor(shared_->context->api().aclrtLaunchCallback(
                         &Trampoline, Pack(token, signal, value), ACL_CALLBACK_NO_BLOCK, stream),
                     "aclrtLaunchCallback");
}

absl::Status ReportThread::RecordNotify(aclrtNotify notify) {
  absl::MutexLock lock(&record_mu_);
  if (control_ == nullptr) {
    return BackendError(ACL_ERROR_RT_STREAM_CONTEXT, "the device's report thread has stopped");
  }
  return CheckVendor(shared_->context->api().aclrtRecordNotify(notify, control_),
                     "aclrtRecordNotify");
}

}  // namespace hal::acl
