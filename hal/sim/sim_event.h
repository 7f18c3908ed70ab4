// A sim event: records are numbered as streams submit them and complete as
// the streams run them; a stream waiting on the event holds until the records
// submitted before its wait have run.
#ifndef ACLD_HAL_SIM_SIM_EVENT_H_
#define ACLD_HAL_SIM_SIM_EVENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "hal/event.h"

namespace hal::sim {

class SimEvent : public Event, public std::enable_shared_from_this<SimEvent> {
 public:
  std::optional<int64_t> TimestampNanos() const override;
  bool Complete() const override;

  // A record submitted to a stream: its number.
  uint64_t AddRecord();
  // Record `record` ran at `now_nanos` (nullopt: it was discarded and leaves
  // the timestamp alone). Records complete in any order across streams; the
  // event counts as complete once every record submitted has.
  void CompleteRecord(uint64_t record, std::optional<int64_t> now_nanos);
  // The number of the newest record submitted (0: none).
  uint64_t latest_record() const;
  // True when records 1..target have all completed; otherwise `wake` runs
  // (once, on the completing thread, no lock held) when they have.
  bool WaitFor(uint64_t target, std::function<void()> wake);

 private:
  mutable absl::Mutex mu_;
  uint64_t submitted_ ABSL_GUARDED_BY(mu_) = 0;
  // Every record <= done_through_ has completed; later ones that completed early.
  uint64_t done_through_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, bool> done_early_ ABSL_GUARDED_BY(mu_);
  std::optional<int64_t> timestamp_ ABSL_GUARDED_BY(mu_);
  std::multimap<uint64_t, std::function<void()>> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_EVENT_H_
