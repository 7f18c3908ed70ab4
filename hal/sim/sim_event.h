// A sim event: records (numbered by the caller) settle as the streams run or
// drop them; a stream waiting for a record holds until it has settled.
#ifndef ACLD_HAL_SIM_SIM_EVENT_H_
#define ACLD_HAL_SIM_SIM_EVENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "hal/event.h"
#include "hal/record_ledger.h"

namespace hal::sim {

class SimEvent : public Event, public std::enable_shared_from_this<SimEvent> {
 public:
  // `device_slot`: its place among the device's events, held for its life.
  explicit SimEvent(std::shared_ptr<void> device_slot = nullptr)
      : device_slot_(std::move(device_slot)) {}

  std::optional<int64_t> TimestampNanos() const override;
  bool Complete() const override;
  void ForgetRecord(uint64_t record) override;
  bool Dropped(uint64_t record) const override;
  bool Settled(uint64_t record) const override;

  // Record `record` was submitted to a stream.
  void AddRecord(uint64_t record);
  // Record `record` ran at `now_nanos` (nullopt: it was discarded and leaves
  // the timestamp alone).
  void CompleteRecord(uint64_t record, std::optional<int64_t> now_nanos);
  // 0 when record `record` has settled; otherwise `wake` runs (once, on the
  // settling thread, no lock held) when it does, unless CancelWait is given
  // the id returned.
  uint64_t WaitFor(uint64_t record, std::function<void()> wake);
  void CancelWait(uint64_t wait_id);
  // Waits kept now (for tests).
  size_t waiting() const;

 private:
  const std::shared_ptr<void> device_slot_;
  mutable absl::Mutex mu_;
  RecordLedger ledger_ ABSL_GUARDED_BY(mu_);
  std::optional<int64_t> timestamp_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_EVENT_H_
