// A device event: a point in a stream that other streams can wait for, with
// the device's timestamp of when the stream passed it.
#ifndef ACLD_HAL_EVENT_H_
#define ACLD_HAL_EVENT_H_

#include <cstdint>
#include <optional>

namespace hal {

// Records are numbered by the caller (Stream::RecordEvent's `record`: 1, 2,
// ... in the order it makes them); streams may submit them in another order,
// and a wait is for one record (Stream::WaitEvent).
class Event {
 public:
  virtual ~Event() = default;

  // The device clock (Device::NowNanos) when the last completed record ran;
  // nullopt before any record completed.
  virtual std::optional<int64_t> TimestampNanos() const = 0;
  // True when every record submitted so far has run.
  virtual bool Complete() const = 0;
  // Record `record` will never be submitted (its task was dropped before it
  // reached the device, or its submission failed): waits for it pass.
  virtual void ForgetRecord(uint64_t record) = 0;
  // Record `record` settled without running: an abort dropped it or it was
  // forgotten (one of the latest RecordLedger::kDroppedKept such).
  virtual bool Dropped(uint64_t record) const = 0;
  // Record `record` has settled: it ran, or it was dropped or forgotten.
  virtual bool Settled(uint64_t record) const = 0;
};

}  // namespace hal

#endif  // ACLD_HAL_EVENT_H_
