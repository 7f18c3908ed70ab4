#include "hal/clock.h"

#include "absl/time/clock.h"

namespace hal {
namespace {

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  bool Subscribe(Listener*) override { return false; }
  void Unsubscribe(Listener*) override {}
};

}  // namespace

Clock& HostClock() {
  static RealClock* const clock = new RealClock();
  return *clock;
}

}  // namespace hal
