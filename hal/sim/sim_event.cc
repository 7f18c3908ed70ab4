#include "hal/sim/sim_event.h"

#include <vector>

namespace hal::sim {

std::optional<int64_t> SimEvent::TimestampNanos() const {
  absl::MutexLock lock(&mu_);
  return timestamp_;
}

bool SimEvent::Complete() const {
  absl::MutexLock lock(&mu_);
  return ledger_.AllSubmittedSettled();
}

void SimEvent::AddRecord(uint64_t record) {
  absl::MutexLock lock(&mu_);
  ledger_.Submitted(record);
}

void SimEvent::ForgetRecord(uint64_t record) { CompleteRecord(record, std::nullopt); }

void SimEvent::CompleteRecord(uint64_t record, std::optional<int64_t> now_nanos) {
  std::vector<RecordLedger::Wake> woken;
  {
    absl::MutexLock lock(&mu_);
    if (!ledger_.Settle(record, now_nanos.has_value(), woken)) return;
    if (now_nanos.has_value()) timestamp_ = now_nanos;
  }
  for (auto& wake : woken) wake();
}

bool SimEvent::Dropped(uint64_t record) const {
  absl::MutexLock lock(&mu_);
  return ledger_.Dropped(record);
}

bool SimEvent::Settled(uint64_t record) const {
  absl::MutexLock lock(&mu_);
  return ledger_.Settled(record);
}

uint64_t SimEvent::WaitFor(uint64_t record, std::function<void()> wake) {
  absl::MutexLock lock(&mu_);
  return ledger_.WaitFor(record, std::move(wake));
}

void SimEvent::CancelWait(uint64_t wait_id) {
  absl::MutexLock lock(&mu_);
  ledger_.CancelWait(wait_id);
}

size_t SimEvent::waiting() const {
  absl::MutexLock lock(&mu_);
  return ledger_.waiting();
}

}  // namespace hal::sim
