// A device stream: work that runs on the device one item after another, in
// submission order.
//
// Each submit returns the item's sequence number (1, 2, 3, ... per stream).
// The stream reports every item that ran, in order, to its completion listener
// with the item's status; an item dropped by Abort() is never reported. The
// core submits work as soon as it is ready on its side, so the device queue
// may hold many items; nothing per item is allocated for the report.
//
// Host memory passed to a copy stays valid until the copy is reported or
// Abort() returns; device memory is held by its DeviceSpan.
#ifndef ACLD_HAL_STREAM_H_
#define ACLD_HAL_STREAM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hal/event.h"
#include "hal/executable.h"
#include "hal/float_overflow.h"
#include "hal/memory.h"
#include "hal/random_numbers.h"

namespace hal {

// Called once per item that ran, in sequence order, from any thread, with no
// lock of the stream held (it may submit or abort).
using CompletionListener = std::function<void(uint64_t sequence, const absl::Status& status)>;
// Called when the device reaches a host-callback point; the stream then holds
// until ResumeCallbackPoint(sequence).
using CallbackPointListener = std::function<void(uint64_t sequence)>;
// Called with the text a kernel printed (device printf), once per item that
// printed, before that item's completion.
using OutputListener = std::function<void(uint64_t sequence, std::string text)>;

// A reduction of device memory into device memory (aclrtReduceAsync): each
// element of `dst` becomes dst[i] <op> src[i]. `kind` is an aclrtReduceKind,
// `data_type` an aclDataType, `count` bytes (a whole number of elements);
// both spans are `count` bytes of the stream's device.
struct Reduction {
  DeviceSpan dst;
  DeviceSpan src;
  uint64_t count = 0;
  int32_t kind = 0;
  int32_t data_type = 0;
};

struct StreamOptions {
  uint32_t priority = 0;  // 0 (highest) .. 7
  // Float results out of range saturate instead of becoming infinities and
  // NaNs (hal/float_overflow.h). Only a device whose features say
  // float_overflow takes it.
  bool saturate_floats = false;
  CompletionListener on_complete;
  CallbackPointListener on_callback_point;
  OutputListener on_output;
  // Whose work the stream runs (the core: its tenant). A backend that runs
  // streams' work on threads of its own shares them between owners.
  std::string owner;
  // Charges the stream's owner for `bytes` of device memory the backend keeps
  // for the stream itself (the acl backend's kernel argument rings) until the
  // returned handle goes. An error refuses the memory: the work that needed
  // it fails with that error. Null: nothing is charged.
  using MemoryCharger = std::function<absl::StatusOr<std::shared_ptr<void>>(uint64_t bytes)>;
  MemoryCharger charge_memory;
  // Charges the owner for one of the device's notifies that the backend
  // takes for the stream (DeviceObjectLimits::notifies) until the returned
  // handle goes. An error refuses it: the work that needed it fails with
  // that error. Null: nothing is charged.
  using ObjectCharger = std::function<absl::StatusOr<std::shared_ptr<void>>()>;
  ObjectCharger charge_notify;
};

class Stream {
 public:
  virtual ~Stream() = default;

  virtual absl::StatusOr<uint64_t> Copy(const Transfer& transfer) = 0;
  // Sets `count` bytes to `value`.
  virtual absl::StatusOr<uint64_t> Fill(const DeviceSpan& dst, uint8_t value, uint64_t count) = 0;
  // `function` belongs to an executable that the caller keeps alive until the
  // launch is reported or aborted. The backend takes from `params` what it
  // keeps (the caller keeps the argument block, to report a failed launch's).
  virtual absl::StatusOr<uint64_t> Launch(const Function& function, const LaunchParams& params) = 0;
  // A backend refuses a kind or data type it does not reduce with
  // ACL_ERROR_RT_FEATURE_NOT_SUPPORT (and a count that is not a whole number
  // of elements with ACL_ERROR_INVALID_PARAM) before queuing anything.
  virtual absl::StatusOr<uint64_t> Reduce(const Reduction& reduction) = 0;
  // aclrtRandomNumAsync (hal/random_numbers.h). A backend refuses a function
  // or data type it does not draw with ACL_ERROR_RT_FEATURE_NOT_SUPPORT and
  // inputs it can judge now (a parameter's size, a negative stddev) with
  // ACL_ERROR_INVALID_PARAM, before queuing anything; inputs read from device
  // memory are judged when the task runs, and fail it. A backend that draws
  // none refuses every task with ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
  virtual absl::StatusOr<uint64_t> GenerateRandom(const RandomNumbers& task) {
    (void)task;
    return NotSupported("draw random numbers");
  }
  // Holds the stream until the 64-bit value at `address` (8 bytes, aligned)
  // meets `flag` against `value` (aclrtValueWait: ACL_STREAM_WAIT_VALUE_GEQ,
  // _EQ, _AND or _NOR), whoever writes it.
  virtual absl::StatusOr<uint64_t> WaitValue(const DeviceSpan& address, uint64_t value,
                                             uint32_t flag) = 0;
  // Marks the event with this point of the stream (and the device's clock)
  // as its record numbered `record` (hal/event.h).
  virtual absl::StatusOr<uint64_t> RecordEvent(Event& event, uint64_t record) = 0;
  // Holds the stream until the event's record numbered `record` has run, was
  // dropped by an abort or forgotten (0, or a record settled already: passes
  // at once). The record may be submitted after the wait, on any stream of
  // the device; a record made after it is not waited for. With
  // `fail_if_dropped`, a record that settled without running (Event::Dropped)
  // fails the wait with ACL_ERROR_RT_IPC_ERROR: another process's record
  // that its end or abort dropped.
  virtual absl::StatusOr<uint64_t> WaitEvent(Event& event, uint64_t record,
                                             bool fail_if_dropped) = 0;
  // A point where the host runs code: reported to on_callback_point when
  // reached, then holds the stream until ResumeCallbackPoint.
  virtual absl::StatusOr<uint64_t> HostCallbackPoint() = 0;
  virtual void ResumeCallbackPoint(uint64_t sequence, absl::Status status) = 0;
  // Float overflow detection (hal/float_overflow.h), each an item in stream
  // order; a device without the feature refuses them with
  // ACL_ERROR_RT_FEATURE_NOT_SUPPORT. From this item on, every task of the
  // stream that overflows raises `status` (null: no task raises anything).
  virtual absl::StatusOr<uint64_t> ReportOverflows(std::shared_ptr<OverflowStatus> status) {
    (void)status;
    return NotSupported("detect float overflows");
  }
  // Writes the status's block (OverflowStatus::kBytes, the flag first) to `dst`.
  virtual absl::StatusOr<uint64_t> CopyOverflowStatus(const DeviceSpan& dst,
                                                      std::shared_ptr<OverflowStatus> status) {
    (void)dst;
    (void)status;
    return NotSupported("detect float overflows");
  }
  virtual absl::StatusOr<uint64_t> ClearOverflowStatus(std::shared_ptr<OverflowStatus> status) {
    (void)status;
    return NotSupported("detect float overflows");
  }

  // How many host-callback points the stream may hold at once, when each
  // takes something scarce from the device (a vendor notify); the core keeps
  // later ones until there is room. 0: no limit.
  virtual int max_callback_points() const { return 0; }

  // Stop-on-failure (ACL_STOP_ON_FAILURE): once an item fails, no item
  // submitted after it runs until the next Abort(). The core aborts the
  // stream when it hears of the failure; a device that runs ahead of the host
  // must stop by itself so that nothing runs meanwhile. Off by default.
  // Turned off while stopped for a failure, a device should go on (the
  // core, already under CONTINUE, may hear of that failure only afterwards
  // and would abort nothing): the sim does; a vendor stream that cannot
  // holds the work behind the failure until an Abort (hal/acl/README.md).
  virtual absl::Status SetStopOnFailure(bool stop) = 0;
  // Whether SetStopOnFailure(true) can succeed (asked first: the core stops
  // before the device does).
  virtual bool can_stop_on_failure() const { return true; }

  // aclrtStreamStop: ends item `sequence` if the device is executing it now
  // (a kernel still running, an event or value wait still waiting) without
  // its effect, reported through on_complete with `why` as its failure. The
  // items after it are kept and run as usual (stop-on-failure applies, as to
  // any failure). An item that has finished, or one executing that nothing
  // can stop (an instant item, a host-callback point), is left alone: the
  // stop never reaches an item after the one it was meant for. (A backend
  // whose device cannot be told which item to stop does its best and says
  // so: hal/acl/README.md.)
  virtual absl::Status StopItem(uint64_t sequence, const absl::Status& why) {
    (void)sequence;
    (void)why;
    return NotSupported("stop a running task");
  }
  // Whether StopItem can stop anything.
  virtual bool can_stop_items() const { return false; }

  // Discards every item not yet run, and returns once no item is running.
  // Dropped items are not reported; the stream takes new work afterwards.
  virtual void Abort() = 0;
  // Abort, for a caller whose `in_use` (may be null) holds what the dropped
  // items use: true once no item runs. False when the device could not be
  // reached to discard or wait for them (hal/acl/README.md): they may run
  // until the device is reset, so the stream keeps `in_use` until then, and
  // the caller must not let go of what it holds through it either; the
  // stream then takes no new work.
  virtual bool AbortKeeping(std::shared_ptr<void> in_use) {
    (void)in_use;
    Abort();
    return true;
  }

 private:
  // ACL_ERROR_RT_FEATURE_NOT_SUPPORT: "this device does not <what>".
  static absl::Status NotSupported(const char* what);
};

}  // namespace hal

#endif  // ACLD_HAL_STREAM_H_
