// The thread that runs one acl device's stream callbacks.
//
// CANN runs a stream's callbacks (aclrtLaunchCallback) only on a thread
// subscribed to the stream (aclrtSubscribeReport) that loops on
// aclrtProcessReport. The backend's callbacks never block — completion
// markers, "host-callback point reached", abort fences; a held host-callback
// point waits on a vendor notify instead (acl_stream.h) — so one thread serves
// every stream of a device, and vendor threads do not grow with streams
// (CANN allows 1024 subscribed threads per process).
//
// A callback's user data is a token naming its listener and a signal, never
// a pointer: a callback the vendor delivers after its stream unsubscribed
// finds no listener and is dropped, so no stream outlives its last callback.
//
// The thread also owns a control stream with no work of its own: it wakes the
// loop at shutdown, and records the notifies that let held host-callback
// points go (a record on an idle stream runs at once).
#ifndef ACLD_HAL_ACL_REPORT_THREAD_H_
#define ACLD_HAL_ACL_REPORT_THREAD_H_

#include <cstdint>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "hal/acl/device_context.h"

namespace hal::acl {

class ReportThread {
 public:
  class Listener {
   public:
    virtual ~Listener() = default;
    // On the report thread: the callback launched with `signal` and `value`
    // ran. Must not block.
    virtual void OnReport(uint8_t signal, uint32_t value) = 0;
  };
  // The largest `value` a callback carries.
  static constexpr uint32_t kMaxValue = (1u << 24) - 1;

  // Starts the thread with `context` current on it.
  static absl::StatusOr<std::shared_ptr<ReportThread>> Start(
      std::shared_ptr<DeviceContext> context);
  // Stop(), unless it was called.
  ~ReportThread();
  ReportThread(const ReportThread&) = delete;
  ReportThread& operator=(const ReportThread&) = delete;

  // Subscribes `stream` (of this device) to the thread; the token names
  // `listener` in Launch. The caller has the context current.
  absl::StatusOr<uint32_t> Subscribe(aclrtStream stream, std::weak_ptr<Listener> listener);
  // Forgets the token (callbacks still due are dropped) and unsubscribes.
  void Unsubscribe(aclrtStream stream, uint32_t token);
  // aclrtLaunchCallback(ACL_CALLBACK_NO_BLOCK) on `stream`: once the stream
  // reaches it, the token's listener hears OnReport(signal, value & kMaxValue).
  // The caller has the context current.
  absl::Status Launch(aclrtStream stream, uint32_t token, uint8_t signal, uint32_t value) const;
  // aclrtRecordNotify on the control stream. The caller has the context current.
  absl::Status RecordNotify(aclrtNotify notify);
  // Stops and joins the thread (detaches it when called on it); callbacks
  // are no longer run. The device calls it while its context is alive, when
  // the backend goes (streams may hold the thread longer, on any thread).
  void Stop();

 private:
  // What the thread uses: it outlives the object when the thread is detached.
  struct Shared {
    std::shared_ptr<DeviceContext> context;
    absl::Mutex mu;
    absl::flat_hash_map<uint32_t, std::weak_ptr<Listener>> listeners ABSL_GUARDED_BY(mu);
    bool stop ABSL_GUARDED_BY(mu) = false;
  };

  explicit ReportThread(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  static void Loop(std::shared_ptr<Shared> shared, aclrtStream control, uint64_t* thread_id);
  static void Trampoline(void* user_data);

  const std::shared_ptr<Shared> shared_;
  absl::Mutex stop_mu_;  // one Stop() at a time
  std::thread thread_;
  uint64_t thread_id_ = 0;         // pthread_self() of the thread
  absl::Mutex record_mu_;  // one record on the control stream at a time
  aclrtStream control_ ABSL_GUARDED_BY(record_mu_) = nullptr;  // subscribed to the thread
  uint32_t next_token_ ABSL_GUARDED_BY(shared_->mu) = 1;  // 0: the control stream
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_REPORT_THREAD_H_
