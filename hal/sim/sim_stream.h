// A sim device stream: runs its items in order on whichever thread finds it
// idle — the submitting thread, for work that is ready at once — or on the
// device's own thread once a kernel's busy time is up or an event it waits on
// completes. Holding (busy time, an event, a host-callback point) takes no
// thread.
#ifndef ACLD_HAL_SIM_SIM_STREAM_H_
#define ACLD_HAL_SIM_SIM_STREAM_H_

#include <cstdint>
#include <memory>

#include "hal/sim/sim_device_turns.h"
#include "hal/sim/sim_event.h"
#include "hal/sim/sim_executable.h"
#include "hal/stream.h"
#include "hal/timer.h"

namespace hal::sim {

class SimDevice;

class SimStream : public Stream {
 public:
  // `turns`: the device's thread, shared between the streams' owners.
  // `device_slot`: its place among the device's streams, held for its life.
  SimStream(const SimDevice& device, Timer& device_timer, SimDeviceTurns& turns,
            StreamOptions options, std::shared_ptr<void> device_slot = nullptr);
  ~SimStream() override;

  absl::StatusOr<uint64_t> Copy(const Transfer& transfer) override;
  absl::StatusOr<uint64_t> Fill(const DeviceSpan& dst, uint8_t value, uint64_t count) override;
  absl::StatusOr<uint64_t> Launch(const Function& function, const LaunchParams& params) override;
  absl::StatusOr<uint64_t> Reduce(const Reduction& reduction) override;
  absl::StatusOr<uint64_t> GenerateRandom(const RandomNumbers& task) override;
  absl::StatusOr<uint64_t> ReportOverflows(std::shared_ptr<OverflowStatus> status) override;
  absl::StatusOr<uint64_t> CopyOverflowStatus(const DeviceSpan& dst,
                                              std::shared_ptr<OverflowStatus> status) override;
  absl::StatusOr<uint64_t> ClearOverflowStatus(std::shared_ptr<OverflowStatus> status) override;
  absl::StatusOr<uint64_t> WaitValue(const DeviceSpan& address, uint64_t value,
                                     uint32_t flag) override;
  absl::StatusOr<uint64_t> RecordEvent(Event& event, uint64_t record) override;
  absl::StatusOr<uint64_t> WaitEvent(Event& event, uint64_t record,
                                     bool fail_if_dropped) override;
  absl::StatusOr<uint64_t> HostCallbackPoint() override;
  void ResumeCallbackPoint(uint64_t sequence, absl::Status status) override;
  absl::Status SetStopOnFailure(bool stop) override;
  absl::Status StopItem(uint64_t sequence, const absl::Status& why) override;
  bool can_stop_items() const override { return true; }
  void Abort() override;

 private:
  struct Item;
  struct State;
  const std::shared_ptr<State> state_;  // also held (weakly) by timers and event waits
  const std::shared_ptr<void> device_slot_;
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_STREAM_H_
