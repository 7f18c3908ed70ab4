// A vendor stream (aclrtCreateStream) as a hal::Stream.
//
// Each item is one or two vendor tasks (a copy, a fill, a kernel launch with
// its argument copy, an event record or wait, a host-callback point) followed
// by a completion marker: aclrtLaunchCallback(ACL_CALLBACK_NO_BLOCK) whose
// user data names the stream (report_thread.h), so nothing is allocated per
// item; the stream counts the markers, which the vendor runs in order. The
// device's one report thread runs the callbacks of all its streams.
//
// A host-callback point is a callback that announces it, then
// aclrtWaitAndResetNotify on the stream's point notify: the stream holds
// there, holding no thread, until ResumeCallbackPoint records the notify on
// the report thread's control stream. (A blocking callback would hold the
// report thread, and with it every stream of the device.) Points need the
// vendor's notify functions and aclrtStreamAbort (an abort must discard a
// held wait); without them HostCallbackPoint is ACL_ERROR_API_NOT_SUPPORT.
//
// The markers only count; the device's CompletionDispatcher calls the
// listeners (completion_dispatcher.h), in order, outside vendor callbacks.
//
// Failures: a failed task (a kernel's exception, a DMA error) does not stop a
// CANN stream (ACL_CONTINUE_ON_FAILURE is its default; the core applies
// STOP_ON_FAILURE itself). The vendor reports it through its exception
// callback with the stream and task id (exception_router.h); the unreported
// item with that task id (its last task's, or a launch's argument copy's)
// takes the vendor's code, else the oldest whose task id the vendor did not
// tell. A failure no item takes is forgotten at once, never kept for a later
// item: task ids come round again. The vendor calls that callback while it
// processes the failed task, before the marker after it can run, so the
// failure is known when the item is reported. An item whose failure arrived
// is done even before its marker ran (a stream stopped on failure never runs
// that marker). Without aclrtGetThreadLastTaskId (older CANN) the task ids
// are unknown and a failure goes to the next item reported after it arrived.
//
// Abort: aclrtStreamAbort (when the vendor has it) then
// aclrtSynchronizeStream; no item submitted before Abort is reported
// afterwards. A held point's wait is discarded with the work behind it, and
// the point notify is replaced (a resume racing the abort may have left a
// record in it). Without aclrtStreamAbort the queued device work still runs to
// completion (unreported) before Abort returns. Markers of the aborted items
// that the vendor still delivers are told apart by a fence callback that
// Abort enqueues: markers are ignored until it ran.
//
// StopItem: aclrtStreamStop (when the vendor has it) unless the item is known
// to be done (its marker counted), or it or an item after it is a wait
// released by a notify (a host-callback point, another stream's event).
// Best effort: markers lag the device, which may have moved on to a later
// item that the vendor's stop then ends. The vendor reports the stopped
// task's failure through its exception callback, as any.
//
// Every thread that calls the vendor sets the device's context first
// (device_context.h): submitting threads, the report thread, the dispatcher.
// A resume's notify record may block in the vendor; it holds only the
// stream's notify lock, never the submission lock, so that a submission
// waiting in the vendor for queue room cannot stall the resume it waits for.
#ifndef ACLD_HAL_ACL_ACL_STREAM_H_
#define ACLD_HAL_ACL_ACL_STREAM_H_

#include <memory>

#include "absl/status/statusor.h"
#include "hal/acl/completion_dispatcher.h"
#include "hal/acl/device_context.h"
#include "hal/acl/exception_router.h"
#include "hal/acl/idle_budget.h"
#include "hal/acl/report_thread.h"
#include "hal/stream.h"

namespace hal::acl {

// What a stream shares with its device.
struct StreamDeps {
  std::shared_ptr<DeviceContext> context;
  std::shared_ptr<CompletionDispatcher> dispatcher;
  std::shared_ptr<ExceptionRouter> router;
  std::shared_ptr<ReportThread> reports;
  // What the device's streams keep for reuse while idle, counted together.
  std::shared_ptr<IdleBudgets> idle_budgets;
};

class AclStream final : public Stream {
 public:
  // StreamOptions::priority is not passed on: CANN reserves
  // aclrtCreateStreamWithConfig's priority and does not use it.
  static absl::StatusOr<std::unique_ptr<AclStream>> Create(StreamDeps deps, StreamOptions options);
  // Discards the stream's queued device work (aclrtStreamAbort when the
  // vendor has it), waits for the rest, and reports nothing more.
  ~AclStream() override;

  absl::StatusOr<uint64_t> Copy(const Transfer& transfer) override;
  absl::StatusOr<uint64_t> Fill(const DeviceSpan& dst, uint8_t value, uint64_t count) override;
  absl::StatusOr<uint64_t> Reduce(const Reduction& reduction) override;
  absl::StatusOr<uint64_t> GenerateRandom(const RandomNumbers& task) override;
  absl::StatusOr<uint64_t> WaitValue(const DeviceSpan& address, uint64_t value,
                                     uint32_t flag) override;
  absl::StatusOr<uint64_t> Launch(const Function& function, const LaunchParams& params) override;
  absl::StatusOr<uint64_t> RecordEvent(Event& event, uint64_t record) override;
  absl::StatusOr<uint64_t> WaitEvent(Event& event, uint64_t record,
                                     bool fail_if_dropped) override;
  absl::StatusOr<uint64_t> HostCallbackPoint() override;
  void ResumeCallbackPoint(uint64_t sequence, absl::Status status) override;
  // Each point holds a vendor notify until its callback ran, and a device
  // has few of them for all its clients together.
  int max_callback_points() const override { return kMaxCallbackPoints; }
  static constexpr int kMaxCallbackPoints = 8;
  // aclrtSetStreamFailureMode on the vendor stream. Needs the vendor's task
  // ids (aclrtGetThreadLastTaskId): a stopped stream never runs the failed
  // item's marker, so the item is reported from its exception instead.
  absl::Status SetStopOnFailure(bool stop) override;
  bool can_stop_on_failure() const override;
  absl::Status StopItem(uint64_t sequence, const absl::Status& why) override;
  bool can_stop_items() const override;
  void Abort() override;
  bool AbortKeeping(std::shared_ptr<void> in_use) override;

  class Core;

 private:
  explicit AclStream(std::shared_ptr<Core> core) : core_(std::move(core)) {}

  std::shared_ptr<Core> core_;
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_ACL_STREAM_H_
